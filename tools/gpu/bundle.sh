#!/usr/bin/env bash
# Packs what trainc's GPU checks need into one archive that runs on a GPU
# machine lacking this machine's Debian packages (LLVM, OpenBLAS, Open MPI,
# protobuf): the machines lent to this project have CUDA, PyTorch and
# Python, nothing to build trainc's compiler with, and no network.
#
#   tools/gpu/bundle.sh [BUILD_DIR] [OUT_DIR]       (defaults: build, .gpu)
#
# Writes OUT_DIR/trainc-gpu.tar.xz holding
#   bin/   trainc, trainc-run                 (lib/ is their ../lib: the CUDA
#   lib/   libtrainc_cuda.so and every          plugin is found there)
#          library the binaries load from this machine, except glibc's
#          and CUDA's own (the GPU machine's are used)
#   test/  trainc-runtime-unittests, trainc-cuda-unittests
#   data/  tinygpt's training export (../shared/data does not travel)
# and checks that the binaries start with only lib/ on the loader's path.
# On the GPU machine, tools/gpu/check.sh unpacks and runs it; carry OUT_DIR
# there (it is git-ignored).
#
# libLLVM: trainc calls a few hundred of its functions (Support's), but
# Debian's libLLVM.so is 129 MB (26 MB of the archive, with libz3, ICU and
# libxml2 behind it), and the device tool sends 64 MiB at most. So the
# bundle's libLLVM.so is linked here from LLVM's static archives with only
# the symbols the bundle's binaries import (same soname, same symbol
# version): under 1 MB. trainc from the bundle must then compile tinygpt's
# training step to the same bytes as the build's trainc with every symbol
# bound at load (LD_BIND_NOW), or the bundle is not written.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
out=${2:-$repo/.gpu}
data=$repo/../shared/data/tinygpt

for f in "$build/bin/trainc" "$build/bin/trainc-run" "$build/lib/libtrainc_cuda.so" \
         "$build/test/Unit/trainc-runtime-unittests" "$build/test/Unit/trainc-cuda-unittests" \
         "$data/tied_erf/model_train_opset17.onnx"; do
  [[ -f $f ]] || { echo "bundle.sh: $f is missing (build with CUDA first: tools/setup.sh)" >&2; exit 1; }
done

stage=$(mktemp -d)
trap 'rm -rf "$stage" "$out/trainc-gpu.tar.xz.tmp"' EXIT
mkdir -p "$stage"/{bin,lib,test,data/tinygpt/tied_erf}
cp "$build/bin/trainc" "$build/bin/trainc-run" "$stage/bin/"
cp "$build/lib/libtrainc_cuda.so" "$stage/lib/"
cp "$build/test/Unit/trainc-runtime-unittests" "$build/test/Unit/trainc-cuda-unittests" "$stage/test/"
cp "$data/tied_erf/model_train_opset17.onnx" "$stage/data/tinygpt/tied_erf/"

# glibc's and CUDA's libraries come from the GPU machine.
from_machine() {
  case $1 in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*) return 0 ;;
    libcuda.so.*|libcudart.so.*|libcublas.so.*|libcublasLt.so.*|libnccl.so.*) return 0 ;;
  esac
  return 1
}
binaries=("$stage"/bin/* "$stage"/lib/libtrainc_cuda.so "$stage"/test/*)

# libLLVM with only what the binaries import (above), from the static
# archives beside the shared library.
llvm_lib=$(for f in "${binaries[@]}"; do ldd "$f"; done |
  awk '$1 ~ /^libLLVM/ && $2 == "=>" && !seen++ { print $3 }')
if [[ -n $llvm_lib ]]; then
  llvm_soname=$(basename "$llvm_lib")
  llvm_archives=("$(dirname "$llvm_lib")"/libLLVM*.a)
  [[ -f ${llvm_archives[0]} ]] || { echo "bundle.sh: no LLVM static archives beside $llvm_lib (Debian: llvm-19-dev)" >&2; exit 1; }
  # name@VERSION of every symbol the binaries take from libLLVM.
  imports=$(for f in "${binaries[@]}"; do nm -D --undefined-only "$f"; done |
    awk '$NF ~ /@LLVM_[0-9.]+$/ { print $NF }' | sort -u)
  [[ -n $imports ]] || { echo "bundle.sh: the binaries load $llvm_lib but import no versioned LLVM symbol from it" >&2; exit 1; }
  version=$(head -n 1 <<<"$imports" | sed 's/.*@//')
  { echo "$version {"; echo "  global:"; sed 's/@.*/;/; s/^/    /' <<<"$imports"
    echo "  local: *;"; echo "};"; } >"$stage/llvm.map"
  # Support's compression, if it is ever pulled in, needs zlib and zstd
  # (Debian ships no libzstd.so link: the library itself; ldconfig is in
  # /sbin, off a user's PATH).
  compression=(-lz)
  zstd=$({ /sbin/ldconfig -p 2>/dev/null || true; } |
    awk '/libzstd\.so\.1 .*x86-64/ && !seen++ { print $NF }')
  [[ -n $zstd ]] && compression+=("$zstd")
  # -z defs: the library's own undefined references must resolve here.
  c++ -shared -o "$stage/lib/$llvm_soname" -Wl,-soname,"$llvm_soname" \
    -Wl,--version-script="$stage/llvm.map" -Wl,--gc-sections -Wl,-z,defs \
    $(sed 's/@.*//; s/^/-Wl,-u,/' <<<"$imports") \
    -Wl,--start-group "${llvm_archives[@]}" -Wl,--end-group \
    -Wl,--as-needed "${compression[@]}"
  rm "$stage/llvm.map"
  # An import no archive defines is not a link error (a version script may
  # name a missing symbol): every one must be in the library.
  missing=$(comm -23 <(sed 's/@.*//' <<<"$imports" | sort -u) \
    <(nm -D --defined-only "$stage/lib/$llvm_soname" | awk '{ print $NF }' | sed 's/@.*//' | sort -u))
  [[ -z $missing ]] || { echo "bundle.sh: the LLVM archives define none of: $(head -n 5 <<<"$missing" | tr '\n' ' ')" >&2; exit 1; }
