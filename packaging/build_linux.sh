#!/usr/bin/env bash
# Build the Linux onedir bundle (dist/duplens/) with packaging/duplens.spec, the same spec the
# Windows and macOS installers use, so this machine can smoke-test what users get.
#
# PyInstaller runs in its own build venv (packaging/.build-venv, ignored by git), never in the
# development .venv: it installs the project non-editable, as a user's copy would be, with
# CPU-only torch. The venv is reused while pyproject.toml is unchanged.
#
#   packaging/build_linux.sh            # build into packaging/dist/duplens
#   packaging/smoke_test.sh             # then run the frozen binary as a user would
#
# Environment: DUPLENS_BUILD_VENV (venv folder), DUPLENS_TORCH_INDEX (the CPU wheel index;
# "none" to use only the default index, e.g. where a CPU wheel is on a local find-links).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${DUPLENS_BUILD_VENV:-$ROOT/packaging/.build-venv}"
TORCH_INDEX="${DUPLENS_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
PYTHON="${PYTHON:-python3}"
PY="$VENV/bin/python"
STAMP="$VENV/.duplens-pyproject.sha256"

started=$(date +%s)
want="$(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1)"
if [[ ! -x "$PY" || ! -f "$STAMP" || "$(cat "$STAMP")" != "$want" ]]; then
    echo "== build venv: $VENV"
    "$PYTHON" -m venv "$VENV"
    "$PY" -m pip install -q --upgrade pip
    # torch first, from the CPU index: PyPI's Linux wheel pulls GBs of CUDA libraries.
    torch_args=()
    if [[ "$TORCH_INDEX" != "none" ]]; then
        torch_args=(--extra-index-url "$TORCH_INDEX")
    fi
    "$PY" -m pip install -q "${torch_args[@]}" "torch==2.13.0"
    "$PY" -m pip install -q "${ROOT}[packaging]"
    # hnswlib compiles with -march=native unless told not to: a bundle must run on any CPU.
    HNSWLIB_NO_NATIVE=1 "$PY" -m pip install -q --no-cache-dir --no-deps --force-reinstall \
        "hnswlib==0.8.0"
    echo "$want" > "$STAMP"
fi
# A CUDA build would add GBs to the bundle: refuse it rather than ship it.
"$PY" -c "import sys, torch; sys.exit(f'torch {torch.__version__} is a CUDA build; \
set DUPLENS_TORCH_INDEX to a CPU wheel index' if torch.version.cuda else 0)"
# The project itself changes more often than its pins: reinstall it alone, quickly.
"$PY" -m pip install -q --no-deps --force-reinstall "$ROOT"

echo "== pyinstaller"
cd "$ROOT/packaging"
"$PY" -m PyInstaller --noconfirm --clean --log-level WARN \
    --distpath "$ROOT/packaging/dist" --workpath "$ROOT/packaging/build" duplens.spec

echo "== built $ROOT/packaging/dist/duplens in $(( $(date +%s) - started )) s," \
     "$(du -sh "$ROOT/packaging/dist/duplens" | cut -f1)"
