"""The environment that keeps every dependency quiet: no telemetry, no usage statistics, no
Hugging Face Hub look-ups unless the user asked for a hub model.

Applied when this module is imported, which `engine/__init__.py` does before anything else:
every entry point (the CLI, the window, selfcheck, the tests' conftest, the frozen app's
runtime hook) imports the engine first, so these switches are in place before onnxruntime,
huggingface_hub or OpenVINO read them. Most are read once, at the library's import: set
later, they do nothing. Which dependency does what, and the test that shows it stays quiet:
docs/architecture.md, "What the dependencies would send".
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# Switches that make a library record or send usage data. Forced: Duplens promises that
# nothing leaves the machine, whatever the environment says.
TELEMETRY_OFF = {
    # onnxruntime 1.32 on Linux and macOS: at import, a device id and an event queue (OS,
    # CPU, memory, container) in ~/.cache/Microsoft/DeveloperTools/.onnxruntime, for upload.
    "ORT_DISABLE_TELEMETRY": "1",
    # huggingface_hub (and transformers, datasets through it): usage pings, and library,
    # torch and AI-agent details in the user agent of any Hub request.
    "HF_HUB_DISABLE_TELEMETRY": "1",
    # NNCF (the openvino-int8 export): its usage events become a stub.
    "NNCF_CI": "1",
    # Ray (an optional extra): the cluster usage report sent at ray.init().
    "RAY_USAGE_STATS_ENABLED": "0",
}

# Defaults a user may override in the environment: quiet consoles, and the Hub offline
# (`hub_access` opens it only while loading a model the user named by its hub name).
QUIET_DEFAULTS = {
    "HF_HUB_OFFLINE": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
}

# OpenVINO's usage reporter (Google Analytics, on by default since openvino-telemetry 2024:
# `import openvino` writes ~/intel/openvino_ga_cid and looks up the collector's address).
# OpenVINO and NNCF fall back to their own stubs when it cannot be imported; a None entry
# in sys.modules makes every `import openvino_telemetry` fail.
BLOCKED_MODULES = ("openvino_telemetry",)

# What the user had set before Duplens changed anything: None when they set nothing.
_USER_HUB_OFFLINE = os.environ.get("HF_HUB_OFFLINE")
_hub_lock = threading.Lock()


def apply() -> None:
    """Set the switches above in this process (and so in every child it starts)."""
    os.environ.update(TELEMETRY_OFF)
    for name, value in QUIET_DEFAULTS.items():
        os.environ.setdefault(name, value)
    for module in BLOCKED_MODULES:
        sys.modules.setdefault(module, None)  # type: ignore[arg-type]


def onnxruntime():
    """`import onnxruntime`, with its telemetry events switched off too (on Windows they go
    to an ETW provider that ORT_DISABLE_TELEMETRY does not govern)."""
    import onnxruntime as ort

    ort.disable_telemetry_events()
    return ort


@contextmanager
def hub_access() -> Iterator[None]:
    """Let huggingface_hub reach the Hub while inside: for a model the user asked for by its
    hub name and that is not in the cache yet. A user who set HF_HUB_OFFLINE themselves
    keeps their setting. One download at a time, so the switch is put back reliably."""
    if _USER_HUB_OFFLINE is not None:
        yield
        return
    from huggingface_hub import constants

    with _hub_lock:
        before = constants.HF_HUB_OFFLINE
        constants.HF_HUB_OFFLINE = False
        try:
            yield
        finally:
            constants.HF_HUB_OFFLINE = before


apply()
