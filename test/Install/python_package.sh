#!/usr/bin/env bash
# The Python package as a user installs it: a fresh virtual environment,
# `pip install SOURCE[jax]` (scikit-build-core builds the project with its
# CMake into SOURCE/build/python-package, which a later run reuses), then
# the package's tests (frontends/python/tests) run from outside the
# checkout, so the installed package is the one imported.
#
#   python_package.sh SOURCE_DIR SHARED_DATA_DIR WORK_DIR PYTHON
set -euo pipefail
src=$1 shared=$2 work=$3 python=$4
rm -rf "$work" && mkdir -p "$work"
"$python" -m venv "$work/venv"
if ! "$work/venv/bin/pip" install "$src[jax]" optax > "$work/install.log" 2>&1; then
  tail -40 "$work/install.log"
  echo "pip install $src[jax] failed (log: $work/install.log)"
  exit 1
fi
grep -E "^Successfully installed" "$work/install.log" || true
cd "$work"
TRAINC_SHARED_DATA=$shared TRAINC_REPO=$src \
  "$work/venv/bin/python" -m unittest discover -s "$src/frontends/python/tests" -v
