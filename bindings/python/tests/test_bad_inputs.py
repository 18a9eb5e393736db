# SPDX-License-Identifier: Apache-2.0
"""Bad inputs raise an mc.Error subclass naming the status; none crashes."""

import ctypes

import pytest

import mc


def test_non_contiguous_array(engine):
    np = pytest.importorskip("numpy")
    a = np.zeros((64, 64), dtype=np.uint8)[:, ::2]
    with pytest.raises(mc.InvalidParamError, match=r"not contiguous.*InvalidParam, -4"):
        engine.register_memory(a)


def test_read_into_read_only_memory(peer_factory, engine):
    peer = peer_factory("P2PHANDSHAKE")
    seg = engine.open_segment(peer.segment)
    data = bytes(4096)
    reg = engine.register_memory(data)
    assert reg.readonly
    with pytest.raises(mc.InvalidParamError, match="READ into read-only memory"):
        engine.transfer([mc.Request(mc.READ, reg, seg, peer.address)])
    # A WRITE from it is fine.
    engine.transfer([mc.Request(mc.WRITE, reg, seg, peer.address)], timeout=30)


def test_unregistered_memory(peer_factory, engine):
    peer = peer_factory("P2PHANDSHAKE")
    seg = engine.open_segment(peer.segment)
    buf = bytearray(4096)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    with pytest.raises(mc.InvalidParamError, match="in no registration of this engine"):
        engine.transfer([mc.Request(mc.WRITE, addr, seg, peer.address, 4096)])
    reg = engine.register_memory(buf)
    # One byte past the registration's end.
    with pytest.raises(mc.InvalidParamError, match="in no registration"):
        engine.transfer([mc.Request(mc.WRITE, addr + 1, seg, peer.address, 4096)])
    # Registered with another engine.
    with mc.TransferEngine("P2PHANDSHAKE", "127.0.0.1") as other:
        with pytest.raises(mc.InvalidParamError, match="in no registration"):
            other.transfer([mc.Request(mc.WRITE, reg, other.open_segment(peer.segment), peer.address)])
    reg.unregister()
    with pytest.raises(mc.InvalidParamError, match="in no registration"):
        engine.transfer([mc.Request(mc.WRITE, reg, seg, peer.address)])
    with pytest.raises(mc.NoElemError, match="NoElem"):
        reg.unregister()


def test_memory_objects_refused(engine):
    with pytest.raises(mc.InvalidParamError, match="needs a length"):
        engine.register_memory(0x1000)
    with pytest.raises(mc.InvalidParamError, match="no bytes"):
        engine.register_memory(bytearray())
    with pytest.raises(mc.InvalidParamError, match="past the end"):
        engine.register_memory(bytearray(10), 11)
    with pytest.raises(mc.InvalidParamError, match="no memory mc can take"):
        engine.register_memory(object())

    class Strided:
        __cuda_array_interface__ = {"data": (0x10000, False), "shape": (4, 4), "typestr": "<f4",
                                    "strides": (32, 4), "version": 3}
    with pytest.raises(mc.InvalidParamError, match="not contiguous"):
        engine.register_memory(Strided())

    class OnXpu:
        class device:
            type, index = "xpu", 0

        def data_ptr(self):
            return 0x10000
        nbytes = 4096
    with pytest.raises(mc.UnsupportedError, match="'xpu' device"):
        engine.register_memory(OnXpu())


def test_cuda_memory_type_is_given_to_mc(engine):
    """An object with __cuda_array_interface__ is registered as cuda:N; on a
    host memory address mc refuses it (or, with a GPU, the pointer is not
    device memory), with an error, not a crash."""
    host = bytearray(8192)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(host))

    class FakeCuda:
        __cuda_array_interface__ = {"data": (addr, False), "shape": (8192,), "typestr": "|u1",
                                    "strides": None, "version": 3}

        class device:
            type, index = "cuda", 1
    try:
        reg = engine.register_memory(FakeCuda())
    except mc.Error as e:
        assert "cuda:1" in str(e)
    else:
        assert (reg.memory_type, reg.location) == ("cuda", "cuda:1")
        reg.unregister()


def test_overlap_busy_closed_and_capacity(peer_factory):
    peer = peer_factory("P2PHANDSHAKE")
    engine = mc.TransferEngine("P2PHANDSHAKE", "127.0.0.1")
    buf = bytearray(1 << 16)
    reg = engine.register_memory(buf)
    with pytest.raises(mc.Error):
        engine.register_memory(memoryview(buf)[100:])
    seg = engine.open_segment(peer.segment)
    batch = engine.allocate_batch(2)
    batch.submit([mc.Request(mc.WRITE, reg, seg, peer.address, 4096)])
    with pytest.raises(mc.InvalidParamError, match="exceed"):
        batch.submit([mc.Request(mc.WRITE, reg, seg, peer.address, 4096)] * 2)
    with pytest.raises(mc.BusyError, match="not freed"):
        reg.unregister()
    batch.wait(timeout=30)
    batch.free()
    reg.unregister()
    with pytest.raises(mc.Error, match="open_segment"):
        engine.open_segment("127.0.0.1:1")
    with pytest.raises(mc.InvalidParamError):
        mc.Request(mc.WRITE, reg, seg, peer.address, offset=1 << 20)
    engine.close()
    with pytest.raises(mc.InvalidParamError, match="engine is closed"):
        engine.register_memory(bytearray(16))
    with pytest.raises(mc.InvalidParamError, match="engine is closed"):
        engine.allocate_batch(1)


def test_remote_out_of_bounds_is_an_invalid_task(peer_factory, engine):
    peer = peer_factory("P2PHANDSHAKE")
    seg = engine.open_segment(peer.segment)
    reg = engine.register_memory(bytearray(4096))
    with pytest.raises(mc.TransferError, match="INVALID") as err:
        engine.transfer([mc.Request(mc.WRITE, reg, seg, peer.address + peer.length)], timeout=30)
    assert err.value.tasks[0].state == mc.TaskState.INVALID
    assert isinstance(err.value, mc.Error) and err.value.status_name == "InvalidParam"


def test_bad_engine_arguments():
    with pytest.raises(mc.Error, match="did not start"):
        mc.TransferEngine("nosuchscheme://x", "127.0.0.1")
    with pytest.raises(mc.NoElemError, match="did you mean MC_TLS"):
        mc.TransferEngine("P2PHANDSHAKE", "127.0.0.1", config={"MC_TSL": "tcp"})
    with pytest.raises(TypeError):
        mc.TransferEngine("P2PHANDSHAKE", "127.0.0.1", config={"MC_TLS": 3})
