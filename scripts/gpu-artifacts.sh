#!/usr/bin/env bash
# Compiles the kernels of gpu-specs.txt for a GPU machine without MLIR:
#   scripts/gpu-artifacts.sh OUTDIR [SPECS] [CHIP]
# OUTDIR gets, per kernel, NAME.cubin, NAME.h and NAME_launch.c, plus
# specs.txt, the C test driver gpu-driver.c, gpu-check.sh, gpu-check.py and
# dlpack/dlpack.h. Copy OUTDIR over and run `bash gpu-check.sh` there.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: gpu-artifacts.sh OUTDIR [SPECS] [CHIP]}"
specs="${2:-$here/gpu-specs.txt}"
chip="${3:-sm_90}"
compile="${ATTN_COMPILE:-$here/../build/bin/attn-compile}"
rm -rf "$out" && mkdir -p "$out"
: > "$out/specs.txt"
while read -r name spec flags; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  # shellcheck disable=SC2086 # FLAGS are words
  "$compile" --target nvptx --chip "$chip" --spec "$spec" --name "$name" \
    $flags -o "$out/$name.d"
  mv "$out/$name.d/$name.cubin" "$out/$name.d/$name.h" \
    "$out/$name.d/${name}_launch.c" "$out/"
  rm -rf "$out/$name.d"
  echo "$name $spec" >> "$out/specs.txt"
done < "$specs"
cp "$here/gpu-check.sh" "$here/gpu-check.py" "$here/gpu-driver.c" "$out/"
# The GPU machine may lack DLPack's header: the launchers and driver need it.
mkdir -p "$out/dlpack"
cp "${DLPACK_INCLUDE:-/usr/include}/dlpack/dlpack.h" "$out/dlpack/"
echo "gpu-artifacts: $(wc -l < "$out/specs.txt") kernels for $chip in $out ($(du -sh "$out" | cut -f1))"