fi

# Every other library the loader resolves for them (the bundle's libLLVM's
# needs, not the system one's).
for f in "${binaries[@]}"; do
  LD_LIBRARY_PATH="$stage/lib" ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r soname path; do
  from_machine "$soname" && continue
  [[ -e $stage/lib/$soname ]] || cp -L "$path" "$stage/lib/$soname"
done

# OpenBLAS: the runtime loads it with dlopen (runtime/src/cpu/Gemm.h), so
# ldd does not list it; it and the libraries it loads go in lib/ too, and
# it joins the checks below.
# (awk reads ldconfig's whole output: an early exit would end ldconfig with
# SIGPIPE once the cache outgrows a pipe's buffer, and pipefail with it.)
openblas=$(ldconfig -p | awk '/libopenblas\.so\.0 .*x86-64/ && !seen++ { print $NF }')
[[ -n $openblas ]] || { echo "bundle.sh: libopenblas.so.0 is not installed (apt-get install libopenblas0)" >&2; exit 1; }
cp -L "$openblas" "$stage/lib/libopenblas.so.0"
LD_LIBRARY_PATH="$stage/lib" ldd "$stage/lib/libopenblas.so.0" |
  awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | while read -r soname path; do
  from_machine "$soname" && continue
  [[ -e $stage/lib/$soname ]] || cp -L "$path" "$stage/lib/$soname"
done
binaries+=("$stage/lib/libopenblas.so.0")

# With lib/ first on the loader's path, every library but glibc's and
# CUDA's must resolve inside the bundle (the system's directories are still
# searched, so "found" alone would prove nothing).
for f in "${binaries[@]}"; do
  outside=$(LD_LIBRARY_PATH="$stage/lib" ldd "$f" |
    awk '$2 == "=>" { print $1, $3 }' | while read -r soname path; do
      from_machine "$soname" || [[ $path == "$stage/lib/"* ]] || echo "$soname ($path)"
    done)
  [[ -z $outside ]] || { echo "bundle.sh: ${f#$stage/} loads from outside the bundle: $outside" >&2; exit 1; }
done
LD_BIND_NOW=1 LD_LIBRARY_PATH="$stage/lib" "$stage/bin/trainc" --version >/dev/null
LD_BIND_NOW=1 LD_LIBRARY_PATH="$stage/lib" "$stage/bin/trainc-run" --help >/dev/null
# The CPU device loads OpenBLAS and runs a GEMM with it.
LD_LIBRARY_PATH="$stage/lib" "$stage/test/trainc-runtime-unittests" \
  --gtest_filter='CpuDotGeneral.OpenBlas*:CpuDotGeneral.PlainMatmul' >/dev/null ||
  { echo "bundle.sh: the bundle's runtime cannot load OpenBLAS or run a GEMM" >&2; exit 1; }
# The bundle's trainc compiles as the build's does (the executable records
# its command line: the same argv[0] and output name, in two folders).
step=$stage/data/tinygpt/tied_erf/model_train_opset17.onnx
mkdir -p "$stage/check/bundle" "$stage/check/build"
(cd "$stage/check/bundle" && LD_BIND_NOW=1 LD_LIBRARY_PATH="$stage/lib" \
  exec -a trainc "$stage/bin/trainc" "$step" --train --precision bf16 -o step.tcx)
(cd "$stage/check/build" && exec -a trainc "$build/bin/trainc" "$step" --train --precision bf16 -o step.tcx)
cmp -s "$stage/check/bundle/step.tcx" "$stage/check/build/step.tcx" ||
  { echo "bundle.sh: the bundle's trainc compiles tinygpt to other bytes than $build/bin/trainc" >&2; exit 1; }
rm -r "$stage/check"

mkdir -p "$out"
tar -C "$stage" -cJf "$out/trainc-gpu.tar.xz.tmp" .
mv "$out/trainc-gpu.tar.xz.tmp" "$out/trainc-gpu.tar.xz"
echo "wrote $out/trainc-gpu.tar.xz ($(du -h "$out/trainc-gpu.tar.xz" | cut -f1)) from $build at $(git -C "$repo" rev-parse --short HEAD)"

# The device tool sends the working tree (tracked and untracked files git
# does not ignore) and the carried archive: 64 MiB at most.
tree=$(cd "$repo" && git ls-files -co --exclude-standard -z |
  xargs -0 du -cb 2>/dev/null | awk 'END { print $1 }' || true)
total=$((tree + $(stat -c %s "$out/trainc-gpu.tar.xz")))
echo "with the working tree ($((tree / 1048576)) MiB) the device tool sends $((total / 1048576)) MiB of its 64"
if [[ $total -gt $((64 * 1048576)) ]]; then
  echo "bundle.sh: over the device tool's 64 MiB: shrink the tree or the bundle" >&2
  exit 1
fi
