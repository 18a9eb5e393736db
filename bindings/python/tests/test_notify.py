# SPDX-License-Identifier: Apache-2.0
"""Notifications between two processes: after a batch's writes, and sent
at once; the sender as mc proved it; binary bytes; order."""

import time

import pytest

import mc
from conftest import HANG_GUARD, pattern


def test_notify_after_writes_and_at_once(peer_factory, engine):
    peer = peer_factory("P2PHANDSHAKE")
    seg = engine.open_segment(peer.segment)
    src = engine.register_memory(pattern(5, 1 << 16))
    for i in range(3):
        engine.transfer([mc.Request(mc.WRITE, src, seg, peer.address)],
                        notify=(f"round{i}", bytes([0, i, 255])), timeout=HANG_GUARD)
    engine.send_notify(seg, "direct", b"by id")
    engine.send_notify(peer.segment, b"named", "by name")
    peer.proc.stdin.write("notifies 5\n")
    peer.proc.stdin.flush()
    got = [line.split() for line in peer.lines(5)]
    assert peer.ask(f"check 0 {1 << 16} 5") == "ok"
    names = [(sender, bytes.fromhex(name), bytes.fromhex(msg)) for _, sender, name, msg in got]
    assert [n[0] for n in names] == [engine.segment_name] * 5
    assert [n[1] for n in names] == [b"round0", b"round1", b"round2", b"direct", b"named"]
    assert [n[2] for n in names] == [bytes([0, i, 255]) for i in range(3)] + [b"by id", b"by name"]


def test_notifications_back_and_size_limit(peer_factory, engine):
    peer = peer_factory("P2PHANDSHAKE")
    assert peer.ask(f"notify {engine.segment_name} {b'hello'.hex()} {bytes(range(256)).hex()}") == "ok"
    got = []
    while not got:
        got += engine.get_notifies()
        time.sleep(0.001)
    assert got == [mc.Notification(peer.segment, "hello", bytes(range(256)))]
    assert engine.get_notifies() == []
    with pytest.raises(mc.MessageTruncatedError):
        engine.send_notify(peer.segment, "big", bytes(1 << 20))
    with pytest.raises(mc.InvalidParamError, match="str or bytes"):
        engine.send_notify(peer.segment, "n", 42)


def test_notify_dropped_when_a_task_fails(peer_factory, engine):
    """A batch whose task is INVALID sends no notification: wait_notify
    raises CanceledError; one that completes is taken (wait_notify returns)."""
    peer = peer_factory("P2PHANDSHAKE")
    seg = engine.open_segment(peer.segment)
    src = engine.register_memory(bytearray(4096))
    with engine.allocate_batch(1) as batch:
        batch.submit([mc.Request(mc.WRITE, src, seg, peer.address + peer.length)], notify=("x", b""))
        with pytest.raises(mc.TransferError):
            batch.wait(timeout=HANG_GUARD)
        with pytest.raises(mc.CanceledError):
            batch.wait_notify(timeout=HANG_GUARD)
    with engine.allocate_batch(1) as batch:
        batch.submit([mc.Request(mc.WRITE, src, seg, peer.address)], notify=("kept", b"1"))
        batch.wait(timeout=HANG_GUARD)
        batch.wait_notify(timeout=HANG_GUARD)
        assert batch.notify_status() == 0
    peer.proc.stdin.write("notifies 1\n")
    peer.proc.stdin.flush()
    assert peer.lines(1)[0].split()[2] == b"kept".hex()
