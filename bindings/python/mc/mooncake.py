# SPDX-License-Identifier: Apache-2.0
"""Mooncake's Python ``TransferEngine`` (``mooncake.engine``) over mc.

A program written for ``from mooncake.engine import TransferEngine`` runs
after changing that line to ``from mc.mooncake import TransferEngine``: the
same method names, arguments, defaults and int return codes (0, or a
negative value: mc's status, or -1 for a transfer whose task failed, as
Mooncake). What mc does differently:

- ``protocol`` maps to mc's transports as Mooncake's ``installTransport``
  does in mc's C and C++ APIs (tcp: tcp; rdma: rc_verbs and rc_mlx5;
  nvmeof: none, files open on demand); other protocols fail ``initialize``.
  ``device_name`` (with rdma) is ``MC_IB_DEVICES`` for this engine.
- ``metadata_server`` is any of mc's strings (P2PHANDSHAKE, etcd://host:port
  or host:port, redis://, http://); ``initialize_ext``'s ``metadata_type``
  adds the scheme to a server given without one.
- ``allocate_managed_buffer`` maps and registers a buffer per call (no buddy
  allocator); ``write_bytes_to_buffer`` / ``read_bytes_from_buffer`` only
  touch memory registered with this engine (else -1 / ValueError).
- ``transport_hint`` is accepted and not read (Mooncake's TENT only).
- Failures are logged on the ``mc.mooncake`` logger.
"""

import ctypes
import enum
import logging
import mmap

from . import _mc
from .errors import Error, InvalidParamError, NoElemError, TransferError
from ._mc import READ, WRITE, Request, TaskState
from ._mc import TransferEngine as _Engine

_log = logging.getLogger("mc.mooncake")
_RUNNING = (TaskState.WAITING, TaskState.PENDING)


class TransferOpcode(enum.IntEnum):
    """Mooncake's opcodes: READ (remote to local) and WRITE."""
    READ = 0
    WRITE = 1


class TransferNotify:
    """A notification: ``name`` and ``msg`` (str)."""

    def __init__(self, name="", msg=""):
        self.name = name
        self.msg = msg

    def __repr__(self):
        return f"TransferNotify({self.name!r}, {self.msg!r})"


def _opcode(opcode):
    return READ if int(opcode) == TransferOpcode.READ else WRITE


