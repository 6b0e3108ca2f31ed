#!/usr/bin/env python3
"""Prints a spec list (NAME SPEC [FLAGS...] lines, as gpu-specs.txt) with
every shape cut to one the CUDA emulator runs in seconds, the names, masks,
mods, kinds and flags kept: one batch entry; a GQA group (at most 8 query
heads on one KV head; kind=mha keeps its heads, which E fixes); a prefill
query of 200 rows (4 blocks of 64 rows or 2 of 128, the last partial)
against at most 333 keys; a decoding query (Sq <= 16) as it is, against at
most 700 keys (so split-K still splits). Ends with `shrink-specs: N specs`
on stderr."""
import sys

PREFILL_ROWS, PREFILL_KEYS, DECODE_KEYS = 200, 333, 700


def shrink(spec):
    items = dict(item.split("=", 1) for item in spec.split(","))
    hq = int(items.get("hq", "1"))
    group = hq // int(items.get("hkv", hq))
    items["b"] = "1"
    if not items.get("kind", "").startswith("mha"):
        items["hq"], items["hkv"] = str(min(group, 8)), "1"
    sq = int(items.get("sq", "1"))
    if sq > 16:
        items["sq"] = str(PREFILL_ROWS)
        if "sk" in items:
            items["sk"] = str(min(int(items["sk"]), PREFILL_KEYS))
    else:
        items["sk"] = str(min(int(items.get("sk", sq)), DECODE_KEYS))
    return ",".join(f"{key}={value}" for key, value in items.items())


count = 0
with open(sys.argv[1]) as specs:
    for line in specs:
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        print(" ".join([fields[0], shrink(fields[1])] + fields[2:]))
        count += 1
print(f"shrink-specs: {count} specs", file=sys.stderr)
sys.exit(0 if count else 1)
