# SPDX-License-Identifier: Apache-2.0
"""mc.mooncake: a program written for mooncake.engine, as two processes
over P2PHANDSHAKE, etcd and Redis; the protocol argument's mapping."""

import os
import subprocess
import sys
import threading

import pytest

from conftest import HANG_GUARD, free_port
from mc import mooncake

APP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mooncake_app.py")


@pytest.mark.parametrize("metadata", ["p2p", "etcd", "redis"], indirect=True)
def test_mooncake_program(metadata):
    pytest.importorskip("numpy")
    server = subprocess.Popen([sys.executable, APP, "server", metadata, str(free_port())],
                              stdout=subprocess.PIPE, text=True)
    # A server that hangs is killed, so that its reads below end.
    watchdog = threading.Timer(HANG_GUARD, server.kill)
    watchdog.start()
    try:
        line = server.stdout.readline().split()
        assert line and line[0] == "SESSION", line
        client = subprocess.run([sys.executable, APP, "client", metadata, line[1], line[2],
                                 str(free_port())], capture_output=True, text=True, timeout=HANG_GUARD)
        assert client.stdout.strip() == "CLIENT OK", client.stdout + client.stderr
        assert server.stdout.readline().strip() == "SERVER OK"
        assert server.wait(HANG_GUARD) == 0
    finally:
        watchdog.cancel()
        server.kill()
        server.wait()


def test_protocols_and_return_codes():
    e = mooncake.TransferEngine()
    assert e.get_rpc_port() == -1
    assert e.register_memory(0x1000, 4096) == -1  # not initialized
    assert e.initialize("127.0.0.1", "P2PHANDSHAKE", "nvlink", "") == -1
    assert e.initialize_ext("127.0.0.1", "x", "tcp", "", "zookeeper") == -1
    assert e.initialize("127.0.0.1", "P2PHANDSHAKE", "tcp", "") == 0
    assert e.initialize("127.0.0.1", "P2PHANDSHAKE", "tcp", "") == -1
    assert e._engine.transports == ["tcp"]
    assert e.get_rpc_port() > 0
    assert e.transfer_check_status(12345) == -1
    assert e.get_batch_transfer_status([12345]) == -1
    assert e.unregister_memory(0x1000) < 0
    assert e.free_managed_buffer(0x1000, 16) == -1
    assert e.get_first_buffer_address("127.0.0.1:1") == 0
    assert mooncake.TransferOpcode.READ == 0 and mooncake.TransferOpcode.WRITE == 1
    n = mooncake.TransferNotify("a", "b")
    assert (n.name, n.msg) == ("a", "b")
