"""PyInstaller runtime hook of the frozen Duplens: the first Python code the bundle runs.

Custom runtime hooks start before PyInstaller's own and before `duplens_entry.py`, so the
switches of `engine.offline` (no telemetry, the Hugging Face Hub offline) are set before
any hook or module can import onnxruntime, huggingface_hub or OpenVINO.
"""

import engine.offline  # noqa: F401
