# SPDX-License-Identifier: Apache-2.0
"""MC_* knobs from Python, before an engine starts.

``set(name, value)`` checks the value with mc's own tables and parsers (the
message is the one the engine would log) and puts it in this process's
environment, where every engine started later reads it. ``get(name)`` is
the value in force and where it came from; ``knobs()`` lists them all, as
``mc_info -c --json`` does. For one engine only, give
``mc.TransferEngine(..., config={...})``.
"""

import json as _json
import os as _os

from . import _mc
from .errors import BusyError


def _refuse_if_running(what):
    n = _mc.live_engines()
    if n:
        raise BusyError(f"mc.config.{what}: {n} engine(s) of this process are open; "
                        "knobs are read when an engine starts (close them first, or give "
                        "TransferEngine(config=...))")


def check(name, value):
    """Raises as set() would, changing nothing."""
    _mc.config_check(name, str(value))


def set(name, value):  # noqa: A001 - mc.config.set reads as intended
    """Sets knob ``name`` to ``value`` (text, as in the environment) for the
    engines started after: NoElemError for an unknown name (with mc's
    suggestion), InvalidParamError for a bad value, BusyError while an
    engine of this process is open."""
    _refuse_if_running("set")
    value = str(value)
    _mc.config_check(name, value)
    _os.environ[name] = value


def unset(name):
    """Removes ``name`` from the environment (files and defaults apply again)."""
    _refuse_if_running("unset")
    _os.environ.pop(name, None)


def knobs(full=False):
    """Every knob: ``{"files": [...], "tables": [{"name", "knobs": [{"name",
    "value", "origin", "default"[, "syntax", "doc"]}]}], "unknown": [...]}``."""
    return _json.loads(_mc.config_json(full))


def get(name):
    """``(value, origin)`` of knob ``name`` as an engine would read it now
    (origin: "default", "environment" or "<file>:<line>"); NoElemError for
    a name no table declares."""
    for table in knobs()["tables"]:
        for k in table["knobs"]:
            if k["name"] == name:
                return k["value"], k["origin"]
    from .errors import NoElemError
    raise NoElemError(f"unknown configuration variable {name}")
