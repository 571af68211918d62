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
# there (it is git-ignored). libz3 and libicudata, which libLLVM links but
# trainc never calls, are replaced by small stand-ins to keep the archive
# small (libicudata's one symbol, the ICU data table, is an empty array).
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

# Every other library the loader resolves for them.
for f in "${binaries[@]}"; do
  ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r soname path; do
  from_machine "$soname" && continue
  case $soname in
    libz3.so.*)
      echo 'void trainc_stand_in(void) {}' |
        cc -shared -fPIC -x c - -o "$stage/lib/$soname" -Wl,-soname,"$soname" ;;
    libicudata.so.*)
      version=${soname#libicudata.so.}
      echo "const char icudt${version}_dat[16] = {0};" |
        cc -shared -fPIC -x c - -o "$stage/lib/$soname" -Wl,-soname,"$soname" ;;
    *) cp -L "$path" "$stage/lib/$soname" ;;
  esac
done

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
LD_LIBRARY_PATH="$stage/lib" "$stage/bin/trainc" --version >/dev/null
LD_LIBRARY_PATH="$stage/lib" "$stage/bin/trainc-run" --help >/dev/null

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
