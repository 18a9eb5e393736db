# SPDX-License-Identifier: Apache-2.0
# A program written for Mooncake's Python API (mooncake.engine), with only
# its import line changed:
#   from mooncake.engine import TransferEngine, TransferOpcode, TransferNotify
# Server:  python3 mooncake_app.py server METADATA
#   registers a 1 MiB numpy buffer, prints "SESSION <host:port> <address>",
#   waits for the client's notification, checks the bytes, prints "SERVER OK".
# Client:  python3 mooncake_app.py client METADATA SESSION ADDRESS
import sys
import time

import numpy as np

from mc.mooncake import TransferEngine, TransferOpcode, TransferNotify

HOSTNAME = "127.0.0.1"
PROTOCOL = "tcp"
DEVICE_NAME = ""
SIZE = 1024 * 1024


def fail(what, ret):
    print(f"FAIL {what}: {ret}", flush=True)
    sys.exit(1)


def server(metadata):
    engine = TransferEngine()
    local = HOSTNAME if metadata == "P2PHANDSHAKE" else f"{HOSTNAME}:{sys.argv[3]}"
    ret = engine.initialize(local, metadata, PROTOCOL, DEVICE_NAME)
    if ret != 0:
        fail("initialize", ret)
    session_id = f"{HOSTNAME}:{engine.get_rpc_port()}" if metadata == "P2PHANDSHAKE" else local
    buf = np.zeros(SIZE, dtype=np.uint8)
    ret = engine.register_memory(buf.ctypes.data, buf.nbytes)
    if ret != 0:
        fail("register_memory", ret)
    print(f"SESSION {session_id} {buf.ctypes.data}", flush=True)
    notifies = []
    while not notifies:
        notifies = engine.get_notifies()
        time.sleep(0.001)
    n = notifies[0]
    expect = np.arange(SIZE, dtype=np.uint32).astype(np.uint8)
    expect[:16] = 7  # write_bytes_to_buffer's bytes, sent last
    if (n.name, n.msg) != ("done", "all written") or not np.array_equal(buf, expect):
        fail("server check", (n.name, n.msg, int(np.count_nonzero(buf != expect))))
    engine.unregister_memory(buf.ctypes.data)
    print("SERVER OK", flush=True)


def client(metadata, session_id, remote):
    engine = TransferEngine()
    local = HOSTNAME if metadata == "P2PHANDSHAKE" else f"{HOSTNAME}:{sys.argv[5]}"
    ret = engine.initialize_ext(local, metadata.split("://", 1)[-1], PROTOCOL, DEVICE_NAME,
                                metadata.split("://", 1)[0] if "://" in metadata else "p2p")
    if ret != 0:
        fail("initialize_ext", ret)
    data = np.arange(SIZE, dtype=np.uint32).astype(np.uint8)
    ptr = data.ctypes.data
    if engine.register_memory(ptr, SIZE) != 0:
        fail("register_memory", -1)
    if engine.get_first_buffer_address(session_id) != remote:
        fail("get_first_buffer_address", engine.get_first_buffer_address(session_id))
    ret = engine.transfer_sync_write(session_id, ptr, remote, SIZE)
    if ret != 0:
        fail("transfer_sync_write", ret)
    back = np.zeros(SIZE, dtype=np.uint8)
    engine.register_memory(back.ctypes.data, SIZE)
    ret = engine.transfer_sync_read(session_id, back.ctypes.data, remote, SIZE)
    if ret != 0 or not np.array_equal(back, data):
        fail("transfer_sync_read", ret)
    # Four chunks, in batches: sync, async with get_batch_transfer_status, and
    # the single-request async pair.
    chunk = SIZE // 4
    ptrs = [ptr + i * chunk for i in range(4)]
    peers = [remote + i * chunk for i in range(4)]
    if engine.batch_transfer_sync_write(session_id, ptrs, peers, [chunk] * 4) != 0:
        fail("batch_transfer_sync_write", -1)
    if engine.batch_transfer_sync_read(session_id, [back.ctypes.data + i * chunk for i in range(4)],
                                       peers, [chunk] * 4) != 0:
        fail("batch_transfer_sync_read", -1)
    ids = [engine.batch_transfer_async_write(session_id, ptrs[:2], peers[:2], [chunk] * 2),
           engine.batch_transfer_async_read(session_id, [back.ctypes.data], peers[:1], [chunk]),
           engine.batch_transfer_async(session_id, ptrs[2:], peers[2:], [chunk] * 2,
                                       TransferOpcode.WRITE)]
    if 0 in ids or engine.get_batch_transfer_status(ids) != 0:
        fail("batch_transfer_async_*", ids)
    batch_id = engine.transfer_submit_write(session_id, ptr, remote, SIZE)
    if batch_id < 0:
        fail("transfer_submit_write", batch_id)
    status = 0
    while status == 0:
        status = engine.transfer_check_status(batch_id)
    if status != 1:
        fail("transfer_check_status", status)
    if engine.transfer_sync(session_id, ptr, remote, SIZE, TransferOpcode.READ) != 0:
        fail("transfer_sync READ", -1)
    # Unregistered memory and an unknown target fail with a negative code.
    other = np.zeros(16, dtype=np.uint8)
    if engine.transfer_sync_write(session_id, other.ctypes.data, remote, 16) >= 0:
        fail("a write from unregistered memory", 0)
    # A managed buffer: bytes in, bytes out, then written with a notification.
    addr = engine.allocate_managed_buffer(4096)
    if addr == 0:
        fail("allocate_managed_buffer", 0)
    if engine.write_bytes_to_buffer(addr, bytes([7] * 16), 16) != 0:
        fail("write_bytes_to_buffer", -1)
    if engine.read_bytes_from_buffer(addr, 16) != bytes([7] * 16):
        fail("read_bytes_from_buffer", -1)
    if engine.write_bytes_to_buffer(addr + 4090, bytes(16), 16) != -1:
        fail("write_bytes_to_buffer past the end", 0)
    ret = engine.batch_transfer_sync(session_id, [addr], [remote], [16], TransferOpcode.WRITE,
                                     TransferNotify("done", "all written"))
    if ret != 0:
        fail("batch_transfer_sync with notify", ret)
    if engine.free_managed_buffer(addr, 4096) != 0:
        fail("free_managed_buffer", -1)
    if engine.batch_unregister_memory([ptr, back.ctypes.data]) != 0:
        fail("batch_unregister_memory", -1)
    print("CLIENT OK", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server(sys.argv[2])
    else:
        client(sys.argv[2], sys.argv[3], int(sys.argv[4]))
