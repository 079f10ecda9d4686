"""`engine.offline`: importing the engine switches every dependency's telemetry off before
any of them is imported, whatever the environment says, and keeps the user's own choices
where they are only defaults. (tests/test_privacy.py shows the effect under strace.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.required import unavailable

ROOT = Path(__file__).resolve().parents[2]

# How `openvino_telemetry` stands: "blocked" (a None entry in sys.modules, engine.offline's
# doing: every import of it fails), "importable" or "missing" (not installed: no proof of
# anything, which is why the block is also tested where the package is installed).
PROBE = """
import importlib.util, json, os, sys
{first}
import huggingface_hub.constants as hub
if "openvino_telemetry" in sys.modules and sys.modules["openvino_telemetry"] is None:
    try:
        import openvino_telemetry
        telemetry = "importable"
    except ImportError:
        telemetry = "blocked"
else:
    found = importlib.util.find_spec("openvino_telemetry") is not None
    telemetry = "importable" if found else "missing"
names = ("ORT_DISABLE_TELEMETRY", "HF_HUB_DISABLE_TELEMETRY", "NNCF_CI",
         "RAY_USAGE_STATS_ENABLED", "HF_HUB_OFFLINE", "TRANSFORMERS_VERBOSITY")
print(json.dumps({{"env": {{n: os.environ.get(n) for n in names}},
                  "hub_offline": hub.HF_HUB_OFFLINE, "telemetry_off": hub.HF_HUB_DISABLE_TELEMETRY,
                  "openvino_telemetry": telemetry,
                  "onnxruntime_before": "onnxruntime" in sys.modules}}))
"""


def probe(first: str, **env: str) -> dict:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("ORT_", "HF_", "NNCF_", "RAY_", "TRANSFORMERS_"))}
    proc = subprocess.run([sys.executable, "-c", PROBE.format(first=first)], text=True,
                          capture_output=True, env={**clean, "PYTHONPATH": str(ROOT), **env},
                          timeout=120, check=True)
    return json.loads(proc.stdout)


def test_every_entry_point_package_switches_telemetry_off_first():
    for first in ("engine", "engine.cli", "desktop_app"):
        found = probe(f"import {first}")
        assert found["env"] == {"ORT_DISABLE_TELEMETRY": "1",
                                "HF_HUB_DISABLE_TELEMETRY": "1", "NNCF_CI": "1",
                                "RAY_USAGE_STATS_ENABLED": "0", "HF_HUB_OFFLINE": "1",
                                "TRANSFORMERS_VERBOSITY": "error"}, first
        assert found["hub_offline"] and found["telemetry_off"], first
        assert found["openvino_telemetry"] == "blocked", first
        assert not found["onnxruntime_before"], first


def test_openvino_telemetry_is_there_to_be_blocked():
    """The block above proves something only where OpenVINO's reporter is installed (the
    openvino extra brings it): without the engine it imports, with the engine it does not.
    CI installs the extra and requires this (DUPLENS_REQUIRE_OPENVINO=1)."""
    if probe("pass")["openvino_telemetry"] != "importable":
        unavailable("OPENVINO", "openvino_telemetry is not installed (pip install "
                                "'duplens[openvino]'), so its block is not shown to work")
    assert probe("import engine")["openvino_telemetry"] == "blocked"
    import_after = probe("import engine\nimport openvino")
    assert import_after["openvino_telemetry"] == "blocked"


def test_telemetry_switches_are_forced_and_defaults_are_the_users():
    found = probe("import engine", ORT_DISABLE_TELEMETRY="0", HF_HUB_DISABLE_TELEMETRY="0",
                  RAY_USAGE_STATS_ENABLED="1", HF_HUB_OFFLINE="0",
                  TRANSFORMERS_VERBOSITY="info")
    assert found["env"]["ORT_DISABLE_TELEMETRY"] == "1"
    assert found["env"]["HF_HUB_DISABLE_TELEMETRY"] == "1"
    assert found["env"]["RAY_USAGE_STATS_ENABLED"] == "0"
    assert found["env"]["HF_HUB_OFFLINE"] == "0" and not found["hub_offline"]
    assert found["env"]["TRANSFORMERS_VERBOSITY"] == "info"


def test_the_frozen_apps_runtime_hook_switches_telemetry_off():
    """PyInstaller runs custom runtime hooks before its own and before the entry script;
    the spec names this one, and run as a script it leaves what importing the engine does."""
    hook = ROOT / "packaging" / "rthook_offline.py"
    spec = (ROOT / "packaging" / "duplens.spec").read_text("utf-8")
    assert f'runtime_hooks=[str(HERE / "{hook.name}")]' in spec
    found = probe(f"import runpy; runpy.run_path({str(hook)!r})")
    assert found["env"]["ORT_DISABLE_TELEMETRY"] == "1" and found["hub_offline"]
    assert found["openvino_telemetry"] == "blocked"
