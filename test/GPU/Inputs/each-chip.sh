#!/usr/bin/env bash
# each-chip.sh OUT "CHIPS" COMPILE ARGS...: runs COMPILE ARGS --chip C -o
# OUT/N for each chip C = sm_N of CHIPS, appending each manifest to
# OUT/N.manifests (ptxas-variants.test).
set -e
out=$1 chips=$2
shift 2
for chip in $chips; do
  dir=$out/${chip#sm_}
  "$@" --chip "$chip" -o "$dir"
  cat "$dir/manifest.json" >> "$dir.manifests"
done
