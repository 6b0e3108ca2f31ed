#!/usr/bin/env python3
"""Differential fuzzing of whole kernels (make fuzz-specs):

  fuzz/spec-diff.py --bin BUILD/bin [--emulator DIR] [--cuda DIR]
                    [--count N] [--regions R] [--seed S] [--jobs J]
                    [--out DIR] [--targets cpu,tc,fma,launcher]

draws N random valid SPECs (every kind, layout, dtype, mask composition,
mod, operand and dynamic dim, with random lowering options) and runs each
through `attn-run --check` on every target: `cpu`, and with the CUDA
emulator's libcuda (--emulator) `tc` (the GPU tensor-core kernel where the
spec allows it) and `fma` (--mma=false). attn-run compares each kernel with
the naive reference at its dtype's tolerance. With the CUDA toolkit (--cuda,
default $CUDA_HOME or /usr/local/cuda) the `launcher` target then takes
each spec whose tc (else fma) run was ok, with that run's options, the way
a user of a GPU does: attn-compile writes the kernel and its C launcher
(scripts/gpu-artifacts.sh), and scripts/gpu-check.sh builds the launchers
and runs gpu-driver (a third reference, in C) on each, plainly and with NaN
in V, on the emulator. --regions R adds R kernels written in MLIR with
random score_mod and mask_mod regions (integer arithmetic of every width,
divisions, min/max, selects, compares; float terms bounded by tanh),
sometimes under a causal mask or a sliding window, run by `attn-run FILE --check` on cpu, tc
and fma: the reference interprets the regions, the kernels inline them, and
attn-mask-mod-bounds skips the tiles its interval bounds prove hidden.
Every run ends one of:
  ok       exit 0;
  refused  exit 2 (a bad spec or option) or 1 (a kernel attn cannot
           compile) with a diagnostic: a documented restriction; the
           distinct messages are listed for review;
  WRONG    exit 1 with a `--check` line that FAILED (the kernel disagrees
           with the reference), or a kernel that returned an error code;
  CRASH    any other exit, a signal, a timeout, or a diagnostic that is not
           attn-run's own (an assertion, LLVM ERROR, a sanitizer report).
WRONG and CRASH runs are findings: their command lines go to OUT/findings.txt
(a launcher run's as `launcher NAME SPEC OPTIONS`, its artifacts and logs in
OUT/launcher/) and the exit status is 1. The same seed draws the same specs.
"""

import argparse
import collections
import concurrent.futures
import os
import random
import subprocess
import sys

DTYPES = ["f32", "f16", "bf16"]


