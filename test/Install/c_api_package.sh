#!/usr/bin/env bash
# The installed C API package, used as an embedding program would:
# `cmake --install --component c_api` into a fresh prefix, then the example
# in runtime/examples/embed built against it twice -- with CMake
# (find_package(trainc), target trainc::runtime) and with pkg-config
# (trainc.pc) -- and both run on tinygpt's forward executable, which must
# give the loss PyTorch gives (4.8425889, as test/Unit/Runtime/CApiTest.c);
# then the CMake-built one trains tinygpt's training step 5 steps, whose
# first loss is that same forward loss and whose last must be lower.
#
#   c_api_package.sh BUILD_DIR SOURCE_DIR TINYGPT_TCX RAW_DIR WORK_DIR STEP_TCX
set -euo pipefail
build=$1 src=$2 tcx=$3 raw=$4 work=$5 step=$6
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" --component c_api > "$work/install.log"
test -f "$work/prefix/include/trainc/runtime.h"
args=(tokens="$raw/tokens.bin" targets="$raw/targets.bin")

cmake -S "$src/runtime/examples/embed" -B "$work/cmake-build" \
  -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log"
cmake --build "$work/cmake-build" > "$work/build.log"
out=$("$work/cmake-build/trainc-embed-example" "$tcx" "${args[@]}")
echo "find_package(trainc): $out"
grep -qx 'loss = 4.8425889' <<< "$out"

export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
# shellcheck disable=SC2046
cc -std=c99 -Wall -Werror "$src/runtime/examples/embed/main.c" \
  $(pkg-config --cflags --libs trainc) -Wl,-rpath,"$work/prefix/lib" \
  -o "$work/embed-pkg-config"
out=$("$work/embed-pkg-config" "$tcx" "${args[@]}")
echo "pkg-config trainc: $out"
grep -qx 'loss = 4.8425889' <<< "$out"

out=$("$work/cmake-build/trainc-embed-example" --steps 5 "$step" "${args[@]}")
echo "trained through the package: $out"
grep -qx 'step 1 loss = 4.8425889' <<< "$out"
first=$(grep '^step 1 loss' <<< "$out" | awk '{print $5}')
last=$(grep '^step 5 loss' <<< "$out" | awk '{print $5}')
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }'

# Only the C API is exported from the shared library.
others=$(nm -D --defined-only "$work/prefix/lib/libtrainc.so" | awk '{print $3}' | grep -v '^trainc_' || true)
if [ -n "$others" ]; then
  echo "libtrainc.so exports more than trainc_*: $others"
  exit 1
fi
echo "ok"
