"""What every `duplens` command shares: exit codes, the argument parser class, option
groups, opening a project, and printing to the terminal."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from engine.encoding.backends import BACKENDS

EXIT_OK, EXIT_BUG, EXIT_INPUT, EXIT_CANCELLED = 0, 1, 2, 130
EXIT_BROKEN_PIPE = 141   # 128 + SIGPIPE: what a shell reports for a tool cut off by `head`


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the command, and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_INPUT, f"{self.prog}: {message} (see {self.prog} --help)\n")


def model_options(p: argparse.ArgumentParser) -> None:
    """--model, --device, --batch-size and --backend: how texts are encoded."""
    p.add_argument("--model", help="sentence-transformers folder or hub name "
                   "(default: the bundled all-MiniLM-L6-v2)")
    device_option(p)
    p.add_argument("--batch-size", type=positive, default=64,
                   help="texts encoded together (default 64)")
    backend_option(p)


def device_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="auto", help="auto (CUDA, then MPS, then CPU), "
                   "cpu, cuda or mps")


def backend_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=list(BACKENDS), help="how the model runs: torch, "
                   "or on the CPU onnx / openvino (same embeddings) or their int8 and bf16 "
                   "forms (faster, different embeddings: the project is encoded again); "
                   "openvino-int8(-dynamic) needs duplens[openvino] (default: what the "
                   "project uses; a new project the fastest that passed the quality gate "
                   "against torch on this class and make of CPU, which `duplens info` names)")


PROJECT_HELP = ("the project: a .duplens file, or a team project's "
                "postgresql+psycopg://user@host:port/database URL")


def project_argument(p: argparse.ArgumentParser, help: str = PROJECT_HELP) -> None:  # noqa: A002
    p.add_argument("project", help=help)


def json_option(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--json", action="store_true", help=f"print {what} as JSON on stdout")


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def fraction(text: str) -> float:
    value = float(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, not {value:g}")
    return value


TRUST_FLAG = "--trust-model-location"


def trust_option(p: argparse.ArgumentParser) -> None:
    """--trust-model-location: the user's consent to load the project's models from
    folders outside its .models folder, or by hub name (`engine.model_trust`)."""
    p.add_argument(TRUST_FLAG, action="store_true",
                   help="load the project's model even from a folder outside its .models "
                   "folder or from the Hugging Face Hub, as the project file says (for a "
                   "project from someone else; remembered for this project)")


def open_project(path: str, *, create: bool = False, trust_models: bool = False):
    """The project at `path`, read-only when the user may not write it (so `info` and
    `search` still work on a shared file). `path` may be a server project's URL
    (postgresql+psycopg://user@host:5432/database), opened as it is. With `trust_models`,
    every model location the project names is approved for it first (and the user told
    which)."""
    from engine.project import Project
    from engine.store.location import looks_like_url

    if looks_like_url(path):
        return Project.open(path, create=create, on_upgrade=say_upgrade)
    p = Path(path)
    read_only = p.exists() and not create and not _writable(p)
    project = Project.open(p, create=create, read_only=read_only, on_upgrade=say_upgrade)
    if trust_models:
        from engine.model_trust import consent_file
        from engine.training.version_folders import approve_locations

        try:
            for location in approve_locations(project.store, project.path):
                say(f"{project.path.name}: approved the model at {location} "
                    f"(remembered in {consent_file()})")
        except BaseException:
            project.close()
            raise
    return project


def open_store(path: str):
    """The project's store alone, opened as `open_project` opens it (read-only when the user
    may not write it), for a command that only reads counts: `duplens info` then never
    imports the services, NumPy's users among them."""
    from engine.store.database import Store
    from engine.store.location import looks_like_url

    if looks_like_url(path):
        return Store.open(path, on_upgrade=say_upgrade)
    p = Path(path)
    return Store.open(p, read_only=p.exists() and not _writable(p), on_upgrade=say_upgrade)


def nothing_indexed(project, consequence: str) -> str | None:
    """Why the project has nothing to look in, in words ("x.duplens has 0 rows:
    <consequence>"), or None when its index holds something: a command that found nothing
    in an empty or not yet encoded project would otherwise print nothing (or load a model
    first). Cheap: the rows are counted only when nothing is indexed."""
    from engine.services.summary import describe

    if describe(project.store, project.model.row())["index_items"]:
        return None
    info = project.info()
    name, location = project.store.name, project.store.location.display
    rows = info["items"]
    if rows == 0:
        return f"{name} has 0 rows: {consequence}"
    if info["encoded"] == 0:
        return (f"{name} has {rows} row{'s' if rows != 1 else ''} but none is encoded yet: "
                f"{consequence}; run 'duplens encode {location}' first")
    return None


def prefer_torch_free(project, device: str = "auto", backend: str | None = None) -> None:
    """Let the project serve its model from the checked ONNX export, without importing
    torch (`engine.encoding.torch_free_encoder`): for commands that encode a few texts, where
    importing torch would be most of the time. Only where the user asked for no device or
    backend that rules it out; anything it cannot serve loads torch as before."""
    project.model.configure(device=device, torch_free=device in ("auto", "cpu")
                            and backend in (None, "onnx"))


def prepare_torch_free(project) -> None:
    """After a command that had to load torch on the CPU, with its results out: check the
    model's ONNX export against torch (made the first time: seconds, once per model on this
    computer), so the next `search` or `match` answers without torch."""
    project.model.verify_torch_free(
        on_export=lambda: say("preparing this model for fast searches (once per model on "
                              "this computer)…"))


def _writable(path: Path) -> bool:
    return os.access(path, os.W_OK) and os.access(path.parent.resolve(), os.W_OK)


def say_upgrade(name: str, version: int) -> None:
    """Told before an old project's schema steps run: on a large project of documents they
    remake every MinHash signature and word vector, which takes a while in silence."""
    say(f"{name} was saved by an older Duplens (schema {version}); upgrading it first, in "
        f"one transaction")


def say(message: str) -> None:
    """A message for the user, on stderr: stdout is kept for results (`--json`)."""
    print(message, file=sys.stderr)


def one_line(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def unescape(delimiter: str | None) -> str | None:
    return {"\\t": "\t", "tab": "\t"}.get(delimiter, delimiter) if delimiter else None
