# SPDX-License-Identifier: Apache-2.0
"""mc: the Transfer Engine of mc from Python.

    import mc
    engine = mc.TransferEngine("P2PHANDSHAKE", "127.0.0.1")
    buf = bytearray(1 << 20)
    reg = engine.register_memory(buf)             # no copy; bytes: WRITE source only
    peer = engine.open_segment("10.0.0.2:15123")
    remote = peer.buffers()[0].address
    engine.transfer([mc.Request(mc.WRITE, reg, peer, remote)], timeout=5)

Memory comes from the buffer protocol (bytes, bytearray, memoryview, numpy),
an int address with a length, or an object with ``__cuda_array_interface__``
or ``data_ptr()``. Errors are ``mc.Error`` subclasses (``mc.errors``); every
call that may block releases the GIL. ``mc.config`` reads and sets MC_*
knobs; ``mc.info()`` is what ``mc_info -m -d`` says; ``mc.mooncake`` has
Mooncake's ``TransferEngine`` class; ``python3 -m mc.bench`` measures.
"""

import json as _json
from typing import NamedTuple

from . import errors
from .errors import (  # noqa: F401
    Error, TransferError, InvalidParamError, NoElemError, BusyError, TimeoutError,
    UnsupportedError, UnreachableError, RejectedError, MessageTruncatedError,
    NoResourceError, CanceledError, IoError,
)
from ._mc import (  # noqa: F401
    TransferEngine, Registration, Segment, SegmentBuffer, Request, Batch,
    Opcode, READ, WRITE, TaskState, TaskStatus,
)
from . import config  # noqa: F401


class Notification(NamedTuple):
    """A notification this engine took: ``sender`` is the sending engine's
    segment name as mc proved it, never a field the sender wrote."""
    sender: str
    name: str
    message: bytes


def info():
    """What ``mc_info -m -d --json`` says, as data: ``{"modules": ...,
    "devices": ..., "build": ...}`` (the module search path and every module
    with its load state; every component, memory domain and transport with
    its attributes; configure's findings)."""
    from . import _mc
    return {what: _json.loads(_mc.info_json(what)) for what in ("modules", "devices", "build")}


__all__ = [
    "TransferEngine", "Registration", "Segment", "SegmentBuffer", "Request", "Batch",
    "Opcode", "READ", "WRITE", "TaskState", "TaskStatus", "Notification",
    "info", "config", "errors", "Error", "TransferError",
]
