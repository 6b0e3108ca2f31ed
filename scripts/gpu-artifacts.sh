#!/usr/bin/env bash
# Compiles the kernels of gpu-specs.txt for a GPU machine without MLIR:
#   scripts/gpu-artifacts.sh OUTDIR [SPECS] [CHIP] [FLOORS]
# ATTN_COMPILE_FLAGS adds attn-compile flags to every kernel (e.g.
# --embed=ptx, for the CUDA emulator of lib/Emulator).
# OUTDIR gets, per kernel, NAME.cubin, NAME.h, NAME_launch.c and its
# manifest NAME.json (ptxas's registers, printed with the timings), plus
# specs.txt, the C test driver gpu-driver.c, gpu-check.sh, gpu-check.py and
# dlpack/dlpack.h. Copy OUTDIR over and run `bash gpu-check.sh` there.
# FLOORS (e.g. gpu-floors.txt: NAME METRIC MIN WHAT, for kernels of SPECS)
# becomes OUTDIR/floors.txt, which gpu-check.py reports on.
# A mask term blocks:PATH (a block bitmap file) names PATH absolute or
# relative to the repository root (the directory above this script's); the
# file is copied to OUTDIR/blocks/ (one file per base name), and specs.txt
# names it as blocks/BASENAME, relative to OUTDIR, where gpu-check.sh runs.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
out="${1:?usage: gpu-artifacts.sh OUTDIR [SPECS] [CHIP] [FLOORS]}"
specs="${2:-$here/gpu-specs.txt}"
chip="${3:-sm_90}"
floors="${4:-}"
compile="${ATTN_COMPILE:-$root/build/bin/attn-compile}"
rm -rf "$out" && mkdir -p "$out"
: > "$out/specs.txt"

# rewrite_blocks SPEC: sets `compile_spec` (SPEC with the blocks:PATH terms
# naming their files for attn-compile) and `out_spec` (naming the copies in
# OUTDIR/blocks, which it makes).
rewrite_blocks() {
  local item rest term sep path base items compile_mask out_mask
  local -a compile_items=() out_items=()
  IFS=, read -ra items <<< "$1"
  for item in "${items[@]}"; do
    if [[ "$item" != mask=* || "$item" != *blocks:* ]]; then
      compile_items+=("$item")
      out_items+=("$item")
      continue
    fi
    rest="${item#mask=}"
    compile_mask="mask=" out_mask="mask="
    while [[ -n "$rest" ]]; do
      term="${rest%%[|&]*}"
      rest="${rest:${#term}}"
      sep="${rest:0:1}"
      rest="${rest:1}"
      if [[ "$term" == blocks:* ]]; then
        path="${term#blocks:}"
        [[ "$path" == /* ]] || path="$root/$path"
        base="$(basename "$path")"
        if [[ ! -f "$path" ]]; then
          echo "gpu-artifacts: no block bitmap file $path" >&2
          exit 1
        fi
        if [[ -e "$out/blocks/$base" ]] && ! cmp -s "$path" "$out/blocks/$base"; then
          echo "gpu-artifacts: two block bitmap files named $base" >&2
          exit 1
        fi
        mkdir -p "$out/blocks"
        cp "$path" "$out/blocks/$base"
        compile_mask+="blocks:$path$sep"
        out_mask+="blocks:blocks/$base$sep"
      else
        compile_mask+="$term$sep"
        out_mask+="$term$sep"
      fi
    done
    compile_items+=("$compile_mask")
    out_items+=("$out_mask")
  done
  compile_spec="$(IFS=,; echo "${compile_items[*]}")"
  out_spec="$(IFS=,; echo "${out_items[*]}")"
}

# Each floor names a kernel of SPECS, a metric gpu-check.py measures and a
# number (checked before compiling: a typo must not pass as "not measured"
# on the GPU).
if [[ -n "$floors" ]]; then
  if [[ ! -f "$floors" ]]; then
    echo "gpu-artifacts: no floors file $floors" >&2
    exit 1
  fi
  : > "$out/floors.txt"
  while read -r name metric least what; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    if ! grep -v '^#' "$specs" | awk '{ print $1 }' | grep -qxF -- "$name"; then
      echo "gpu-artifacts: floor of '$name', which $specs does not list" >&2
      exit 1
    fi
    if [[ "$metric" != tflops && "$metric" != speedup ]] ||
      ! [[ "$least" =~ ^[0-9]+([.][0-9]+)?$ ]]; then
      echo "gpu-artifacts: floor of '$name': expected 'tflops MIN' or" \
        "'speedup MIN', got '$metric $least'" >&2
      exit 1
    fi
    echo "$name $metric $least $what" >> "$out/floors.txt"
  done < "$floors"
fi
while read -r name spec flags; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  rewrite_blocks "$spec"
  # shellcheck disable=SC2086 # FLAGS are words
  "$compile" --target nvptx --chip "$chip" --spec "$compile_spec" \
    --name "$name" $flags ${ATTN_COMPILE_FLAGS:-} -o "$out/$name.d"
  mv "$out/$name.d/$name.cubin" "$out/$name.d/$name.h" \
    "$out/$name.d/${name}_launch.c" "$out/"
  mv "$out/$name.d/manifest.json" "$out/$name.json"
  rm -rf "$out/$name.d"
  echo "$name $out_spec" >> "$out/specs.txt"
done < "$specs"
cp "$here/gpu-check.sh" "$here/gpu-check.py" "$here/gpu-driver.c" "$out/"
# The GPU machine may lack DLPack's header: the launchers and driver need it.
mkdir -p "$out/dlpack"
cp "${DLPACK_INCLUDE:-/usr/include}/dlpack/dlpack.h" "$out/dlpack/"
echo "gpu-artifacts: $(wc -l < "$out/specs.txt") kernels for $chip in $out ($(du -sh "$out" | cut -f1))"