def mask_term(rng, sq, sk):
    """One structured mask term with parameters scaled to the shape."""
    s = max(sq, sk)
    small = lambda: rng.randint(1, max(1, s // 2))
    kinds = [
        lambda: "causal",
        lambda: "causal_bottom_right",
        lambda: "window:%d:%d" % (small(), rng.choice([0, 0, small()])),
        lambda: "chunked:%d" % small(),
        lambda: "prefix:%d" % small(),
        lambda: "strided:%d" % rng.randint(1, 64),
        lambda: "fixed:%d:%d" % rng.choice(
            [(l, rng.randint(1, l)) for l in (8, 16, 32, 64)]),
        lambda: "dilated:%d:%d" % (rng.randint(1, 32), rng.randint(1, 8)),
        lambda: "global:%d" % rng.randint(1, 32),
        lambda: "bigbird:%d:%d:%d:%d:%d" % (
            rng.choice([16, 32, 64]), rng.randint(0, 4), rng.randint(0, 2),
            rng.randint(0, 3), rng.randint(0, 99)),
    ]
    return rng.choice(kinds)()


def mask_expr(rng, sq, sk):
    """`none`, one term, or a union of intersections of terms."""
    if rng.random() < 0.25:
        return None
    unions = []
    for _ in range(rng.choice([1, 1, 1, 2])):
        unions.append("&".join(
            mask_term(rng, sq, sk) for _ in range(rng.choice([1, 1, 2]))))
    return "|".join(unions)


def draw_spec(rng):
    """A random SPEC string that attn-run should accept (it may still refuse
    a documented combination)."""
    kind = rng.choices(["sdpa", "gaussian", "additive:A", "additive",
                        "linear", "mha"], weights=[10, 1, 1, 1, 1, 1])[0]
    hkv = rng.choice([1, 1, 2, 3])
    hq = hkv * rng.choice([1, 1, 2, 4])
    sq = rng.choice([1, 2, rng.randint(1, 300), rng.randint(1, 300)])
    sk = rng.choice([sq, sq, rng.randint(1, 300)])
    d = rng.choice([16, 32, 40, 48, 64, 64, 72, 128, 128, 192, 256,
                    rng.randint(1, 130)])
    spec = {"b": rng.randint(1, 3), "hq": hq, "hkv": hkv, "sq": sq, "sk": sk,
            "d": d}
    if rng.random() < 0.2:
        spec["dv"] = rng.choice([8, 16, 40, 64, 128, 256, rng.randint(1, 130)])
    spec["dtype"] = rng.choice(DTYPES)
    if kind == "mha":
        spec["e"] = rng.choice([32, 64, 96, 128])
    if kind != "mha" and rng.random() < 0.2:
        spec["layout"] = "bshd"
    if kind == "linear":
        if rng.random() < 0.8:
            spec["d"] = min(d, 64)
        else:
            # Wide heads keep the GPU state in chunks of Dv, which the
            # emulator runs slowly (7 minutes at D = 256, S = 300, 36
            # heads): short sequences for them.
            spec["sq"], spec["sk"] = min(sq, 40), min(sk, 40)
    if kind == "additive:A":
        spec["kind"] = "additive:%d" % rng.choice([8, 16, 33, 64])
    elif kind == "gaussian":
        spec["kind"] = "gaussian:%g" % rng.choice([0.5, 2, 6])
    elif kind != "sdpa":
        spec["kind"] = kind
    if kind == "linear":
        mask = rng.choice([None, "causal", "causal_bottom_right"])
    else:
        mask = mask_expr(rng, sq, sk)
    if mask:
        spec["mask"] = mask
    # What each kind takes (the SPEC grammar's restrictions), so that few
    # draws are refused: linear no operand or mod, additive:A masks and
    # kv_lens, mha no layout, relpos, spans, block_mask, lse or dynamic=h;
    # alibi no dynamic=h.
    takes_mod = kind in ("sdpa", "gaussian", "additive", "mha")
    takes_extras = kind in ("sdpa", "gaussian", "additive")
    if takes_mod and rng.random() < 0.3:
        mods = ["alibi", "softcap:%d" % rng.choice([5, 30])]
        if kind != "mha":
            mods += ["relpos:%d" % rng.choice([8, 32]), "relpos:16:64:uni"]
        if kind == "gaussian":
            mods.remove(mods[1])
        spec["mod"] = rng.choice(mods)
    if kind != "linear" and rng.random() < 0.15:
        spec["temperature"] = rng.choice([0.5, 2])
    if kind != "linear" and rng.random() < 0.25:
        spec["kv_lens"] = "random"
    if takes_extras:
        if rng.random() < 0.15:
            spec["lse"] = "true"
        if rng.random() < 0.1:
            spec["spans"] = "random"
        if rng.random() < 0.1:
            spec["block_mask"] = "random:%d:%d" % (
                rng.choice([16, 32, 64]), rng.choice([16, 32, 48, 64]))
    if rng.random() < 0.15:
        spec["dynamic"] = "".join(
            c for c in ("bs" if kind == "mha" or spec.get("mod") == "alibi"
                        else "bhs")
            if rng.random() < 0.5) or "s"
    return ",".join("%s=%s" % kv for kv in spec.items())


class RegionBuilder:
    """SSA text of a random region over the block arguments %b, %h, %i, %j
    (index, never negative) and, in a score_mod, %s (f32). Unsigned
    divisions and casts take only values known not to be negative while they
    are index-typed: index is 64 bits in the reference and may be 32 in a
    kernel, which only negative values would tell apart."""

    def __init__(self, rng):
        self.rng, self.lines, self.count = rng, [], 0

    def emit(self, rhs):
        name = "%%v%d" % self.count
        self.count += 1
        self.lines.append("%s = %s" % (name, rhs))
        return name

    def leaf(self, ty):
        """(value, non-negative) of integer type `ty`."""
        rng = self.rng
        if rng.random() < 0.3:
            c = rng.choice([0, 1, 2, 3, 7, 8, 16, 33, 64, rng.randint(-9, 90)])
            return self.emit("arith.constant %d : %s" % (c, ty)), c >= 0
        return self.leaf_arg(rng.choice(["%i", "%j", "%i", "%j", "%h", "%b"]),
                             ty)

    def integer(self, ty, depth):
        rng = self.rng
        if depth <= 0 or rng.random() < 0.25:
            return self.leaf(ty)
        a, a_pos = self.integer(ty, depth - 1)
        op = rng.choice(["addi", "subi", "muli", "div", "div", "minmax",
                         "select"])
        if op in ("addi", "subi"):
            b, b_pos = self.integer(ty, depth - 1)
            return (self.emit("arith.%s %s, %s : %s" % (op, a, b, ty)),
                    op == "addi" and a_pos and b_pos)
        if op == "muli":
            c = rng.choice([-3, -1, 2, 3, 5])
            k = self.emit("arith.constant %d : %s" % (c, ty))
            return self.emit("arith.muli %s, %s : %s" % (a, k, ty)), \
                a_pos and c > 0
        if op == "div":
            c = self.emit("arith.constant %d : %s" % (
                rng.choice([1, 2, 3, 4, 7, 16, 32, 64]), ty))
            ops = ["divsi", "remsi", "floordivsi", "ceildivsi"]
            if ty != "index" or a_pos:
                ops += ["divui", "remui", "ceildivui"]
            op = rng.choice(ops)
            return (self.emit("arith.%s %s, %s : %s" % (op, a, c, ty)),
                    a_pos or op.endswith("ui"))
        if op == "minmax":
            b, b_pos = self.integer(ty, depth - 1)
            ops = ["minsi", "maxsi"]
            if ty != "index" or (a_pos and b_pos):
                ops += ["minui", "maxui"]
            op = rng.choice(ops)
            pos = (a_pos and b_pos) if op != "maxsi" else (a_pos or b_pos)
            return self.emit("arith.%s %s, %s : %s" % (op, a, b, ty)), pos
        b, b_pos = self.integer(ty, depth - 1)
        cond = self.condition(depth - 1)
        return (self.emit("arith.select %s, %s, %s : %s" % (cond, a, b, ty)),
                a_pos and b_pos)

    def pattern(self):
        """A term of the masks people write (windows, blocks, strides,
        global tokens), in index or i64, its constants near the edges."""
        rng = self.rng
        ty = rng.choice(["index", "i64"])
        i, _ = self.leaf_arg("%i", ty)
        j, _ = self.leaf_arg("%j", ty)
        const = lambda c: self.emit("arith.constant %d : %s" % (c, ty))
        preds = ["slt", "sle", "sgt", "sge", "eq", "ne"]
        kind = rng.choice(["band", "block", "rem", "edge"])
        if kind == "band":  # (i - j) against c
            a = self.emit("arith.subi %s, %s : %s" % (
                *rng.choice([(i, j), (j, i)]), ty))
            b = const(rng.randint(-20, 40))
        elif kind == "block":  # i / c against j / c (or rem)
            c = const(rng.choice([2, 3, 8, 16, 24, 32, 64]))
            op = rng.choice(["divsi", "floordivsi", "ceildivsi", "remsi",
                             "divui", "remui"])
            a = self.emit("arith.%s %s, %s : %s" % (op, i, c, ty))
            b = self.emit("arith.%s %s, %s : %s" % (op, j, c, ty))
        elif kind == "rem":  # j rem c against an edge of [0, c)
            c = rng.choice([2, 4, 7, 8, 16, 32])
            a = self.emit("arith.%s %s, %s : %s" % (
                rng.choice(["remsi", "remui"]), rng.choice([i, j]), const(c),
                ty))
            b = const(rng.choice([0, 1, c - 2, c - 1, c]))
        else:  # global tokens, prefixes
            a = rng.choice([i, j])
            b = const(rng.choice([0, 1, 8, 15, 16, 17, 63, 64, 100]))
        return self.emit("arith.cmpi %s, %s, %s : %s" % (
            rng.choice(preds), a, b, ty))

    def leaf_arg(self, arg, ty):
        if ty == "index":
            return arg, True
        return self.emit("arith.%s %s : index to %s" % (
            self.rng.choice(["index_cast", "index_castui"]), arg, ty)), True

    def condition(self, depth):
        rng = self.rng
        if rng.random() < 0.5:
            return self.pattern()
        if depth <= 0 or rng.random() < 0.6:
            ty = rng.choice(["index", "index", "i64", "i32"])
            # Shallow operands mostly: masks are short formulas of i and j.
            a, a_pos = self.integer(ty, rng.randint(0, min(depth, 2)))
            if rng.random() < 0.5:
                # Against a constant at the edges the bounds must get right.
                c = rng.choice([0, 1, 2, 3, 6, 7, 15, 16, 31, 32, 63, 64,
                                rng.randint(0, 100)])
                b, b_pos = self.emit("arith.constant %d : %s" % (c, ty)), True
            else:
                b, b_pos = self.integer(ty, rng.randint(0, min(depth, 2)))
            preds = ["eq", "ne", "slt", "sle", "sgt", "sge"]
            if ty != "index" or (a_pos and b_pos):
                preds += ["ult", "ule", "ugt", "uge"]
            return self.emit("arith.cmpi %s, %s, %s : %s" % (
                rng.choice(preds), a, b, ty))
        a = self.condition(depth - 1)
        b = self.condition(depth - 1)
        return self.emit("arith.%s %s, %s : i1" % (
            rng.choice(["andi", "ori", "ori", "xori"]), a, b))

    def score(self, depth):
        """An f32 that stays finite for finite %s: index terms pass through
        tanh."""
        rng = self.rng
        if depth <= 0 or rng.random() < 0.25:
            if rng.random() < 0.6:
                return "%s"
            n, _ = self.integer("i64", 2)
            f = self.emit("arith.sitofp %s : i64 to f32" % n)
            c = self.emit("arith.constant %r : f32" % rng.choice(
                [0.01, 0.1, 0.5]))
            x = self.emit("arith.mulf %s, %s : f32" % (f, c))
            return self.emit("math.tanh %s : f32" % x)
        op = rng.choice(["addf", "subf", "scale", "maximumf", "minimumf",
                         "select", "absf", "cap"])
        a = self.score(depth - 1)
        if op in ("addf", "subf", "maximumf", "minimumf"):
            b = self.score(depth - 1)
            return self.emit("arith.%s %s, %s : f32" % (op, a, b))
        if op == "scale":
            c = self.emit("arith.constant %r : f32" % rng.choice(
                [-1.5, -0.5, 0.25, 2.0]))
            return self.emit("arith.mulf %s, %s : f32" % (a, c))
        if op == "select":
            b = self.score(depth - 1)
            return self.emit("arith.select %s, %s, %s : f32" % (
                self.condition(depth - 1), a, b))
        if op == "absf":
            return self.emit("math.absf %s : f32" % a)
        c = self.emit("arith.constant %r : f32" % rng.choice([0.5, 5.0]))
        t = self.emit("math.tanh %s : f32" % self.emit(
            "arith.divf %s, %s : f32" % (a, c)))
        return self.emit("arith.mulf %s, %s : f32" % (t, c))


def draw_region_kernel(rng):
    """An attn.attention kernel function in MLIR with a random mask_mod
    and/or score_mod region (and perhaps a causal structured mask), for
    `attn-run FILE --check`, whose reference interprets the regions."""
    hkv = rng.choice([1, 2])
    hq = hkv * rng.choice([1, 2])
    b, sq = rng.randint(1, 2), rng.randint(1, 160)
    sk = rng.choice([sq, rng.randint(1, 160)])
    d = rng.choice([16, 32, 64, 64, 128])
    dtype = rng.choice(["f32", "f16", "bf16"])
    tensor = lambda h, s, dim: "tensor<%dx%dx%dx%dx%s>" % (b, h, s, dim, dtype)
    qt, kt, ot = tensor(hq, sq, d), tensor(hkv, sk, d), tensor(hq, sq, d)
    regions = []
    kinds = rng.choice([["mask_mod"], ["score_mod"], ["score_mod", "mask_mod"]])
    for kind in kinds:
        r = RegionBuilder(rng)
        if kind == "score_mod":
            args = "%s: f32, %b: index, %h: index, %i: index, %j: index"
            result, ty = r.score(rng.randint(1, 4)), "f32"
        else:
            args = "%b: index, %h: index, %i: index, %j: index"
            result, ty = r.condition(rng.randint(1, 4)), "i1"
        body = "".join("        %s\n" % line for line in r.lines)
        regions.append("      %s {\n      ^bb0(%s):\n%s        attn.yield %s : "
                       "%s\n      }" % (kind, args, body, result, ty))
    attrs = []
    if rng.random() < 0.4:
        attrs.append("structured_mask = %s" % rng.choice([
            "#attn.causal<top_left>", "#attn.causal<bottom_right>",
            "#attn.sliding_window<left = %d, right = %d>" % (
                rng.randint(0, 64), rng.choice([0, rng.randint(0, 32)]))]))
    return ("func.func @fuzz(%%q: %s, %%k: %s, %%v: %s, %%o: %s) -> %s {\n"
            "  %%0 = attn.attention ins(%%q, %%k, %%v : %s, %s, %s)\n"
            "      outs(%%o : %s)%s\n%s -> %s\n"
            "  return %%0 : %s\n}\n" % (
                qt, kt, kt, ot, ot, qt, kt, kt, ot,
                " {%s}" % ", ".join(attrs) if attrs else "",
                "\n".join(regions), ot, ot))


def draw_options(rng, target):
    """Random lowering options of a target, as attn-run flags: each of its
    (probability, flag[, values]) drawn in turn, a flag with values taking
    one of them."""
    cpu = [(0.2, "--fused=false"), (0.2, "--ukernels=false"),
           (0.3, "--kv-tile-size=%d", [16, 32, 64]),
           (0.3, "--query-tile-size=%d", [8, 16, 64])]
    fma = [(0.3, "--kv-tile-size=%d", [16, 32])]
    tc = [(0.3, "--mma-warp-rows=32"), (0.25, "--kv-stages=2"),
          (0.2, "--mma-query-in-shared"), (0.25, "--mma-row-sums"),
          (0.2, "--kv-tile-size=%d", [16, 32, 64])]
    gpu = [(0.2, "--kv-splits=%d", [1, 2, 3]), (0.15, "--pack-gqa=false"),
           (0.1, "--min-blocks-per-sm=2")]
    table = {"cpu": cpu, "fma": fma + gpu}.get(target, tc + gpu)
    opts = ["--mma=false"] if target == "fma" else []
    for probability, flag, *values in table:
        if rng.random() < probability:
            opts.append(flag % rng.choice(values[0]) if values else flag)
    return opts


def dims_for(rng, spec):
    """--dims for a spec with dynamic dims: the sizes the spec names, or
    others drawn near them (the kernel must take any)."""
    fields = dict(kv.split("=", 1) for kv in spec.split(","))
    dyn = fields.get("dynamic")
    if not dyn or rng.random() < 0.5:
        return []
    sizes = {}
    if "s" in dyn:
        sizes["sq"] = rng.randint(1, int(fields["sq"]))
        sizes["sk"] = rng.randint(1, int(fields["sk"]))
    if "b" in dyn:
        sizes["b"] = rng.randint(1, 3)
    if "h" in dyn:
        sizes["hkv"] = rng.randint(1, 3)
        sizes["hq"] = sizes["hkv"] * rng.choice([1, 2, 4])
    return ["--dims=" + ",".join("%s=%s" % kv for kv in sizes.items())]


def classify(rc, stdout, stderr):
    """ok, refused, WRONG or CRASH (see the module doc)."""
    foreign = any(w in stderr for w in (
        "Assertion", "LLVM ERROR", "Stack dump", "Sanitizer", "runtime error",
        "Segmentation", "Aborted"))
    if foreign or rc not in (0, 1, 2):
        return "CRASH"
    if rc == 0:
        return "ok"
    if "FAILED" in stdout or "the kernel returned" in stderr:
        return "WRONG"
    return "refused" if "error:" in stderr else "CRASH"


def run_one(args, env, cmd):
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True,
                           timeout=args.timeout)
        return (classify(p.returncode, p.stdout, p.stderr),
                (p.stdout + p.stderr).strip())
    except subprocess.TimeoutExpired:
        return "CRASH", "timed out after %d s" % args.timeout


def launcher_runs(args, env, gpu_runs):
    """The `launcher` target on `gpu_runs` ([(spec, options)]): one kernel
    each through gpu-artifacts.sh and gpu-check.sh (no torch) on the
    emulator. Returns [(verdict, command, log)]."""
    scripts = os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), "scripts")
    work = os.path.abspath(os.path.join(args.out, "launcher"))
    art = os.path.join(work, "artifacts")
    os.makedirs(work, exist_ok=True)
    names = ["k%d" % i for i in range(len(gpu_runs))]
    with open(os.path.join(work, "specs.txt"), "w") as f:
        for name, (spec, opts) in zip(names, gpu_runs):
            f.write("%s %s %s\n" % (name, spec, " ".join(opts)))
    commands = [["launcher", name, spec] + opts
                for name, (spec, opts) in zip(names, gpu_runs)]
    run_env = dict(env, ATTN_COMPILE=os.path.join(args.bin, "attn-compile"),
                   ATTN_COMPILE_FLAGS="--embed=ptx", CUDA_HOME=args.cuda,
                   GPU_CHECK_TORCH="0", GPU_CHECK_JOBS=str(args.jobs))
    for step in (["bash", os.path.join(scripts, "gpu-artifacts.sh"), art,
                  os.path.join(work, "specs.txt")],
                 ["bash", os.path.join(art, "gpu-check.sh")]):
        try:
            p = subprocess.run(step, env=run_env, capture_output=True,
                               text=True, timeout=args.timeout * 4)
            log = (p.stdout + p.stderr).strip()
            # gpu-check.sh: 1 when a kernel fails, which the .rc files tell.
            failed = p.returncode not in (0, 1) or (
                p.returncode == 1 and step[1].endswith("gpu-artifacts.sh"))
        except subprocess.TimeoutExpired:
            failed, log = True, "timed out"
        if failed:  # nothing ran: every kernel is a finding
            return [("CRASH", c, "%s: %s" % (os.path.basename(step[1]), log))
                    for c in commands]
    results = []
    for name, command in zip(names, commands):
        verdict, logs = "ok", []
        for check in ("reference", "hostile"):
            base = os.path.join(art, "out", "%s.%s" % (name, check))
            try:
                rc = int(open(base + ".rc").read())
                logs.append(open(base + ".log").read() +
                            open(base + ".err").read())
            except (OSError, ValueError):
                rc = -1
            if rc == 1 and verdict == "ok":
                verdict = "WRONG"
            elif rc not in (0, 1):
                verdict = "CRASH"
        results.append((verdict, command, "".join(logs).strip()))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="the build's bin directory")
    ap.add_argument("--emulator", help="the CUDA emulator's libcuda "
                    "directory (without it only the cpu target runs)")
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--regions", type=int, default=0, help="random kernels "
                    "in MLIR with score_mod/mask_mod regions, run on the "
                    "cpu, tc and fma targets (written to OUT/regions/)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--cuda", default=os.environ.get(
        "CUDA_HOME", "/usr/local/cuda"), help="the CUDA toolkit (cuda.h and "
                    "the stub libcuda: the launcher target)")
    ap.add_argument("--targets", default="cpu,tc,fma,launcher")
    ap.add_argument("--out", default=".", help="where findings.txt goes")
    args = ap.parse_args()
    # gpu-check.sh runs in its own directory.
    args.bin = os.path.abspath(args.bin)
    if args.emulator:
        args.emulator = os.path.abspath(args.emulator)
    targets = args.targets.split(",")
    if not args.emulator:
        targets = [t for t in targets if t == "cpu"]
    if not os.path.exists(os.path.join(args.cuda, "include", "cuda.h")):
        targets = [t for t in targets if t != "launcher"]
    rng = random.Random(args.seed)
    attn_run = os.path.join(args.bin, "attn-run")
    env = dict(os.environ)
    if args.emulator:
        env["LD_LIBRARY_PATH"] = args.emulator
    runs = []
    for _ in range(args.count):
        spec = draw_spec(rng)
        dims = dims_for(rng, spec)
        for target in (t for t in targets if t != "launcher"):
            cmd = [attn_run, "--spec", spec, "--check",
                   "--seed=%d" % rng.randint(0, 999)] + dims
            cmd += draw_options(rng, target)
            if target != "cpu":
                cmd += ["--target", "gpu"]
            runs.append(cmd)
    region_dir = os.path.join(os.path.abspath(args.out), "regions")
    if args.regions:
        os.makedirs(region_dir, exist_ok=True)
    for n in range(args.regions):
        path = os.path.join(region_dir, "r%d.mlir" % n)
        with open(path, "w") as f:
            f.write(draw_region_kernel(rng))
        for target in (t for t in targets if t != "launcher"):
            cmd = [attn_run, path, "--check", "--seed=%d" % rng.randint(0, 999)]
            opts = draw_options(rng, target)
            # Small tiles, many of them for the mask_mod bounds to classify.
            if target == "cpu" and not any("tile" in o for o in opts) and \
                    rng.random() < 0.7:
                opts += ["--query-tile-size=%d" % rng.choice([8, 16]),
                         "--kv-tile-size=%d" % rng.choice([16, 32])]
            cmd += opts
            if target != "cpu":
                cmd += ["--target", "gpu"]
            runs.append(cmd)
    counts = collections.Counter()
    refusals = collections.Counter()
    findings = []
    verdicts = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for cmd, (verdict, err) in zip(
                runs, pool.map(lambda c: run_one(args, env, c), runs)):
            verdicts[tuple(cmd)] = verdict
            counts[verdict] += 1
            if verdict == "refused":
                refusals[err.splitlines()[-1].split("error:", 1)[-1].strip()] += 1
            elif verdict != "ok":
                findings.append((verdict, cmd, err))
    if "launcher" in targets:
        # The first GPU run of each spec that was ok: its spec and lowering
        # options (not attn-run's own flags).
        gpu_runs, seen = [], set()
        for cmd in runs:
            if (cmd[1] == "--spec" and "--target" in cmd and
                    cmd[2] not in seen and
                    verdicts[tuple(cmd)] == "ok"):
                seen.add(cmd[2])
                gpu_runs.append((cmd[2], [
                    o for o in cmd[4:] if not o.startswith(
                        ("--seed", "--dims", "--target", "gpu"))]))
        if gpu_runs:
            for verdict, cmd, err in launcher_runs(args, env, gpu_runs):
                runs.append(cmd)
                counts[verdict] += 1
                if verdict != "ok":
                    findings.append((verdict, cmd, err))
    for msg, n in refusals.most_common():
        print("refused %4d: %s" % (n, msg))
    for verdict, cmd, err in findings:
        print("%s: %s\n  %s" % (verdict, " ".join(
            "'%s'" % c if "|" in c or "&" in c else c for c in cmd),
            err.replace("\n", "\n  ")[-2000:]))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "findings.txt"), "w") as f:
        for verdict, cmd, err in findings:
            f.write("%s\t%s\n" % (verdict, "\t".join(cmd)))
    print("spec-diff: seed %d, %d specs x %s%s = %d runs: %d ok, %d refused, "
          "%d wrong, %d crashed" % (
              args.seed, args.count, "/".join(targets),
              ", %d region kernels" % args.regions if args.regions else "",
              len(runs),
              counts["ok"], counts["refused"], counts["WRONG"],
              counts["CRASH"]))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
