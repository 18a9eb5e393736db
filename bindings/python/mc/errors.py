# SPDX-License-Identifier: Apache-2.0
"""mc's errors: one class per status of mc (src/ucs/status/status.h).

Every failed call raises an ``mc.Error`` subclass; ``.status`` is mc's
negative code and ``.status_name`` its name, and the message names both.
``TimeoutError`` is also Python's ``TimeoutError``; ``TransferError``
(a task of a batch did not complete) carries the batch's ``.tasks``.
"""

import builtins

#: mc's status codes and their names.
STATUS_NAMES = {
    -2: "NoResource",
    -3: "Unreachable",
    -4: "InvalidParam",
    -5: "IoError",
    -6: "Timeout",
    -7: "Canceled",
    -8: "Unsupported",
    -9: "NoMemory",
    -10: "NoDevice",
    -11: "NoElem",
    -12: "Busy",
    -13: "ConnectionReset",
    -14: "Exists",
    -15: "MessageTruncated",
    -16: "VersionMismatch",
    -17: "BadData",
    -18: "Rejected",
}


class Error(Exception):
    """A failed mc call: ``status`` (mc's negative code), ``status_name``."""

    status = -1

    def __init__(self, message, status=None):
        if status is not None:
            self.status = status
        self.status_name = STATUS_NAMES.get(self.status, "error")
        self.message = message
        super().__init__(f"{message} [{self.status_name}, {self.status}]")


def _status_class(name, code, *bases):
    return type(name + "Error", (Error,) + bases, {
        "status": code,
        "__doc__": f"mc status {name} ({code}).",
        "__module__": __name__,
    })


NoResourceError = _status_class("NoResource", -2)
UnreachableError = _status_class("Unreachable", -3)
InvalidParamError = _status_class("InvalidParam", -4, ValueError)
IoError = _status_class("Io", -5)
TimeoutError = _status_class("Timeout", -6, builtins.TimeoutError)  # noqa: A001
CanceledError = _status_class("Canceled", -7)
UnsupportedError = _status_class("Unsupported", -8)
NoMemoryError = _status_class("NoMemory", -9, MemoryError)
NoDeviceError = _status_class("NoDevice", -10)
NoElemError = _status_class("NoElem", -11, LookupError)
BusyError = _status_class("Busy", -12)
ConnectionResetError = _status_class("ConnectionReset", -13)  # noqa: A001
ExistsError = _status_class("Exists", -14)
MessageTruncatedError = _status_class("MessageTruncated", -15)
VersionMismatchError = _status_class("VersionMismatch", -16)
BadDataError = _status_class("BadData", -17)
RejectedError = _status_class("Rejected", -18)

_BY_STATUS = {c.status: c for c in (
    NoResourceError, UnreachableError, InvalidParamError, IoError, TimeoutError, CanceledError,
    UnsupportedError, NoMemoryError, NoDeviceError, NoElemError, BusyError, ConnectionResetError,
    ExistsError, MessageTruncatedError, VersionMismatchError, BadDataError, RejectedError)}


class TransferError(Error):
    """A task of a batch ended other than COMPLETED: ``tasks`` holds every
    task's ``mc.TaskStatus``; ``status`` is the first failed task's reason
    (Timeout, InvalidParam for INVALID, Canceled, else IoError)."""

    def __init__(self, message, status=-5, tasks=()):
        super().__init__(message, status)
        self.tasks = list(tasks)


def from_status(status, message):
    """The error of mc status ``status`` with ``message`` (the extension's
    one way of raising)."""
    cls = _BY_STATUS.get(status)
    return cls(message) if cls else Error(message, status)
