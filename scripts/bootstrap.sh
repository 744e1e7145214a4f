#!/usr/bin/env bash
# Creates .venv (once) and installs ragstream into it with the given extras, saying what
# it does in one line per step. pip's errors are shown as pip prints them.
# Usage: scripts/bootstrap.sh [EXTRAS]   e.g. scripts/bootstrap.sh test
# Environment: PYTHON  the interpreter that creates .venv (default python3; 3.11 or later)
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
python="${PYTHON:-python3}"
say() { echo "== $*"; }
die() { echo "bootstrap.sh: $*" >&2; exit 1; }

if [ ! -x .venv/bin/python ]; then
  command -v "$python" >/dev/null || die "$python not found: Python 3.11 or later is needed (set PYTHON=...)"
  version="$("$python" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')"
  if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    die "$python is Python $version; ragstream needs 3.11 or later (set PYTHON=python3.11 or newer)"
  fi
  say "creating .venv with Python $version ($python), then updating its pip"
  "$python" -m venv .venv
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
fi
spec="."
[ -n "$extras" ] && spec=".[$extras]"
say "installing ragstream${extras:+[$extras]} into .venv (editable, with its dependencies; compiles four C extensions and byte-compiles the package)"
# setuptools reports every editable install with a multi-line "Editable installation ...
# be careful with folders in your working directory" notice, which recent pip releases
# (26 here) print as a warning. Here the folder ragstream/ is the installed package
# itself, so the notice never applies: exactly that warning is ignored (a filter on the
# start of its message, passed to the build through the environment). Every other
# warning, and every error, is printed as pip prints it.
# The strict editable mode links the package's files into build/__editable__.*/ (one path
# in a .pth file) instead of installing an import hook: the hook's imports cost every
# Python process here 10 ms (24 -> 14 ms for `python -c pass`), a tenth of `ragstream eval`
# on a small file. A new module needs this script run again (scripts/test.sh does).
PYTHONWARNINGS="${PYTHONWARNINGS:+$PYTHONWARNINGS,}ignore:Editable installation.:UserWarning" \
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e "$spec" \
  --config-settings editable_mode=strict
# Byte-compiled, as pip does when it installs a wheel: an editable install leaves that to
# Python's first import, which PYTHONDONTWRITEBYTECODE (set on CI machines and in the image)
# forbids, so every command compiled its modules again (24 ms of `ragstream eval`'s CPU).
# Both paths the modules are imported by: the links of the install and the source tree
# (`python -m ragstream` run from here). A source edited later is compiled again in memory.
shopt -s nullglob
trees=(ragstream build/__editable__.*/ragstream)
shopt -u nullglob
if [ -d ragstream ]; then
  .venv/bin/python -m compileall -q -j 0 "${trees[@]}"
fi
