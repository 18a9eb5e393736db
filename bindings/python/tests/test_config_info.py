# SPDX-License-Identifier: Apache-2.0
"""mc.config: mc's own checks and messages; mc.info(): mc_info's data."""

import json
import os
import shutil
import subprocess
import sys

import pytest

import mc


@pytest.fixture
def clean_env():
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def test_set_checks_with_mcs_tables(clean_env):
    with pytest.raises(mc.InvalidParamError) as e:
        mc.config.set("MC_TRANSFER_TIMEOUT", "soon")
    # The table's sentence: the variable, the value, where it came from.
    assert "MC_TRANSFER_TIMEOUT" in str(e.value) and "'soon'" in str(e.value)
    assert "mc.config" in str(e.value)
    with pytest.raises(mc.NoElemError, match="unknown configuration variable MC_TRANSFER_TIMOUT, "
                                               "did you mean MC_TRANSFER_TIMEOUT"):
        mc.config.set("MC_TRANSFER_TIMOUT", "1s")
    with pytest.raises(mc.InvalidParamError, match="start with MC_"):
        mc.config.set("TRANSFER_TIMEOUT", "1s")
    assert "MC_TRANSFER_TIMEOUT" not in os.environ
    mc.config.set("MC_TRANSFER_TIMEOUT", "7s")
    assert os.environ["MC_TRANSFER_TIMEOUT"] == "7s"
    assert mc.config.get("MC_TRANSFER_TIMEOUT") == ("7s", "environment")
    mc.config.unset("MC_TRANSFER_TIMEOUT")
    assert mc.config.get("MC_TRANSFER_TIMEOUT")[1] == "default"


def test_set_applies_to_the_next_engine_and_is_refused_while_one_runs(clean_env):
    mc.config.set("MC_TLS", "tcp")
    with mc.TransferEngine("P2PHANDSHAKE", "127.0.0.1") as engine:
        assert engine.transports == ["tcp"]
        with pytest.raises(mc.BusyError, match="open"):
            mc.config.set("MC_TLS", "sm")
    mc.config.unset("MC_TLS")
    with mc.TransferEngine("P2PHANDSHAKE", "127.0.0.1", config={"MC_TLS": "tcp"}) as engine:
        assert engine.transports == ["tcp"]
    with pytest.raises(mc.InvalidParamError, match="MC_MAX_EP_PER_CTX"):
        mc.TransferEngine("P2PHANDSHAKE", "127.0.0.1", config={"MC_MAX_EP_PER_CTX": "many"})


def test_knobs_are_mc_infos():
    knobs = mc.config.knobs(full=True)
    names = {k["name"] for t in knobs["tables"] for k in t["knobs"]}
    assert {"MC_TLS", "MC_TRANSFER_TIMEOUT", "MC_MIN_RPC_PORT", "MC_LOG_LEVEL"} <= names
    mc_info = os.path.join(os.environ.get("PYTEST_MC_BUILD_DIR", ""), "src/tools/info/mc_info")
    if os.access(mc_info, os.X_OK):
        out = json.loads(subprocess.run([mc_info, "-f", "--json"], check=True, capture_output=True,
                                        text=True).stdout)
        theirs = {k["name"] for t in out["tables"] for k in t["knobs"]}
        assert names == theirs


def test_info_is_mc_info_d_m():
    info = mc.info()
    assert set(info) == {"modules", "devices", "build"}
    modules = {m["name"]: m["state"] for m in info["modules"]["modules"]}
    assert modules.get("tcp") == "loaded", modules
    comps = {c["name"] for c in info["devices"]["components"]}
    assert {"tcp", "self"} <= comps
    assert info["build"]["version"]
    mc_info = os.path.join(os.environ.get("PYTEST_MC_BUILD_DIR", ""), "src/tools/info/mc_info")
    if os.access(mc_info, os.X_OK):
        out = subprocess.run([mc_info, "-m", "--json"], check=True, capture_output=True,
                             text=True).stdout
        theirs = {m["name"]: m["state"] for m in json.loads(out)["modules"]}
        assert theirs == modules


def _engine_log(level):
    """stderr of a fresh interpreter that starts an engine with MC_LOG_LEVEL
    set: an embedding program calls no mc setup, so the first log line is
    where the level is read."""
    code = ("import mc\n"
            "with mc.TransferEngine('P2PHANDSHAKE', '127.0.0.1', config={'MC_TLS': 'tcp'}):\n"
            "    pass\n")
    env = dict(os.environ, MC_LOG_LEVEL=level)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_an_embedding_process_honours_mc_log_level():
    # "loaded module ..." is a debug line, "transfer engine: ..." info lines.
    quiet, loud = _engine_log("error"), _engine_log("debug")
    assert "loaded module uct/tcp" not in quiet and "transfer engine" not in quiet, quiet
    assert "loaded module uct/tcp" in loud, loud
    bad = _engine_log("chatty")
    assert "invalid value 'chatty' for MC_LOG_LEVEL" in bad and "logging at warn" in bad, bad
    assert "loaded module" not in bad, bad
