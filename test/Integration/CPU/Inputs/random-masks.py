#!/usr/bin/env python3
"""Random structured masks through attn-run: every kernel agrees with the
reference, and the fused loop visits exactly the tiles a brute-force count
finds (at least those, for intersections, whose classification is only
sound). Usage: random-masks.py ATTN_RUN SEED COUNT."""

import json
import random
import subprocess
import sys

attn_run, seed, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)


def term():
    kind = rng.choice(["causal", "window", "chunked", "prefix", "strided",
                       "fixed", "dilated", "global", "bigbird"])
    n = lambda lo, hi: rng.randint(lo, hi)
    if kind == "window":
        return "window:%d:%d" % (n(0, 60), n(0, 20))
    if kind in ("chunked", "strided"):
        return "%s:%d" % (kind, n(1, 70))
    if kind in ("prefix", "global"):
        return "%s:%d" % (kind, n(0, 40))
    if kind == "fixed":
        stride = n(1, 50)
        return "fixed:%d:%d" % (stride, n(0, stride))
    if kind == "dilated":
        return "dilated:%d:%d" % (n(1, 6), n(1, 20))
    if kind == "bigbird":
        return "bigbird:%d:%d:%d:%d:%d" % (n(4, 40), n(0, 4), n(0, 2),
                                           n(0, 3), n(0, 99))
    return kind


failures = 0
for _ in range(count):
    alternatives = ["&".join(term() for _ in range(rng.choice([1, 1, 2])))
                    for _ in range(rng.choice([1, 1, 2]))]
    mask = "|".join(alternatives)
    sq, sk = rng.randint(1, 160), rng.randint(1, 160)
    qt, kt = rng.choice([8, 16, 32, 48]), rng.choice([8, 16, 32, 48])
    spec = "b=2,hq=2,hkv=1,sq=%d,sk=%d,d=8,mask=%s" % (sq, sk, mask)
    args = [attn_run, "--spec", spec, "--query-tile-size", str(qt),
            "--kv-tile-size", str(kt), "--check", "--json",
            "--ukernels=%s" % rng.choice(["true", "false"])]
    out = subprocess.run(args, capture_output=True, text=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    computed, visible = result["tiles_computed"], result["tiles_visible"]
    exact = "&" not in mask
    good = result["ok"] and (computed == visible if exact
                             else computed >= visible)
    if not good:
        failures += 1
        print("FAILED %s tiles %dx%d: ok=%s computed=%s visible=%s" % (
            spec, qt, kt, result["ok"], computed, visible))
print("random masks: %d of %d agree" % (count - failures, count))
sys.exit(1 if failures else 0)
