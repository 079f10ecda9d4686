"""Which backend runs a model: the one place the rule is decided.

Several moments ask, and they asked their own copies of the rule before (the project's
model service, the window's model loaded before any project opens, the command line's encode
options, a version's fast form after training); the copies could disagree, and a CPU class
added to one would have missed the others. Every caller now asks here (the command line's
options through `ActiveModel.choose`):

- `for_new_model`: a model chosen now (a new project's default model, the model the window
  loads before a project opens, `--model`): a named backend as named; "auto" the fastest
  backend that passed the quality gate on the device (`default_backend`) for the bundled
  model, whose gate was measured; torch for any other model, whose gate was not.
- `for_stored`: a model the project already has embeddings of: the backend that keeps them
  valid (`backends.backend_for_row`).
- `for_trained_version`: the fast form a version fine-tuned now is converted to.

`default_backend` is the CPU-class rule itself (what each kind of processor gets).
"""

from __future__ import annotations

from engine.encoding import backends
from engine.encoding.backends import DEFAULT_BACKEND, backend_for_row, is_auto
from engine.encoding.model_spec import DEFAULT_MODEL, pick_device


def default_backend(device: str) -> str:
    """The backend a new project encodes with on `device` (a resolved one: "cpu", "cuda",
    "cuda:1", "mps"): on the CPU `CPU_DEFAULT_BACKEND` when its packages are installed and
    the CPU runs it (`unsupported_here`), else torch; on a GPU torch (in fp16 on CUDA,
    `model_spec.load_model`). The CPU's classes (bf16 units or not) are told apart by
    `backends.unsupported_here`."""
    if device != "cpu":
        return DEFAULT_BACKEND
    # Read from the registry at each call: the gate's verdict (`CPU_DEFAULT_BACKEND`) and
    # what is installed are the registry's facts; which of them applies is decided here.
    chosen = backends.BACKENDS[backends.CPU_DEFAULT_BACKEND]
    usable = not backends.missing_modules(chosen) and backends.unsupported_here(chosen) is None
    return chosen.name if usable else DEFAULT_BACKEND


def for_new_model(model: str | None, preference: str | None, device: str | None) -> str:
    """The backend a model chosen now is loaded with (`model` None or "": the bundled one),
    by the user's `preference` and `device` preference ("auto" or a device name)."""
    if not is_auto(preference):
        return str(preference)
    if model not in (None, "", DEFAULT_MODEL):
        return DEFAULT_BACKEND
    return default_backend(pick_device(device or "auto"))


def for_stored(fingerprint: str, preference: str | None) -> str:
    """The backend that serves a model whose embeddings the project stores under
    `fingerprint`, keeping them valid."""
    return backend_for_row(fingerprint, None if is_auto(preference) else preference).name


def for_trained_version(preference: str | None, device: str | None) -> str | None:
    """The backend a version trained now is converted to: the CPU's default, when the
    backend is left to Duplens ("auto") and models run on the CPU; None when versions stay
    with torch (a backend the user named, a GPU, a CPU the default does not run on)."""
    if not is_auto(preference) or pick_device(device or "auto") != "cpu":
        return None
    chosen = default_backend("cpu")
    return None if chosen == DEFAULT_BACKEND else chosen

