#!/usr/bin/env bash
# On a machine with a GPU: unpacks the archive tools/gpu/bundle.sh made and
# runs trainc's GPU checks from it, with this machine's CUDA libraries.
#
#   tools/gpu/check.sh [--bench] [ARCHIVE]     (default .gpu/trainc-gpu.tar.xz)
#
# The checks, each logged to $OUT/NAME.log ($OUT: the device tool's result
# folder; else /tmp/trainc-gpu-logs):
#   kernels        every opcode's CUDA kernel against the CPU
#                  (Devices/DeviceKernels.*/cuda)
#   probe          the CUDA probe: cuBLAS, NCCL's version (CudaProbe.*), and
#                  cuDNN's checks of the attention graphs (AttentionCudnn.*)
#   cuda_training  tinygpt f32 and bf16 on the GPU with --verify-steps,
#                  20 losses against the CPU, compute-sanitizer memcheck
#                  and racecheck, NCCL across GPUs where there are two
#   bench          (--bench; before cuda_training) tools/bench_gpu.py:
#                  GPT-2 124M bf16 against PyTorch eager and
#                  torch.compile, and trainc with --fuse-gelu=false
#                  and with --attention-stats=false ($BENCH_CONTENDERS
#                  and $BENCH_ROUNDS choose others; $BENCH_ARGS adds
#                  bench_gpu.py flags, e.g. --nsys)
# A GPU is here, so a check that reports itself skipped fails. Prints one
# line per check and exits 1 if any failed, 2 if no GPU is visible. Python
# is $PYTHON (default python3: on the lent machines, the one with PyTorch,
# NumPy and ONNX).
#
# With the device tool, from this machine (after tools/gpu/bundle.sh):
#   run(command="tools/gpu/check.sh", carry=[".gpu"])
set -uo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
bench=0
if [[ ${1:-} == --bench ]]; then bench=1; shift; fi
archive=${1:-$repo/.gpu/trainc-gpu.tar.xz}
logs=${OUT:-/tmp/trainc-gpu-logs}
mkdir -p "$logs"
[[ -f $archive ]] || { echo "check.sh: no $archive (run tools/gpu/bundle.sh where trainc is built)" >&2; exit 1; }

root=$(mktemp -d /tmp/trainc-gpu.XXXXXX)
trap 'rm -rf "$root"' EXIT
${PYTHON:-python3} -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$archive" "$root" ||
  { echo "check.sh: cannot unpack $archive" >&2; exit 1; }

# CUDA's own libraries: the toolkit's, and NCCL and cuDNN from PyTorch's
# wheels where the toolkit has none.
paths=$root/lib
for dir in /usr/local/cuda/lib64 /usr/local/cuda/lib; do
  [[ -d $dir ]] && paths+=:$dir
done
if ! ls /usr/local/cuda/lib*/libnccl.so.2 >/dev/null 2>&1; then
  nccl=$(${PYTHON:-python3} -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
  [[ -n $nccl ]] && paths+=:$nccl
fi
# cuDNN (attention: runtime/src/cuda/AttentionCudnn.cpp opens libcudnn.so.9)
# from PyTorch's wheel where the toolkit has none.
if ! ls /usr/local/cuda/lib*/libcudnn.so.9 >/dev/null 2>&1; then
  cudnn=$(${PYTHON:-python3} -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null)
  [[ -n $cudnn ]] && paths+=:$cudnn
fi
export TRAINC_CUDA_PLUGIN=$root/lib/libtrainc_cuda.so
# The bundle's libraries (Debian's libstdc++, zlib, ..., and its libLLVM)
# are for trainc's binaries only: Python and PyTorch keep their own. Each
# binary runs through a wrapper that sets the loader's path and execs it
# (the same process, so compute-sanitizer still sees the binary).
mkdir -p "$root/wrap"
for f in "$root"/bin/* "$root"/test/*; do
  printf '#!/bin/sh\nLD_LIBRARY_PATH='"'"'%s'"'"'${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\nexport LD_LIBRARY_PATH\nexec '"'"'%s'"'"' "$@"\n' \
    "$paths" "$f" >"$root/wrap/$(basename "$f")"
  chmod +x "$root/wrap/$(basename "$f")"
done

python=${PYTHON:-python3}
if ! nvidia-smi -L >"$logs/gpus.txt" 2>&1; then
  echo "check.sh: no GPU is visible here (nvidia-smi -L: $(head -c 200 "$logs/gpus.txt"))" >&2
  exit 2
fi
cat "$logs/gpus.txt"
failed=()
# The device tool stops a command at 600 s: every check ends by this many
# seconds after the script started ($CHECK_DEADLINE), so the summary is
# always printed.
deadline=${CHECK_DEADLINE:-570}
# check NAME SECONDS COMMAND...: a check that outlives its time (or the
# time left before the deadline) is stopped (exit 124) and the next one
# runs, so that one hang cannot use up the others' time.
check() {
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS left=$((deadline - SECONDS - 15))
  ((left < limit)) && limit=$left
  if ((limit < 10)); then
    echo "FAIL: $name (not run: the ${deadline} s deadline is reached)"
    failed+=("$name")
    return
  fi
  timeout --kill-after=5 "$limit" "$@" >"$logs/$name.log" 2>&1
  local status=$?
  if [[ $status -eq 0 ]] && grep -q -E '^\[  SKIPPED \]|^skipped:' "$logs/$name.log"; then
    status=77
  fi
  # A GoogleTest filter that matched nothing passes too: not here.
  if [[ $status -eq 0 && $1 == */wrap/trainc-*unittests ]] &&
     ! grep -q -E '^\[  PASSED  \] [1-9]' "$logs/$name.log"; then
    status=78
  fi
  if [[ $status -eq 0 ]]; then
    echo "ok: $name ($((SECONDS - start)) s)"
  else
    echo "FAIL: $name (exit $status, $((SECONDS - start)) s; $logs/$name.log):"
    tail -n 25 "$logs/$name.log"
    failed+=("$name")
  fi
}

check kernels 180 "$root/wrap/trainc-runtime-unittests" --gtest_filter='Devices/DeviceKernels.*/cuda'
check probe 60 "$root/wrap/trainc-cuda-unittests"
# The benchmark before the training checks, whose compute-sanitizer runs
# are the slowest part: #16's speed is what a GPU session is rarest for.
if [[ $bench -eq 1 ]]; then
  check bench 300 env PYTHONUNBUFFERED=1 "$python" "$repo/tools/bench_gpu.py" --trainc-bin-dir "$root/wrap" \
    --rounds "${BENCH_ROUNDS:-4}" --profile ${BENCH_ARGS:-} \
    --contenders "${BENCH_CONTENDERS:-trainc,trainc-unfused-gelu,trainc-remade-stats,torch-eager,torch-compile}"
fi
check cuda_training 240 "$python" "$repo/test/Runtime/cuda_training.py" --trainc "$root/wrap/trainc" \
  --trainc-run "$root/wrap/trainc-run" --data-dir "$root/data/tinygpt"

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "check.sh: failed: ${failed[*]}"
  exit 1
fi
echo "check.sh: all GPU checks passed"
