#!/bin/sh
# A stand-in for the toolkit's ptxas (bin/ptxas of a fake toolkit whose nvvm/
# is the real one's), as FAKE_PTXAS says: `spills` runs the real ptxas
# (REAL_PTXAS) and reports 8 bytes of spill stores in every function; `fails`
# exits 255 with an error; `silent` assembles but prints no report;
# `resources` runs the real one and reports FAKE_REGISTERS registers and
# FAKE_SMEM bytes of shared memory in every function.
case "$FAKE_PTXAS" in
spills)
  "$REAL_PTXAS" "$@" 2>&1 | sed 's/ 0 bytes spill stores/ 8 bytes spill stores/' >&2 ;;
fails)
  echo "ptxas fatal   : Unresolved extern function 'attn_missing'" >&2
  exit 255 ;;
resources)
  "$REAL_PTXAS" "$@" 2>&1 | sed -e "s/Used [0-9]* registers/Used $FAKE_REGISTERS registers/" \
    -e "s/[0-9]* bytes smem/$FAKE_SMEM bytes smem/" >&2 ;;
silent)
  "$REAL_PTXAS" "$@" >/dev/null 2>&1 ;;
esac
