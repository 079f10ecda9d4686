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

`default_backend` is the CPU-class rule itself (what each kind of processor gets:
`backends.CPU_CLASS_DEFAULTS` by `cpu_features.cpu_class`, and where the CPU's vendor was
measured to differ, `backends.VENDOR_CLASS_DEFAULTS`).
"""

from __future__ import annotations

from engine.encoding import backends
from engine.encoding.backends import DEFAULT_BACKEND, is_auto
from engine.encoding.cpu_features import cpu_class, cpu_flags, cpu_vendor
from engine.encoding.model_spec import DEFAULT_MODEL, pick_device

# The classes benchmarks/cpu_classes.py measured (the others keep torch unmeasured).
MEASURED_CLASSES = frozenset({"amx", "bf16", "int8", "avx2"})


def default_backend(device: str) -> str:
    """The backend a new project encodes with on `device` (a resolved one: "cpu", "cuda",
    "cuda:1", "mps"): on the CPU its class's default (`cpu_class_default`); on a GPU torch
    (in fp16 on CUDA, `model_spec.load_model`)."""
    if device != "cpu":
        return DEFAULT_BACKEND
    return cpu_class_default(cpu_class())


def cpu_class_default(klass: str, vendor: str | None = None) -> str:
    """The default of a CPU class on a vendor's CPUs (None: this CPU's vendor;
    `backends.class_default_name`) when its packages are installed and this CPU runs it
    (`unsupported_here`), else torch."""
    # Read from the registry at each call: the measured verdicts and what is installed are
    # the registry's facts; which of them applies is decided here.
    name = backends.class_default_name(klass, cpu_vendor() if vendor is None else vendor)
    chosen = backends.BACKENDS[name]
    usable = not backends.missing_modules(chosen) and backends.unsupported_here(chosen) is None
    return chosen.name if usable else DEFAULT_BACKEND


def why_default(device: str) -> str:
    """In words, which backend a new project gets here and why (About, `duplens info`)."""
    if device != "cpu":
        return f"{DEFAULT_BACKEND} on the GPU ({device})"
    klass, vendor = cpu_class(), cpu_vendor()
    wanted = backends.class_default_name(klass, vendor)
    chosen = cpu_class_default(klass, vendor)
    what = {"amx": "a CPU with AMX bfloat16 units",
            "bf16": "a CPU with AVX512-BF16 units and no AMX",
            "int8": "a CPU with int8 units (VNNI)", "avx2": "an AVX2 CPU",
            "arm64": "an arm64 CPU", "older": "an x86-64 CPU without AVX2"}.get(klass, klass)
    if klass in ("amx", "bf16") and not cpu_flags():
        what += " (taken from its vendor: this system does not say which bf16 units it has)"
    if klass in backends.VENDOR_CLASS_DEFAULTS.get(vendor, {}):
        what += f" made by {vendor.upper()}"
    if klass not in MEASURED_CLASSES:
        return f"{chosen}: {what}; no default was measured for this class, and torch runs " \
               "everywhere"
    if chosen == wanted:
        return f"{chosen}: the measured default for {what}"
    missing = backends.missing_modules(backends.BACKENDS[wanted])
    return (f"{chosen}: {what} gets {wanted} by default, but "
            + (f"{', '.join(missing)} is not installed" if missing else "this CPU cannot run it"))


def for_new_model(model: str | None, preference: str | None, device: str | None) -> str:
    """The backend a model chosen now is loaded with (`model` None or "": the bundled one),
    by the user's `preference` and `device` preference ("auto" or a device name)."""
    if not is_auto(preference):
        return str(preference)
    if model not in (None, "", DEFAULT_MODEL):
        return DEFAULT_BACKEND
    return default_backend(pick_device(device or "auto"))


def for_stored(fingerprint: str, preference: str | None, device: str | None = None) -> str:
    """The backend that serves a model whose embeddings the project stores under
    `fingerprint`, keeping them valid. Left to Duplens ("auto"), torch's embeddings are
    served by this CPU's default when that backend gives the same embeddings (an exact one:
    openvino on a CPU without bf16 units), so an AVX2 laptop keeps its speed on every later
    import, not only the first."""
    backend = backends.backend_for_row(fingerprint, None if is_auto(preference) else preference)
    if is_auto(preference) and backend.name == DEFAULT_BACKEND \
            and backends.split_fingerprint(fingerprint)[1] is None:
        # A named device is taken as named: resolving one (a GPU) would import torch, and
        # only the CPU has a default other than torch anyway.
        where = device if device not in (None, "", "auto") else pick_device("auto")
        fast = default_backend(where)
        if backends.BACKENDS[fast].exact:
            return fast
    return backend.name


def for_trained_version(preference: str | None, device: str | None) -> str | None:
    """The backend a version trained now is converted to: the CPU's default, when the
    backend is left to Duplens ("auto"), models run on the CPU and the default has
    embeddings of its own (bf16, int8); None when versions stay with torch's embeddings (a
    backend the user named, a GPU, a CPU whose default is torch, or an exact default such
    as the AVX2 class's OpenVINO, which serves a version's torch embeddings as they are:
    `for_stored`)."""
    if not is_auto(preference) or pick_device(device or "auto") != "cpu":
        return None
    chosen = default_backend("cpu")
    return None if backends.BACKENDS[chosen].exact else chosen

