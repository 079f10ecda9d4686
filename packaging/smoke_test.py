"""Run the frozen Duplens the way a user would, and fail loudly if any step misbehaves.

    python3 packaging/smoke_test.py [packaging/dist/duplens/duplens]

Standard library only, and never imports the project: it checks the bundle, not the source
tree. Each command runs from an empty folder with a fresh HOME (so the user's data, logs and
model caches are the bundle's own) and with the Hugging Face hub set offline, so a bundle
that silently needed the network or the source tree fails here. Steps:

1. `--version` prints pyproject.toml's version (the version the bundle reads at run time);
2. `import` tests/data/questions.csv into a new project, then `info` (on a CPU with bf16
   units its model must be the bundled one served by OpenVINO in bf16);
3. `search` finds the paraphrases of a question first;
4. `duplicates --out` exports clusters to CSV;
5. `selfcheck` (offscreen): the bundled model, the engine and the window, open and closed;
   after it, the fresh HOME holds Duplens' own folders and nothing else (no telemetry ids);
6. under Xvfb when it is installed: `gui PROJECT` until its window is on screen (xwininfo),
   then closed, and the time that took.

Prints the time of each step; exits non-zero on the first failure.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BINARY = ROOT / "packaging" / "dist" / "duplens" / "duplens"
QUESTIONS = ROOT / "tests" / "data" / "questions.csv"
DISPLAY = ":96"
_WINDOW = re.compile(r'(0x[0-9a-f]+) "[^"]*Duplens": .*?(\d+)x(\d+)\+')


class SmokeFailed(SystemExit):
    pass


def run(binary: Path, args: list[str], env: dict, cwd: Path, timeout: float = 300) -> tuple[
        str, float]:
    """Run the frozen binary; returns (stdout, seconds); fails on a non-zero exit."""
    start = time.perf_counter()
    proc = subprocess.run([str(binary), *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SmokeFailed(f"FAILED: duplens {' '.join(args)} exited {proc.returncode}\n"
                          f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}")
    print(f"ok  {seconds:6.2f} s  duplens {' '.join(args)}", flush=True)
    return proc.stdout, seconds


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise SmokeFailed(f"FAILED: {message}")


def user_env(home: Path) -> dict:
    """A clean user environment: fresh HOME, no PYTHONPATH, the hub offline."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "VIRTUAL_ENV", "HF_", "XDG_"))}
    env.update(HOME=str(home), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               QT_QPA_PLATFORM="offscreen")
    return env


# Where the frozen app may write in a fresh HOME on Linux (platformdirs' and Qt's folders).
OWN_FOLDERS = (".cache/Duplens", ".local/state/Duplens", ".config/Duplens",
               ".local/share/Duplens")


def expect_only_own_files(home: Path) -> None:
    """Nothing but Duplens' folders in HOME: a dependency's telemetry (onnxruntime's device
    id in ~/.cache/Microsoft, OpenVINO's in ~/intel) would show up here."""
    own = tuple(f"{folder}/" for folder in OWN_FOLDERS)
    stray = sorted(name for name in (p.relative_to(home).as_posix() for p in home.rglob("*")
                                     if p.is_file()) if not name.startswith(own))
    expect(not stray, f"files outside Duplens' folders in the fresh HOME: {stray[:10]}")
    print("ok            the fresh HOME holds only Duplens' folders", flush=True)


