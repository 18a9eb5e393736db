# SPDX-License-Identifier: Apache-2.0
"""Blocking calls release the GIL: another Python thread runs while a wait
blocks; a peer killed mid-transfer gives an error, never a hang."""

import signal
import threading

import pytest

import mc
from conftest import HANG_GUARD


def test_wait_releases_the_gil(peer_factory, engine):
    """The peer is stopped (SIGSTOP), so the batch's tasks stay pending; a
    second Python thread counts to a million once the main thread is about
    to wait, and only then resumes the peer (SIGCONT). The wait can only end
    if that thread ran while the main thread was inside wait(): with the GIL
    held there, the peer stays stopped and the wait times out."""
    peer = peer_factory("P2PHANDSHAKE", config={"MC_TLS": "tcp"})
    seg = engine.open_segment(peer.segment)
    reg = engine.register_memory(bytearray(1 << 20))
    engine.transfer([mc.Request(mc.WRITE, reg, seg, peer.address)], timeout=HANG_GUARD)
    waiting = threading.Event()
    counted = []

    def count_then_resume():
        waiting.wait()
        n = 0
        while n < 1_000_000:
            n += 1
        counted.append(n)
        peer.kill(signal.SIGCONT)

    helper = threading.Thread(target=count_then_resume)
    peer.kill(signal.SIGSTOP)
    try:
        helper.start()
        with engine.allocate_batch(1) as batch:
            batch.submit([mc.Request(mc.WRITE, reg, seg, peer.address)])
            waiting.set()
            states = [s.state for s in batch.wait(timeout=HANG_GUARD / 2)]
    finally:
        peer.kill(signal.SIGCONT)
        helper.join()
    assert counted == [1_000_000]
    assert states == [mc.TaskState.COMPLETED]


def test_threads_share_an_engine(peer_factory, engine):
    """Four threads transfer through one engine at once; every one ends."""
    peer = peer_factory("P2PHANDSHAKE", size=4 << 20)
    seg = engine.open_segment(peer.segment)
    reg = engine.register_memory(bytearray(4 << 20))
    done = []

    def run(t):
        for _ in range(20):
            off = t << 20
            engine.transfer([mc.Request(mc.WRITE, reg, seg, peer.address + off, 1 << 20, offset=off)],
                            timeout=HANG_GUARD)
        done.append(t)
    threads = [threading.Thread(target=run, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(HANG_GUARD)
    assert sorted(done) == [0, 1, 2, 3]


def test_peer_killed_mid_transfer(peer_factory):
    """Reads from a peer that is killed: they end with an mc.Error, and no
    wait hangs (MC_TRANSFER_TIMEOUT bounds them)."""
    size = 32 << 20
    peer = peer_factory("P2PHANDSHAKE", size=size)
    with mc.TransferEngine("P2PHANDSHAKE", "127.0.0.1",
                           config={"MC_TRANSFER_TIMEOUT": "5s"}) as engine:
        seg = engine.open_segment(peer.segment)
        reg = engine.register_memory(bytearray(size))
        block = 1 << 20

        def reads():
            return [mc.Request(mc.READ, reg, seg, peer.address + off, block, offset=off)
                    for off in range(0, size, block)]
        engine.transfer(reads(), timeout=HANG_GUARD)
        batch = engine.allocate_batch(size // block)
        batch.submit(reads())
        peer.kill()
        failure = None
        for attempt in range(10):
            try:
                if attempt > 0:
                    batch = engine.allocate_batch(size // block)
                    batch.submit(reads())
                batch.wait(timeout=HANG_GUARD)
            except mc.TimeoutError:
                pytest.fail("a read from a killed peer hung")
            except mc.Error as e:
                failure = e
            finally:
                if batch.submitted:
                    batch.free()
            if failure:
                break
        assert failure is not None, "every read from a killed peer succeeded"
        assert isinstance(failure, (mc.TransferError, mc.Error))
        print(f"after the kill: {failure}")
