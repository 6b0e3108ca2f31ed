#!/usr/bin/env bash
# On a machine with an NVIDIA GPU and the CUDA toolkit (no MLIR needed):
# builds every launcher of this directory (made by gpu-artifacts.sh) into a
# shared library and the C test driver, checks every kernel against the
# driver's CPU reference, then (with PyTorch) against a torch reference and
# times it against torch's scaled_dot_product_attention (gpu-check.py).
# Exit status: 0 all agree, 1 some kernel disagrees, 2 cannot run here.
# GPU_CHECK_TORCH=0 skips the torch part (the CUDA emulator's tests run the
# rest on the CPU, with LD_LIBRARY_PATH naming the emulator's libcuda).
# A kernel that hangs (a deadlock would eat a whole GPU session) fails after
# GPU_CHECK_KERNEL_TIMEOUT seconds (default 120), the torch part after
# GPU_CHECK_TORCH_TIMEOUT (default 360).
set -uo pipefail
cd "$(dirname "$0")"
cuda="${CUDA_HOME:-/usr/local/cuda}"
# CC may carry flags (a sanitized build's tests pass clang -fsanitize=...).
read -ra cc <<< "${CC:-cc}"
# No -Werror: an unknown compiler there must not stop the check.
flags=(-std=c11 -O2 -Wall -I"$cuda/include" -I.)
mkdir -p lib
kernel_timeout="${GPU_CHECK_KERNEL_TIMEOUT:-120}"
# drive NAME SPEC [--hostile]: gpu-driver on one kernel; its exit status (a
# hang is a failure).
drive() {
  timeout "$kernel_timeout" ./gpu-driver ${3:-} "lib/lib$1.so" "$1" "$2"
  local rc=$?
  if [[ $rc == 124 ]]; then
    echo "$1 $2: ${3:+hostile V: }timed out after $kernel_timeout s FAILED"
    rc=1
  fi
  return $rc
}
"${cc[@]}" "${flags[@]}" gpu-driver.c -L"$cuda/lib64/stubs" -lcuda -ldl -lm \
  -o gpu-driver || exit 2
while read -r name spec; do
  "${cc[@]}" "${flags[@]}" -shared -fPIC "${name}_launch.c" \
    -L"$cuda/lib64/stubs" -lcuda -lpthread -o "lib/lib$name.so" || exit 2
done < specs.txt

failures=0
while read -r name spec; do
  drive "$name" "$spec"
  case $? in
    0) ;;
    2) exit 2 ;;
    *) failures=$((failures + 1)) ;;
  esac
done < specs.txt
echo "gpu-check: CPU reference: $failures of $(wc -l < specs.txt) failed"

# NaN in V of two keys: only the rows that see them may turn NaN (the
# tensor-core kernels' exact FMA companion redoes the blocks it reaches).
hostile=0
while read -r name spec; do
  drive "$name" "$spec" --hostile
  case $? in
    0) ;;
    2) exit 2 ;;
    *) hostile=$((hostile + 1)) ;;
  esac
done < specs.txt
echo "gpu-check: hostile V: $hostile of $(wc -l < specs.txt) failed"
failures=$((failures + hostile))

if [[ ${GPU_CHECK_TORCH:-1} == 0 ]]; then
  torch=2
else
  timeout "${GPU_CHECK_TORCH_TIMEOUT:-360}" python3 gpu-check.py
  torch=$?
  if [[ $torch == 124 ]]; then
    echo "gpu-check: the torch check timed out FAILED"
    torch=1
  fi
fi
[[ $torch == 2 ]] && echo "gpu-check: skipped the torch check and benchmark"
[[ $failures == 0 && $torch != 1 ]] || exit 1