def time_to_window(binary: Path, project: Path, env: dict, cwd: Path) -> float | None:
    """Seconds from starting `duplens gui PROJECT` to its window being viewable under Xvfb."""
    if not (shutil.which("Xvfb") and shutil.which("xwininfo")):
        print("--  skipped the real window: Xvfb or xwininfo is not installed")
        return None
    xvfb = subprocess.Popen(["Xvfb", DISPLAY, "-screen", "0", "1600x1000x24", "-nolisten",
                             "tcp"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    xenv = {**env, "DISPLAY": DISPLAY, "QT_QPA_PLATFORM": "xcb"}
    try:
        for _ in range(200):
            if subprocess.run(["xwininfo", "-root"], env=xenv, capture_output=True
                              ).returncode == 0:
                break
            time.sleep(0.05)
        else:
            raise SmokeFailed("FAILED: Xvfb did not start")
        start = time.perf_counter()
        proc = subprocess.Popen([str(binary), "gui", str(project)], env=xenv, cwd=cwd,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            while time.perf_counter() - start < 120:
                if proc.poll() is not None:
                    raise SmokeFailed(f"FAILED: the window exited {proc.returncode}:\n"
                                      f"{proc.stderr.read()}")
                if _window_viewable(xenv):
                    seconds = time.perf_counter() - start
                    print(f"ok  {seconds:6.2f} s  duplens gui PROJECT: window on screen (Xvfb)")
                    break
                time.sleep(0.01)
            else:
                raise SmokeFailed("FAILED: no window after 120 s")
            # Closing it as the window manager would (SIGTERM): it must exit promptly.
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
            return seconds
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    finally:
        xvfb.terminate()
        xvfb.wait(10)


def _window_viewable(env: dict) -> bool:
    tree = subprocess.run(["xwininfo", "-root", "-tree"], env=env, capture_output=True,
                          text=True).stdout
    for wid, width, height in _WINDOW.findall(tree):
        if int(width) > 100 and int(height) > 100:
            info = subprocess.run(["xwininfo", "-id", wid], env=env, capture_output=True,
                                  text=True).stdout
            if "IsViewable" in info:
                return True
    return False


def _has_bf16_units() -> bool:
    """Linux's word on the CPU's bfloat16 units, read here without the project's code."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines()
                  if line.startswith("flags")), [])
    return bool({"avx512_bf16", "amx_bf16"} & set(flags))


def main(argv: list[str]) -> int:
    binary = Path(argv[0]).resolve() if argv else DEFAULT_BINARY
    expect(binary.is_file(), f"{binary}: no such binary (run packaging/build_linux.sh)")
    want = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["version"]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="duplens-smoke-") as tmp:
        work, home = Path(tmp) / "work", Path(tmp) / "home"
        work.mkdir()
        home.mkdir()
        env = user_env(home)
        project = work / "questions.duplens"

        out, _ = run(binary, ["--version"], env, work)
        expect(out.strip() == f"duplens {want}", f"--version printed {out.strip()!r}, "
               f"pyproject.toml says {want}")
        run(binary, ["import", str(project), str(QUESTIONS), "--column", "question",
                     "--id-column", "qid"], env, work)
        out, _ = run(binary, ["info", str(project), "--json"], env, work)
        info = json.loads(out)
        expect(info["items"] == 48 and info["encoded"] == info["texts"],
               f"info after import: {info}")
        # A new project on a CPU with bf16 units encodes with the bundled OpenVINO in bf16:
        # a bundle missing OpenVINO's CPU plugin would fail the import above, or fall back.
        wanted = ("all-MiniLM-L6-v2 (openvino-bf16)" if _has_bf16_units()
                  else "all-MiniLM-L6-v2")
        expect(info["model"] == wanted, f"a new project's model is {info['model']!r}, "
               f"expected {wanted!r} on this CPU")
        out, _ = run(binary, ["search", str(project), "how do I learn python fast", "-k", "3",
                              "--json"], env, work)
        top = {hit["id"] for hit in json.loads(out)}
        expect(top == {"q1", "q2", "q3"}, f"search found {top}, expected q1, q2, q3")
        clusters = work / "clusters.csv"
        run(binary, ["duplicates", str(project), "--threshold", "0.8", "--out",
                     str(clusters)], env, work)
        with clusters.open(encoding="utf-8-sig", newline="") as fh:
            rows = list(csv.DictReader(fh))
        python_rows = {r["qid"] for r in rows if r["qid"] in {"q1", "q2", "q3"}}
        expect(len(rows) >= 10 and python_rows == {"q1", "q2", "q3"},
               f"exported clusters: {len(rows)} rows, python questions {python_rows}")
        expect(len({r["cluster_id"] for r in rows if r["qid"] in python_rows}) == 1,
               "the three python questions are not one cluster")
        run(binary, ["selfcheck"], env, work)
        expect_only_own_files(home)
        time_to_window(binary, project, env, work)
    print(f"smoke test passed in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except SmokeFailed as exc:
        print(exc.code, file=sys.stderr)
        sys.exit(1)
