# SPDX-License-Identifier: Apache-2.0
"""The second process of the tests: an engine with one registered buffer.

    python3 peer.py METADATA LOCAL SIZE [MC_KNOB=value ...]

Prints "READY <segment> <address> <length>", then answers one command a
line on stdin:
    fill SEED            fills the buffer with pattern(SEED)  -> "ok"
    check OFF LEN SEED   bytes [OFF, OFF+LEN) are pattern(SEED)'s -> "ok" / "bad <index>"
    notifies N           waits for N notifications, prints each as
                         "notify <sender> <name hex> <message hex>"
    notify SEGMENT NAME MESSAGE  sends one -> "ok" / "error <text>"
and exits when stdin closes.
"""

import sys
import time

import mc


def pattern(seed, n):
    """n bytes, a function of seed (the tests' own)."""
    out = bytearray(n)
    x = (seed * 2654435761 + 1) & 0xFFFFFFFF
    for i in range(0, n, 4096):
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
        out[i:i + 4096] = (x.to_bytes(4, "little") * 1024)[:min(4096, n - i)]
    return out


def main():
    metadata, local, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
    config = dict(a.split("=", 1) for a in sys.argv[4:])
    engine = mc.TransferEngine(metadata, local, config=config)
    buf = bytearray(size)
    reg = engine.register_memory(buf)
    print(f"READY {engine.segment_name} {reg.address} {reg.length}", flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "fill":
            buf[:] = pattern(int(cmd[1]), size)
            print("ok", flush=True)
        elif cmd[0] == "check":
            off, n, seed = int(cmd[1]), int(cmd[2]), int(cmd[3])
            want = pattern(seed, off + n)[off:]
            got = buf[off:off + n]
            bad = next((i for i in range(n) if got[i] != want[i]), None) if got != want else None
            print("ok" if bad is None else f"bad {bad}", flush=True)
        elif cmd[0] == "notifies":
            want, got = int(cmd[1]), []
            while len(got) < want:
                got += engine.get_notifies()
                time.sleep(0.001)
            for n in got:
                print(f"notify {n.sender} {n.name.encode('utf-8', 'surrogateescape').hex()} "
                      f"{n.message.hex()}", flush=True)
        elif cmd[0] == "notify":
            try:
                engine.send_notify(cmd[1], bytes.fromhex(cmd[2]), bytes.fromhex(cmd[3]))
                print("ok", flush=True)
            except mc.Error as e:
                print(f"error {e}", flush=True)
    engine.close()


if __name__ == "__main__":
    main()