class TransferEngine:
    """Mooncake's ``mooncake.engine.TransferEngine`` over ``mc.TransferEngine``."""

    def __init__(self):
        self._engine = None
        self._segments = {}
        self._regs = {}       # address -> mc.Registration
        self._managed = {}    # address -> mmap
        self._batches = {}    # batch id -> mc.Batch

    # -- starting ---------------------------------------------------------

    def initialize(self, local_hostname, metadata_server, protocol, device_name):
        """Starts the engine: 0, or negative."""
        if self._engine is not None:
            _log.error("initialize: called twice")
            return -1
        tls = _mc.mooncake_protocol_tls(protocol)
        if tls is None:
            _log.error("initialize: protocol '%s' is not offered by mc (tcp, rdma, nvmeof)", protocol)
            return -1
        config = {}
        if tls:
            config["MC_TLS"] = tls
        if device_name and protocol == "rdma":
            config["MC_IB_DEVICES"] = device_name
        try:
            self._engine = _Engine(metadata_server, local_hostname, config=config)
        except Error as e:
            _log.error("initialize: %s", e)
            return e.status
        return 0

    def initialize_ext(self, local_hostname, metadata_server, protocol, device_name, metadata_type):
        """initialize(), with the metadata type (etcd, redis, http, p2p) as the
        scheme of a ``metadata_server`` given without one."""
        conn = metadata_server
        if "://" not in metadata_server and metadata_server != "P2PHANDSHAKE":
            if metadata_type in ("p2p", "P2PHANDSHAKE"):
                conn = "P2PHANDSHAKE"
            elif metadata_type in ("etcd", "redis", "http"):
                conn = f"{metadata_type}://{metadata_server}"
            else:
                _log.error("initialize_ext: metadata_type '%s' is not etcd, redis, http or p2p",
                           metadata_type)
                return -1
        return self.initialize(local_hostname, conn, protocol, device_name)

    def get_rpc_port(self):
        """The RPC listener's port; -1 before initialize."""
        return self._engine.rpc_port if self._engine else -1

    def get_local_ip_and_port(self):
        return self._engine.local_ip_and_port if self._engine else ""

    # -- memory -----------------------------------------------------------

    def _call(self, what, fn, *args):
        if self._engine is None:
            _log.error("%s: initialize was not called", what)
            return -1
        try:
            fn(*args)
        except Error as e:
            _log.error("%s: %s", what, e)
            return e.status
        return 0

    def register_memory(self, buffer_addr, capacity):
        def reg():
            self._regs[int(buffer_addr)] = self._engine.register_memory(int(buffer_addr), int(capacity))
        return self._call("register_memory", reg)

    def unregister_memory(self, buffer_addr):
        def unreg():
            reg = self._regs.get(int(buffer_addr))
            if reg is None:
                raise NoElemError(f"nothing registered at {int(buffer_addr):#x}")
            reg.unregister()
            del self._regs[int(buffer_addr)]
        return self._call("unregister_memory", unreg)

    def batch_register_memory(self, buffer_addresses, capacities):
        if len(buffer_addresses) != len(capacities):
            _log.error("batch_register_memory: %d addresses, %d capacities",
                       len(buffer_addresses), len(capacities))
            return -1
        for addr, cap in zip(buffer_addresses, capacities):
            rc = self.register_memory(addr, cap)
            if rc != 0:
                return rc
        return 0

    def batch_unregister_memory(self, buffer_addresses):
        rc = 0
        for addr in buffer_addresses:
            rc = self.unregister_memory(addr) or rc
        return rc

    def allocate_managed_buffer(self, length):
        """A buffer of ``length`` bytes, registered: its address, or 0."""
        try:
            buf = mmap.mmap(-1, int(length))
        except (OSError, ValueError) as e:
            _log.error("allocate_managed_buffer(%s): %s", length, e)
            return 0
        addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
        if self.register_memory(addr, int(length)) != 0:
            buf.close()
            return 0
        self._managed[addr] = buf
        return addr

    def free_managed_buffer(self, buffer_addr, length):
        buf = self._managed.get(int(buffer_addr))
        if buf is None or len(buf) != int(length):
            _log.error("free_managed_buffer: no managed buffer of %s B at %#x", length, int(buffer_addr))
            return -1
        rc = self.unregister_memory(buffer_addr)
        if rc != 0:
            return rc
        del self._managed[int(buffer_addr)]
        buf.close()
        return 0

    def _registered(self, addr, length):
        for reg in self._regs.values():
            if reg.address <= addr and addr + length <= reg.address + reg.length:
                return True
        return False

    def write_bytes_to_buffer(self, dest_address, src_ptr, length):
        """Copies ``length`` bytes of ``src_ptr`` to registered memory: 0 or -1."""
        if length > len(src_ptr) or not self._registered(int(dest_address), int(length)):
            _log.error("write_bytes_to_buffer: %d B at %#x is not inside memory registered here "
                       "(or past the %d B given)", length, int(dest_address), len(src_ptr))
            return -1
        ctypes.memmove(int(dest_address), bytes(src_ptr[:length]), int(length))
        return 0

    def read_bytes_from_buffer(self, source_address, length):
        """``length`` bytes of registered memory at ``source_address``."""
        if not self._registered(int(source_address), int(length)):
            raise InvalidParamError(f"read_bytes_from_buffer: {length} B at {int(source_address):#x} "
                                    "is not inside memory registered with this engine")
        return ctypes.string_at(int(source_address), int(length))

    def get_first_buffer_address(self, segment_name):
        """The address of the segment's first buffer; 0 when unknown or empty."""
        try:
            bufs = self._segment(segment_name).buffers()
        except Error as e:
            _log.error("get_first_buffer_address('%s'): %s", segment_name, e)
            return 0
        return bufs[0].address if bufs else 0

    # -- transfers --------------------------------------------------------

    def _segment(self, name):
        if self._engine is None:
            raise InvalidParamError("initialize was not called")
        seg = self._segments.get(name)
        if seg is None:
            seg = self._segments[name] = self._engine.open_segment(name)
        return seg

    def _requests(self, target, buffers, peers, lengths, opcode):
        if not (len(buffers) == len(peers) == len(lengths)) or not buffers:
            raise InvalidParamError(f"{len(buffers)} buffers, {len(peers)} peer addresses, "
                                    f"{len(lengths)} lengths")
        seg = self._segment(target)
        op = _opcode(opcode)
        return [Request(op, int(b), seg, int(p), int(n)) for b, p, n in zip(buffers, peers, lengths)]

    def _sync(self, what, target, buffers, peers, lengths, opcode, notify=None):
        try:
            reqs = self._requests(target, buffers, peers, lengths, opcode)
            note = (notify.name, notify.msg) if notify is not None else None
            self._engine.transfer(reqs, notify=note)
        except TransferError as e:
            _log.error("%s to '%s': %s", what, target, e)
            return -1
        except Error as e:
            _log.error("%s to '%s': %s", what, target, e)
            return e.status
        return 0

    def transfer_sync_write(self, target_hostname, buffer, peer_buffer_address, length,
                            transport_hint=""):
        return self._sync("transfer_sync_write", target_hostname, [buffer], [peer_buffer_address],
                          [length], TransferOpcode.WRITE)

    def transfer_sync_read(self, target_hostname, buffer, peer_buffer_address, length,
                           transport_hint=""):
        return self._sync("transfer_sync_read", target_hostname, [buffer], [peer_buffer_address],
                          [length], TransferOpcode.READ)

    def transfer_sync(self, target_hostname, buffer, peer_buffer_address, length, opcode,
                      notify=None, transport_hint=""):
        return self._sync("transfer_sync", target_hostname, [buffer], [peer_buffer_address],
                          [length], opcode, notify)

    def batch_transfer_sync_write(self, target_hostname, buffers, peer_buffer_addresses, lengths,
                                  transport_hint=""):
        return self._sync("batch_transfer_sync_write", target_hostname, buffers,
                          peer_buffer_addresses, lengths, TransferOpcode.WRITE)

    def batch_transfer_sync_read(self, target_hostname, buffers, peer_buffer_addresses, lengths,
                                 transport_hint=""):
        return self._sync("batch_transfer_sync_read", target_hostname, buffers,
                          peer_buffer_addresses, lengths, TransferOpcode.READ)

    def batch_transfer_sync(self, target_hostname, buffers, peer_buffer_addresses, lengths, opcode,
                            notify=None, transport_hint=""):
        return self._sync("batch_transfer_sync", target_hostname, buffers, peer_buffer_addresses,
                          lengths, opcode, notify)

    def _submit(self, what, target, buffers, peers, lengths, opcode, failed):
        try:
            reqs = self._requests(target, buffers, peers, lengths, opcode)
            batch = self._engine.allocate_batch(len(reqs))
            batch.submit(reqs)
        except Error as e:
            _log.error("%s to '%s': %s", what, target, e)
            return failed if failed is not None else e.status
        self._batches[batch.id] = batch
        return batch.id

    def batch_transfer_async_write(self, target_hostname, buffers, peer_buffer_addresses, lengths,
                                   transport_hint=""):
        """A batch id for get_batch_transfer_status, or 0 on failure."""
        return self._submit("batch_transfer_async_write", target_hostname, buffers,
                            peer_buffer_addresses, lengths, TransferOpcode.WRITE, 0)

    def batch_transfer_async_read(self, target_hostname, buffers, peer_buffer_addresses, lengths,
                                  transport_hint=""):
        return self._submit("batch_transfer_async_read", target_hostname, buffers,
                            peer_buffer_addresses, lengths, TransferOpcode.READ, 0)

    def batch_transfer_async(self, target_hostname, buffers, peer_buffer_addresses, lengths, opcode,
                             transport_hint=""):
        return self._submit("batch_transfer_async", target_hostname, buffers,
                            peer_buffer_addresses, lengths, opcode, 0)

    def transfer_submit_write(self, target_hostname, buffer, peer_buffer_address, length,
                              transport_hint=""):
        """A batch id for transfer_check_status, or negative."""
        return self._submit("transfer_submit_write", target_hostname, [buffer],
                            [peer_buffer_address], [length], TransferOpcode.WRITE, None)

    def get_batch_transfer_status(self, batch_ids):
        """Waits for the batches: 0 when every task completed, else -1."""
        rc = 0
        for bid in batch_ids:
            batch = self._batches.pop(bid, None)
            if batch is None:
                _log.error("get_batch_transfer_status: unknown batch %s", bid)
                rc = -1
                continue
            try:
                batch.wait()
            except Error as e:
                _log.error("get_batch_transfer_status: batch %s: %s", bid, e)
                rc = -1
            batch.free()
        return rc

    def transfer_check_status(self, batch_id):
        """1 completed, 0 running, -1 failed, -2 timed out (then the batch is freed)."""
        batch = self._batches.get(batch_id)
        if batch is None:
            _log.error("transfer_check_status: unknown batch %s", batch_id)
            return -1
        states = [s.state for s in batch.status()]
        if any(s in _RUNNING for s in states):
            return 0
        del self._batches[batch_id]
        batch.free()
        if all(s == TaskState.COMPLETED for s in states):
            return 1
        return -2 if TaskState.TIMEOUT in states else -1

    # -- notifications ----------------------------------------------------

    def get_notifies(self):
        """The notifications received so far, as TransferNotify."""
        if self._engine is None:
            return []
        return [TransferNotify(n.name, n.message.decode("utf-8", "surrogateescape"))
                for n in self._engine.get_notifies()]

