#!/usr/bin/env bash
# On a machine with an NVIDIA GPU, the CUDA toolkit and PyTorch (no MLIR):
# builds every launcher of this directory (made by gpu-artifacts.sh) into a
# shared library, then checks and benchmarks them (gpu-check.py).
set -euo pipefail
cd "$(dirname "$0")"
cuda="${CUDA_HOME:-/usr/local/cuda}"
cc="${CC:-cc}"
mkdir -p lib
while read -r name spec; do
  "$cc" -std=c11 -O2 -Wall -Werror -shared -fPIC -I"$cuda/include" -I. \
    "${name}_launch.c" -L"$cuda/lib64/stubs" -lcuda -lpthread \
    -o "lib/lib$name.so"
done < specs.txt
exec python3 gpu-check.py "$@"
