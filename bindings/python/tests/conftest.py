# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the mc package's tests: a second process (peer.py), and the
metadata services started for the test on free ports: etcd, redis-server
and mc_metadata_server (PYTEST_MC_BUILD_DIR names the build tree that has it).
A missing program fails the test, naming its package."""

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import pytest

import mc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from peer import pattern  # noqa: E402

#: What a test waits at most for anything (a guard against hangs, never a
#: measurement).
HANG_GUARD = 60


def free_port():
    """A TCP port nothing listens on, below the kernel's ephemeral range so
    that no outgoing connection takes it between the pick and the listen
    (as test/integration/free_port.sh)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    lo, hi = (20000, low) if low > 21024 else (61000, 65000)
    for _ in range(200):
        port = random.randrange(lo, hi)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free TCP port found in 200 tries")


class Peer:
    """peer.py in a process of its own."""

    def __init__(self, metadata, local="127.0.0.1", size=1 << 20, config=None):
        args = [sys.executable, os.path.join(HERE, "peer.py"), metadata, local, str(size)]
        args += [f"{k}={v}" for k, v in (config or {}).items()]
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True, bufsize=1)
        # A peer that hangs is killed, so that a read of its answers ends.
        self.watchdog = threading.Timer(2 * HANG_GUARD, self.proc.kill)
        self.watchdog.start()
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "READY":
            self.proc.kill()
            self.log.seek(0)
            raise RuntimeError("peer did not start: " + self.log.read().decode(errors="replace"))
        self.segment, self.address, self.length = line[1], int(line[2]), int(line[3])

    def ask(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def lines(self, n):
        return [self.proc.stdout.readline().strip() for _ in range(n)]

    def stop(self):
        self.watchdog.cancel()
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(HANG_GUARD)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc.wait()

    def kill(self, sig=signal.SIGKILL):
        self.proc.send_signal(sig)


@pytest.fixture
def peer_factory():
    peers = []

    def make(*args, **kwargs):
        p = Peer(*args, **kwargs)
        peers.append(p)
        return p
    yield make
    for p in peers:
        if p.proc.poll() is None:
            p.kill(signal.SIGCONT)
        p.stop()


def _start(tmp_path, program, package, args, ready):
    path = shutil.which(program)
    if path is None:
        pytest.fail(f"{program} is not installed (package {package}; contrib/install-deps.sh installs it)")
    log = open(tmp_path / f"{os.path.basename(program)}.log", "wb")
    proc = subprocess.Popen([path] + args, stdout=log, stderr=log)
    deadline = time.monotonic() + 30
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            log.close()
            pytest.fail(f"{program} did not answer: " + (tmp_path / f"{os.path.basename(program)}.log").read_text())
        time.sleep(0.05)
    return proc, log


def _http_ok(url, want=None):
    try:
        with urllib.request.urlopen(url, timeout=1) as r:
            return r.status == 200 and (want is None or want in r.read().decode())
    except OSError:
        return False


def _redis_ok(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


@pytest.fixture
def metadata(request, tmp_path):
    """The metadata string of the backend the test is parametrized with:
    p2p, http (mc_metadata_server), etcd, redis."""
    kind = request.param
    if kind == "p2p":
        yield "P2PHANDSHAKE"
        return
    if kind == "http":
        port = free_port()
        server = os.path.join(os.environ.get("PYTEST_MC_BUILD_DIR", ""), "src/tools/metadata/mc_metadata_server")
        if not os.access(server, os.X_OK):
            pytest.fail(f"no {server}: set PYTEST_MC_BUILD_DIR to a build tree with src/tools/metadata built")
        proc, log = _start(tmp_path, server, "mc (src/tools/metadata)",
                           ["--host", "127.0.0.1", "--port", str(port)],
                           lambda: _http_ok(f"http://127.0.0.1:{port}/health"))
        conn = f"http://127.0.0.1:{port}/metadata"
    elif kind == "etcd":
        client, peer = free_port(), free_port()
        c, p = f"http://127.0.0.1:{client}", f"http://127.0.0.1:{peer}"
        proc, log = _start(tmp_path, "etcd", "etcd-server",
                           ["--name", "mc-py-test", "--data-dir", str(tmp_path / "etcd"),
                            "--listen-client-urls", c, "--advertise-client-urls", c,
                            "--listen-peer-urls", p, "--initial-advertise-peer-urls", p,
                            "--initial-cluster", f"mc-py-test={p}", "--initial-cluster-state", "new"],
                           lambda: _http_ok(c + "/health", "true"))
        conn = f"etcd://127.0.0.1:{client}"
    elif kind == "redis":
        port = free_port()
        proc, log = _start(tmp_path, "redis-server", "redis-server",
                           ["--port", str(port), "--bind", "127.0.0.1", "--save", "",
                            "--appendonly", "no", "--dir", str(tmp_path), "--daemonize", "no"],
                           lambda: _redis_ok(port))
        conn = f"redis://127.0.0.1:{port}"
    else:
        raise ValueError(kind)
    yield conn
    proc.kill()
    proc.wait()
    log.close()


BACKENDS = ["p2p", "http", "etcd", "redis"]


def local_name(metadata):
    """The local_server_name for a backend: a store needs a unique name."""
    return "127.0.0.1" if metadata == "P2PHANDSHAKE" else f"127.0.0.1:{free_port()}"


@pytest.fixture
def engine():
    e = mc.TransferEngine("P2PHANDSHAKE", "127.0.0.1")
    yield e
    e.close()


__all__ = ["Peer", "pattern", "free_port", "HANG_GUARD", "BACKENDS", "local_name"]
