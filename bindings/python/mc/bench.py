# SPDX-License-Identifier: Apache-2.0
"""python3 -m mc.bench: mc_perftest's te_write / te_read from Python.

A target registers a buffer and serves it; an initiator moves blocks to
(te_write) or from (te_read) it from several threads, each submitting a
batch and waiting for it in a loop, and prints mc_perftest's result line:

    python3 -m mc.bench --mode target [--buffer_size 1g]
        (prints "READY segment=<name>"; serves until stdin closes)
    python3 -m mc.bench --mode initiator --segment_id <name> -t te_write \\
        --block_size 1m --batch_size 16 --threads 4 --duration 5
"""

import argparse
import os
import sys
import threading
import time

import mc

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def size(text):
    """'64k', '1m', '1g' or bytes."""
    t = text.strip().lower().rstrip("ib")
    unit = t[-1:] if t[-1:] in _UNITS else ""
    try:
        return int(float(t[:len(t) - len(unit)]) * _UNITS[unit])
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a size (bytes, or with k, m, g)")


def parse(argv):
    p = argparse.ArgumentParser(prog="python3 -m mc.bench", description=__doc__.split("\n")[0])
    p.add_argument("--mode", choices=("target", "initiator"), required=True)
    p.add_argument("-t", "--test", choices=("te_write", "te_read"), default="te_read")
    p.add_argument("--metadata_server", default="P2PHANDSHAKE")
    p.add_argument("--local_server_name", default="127.0.0.1")
    p.add_argument("--segment_id", help="the target's segment (initiator)")
    p.add_argument("--block_size", type=size, default=65536)
    p.add_argument("--batch_size", type=int, default=128)
    p.add_argument("--buffer_size", type=size, default=1 << 30)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--duration", type=float, default=10)
    a = p.parse_args(argv)
    if a.mode == "initiator" and not a.segment_id:
        p.error("--mode initiator needs --segment_id")
    if a.batch_size < 1 or a.threads < 1 or a.block_size < 1 or a.duration <= 0:
        p.error("--batch_size, --threads, --block_size and --duration must be positive")
    return a


def run_target(a):
    buf = bytearray(a.buffer_size)
    with mc.TransferEngine(a.metadata_server, a.local_server_name) as engine:
        engine.register_memory(buf, location="cpu:0")
        print(f"READY segment={engine.segment_name} buffer={a.buffer_size}", flush=True)
        sys.stdin.read()  # until the caller closes stdin
    return 0


def run_initiator(a):
    needed = a.batch_size * a.threads * a.block_size
    op = mc.WRITE if a.test == "te_write" else mc.READ
    local = bytearray(needed)
    check = bytearray(a.batch_size * a.block_size)
    with mc.TransferEngine(a.metadata_server, a.local_server_name) as engine:
        reg = engine.register_memory(local, location="cpu:0")
        check_reg = engine.register_memory(check, location="cpu:0", remote_accessible=False)
        seg = engine.open_segment(a.segment_id)
        bufs = [b for b in seg.buffers() if b.length >= needed]
        if not bufs:
            print(f"mc.bench: segment '{a.segment_id}' has no buffer of batch_size x threads x "
                  f"block_size = {needed} B; give the target a larger --buffer_size", file=sys.stderr)
            return 1
        remote = bufs[0].address
        stop = threading.Event()
        counts = [0] * a.threads
        errors = []

        def worker(t):
            # Block i of the batch at (i x threads + t) x block, as mc_perftest.
            reqs = [mc.Request(op, reg, seg, remote + (i * a.threads + t) * a.block_size,
                               a.block_size, offset=(i * a.threads + t) * a.block_size)
                    for i in range(a.batch_size)]
            try:
                while not stop.is_set():
                    engine.transfer(reqs)
                    counts[t] += 1
            except mc.Error as e:
                errors.append(e)
                stop.set()

        workers = [threading.Thread(target=worker, args=(t,)) for t in range(a.threads)]
        start = time.monotonic()
        for w in workers:
            w.start()
        stop.wait(a.duration)
        stop.set()
        for w in workers:
            w.join()
        seconds = time.monotonic() - start
        if errors:
            print(f"mc.bench: {a.test} failed: {errors[0]}", file=sys.stderr)
            return 1
        ok = data_check(engine, a, reg, check_reg, seg, remote)
        batches = sum(counts)
        total = batches * a.batch_size * a.block_size
        print(f"{a.test}: {a.threads} threads, batch_size {a.batch_size}, block_size {a.block_size} B, "
              f"duration {seconds:.2f} s")
        print(f"result test={a.test} block={a.block_size} batch={a.batch_size} threads={a.threads} "
              f"seconds={seconds:.3f} batches={batches} bw_MBps={total / seconds / 1048576:.2f} "
              f"req_per_s={batches * a.batch_size / seconds:.0f} check={'passed' if ok else 'failed'}")
        return 0 if ok else 1


def data_check(engine, a, reg, check_reg, seg, remote):
    """Writes fresh bytes to the remote buffer, reads them back, compares."""
    n = a.batch_size * a.block_size
    reg.obj[:n] = os.urandom(n)
    check_reg.obj[:] = bytes(n)
    engine.transfer([mc.Request(mc.WRITE, reg, seg, remote, n)])
    engine.transfer([mc.Request(mc.READ, check_reg, seg, remote, n)])
    return reg.obj[:n] == check_reg.obj[:n]


def main(argv=None):
    a = parse(sys.argv[1:] if argv is None else argv)
    try:
        return run_target(a) if a.mode == "target" else run_initiator(a)
    except mc.Error as e:
        print(f"mc.bench: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
