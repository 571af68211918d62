#!/usr/bin/env bash
# Sets up this machine for trainc and builds it:
#   1. Debian packages the build and tests need (apt-get; skipped when all
#      are installed, so a second run takes seconds),
#   2. a project virtual environment, BUILD_DIR/venv, holding exactly the
#      Python packages in tools/requirements-test.txt (the tests and the main
#      job run with its interpreter, so a package missing from that file
#      fails on every machine, not only on fresh ones),
#   3. cuDNN's header-only C++ frontend where CUDA is (tools/
#      requirements-build.txt, unpacked into BUILD_DIR/deps),
#   4. configures (CMake + Ninja, with that interpreter as Python3) and
#      builds into the build directory.
# Safe to run again at any time; it changes only what is missing.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: tools/setup.sh [options]

Installs trainc's dependencies on a Debian 12 machine, then configures and
builds trainc. Run from anywhere; paths are relative to the repository.

Options:
  --build-dir DIR   build directory (default: build)
  --build-type T    CMake build type: Release (default), Debug, RelWithDebInfo
  --runtime-only    configure with -DTRAINC_BUILD_COMPILER=OFF (no MLIR needed)
  --no-install      do not install packages; fail if something is missing
  --no-build        install dependencies only (packages and the venv)
  -h, --help        show this help

The Python packages the tests and tools/train_gpt.py need go into
BUILD_DIR/venv (from tools/requirements-test.txt); CMake, lit and ctest run
every test script with BUILD_DIR/venv/bin/python.

Environment: CMAKE_ARGS is appended to the CMake configure command.
USAGE
}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=build
build_type=Release
runtime_only=0
install=1
build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir=${2:?--build-dir needs a value}; shift 2 ;;
    --build-type) build_type=${2:?--build-type needs a value}; shift 2 ;;
    --runtime-only) runtime_only=1; shift ;;
    --no-install) install=0; shift ;;
    --no-build) build=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "setup.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
case "$build_dir" in /*) ;; *) build_dir="$repo/$build_dir" ;; esac

step() { printf '\n==> %s\n' "$*"; }

# --- 1. Debian packages ------------------------------------------------------
# MLIR/LLVM 19 is the pinned toolchain (see ../shared/TOOLCHAIN.md).
packages=(
  cmake ninja-build g++ ccache lld clang-format python3 python3-venv
  llvm-19-dev libmlir-19-dev mlir-19-tools llvm-19-tools
  libgtest-dev libgmock-dev libbenchmark-dev
  flatbuffers-compiler libflatbuffers-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libopenblas-dev libopenmpi-dev openmpi-bin
  nlohmann-json3-dev libxxhash-dev pkg-config
)
step "Checking ${#packages[@]} Debian packages"
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "all installed"
elif [ "$install" -eq 0 ]; then
  echo "setup.sh: missing Debian packages: ${missing[*]} (and --no-install was given)" >&2
  exit 1
else
  echo "installing: ${missing[*]}"
  command -v apt-get >/dev/null || { echo "setup.sh: apt-get not found; trainc's setup supports Debian 12" >&2; exit 1; }
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup.sh: not root and no sudo; install as root: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 \
    install -y -qq --no-install-recommends "${missing[@]}"
fi

# --- 2. The project venv and its Python packages ------------------------------
# Only what tools/requirements-test.txt lists is in it (no system site
# packages), so CI and a fresh machine see exactly what this file installs.
requirements="$repo/tools/requirements-test.txt"
venv="$build_dir/venv"
python="$venv/bin/python"
step "Checking the project venv $venv ($(python3 --version 2>&1))"
if ! "$python" -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)' 2>/dev/null; then
  [ "$install" -eq 1 ] || { echo "setup.sh: no venv at $venv (and --no-install was given)" >&2; exit 1; }
  rm -rf "$venv"
  mkdir -p "$build_dir"
  python3 -m venv "$venv" || {
    echo "setup.sh: 'python3 -m venv' failed; on Debian install python3-venv" >&2; exit 1; }
fi
if "$python" "$repo/tools/check_requirements.py" "$requirements"; then
  echo "all installed"
elif [ "$install" -eq 0 ]; then
  echo "setup.sh: missing Python packages in $venv (and --no-install was given)" >&2
  exit 1
else
  "$python" -m pip install -q --disable-pip-version-check -r "$requirements"
  "$python" "$repo/tools/check_requirements.py" "$requirements"
fi

# --- 2b. Build-time packages from PyPI -----------------------------------------
# cuDNN's header-only C++ frontend, for the CUDA device's attention, where
# CUDA is (tools/requirements-build.txt: pinned, hashes checked). Only its
# include/ directory is unpacked, into BUILD_DIR/deps. The venv's pip fetches it
# (a fresh Debian's python3 has no pip).
frontend_dir="$build_dir/deps/cudnn-frontend-1.32.0"
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  step "Checking cuDNN's frontend headers in $frontend_dir"
  if [ -f "$frontend_dir/include/cudnn_frontend.h" ]; then
    echo "present"
  elif [ "$install" -eq 0 ]; then
    echo "setup.sh: no cuDNN frontend headers in $frontend_dir (and --no-install was given)" >&2
    exit 1
  else
    wheels="$build_dir/deps/wheels"
    mkdir -p "$wheels"
    "$python" -m pip download -q --disable-pip-version-check --no-deps \
      --only-binary=:all: --platform manylinux_2_28_x86_64 --python-version 3.11 \
      --implementation cp --require-hashes -r "$repo/tools/requirements-build.txt" -d "$wheels"
    "$python" - "$wheels" "$frontend_dir" <<'PY'
import glob, os, sys, zipfile
wheel, = glob.glob(os.path.join(sys.argv[1], "nvidia_cudnn_frontend-1.32.0-*.whl"))
with zipfile.ZipFile(wheel) as z:
    z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith("include/")])
PY
    echo "unpacked into $frontend_dir"
  fi
fi

[ "$build" -eq 1 ] || exit 0

# --- 3. Configure and build ---------------------------------------------------
step "Configuring $build_dir"
cmake_args=(-S "$repo" -B "$build_dir" -G Ninja "-DCMAKE_BUILD_TYPE=$build_type"
            "-DPython3_EXECUTABLE=$python")
[ -f "$frontend_dir/include/cudnn_frontend.h" ] &&
  cmake_args+=("-DTRAINC_CUDNN_FRONTEND_INCLUDE_DIR=$frontend_dir/include")
[ "$runtime_only" -eq 1 ] && cmake_args+=(-DTRAINC_BUILD_COMPILER=OFF)
# shellcheck disable=SC2206 # CMAKE_ARGS is split on purpose.
cmake_args+=(${CMAKE_ARGS:-})
mkdir -p "$build_dir"
log="$build_dir/configure.log"
cmake "${cmake_args[@]}" >"$log" 2>&1 || {
  cat "$log" >&2; echo "setup.sh: CMake configure failed (log: $log)" >&2; exit 1; }
grep -E '^-- trainc:' "$log" || true

step "Building (ninja, $(nproc) cores)"
start=$(date +%s)
cmake --build "$build_dir"
echo "built in $(( $(date +%s) - start )) s; run the tests with: ctest --test-dir $build_dir --output-on-failure"
