#!/usr/bin/env bash
# Seeds the fuzzers' corpora from the test suite:
#   fuzz/seed-corpora.sh OUTDIR [ATTN_COMPILE]
# OUTDIR/opt gets every .mlir test input (each `// -----` split apart),
# OUTDIR/spec every SPEC the tests and scripts/gpu-specs.txt pass to
# --spec, OUTDIR/abi a few starting inputs, OUTDIR/ptx the PTX of a few
# kernels (with ATTN_COMPILE and a CUDA toolkit it can use).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:?usage: seed-corpora.sh OUTDIR}"
mkdir -p "$out/opt" "$out/spec" "$out/abi" "$out/ptx"
python3 - "$here" "$out" <<'PY'
import hashlib, pathlib, re, sys
root, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
def put(kind, text):
    data = text.encode()
    (out / kind / hashlib.sha1(data).hexdigest()).write_bytes(data)
for path in sorted((root / "test").rglob("*.mlir")):
    for chunk in re.split(r"^// -----\s*$", path.read_text(), flags=re.M):
        if chunk.strip():
            put("opt", chunk)
spec = re.compile(r'--spec[ =]"([^"]+)"')
for path in sorted((root / "test").rglob("*")):
    if path.is_file() and path.suffix in (".test", ".c", ".mlir"):
        for m in spec.finditer(path.read_text(errors="replace")):
            put("spec", m.group(1))
for line in (root / "scripts" / "gpu-specs.txt").read_text().splitlines():
    if line.strip() and not line.startswith("#"):
        put("spec", line.split()[1])
for first in range(4):
    put("abi", chr(first) + "\0" * 64)
PY
if [[ -n "${2:-}" ]]; then
  if [[ ! -x "$2" ]]; then
    echo "seed-corpora: no attn-compile at $2" >&2
    exit 1
  fi
  n=0
  for flags in "--mma --spec b=1,hq=2,sq=40,d=32,dtype=f16,mask=causal" \
               "--mma --kv-stages 2 --spec b=1,hq=4,hkv=1,sq=2,sk=200,d=32,dtype=f16,mask=causal_bottom_right" \
               "--spec b=1,hq=2,sq=40,d=32,mask=window:8:0|global:4" \
               "--spec b=1,hq=2,sq=40,d=32,kind=linear,mask=causal"; do
    n=$((n + 1))
    # shellcheck disable=SC2086 # FLAGS are words
    status=0
    "$2" --target nvptx $flags --name seed$n -o "$out/ptx.d" >/dev/null \
      2>"$out/ptx.err" || status=$?
    if (( status == 2 )) && grep -q "toolkit" "$out/ptx.err"; then
      echo "seed-corpora: no usable CUDA toolkit, so no PTX seeds"
      break
    elif (( status != 0 )); then
      echo "seed-corpora: attn-compile failed on $flags:" >&2
      cat "$out/ptx.err" >&2
      exit 1
    fi
    cp "$out/ptx.d/seed$n.ptx" "$out/ptx/seed$n"
  done
  rm -rf "$out/ptx.d" "$out/ptx.err"
fi
echo "seed-corpora: $(ls "$out/opt" | wc -l) MLIR inputs, $(ls "$out/spec" | wc -l) specs, $(ls "$out/ptx" | wc -l) PTX modules in $out"
