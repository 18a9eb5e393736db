# SPDX-License-Identifier: Apache-2.0
"""Two processes over each metadata backend: this one writes into and reads
from the peer's registered buffer; the peer checks what arrived."""

import pytest

import mc
from conftest import BACKENDS, HANG_GUARD, local_name, pattern


@pytest.mark.parametrize("metadata", BACKENDS, indirect=True)
def test_write_then_read_back(metadata, peer_factory):
    size = 4 << 20
    peer = peer_factory(metadata, local_name(metadata), size)
    with mc.TransferEngine(metadata, local_name(metadata)) as engine:
        seg = engine.open_segment(peer.segment)
        bufs = seg.buffers()
        assert [(b.address, b.length) for b in bufs] == [(peer.address, size)]
        src = pattern(7, size)
        reg = engine.register_memory(src)
        block = 256 << 10
        reqs = [mc.Request(mc.WRITE, reg, seg, peer.address + off, block, offset=off)
                for off in range(0, size, block)]
        statuses = engine.transfer(reqs, timeout=HANG_GUARD)
        assert [s.state for s in statuses] == [mc.TaskState.COMPLETED] * len(reqs)
        assert peer.ask(f"check 0 {size} 7") == "ok"

        # The peer's bytes back, into a numpy array, in one batch of 16.
        np = pytest.importorskip("numpy")
        assert peer.ask("fill 11") == "ok"
        dst = np.zeros(size, dtype=np.uint8)
        dreg = engine.register_memory(dst)
        with engine.allocate_batch(16) as batch:
            batch.submit([mc.Request(mc.READ, dreg, seg, peer.address + off, size // 16, offset=off)
                          for off in range(0, size, size // 16)])
            assert len(batch.wait(timeout=HANG_GUARD)) == 16
        assert dst.tobytes() == bytes(pattern(11, size))
        dreg.unregister()
        reg.unregister()
    peer.stop()


def test_memoryview_and_torch_style_tensor(peer_factory, engine):
    """A memoryview slice and an object offering only data_ptr() (a CPU
    tensor's protocol) move data as buffers do."""
    peer = peer_factory("P2PHANDSHAKE")
    seg = engine.open_segment(peer.segment)
    backing = bytearray(pattern(3, 1 << 20))
    view = memoryview(backing)[4096:]
    reg = engine.register_memory(view)
    assert (reg.kind, reg.length, reg.readonly) == ("buffer", len(view), False)
    engine.transfer([mc.Request(mc.WRITE, reg, seg, peer.address + 4096)])
    assert peer.ask(f"check 4096 {len(view)} 3") == "ok"

    class Tensor:  # what torch.Tensor offers of itself on the CPU
        class device:
            type, index = "cpu", None

        def __init__(self, buf):
            import ctypes
            self._buf = buf
            self._addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
            self.nbytes = len(buf)

        def data_ptr(self):
            return self._addr

        def is_contiguous(self):
            return True

    t = Tensor(bytearray(1 << 20))
    treg = engine.register_memory(t)
    assert (treg.kind, treg.memory_type, treg.length) == ("data_ptr", "cpu", 1 << 20)
    engine.transfer([mc.Request(mc.READ, treg, seg, peer.address)])
    assert bytes(t._buf[4096:]) == bytes(view)
