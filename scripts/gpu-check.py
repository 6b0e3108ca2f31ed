#!/usr/bin/env python3
"""Checks and benchmarks attn's GPU kernels against PyTorch.

Run by gpu-check.sh after it built lib/libNAME.so for every kernel listed in
specs.txt. Each kernel is called through its C launcher (ctypes, DLTensor
structs built here) on torch CUDA tensors, compared with an fp32 reference
on sampled query rows, and, for the benchmark shapes, timed against
torch.nn.functional.scaled_dot_product_attention (medians, same run).
kind=mha (with its projections in fp64, as the kernel rounds them, timed
against the same projections around SDPA) and kind=additive:A (checked,
not timed) get their weights too. A mask term blocks:FILE reads FILE
relative to the working directory (gpu-artifacts.sh names its copy there).
Exit status: 0 when every kernel agrees with the reference, 1 otherwise,
2 when this machine cannot run the check.
"""

import ctypes
import json
import math
import os
import signal
import sys
import time

def parse_spec(text):
    spec = dict(kv.split("=", 1) for kv in text.split(","))
    s = {"b": int(spec["b"]), "hq": int(spec["hq"]), "sq": int(spec["sq"]),
         "d": int(spec["d"])}
    s["hkv"] = int(spec.get("hkv", s["hq"]))
    s["sk"] = int(spec.get("sk", s["sq"]))
    s["dv"] = int(spec.get("dv", s["d"]))
    s["dtype"] = spec.get("dtype", "f32")
    s["layout"] = spec.get("layout", "bhsd")
    s["mask"] = spec.get("mask", "none")
    # kind=gaussian:SIGMA scores -|q - k|^2 / (2 SIGMA^2): scale 1/SIGMA^2.
    kind = spec.get("kind", "sdpa")
    s["gaussian"] = kind.startswith("gaussian:")
    # kind=additive: scale sum_d w[h, d] tanh(q + k), scale 1 by default.
    s["additive"] = kind == "additive"
    # kind=linear: weights phi(q) . phi(k), phi = elu + 1, no softmax.
    s["linear"] = kind == "linear"
    # kind=additive:A (attn.additive_attention): scale w_score .
    # tanh(q W_q + k W_k), weights w_q, w_k [D, A] and w_score [A] (shared by
    # the heads) after v, scale 1 by default. 0 when absent.
    s["attention_dim"] = int(kind.split(":", 1)[1]) \
        if kind.startswith("additive:") else 0
    # kind=mha,e=E (attn.multi_head_attention): activations x_q [B, Sq, E],
    # x_k and x_v [B, Sk, E] in place of q, k, v, then w_q [E, Hq D], w_k
    # [E, Hkv D], w_v [E, Hkv Dv], w_o [Hq Dv, E]; out [B, Sq, E].
    s["mha"] = kind == "mha"
    s["embed"] = int(spec.get("e", 0))
    if s["mha"] != (s["embed"] > 0):
        raise ValueError("kind=mha takes e=E, and e only kind=mha")
    if s["gaussian"]:
        s["scale"] = 1.0 / float(kind.split(":", 1)[1]) ** 2
    elif kind not in ("sdpa", "additive", "linear", "mha") and \
            not s["attention_dim"]:
        raise ValueError("gpu-check does not model kind=%s" % kind)
    else:
        s["scale"] = float(spec.get(
            "scale", 1.0 if s["additive"] or s["attention_dim"]
            else 1.0 / math.sqrt(s["d"])))
    s["scale"] /= float(spec.get("temperature", 1.0))
    s["lse"] = spec.get("lse", "false") == "true"
    s["mod"] = spec.get("mod", "none")
    s["relpos"] = None
    if s["mod"].startswith("relpos:"):
        parts = s["mod"].split(":")[1:]
        s["relpos"] = (int(parts[0]), int(parts[1]) if len(parts) > 1 else 128,
                       len(parts) < 3)
    elif s["mod"] != "none" and s["mod"] != "alibi" and \
            not s["mod"].startswith("softcap:"):
        raise ValueError("gpu-check does not model mod=%s" % s["mod"])
    s["kv_lens"] = spec.get("kv_lens", "none") == "random"
    s["spans"] = spec.get("spans", "none") == "random"
    # block_mask=random:BQ:BK: an int8 class per (b, h, query block, key
    # block).
    block_mask = spec.get("block_mask", "none")
    s["block_mask"] = tuple(map(int, block_mask.split(":")[1:])) \
        if block_mask.startswith("random:") else None
    unmodeled = set(spec) - {"b", "hq", "hkv", "sq", "sk", "d", "dv", "dtype",
                             "layout", "mask", "kind", "scale", "lse", "mod",
                             "temperature", "kv_lens", "spans", "block_mask",
                             "dynamic", "e"}
    if unmodeled:
        raise ValueError("gpu-check does not model %s" %
                         ", ".join(sorted(unmodeled)))
    return s


def term_shows(s, term, i, j):
    """One `mask=` term (README definitions) over index grids."""
    name, *nums = term.split(":")
    if name == "blocks" and nums:
        return block_bitmap(term.split(":", 1)[1], i, j)
    a, b = (list(map(int, nums)) + [0, 0])[:2]
    d = i - j
    if name == "causal":
        return j <= i
    if name == "causal_bottom_right":
        return j <= i + s["sk"] - s["sq"]
    if name == "window":
        return (j >= i - a) & (j <= i + b)
    if name == "chunked":
        return i // a == j // a
    if name == "prefix":
        return (j < a) | (j <= i)
    if name == "strided":
        return (j <= i) & ((d < a) | (d % a == 0))
    if name == "fixed":
        return (j <= i) & ((j // a == i // a) | (j % a >= a - b))
    if name == "dilated":
        return (j <= i) & (d < a * b) & (d % b == 0)
    if name == "global":
        return (i < a) | (j < a)
    if name == "bigbird":
        return bigbird(s, list(map(int, nums)), i, j)
    raise ValueError(f"unknown mask term {term!r}")


_BITMAPS = {}


def read_block_bitmap(path):
    """blocks:PATH (relative to the working directory) as attn-compile reads
    it: (N, rows of "0"/"1"): `block N`, then a line of 0/1 per query block,
    character j for key block j; blank lines and lines starting with `#`
    skipped, each line stripped."""
    if path not in _BITMAPS:
        block, rows = 0, []
        with open(path, newline="") as f:
            for line in f.read().split("\n"):
                line = line.strip(" \t\n\v\f\r")
                if not line or line.startswith("#"):
                    continue
                if line.startswith("block "):
                    n = line[6:].strip(" \t\n\v\f\r")
                    if block or not n.isdigit() or not 1 <= int(n) <= 1 << 20:
                        raise ValueError("blocks:%s: 'block N' must come "
                                         "once, with N in [1, 2^20]" % path)
                    block = int(n)
                elif not block:
                    raise ValueError("blocks:%s: the first line must be "
                                     "'block N'" % path)
                elif set(line) - {"0", "1"}:
                    raise ValueError("blocks:%s: a row must be characters 0 "
                                     "or 1, got %r" % (path, line))
                else:
                    rows.append(line)
        if not rows:
            raise ValueError("blocks:%s: the bitmap needs 1 row" % path)
        _BITMAPS[path] = (block, rows)
    return _BITMAPS[path]


def block_bitmap(path, i, j):
    """blocks:PATH: query i sees key j iff row i // N of the file has a 1 at
    column j // N; rows and columns past the file's hide (ints or grids)."""
    block, rows = read_block_bitmap(path)
    bi, bj = i // block, j // block
    if isinstance(bi, int) and isinstance(bj, int):
        return bi < len(rows) and bj < len(rows[bi]) and rows[bi][bj] == "1"
    device = (bi if torch.is_tensor(bi) else bj).device
    key = (path, str(device))
    if key not in _BITMAPS:
        # [rows + 1, cols + 1]: the last row and column (all 0) stand for
        # those past the file's.
        cols = max(map(len, rows))
        _BITMAPS[key] = torch.tensor(
            [[c == "1" for c in row.ljust(cols + 1, "0")]
             for row in rows + [""]], dtype=torch.bool, device=device)
    table = _BITMAPS[key]
    bi = torch.as_tensor(bi, device=device).clamp(max=table.shape[0] - 1)
    bj = torch.as_tensor(bj, device=device).clamp(max=table.shape[1] - 1)
    return table[bi, bj]


def bigbird(s, nums, i, j):
    """BigBird blocks (window, global, seeded random), ints or grids."""
    block, window, glob, random, seed = nums
    bi, bj = i // block, j // block
    shown = (abs(bi - bj) <= window // 2) | (bi < glob) | (bj < glob)
    blocks = max((s["sk"] + block - 1) // block, 1)
    full = (1 << 64) - 1
    for r in range(random):
        rows = bi if isinstance(bi, int) else bi.flatten().tolist()
        drawn = []
        for row in ([rows] if isinstance(rows, int) else rows):
            x = (seed * 0x9E3779B97F4A7C15 + row * 0xBF58476D1CE4E5B9
                 + r * 0x94D049BB133111EB) & full
            x ^= x >> 31
            x = (x * 0xD6E8FEB86659FD93) & full
            x ^= x >> 32
            drawn.append(x % blocks)
        if isinstance(bi, int):
            shown = shown | (bj == drawn[0])
        else:
            shown = shown | (bj == torch.tensor(drawn, device=bi.device)
                             .view(bi.shape))
    return shown


def shows(s, i, j):
    """Whether `mask=` of spec `s` shows key j to query i (ints or grids)."""
    if s["mask"] == "none":
        return True
    any_ = False
    for alternative in s["mask"].split("|"):
        every = True
        for term in alternative.split("&"):
            every = every & term_shows(s, term, i, j)
        any_ = any_ | every
    return any_


# `gpu-check.py --visible SPEC`: the number of visible (query, key) pairs,
# without torch or a GPU (tests compare it with gpu-driver's).
if __name__ == "__main__" and sys.argv[1:2] == ["--visible"]:
    spec = parse_spec(sys.argv[2])
    print("visible %d" % sum(bool(shows(spec, i, j))
                             for i in range(spec["sq"])
                             for j in range(spec["sk"])))
    sys.exit(0)

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("gpu-check: PyTorch is not installed here", file=sys.stderr)
    sys.exit(2)
if not torch.cuda.is_available():
    print("gpu-check: no CUDA device visible to PyTorch", file=sys.stderr)
    sys.exit(2)

K_DL_CUDA, K_DL_INT, K_DL_FLOAT, K_DL_BFLOAT = 2, 0, 2, 4
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
TOLERANCE = {"f32": 2e-4, "f16": 1e-2, "bf16": 2e-2}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice),
                ("ndim", ctypes.c_int), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


def dltensor(t):
    """A DLTensor viewing the contiguous CUDA tensor t (kept alive by it)."""
    assert t.is_cuda and t.is_contiguous()
    code = {torch.float32: K_DL_FLOAT, torch.float16: K_DL_FLOAT,
            torch.bfloat16: K_DL_BFLOAT, torch.int32: K_DL_INT,
            torch.int8: K_DL_INT}[t.dtype]
    shape = (ctypes.c_int64 * t.dim())(*t.shape)
    d = DLTensor(t.data_ptr(), DLDevice(K_DL_CUDA, t.device.index or 0),
                 t.dim(), DLDataType(code, t.element_size() * 8, 1),
                 shape, None, 0)
    d._keep = (t, shape)
    return d


def visible(s, rows, device):
    """[len(rows), Sk] bool: which keys each sampled query row sees."""
    i = rows.view(-1, 1)
    j = torch.arange(s["sk"], device=device).view(1, -1)
    seen = torch.zeros(len(rows), s["sk"], dtype=torch.bool, device=device)
    return seen | shows(s, i, j)


def to_bhsd(t, layout):
    return t.transpose(1, 2) if layout == "bshd" else t


def alibi_slopes(heads):
    """The standard ALiBi slopes: 2^(-8 (h + 1) / n) for the largest power of
    two n <= heads, then every other slope of 2n for the heads past n."""
    n = 1 << (heads.bit_length() - 1)
    return [2.0 ** (-8.0 * (h + 1) / n) if h < n else
            2.0 ** (-4.0 * (2 * (h - n) + 1) / n) for h in range(heads)]


def relpos_bucket(relative, buckets, max_distance, bidirectional):
    """T5's relative_position_bucket, as Hugging Face transformers has it."""
    bucket = torch.zeros_like(relative)
    if bidirectional:
        buckets //= 2
        bucket += (relative > 0).long() * buckets
        n = relative.abs()
    else:
        n = -torch.min(relative, torch.zeros_like(relative))
    exact = buckets // 2
    large = exact + (torch.log(n.float() / exact) /
                     math.log(max_distance / exact) *
                     (buckets - exact)).long()
    large = torch.min(large, torch.full_like(large, buckets - 1))
    return bucket + torch.where(n < exact, n, large)


def reference_rows(s, q, k, v, rows, lens, table, weight, spans, blocks):
    """fp32 attention for the query rows `rows`, as [B, Hq, rows, Dv], and
    their log-sum-exp, [B, Hq, rows] (-inf for a row without keys). `lens`,
    `spans`, `blocks`: those operands, or None."""
    q, k, v = (to_bhsd(x, s["layout"]).float() for x in (q, k, v))
    group = s["hq"] // s["hkv"]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    if s["linear"]:
        phi = lambda x: F.elu(x) + 1
        weights = (phi(q[:, :, rows]) @ phi(k).transpose(-1, -2)) * \
            visible(s, rows, q.device)
        total = weights.sum(-1, keepdim=True)
        out = torch.where(total > 0, (weights @ v) / total,
                          torch.zeros_like(weights @ v))
        return out, None
    if s["gaussian"]:
        distance = torch.cdist(q[:, :, rows], k,
                               compute_mode="donot_use_mm_for_euclid_dist")
        # The op's Gaussian score keeps the per-row shift |q|^2 / 2 (only
        # the lse shows it).
        norm = (q[:, :, rows] ** 2).sum(-1, keepdim=True)
        scores = -0.5 * s["scale"] * (distance ** 2 - norm)
    elif weight is not None:
        # [B, Hq, rows, Sk, D] at once: the checked rows are few.
        both = torch.tanh(q[:, :, rows].unsqueeze(3) + k.unsqueeze(2))
        scores = (both * weight.view(1, -1, 1, 1, weight.shape[1])).sum(-1) \
            * s["scale"]
    else:
        scores = (q[:, :, rows] @ k.transpose(-1, -2)) * s["scale"]
    if s["mod"].startswith("softcap:"):
        cap = float(s["mod"].split(":", 1)[1])
        scores = cap * torch.tanh(scores / cap)
    j = torch.arange(s["sk"], device=q.device)
    if s["mod"] == "alibi":
        slopes = torch.tensor(alibi_slopes(s["hq"]), device=q.device)
        scores = scores + slopes.view(1, -1, 1, 1) * \
            (j.view(1, 1, 1, -1) - rows.view(1, 1, -1, 1)).float()
    if table is not None:
        relative = j.view(1, -1) - rows.view(-1, 1)
        scores = scores + table[:, relpos_bucket(relative, *s["relpos"])]
    seen = visible(s, rows, q.device)
    if lens is not None:
        seen = seen & (j.view(1, 1, 1, -1) < lens.view(-1, 1, 1, 1))
    if spans is not None:
        seen = seen & (j.view(1, 1, 1, -1) >=
                       rows.view(1, 1, -1, 1) - spans.view(1, -1, 1, 1))
    if blocks is not None:
        # Class 2 shows, 1 leaves it to the other masks, 0 hides.
        bq, bk = s["block_mask"]
        c = blocks[:, :, rows // bq][:, :, :, j // bk]
        seen = (c >= 2) | ((c == 1) & seen)
    scores = scores.masked_fill(~seen, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return weights @ v, torch.logsumexp(scores, dim=-1)


def project(x, w):
    """x W (in fp64) rounded to x's dtype, as the kernel stores the
    projections of kind=mha and kind=additive:A (an f32 accumulator rounded
    to the dtype)."""
    return (x.double() @ w.double()).float().to(x.dtype)


def reference_mha(s, x_q, x_k, x_v, projections, rows, lens):
    """kind=mha: out [B, rows, E] in fp64: the projections rounded to the
    dtype, the BSHD attention of reference_rows, its output rounded to the
    dtype too (as the kernel stores both), then W_o."""
    w_q, w_k, w_v, w_o = projections
    b = s["b"]
    q = project(x_q, w_q).view(b, s["sq"], s["hq"], s["d"])
    k = project(x_k, w_k).view(b, s["sk"], s["hkv"], s["d"])
    v = project(x_v, w_v).view(b, s["sk"], s["hkv"], s["dv"])
    heads, _ = reference_rows(dict(s, layout="bshd"), q, k, v, rows, lens,
                              None, None, None, None)
    # [B, Hq, rows, Dv] -> [B, rows, Hq Dv], the heads merged.
    heads = heads.to(x_q.dtype).transpose(1, 2).reshape(b, len(rows), -1)
    return heads.double() @ w_o.double()


_SDPA_TAKES_GQA = []


def sdpa_takes_gqa():
    """Whether this torch's SDPA takes enable_gqa (2.5 and later)."""
    if not _SDPA_TAKES_GQA:
        x = torch.zeros(1, 2, 1, 8, device="cuda")
        try:
            F.scaled_dot_product_attention(x, x[:, :1], x[:, :1],
                                           enable_gqa=True)
            _SDPA_TAKES_GQA.append(True)
        except TypeError:
            _SDPA_TAKES_GQA.append(False)
    return _SDPA_TAKES_GQA[0]


def repeat_heads(x, heads):
    """K or V of fewer heads (GQA) repeated per query head, for a torch
    whose SDPA has no enable_gqa."""
    return x.repeat_interleave(heads // x.shape[1], dim=1)


def sdpa(q, k, v, causal):
    """torch's scaled_dot_product_attention on [B, H, S, D] tensors; K and V
    of fewer heads repeated where it takes no enable_gqa (pass them repeated
    beforehand to keep that out of a timing)."""
    if k.shape[1] == q.shape[1]:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    if sdpa_takes_gqa():
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                              enable_gqa=True)
    return F.scaled_dot_product_attention(
        q, repeat_heads(k, q.shape[1]), repeat_heads(v, q.shape[1]),
        is_causal=causal)


def torch_linear(q, k, v, causal):
    """Linear attention (phi = elu + 1) in torch on [B, H, S, D] tensors of
    one head count, in their dtype, as one would write it: without a mask
    phi(Q) (phi(K)^T V) / phi(Q) sum_j phi(k_j), linear in S; causal the
    masked quadratic form (torch has no causal linear attention). A peer to
    time, not a reference: at 8k keys its f16 sums may overflow."""
    pq, pk = F.elu(q) + 1, F.elu(k) + 1
    if causal:
        weights = (pq @ pk.transpose(-1, -2)).tril_()
        return (weights @ v) / weights.sum(-1, keepdim=True)
    state = pk.transpose(-1, -2) @ v
    return (pq @ state) / (pq * pk.sum(-2, keepdim=True)).sum(-1,
                                                             keepdim=True)


# A timing: WARMUPS untimed runs, then at least MIN_RUNS timed ones and more
# while BUDGET_S seconds last, up to MAX_RUNS; their median counts. (The
# CUDA emulator's test takes one run: its times mean nothing.)
WARMUPS, MIN_RUNS, BUDGET_S, MAX_RUNS = 2, 3, 0.5, 20


def median_ms(fn):
    for _ in range(WARMUPS):
        fn()
    torch.cuda.synchronize()
    times, start = [], time.time()
    while len(times) < MAX_RUNS and (len(times) < MIN_RUNS or
                                     time.time() - start < BUDGET_S):
        begin, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        begin.record()
        fn()
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def resources(name):
    """What ptxas reported of kernel `name` (`registers`, ...) and its
    theoretical `blocks_per_sm`, from its manifest (NAME.json from
    gpu-artifacts.sh), or None."""
    try:
        with open(name + ".json") as f:
            used = next(r for r in json.load(f)["resources"]
                        if r["function"] == name)
        return used if "blocks_per_sm" in used else None
    except (OSError, ValueError, KeyError, StopIteration):
        return None


def check(name, spec_text):
    s = parse_spec(spec_text)
    lib = ctypes.CDLL(os.path.join("lib", "lib%s.so" % name))
    entry = getattr(lib, name)
    entry.restype = ctypes.c_int
    error_string = getattr(lib, name + "_error_string")
    error_string.restype = ctypes.c_char_p
    dtype = DTYPES[s["dtype"]]
    torch.manual_seed(0)

    def make(heads, seq, dim):
        shape = ((s["b"], seq, heads, dim) if s["layout"] == "bshd"
                 else (s["b"], heads, seq, dim))
        return torch.randn(shape, device="cuda", dtype=dtype)

    def weight_of(rows, cols, bound=None):
        """[rows, cols] uniform in [-bound, bound], by default
        sqrt(3 / rows): x W keeps the variance of x (unit gain)."""
        bound = math.sqrt(3.0 / rows) if bound is None else bound
        return ((torch.rand(rows, cols, device="cuda") * 2 - 1) *
                bound).to(dtype)

    # kind=mha: w_q, w_k, w_v, w_o; kind=additive:A: w_q, w_k, w_score.
    projections = ()
    if s["mha"]:
        # Activations like q, k, v; weights of unit gain, so the projected
        # Q, K, V and out are of the size of plain attention's.
        e, heads_q, heads_kv = s["embed"], s["hq"], s["hkv"]
        q, k, v = (torch.randn(s["b"], seq, e, device="cuda", dtype=dtype)
                   for seq in (s["sq"], s["sk"], s["sk"]))
        projections = (weight_of(e, heads_q * s["d"]),
                       weight_of(e, heads_kv * s["d"]),
                       weight_of(e, heads_kv * s["dv"]),
                       weight_of(heads_q * s["dv"], e))
        out = torch.full_like(q, float("nan"))
    else:
        q, k, v = make(s["hq"], s["sq"], s["d"]), \
            make(s["hkv"], s["sk"], s["d"]), make(s["hkv"], s["sk"], s["dv"])
        out = torch.full_like(make(s["hq"], s["sq"], s["dv"]), float("nan"))
    if s["attention_dim"]:
        # q W_q and k W_k of the variance of q and k (tanh unsaturated).
        a = s["attention_dim"]
        projections = (weight_of(s["d"], a), weight_of(s["d"], a),
                       weight_of(1, a, 1.0).view(a))
    lse = torch.full((s["b"], s["hq"], s["sq"]), float("nan"), device="cuda")
    lens = torch.randint(0, s["sk"] + 1, (s["b"],), dtype=torch.int32,
                         device="cuda") if s["kv_lens"] else None
    table = torch.rand(s["hq"], s["relpos"][0], device="cuda") * 2 - 1 \
        if s["relpos"] else None
    weight = torch.rand(s["hq"], s["d"], device="cuda") * 2 - 1 \
        if s["additive"] else None
    spans = torch.randint(0, s["sk"] + 1, (s["hq"],), dtype=torch.int32,
                          device="cuda") if s["spans"] else None
    blocks = None
    if s["block_mask"]:
        bq, bk = s["block_mask"]
        draw = torch.randint(0, 10, (s["b"], s["hq"], -(-s["sq"] // bq),
                                     -(-s["sk"] // bk)), device="cuda")
        # 30 % empty, 40 % partial, 30 % full, as attn-run draws them.
        blocks = ((draw >= 3).int() + (draw >= 7).int()).to(torch.int8)
    args = [dltensor(x) for x in (q, k, v)
            + ((table,) if s["relpos"] else ())
            + ((weight,) if s["additive"] else ())
            + projections
            + ((lens,) if s["kv_lens"] else ())
            + ((spans,) if s["spans"] else ())
            + ((blocks,) if s["block_mask"] else ())
            + (out,) + ((lse,) if s["lse"] else ())]
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

    def run():
        code = entry(*[ctypes.byref(a) for a in args], stream)
        if code:
            raise RuntimeError("%s returned %d: %s" %
                               (name, code, error_string(code).decode()))

    run()
    torch.cuda.synchronize()
    rows = torch.unique(torch.cat([
        torch.arange(min(64, s["sq"])),
        torch.arange(max(0, s["sq"] - 64), s["sq"]),
        torch.randint(0, s["sq"], (64,))])).cuda()
    tolerance = TOLERANCE[s["dtype"]]
    if s["mha"]:
        expected = reference_mha(s, q, k, v, projections, rows, lens)
        got = out[:, rows].double()
        # Times the largest expected output where it passes 1 (|out| ~ 1 to
        # 4 from these inputs): out's error (its rounding, the heads'
        # output's, which W_o of unit gain passes on) grows with its size.
        tolerance *= max(1.0, expected.abs().max().item())
    else:
        reference_s, reference_q, reference_k = s, q, k
        if s["attention_dim"]:
            # The additive attention of q W_q and k W_k with w_score as
            # every head's weights.
            w_q, w_k, w_score = projections
            reference_s = dict(s, d=s["attention_dim"])
            reference_q, reference_k = project(q, w_q), project(k, w_k)
            weight = w_score.float().repeat(s["hq"], 1)
        expected, expected_lse = reference_rows(
            reference_s, reference_q, reference_k, v, rows, lens, table,
            weight, spans, blocks)
        got = to_bhsd(out, s["layout"])[:, :, rows].float()
    error = (got - expected).abs().max().item()
    if s["lse"]:
        got_lse = lse[:, :, rows]
        same = got_lse == expected_lse  # equal infinities agree
        diff = torch.where(same, torch.zeros_like(got_lse),
                           (got_lse - expected_lse).abs())
        lse_error = diff.max().item()
        error = lse_error if math.isnan(lse_error) else max(error, lse_error)
    ok = error <= tolerance  # NaN fails too
    line = "%-16s %-60s max err %.2e %s" % (name, spec_text, error,
                                             "ok" if ok else "FAILED")
    # Timed at the benchmark shapes where nothing but the mask sets the
    # work: against SDPA where it computes the same (no mask or causal),
    # else against the last unmasked kernel of its shape timed before (a
    # sparse mask's speed-up; issue 6: window:256:0 at S = 8192 >= 8x).
    # Decoding (one query row against >= 1k keys, no mask: a bottom-right
    # causal one hides nothing from the last row) is timed against SDPA
    # too, in ms and the GB/s of K and V read.
    # Linear attention at those shapes (no mask or causal) is timed against
    # torch_linear.
    softmax_only = (not s["gaussian"] and not s["additive"]
                    and not s["relpos"] and not s["spans"]
                    and not s["block_mask"] and not s["linear"]
                    and not s["attention_dim"] and s["mod"] == "none"
                    and not s["kv_lens"]
                    and s["scale"] == 1.0 / math.sqrt(s["d"]))
    decoding = (softmax_only and not s["mha"] and s["sq"] == 1
                and s["sk"] >= 1024
                and s["mask"] in ("none", "causal_bottom_right"))
    plain = (softmax_only and s["b"] * s["sq"] == 16384
             and s["sq"] == s["sk"])
    linear_plain = (s["linear"] and s["b"] * s["sq"] == 16384
                    and s["sq"] == s["sk"] and s["mask"] in ("none", "causal"))
    shape = tuple(s[key] for key in ("b", "hq", "hkv", "sq", "d", "dv",
                                     "dtype", "layout", "mha"))
    if decoding:
        def timing():
            ours = median_ms(run)
            qt, kt, vt = (to_bhsd(x, s["layout"]) for x in (q, k, v))
            if not sdpa_takes_gqa():
                kt, vt = (repeat_heads(x, s["hq"]) for x in (kt, vt))
            theirs = median_ms(lambda: sdpa(qt, kt, vt, False))
            moved = (k.numel() + v.numel()) * k.element_size()
            MEASURED[name] = {"ok": ok, "gbps": moved / ours / 1e6}
            return ("  attn %8.4f ms %6.0f GB/s  sdpa %8.4f ms  attn/sdpa %.3f"
                    % (ours, moved / ours / 1e6, theirs, theirs / ours))
    elif linear_plain:
        def timing():
            ours = median_ms(run)
            qt, kt, vt = (to_bhsd(x, s["layout"]) for x in (q, k, v))
            kt, vt = (repeat_heads(x, s["hq"]) for x in (kt, vt))
            theirs = median_ms(
                lambda: torch_linear(qt, kt, vt, s["mask"] == "causal"))
            return ("  attn %8.3f ms  torch %8.3f ms  attn/torch %.3f"
                    % (ours, theirs, theirs / ours))
    elif plain and s["mask"] not in ("none", "causal"):
        def timing():
            ours = median_ms(run)
            line = "  attn %8.3f ms" % ours
            if shape in UNMASKED_MS:
                speedup = UNMASKED_MS[shape] / ours
                MEASURED[name] = {"ok": ok, "speedup": speedup}
                line += "  unmasked/attn %.2f" % speedup
            return line
    elif plain:
        def timing():
            causal = s["mask"] == "causal"
            flops = 4.0 * s["b"] * s["hq"] * s["sq"] * s["sk"] * s["d"]
            if causal:
                flops /= 2
            ours = median_ms(run)
            if not causal:
                UNMASKED_MS[shape] = ours
            if s["mha"]:
                # kind=mha against the same projections (x W, nn.Linear's
                # without bias) around SDPA, in torch: F.multi_head_attention_
                # forward has no GQA. The projections count in both FLOP/s.
                b, sq, e = s["b"], s["sq"], s["embed"]
                w_q, w_k, w_v, w_o = projections
                flops += 2.0 * b * sq * e * (w_q.shape[1] + w_k.shape[1] +
                                             w_v.shape[1] + w_o.shape[0])

                def split(x, w, heads):
                    return (x @ w).view(b, sq, heads, -1).transpose(1, 2)

                def torch_mha():
                    attention = sdpa(
                        split(q, w_q, s["hq"]), split(k, w_k, s["hkv"]),
                        split(v, w_v, s["hkv"]), causal)
                    return attention.transpose(1, 2).reshape(b, sq, -1) @ w_o
                theirs = median_ms(torch_mha)
            else:
                qt, kt, vt = (to_bhsd(x, s["layout"]) for x in (q, k, v))
                if not sdpa_takes_gqa():
                    kt, vt = (repeat_heads(x, s["hq"]) for x in (kt, vt))
                theirs = median_ms(lambda: sdpa(qt, kt, vt, causal))
            MEASURED[name] = {"ok": ok, "tflops": flops / ours / 1e9}
            return ("  attn %7.1f TFLOP/s  sdpa %7.1f TFLOP/s  attn/sdpa %.3f"
                    % (flops / ours / 1e9, flops / theirs / 1e9,
                       theirs / ours))

    if plain or decoding or linear_plain:
        used = resources(name)
        if used:
            line += "  regs %d (%d blocks/SM)" % (used["registers"],
                                                 used["blocks_per_sm"])
        # A torch that cannot time it (no SDPA, no half matmul on its
        # device) costs the timing, not the check.
        try:
            line += timing()
        except Exception as e:
            line += "  not timed: %s" % e
    print(line, flush=True)
    return ok


# attn's median time (ms) of the last unmasked kernel timed at each
# benchmark shape, for the sparse masks of the shape listed after it.
UNMASKED_MS = {}
# What each timed kernel measured, by name: "tflops" (its TFLOP/s) or
# "speedup" (the unmasked kernel's time over its own), and "ok" (whether it
# agreed with the reference).
MEASURED = {}


# The spec of each kernel, by name.
SPEC_OF = {}


def report_variants():
    """Ranks the timed kernels that share a spec (variants: the same
    attention compiled with other flags, e.g. tile shapes), fastest first,
    so the best can become the default."""
    groups = {}
    for name, got in MEASURED.items():
        for metric, unit in (("tflops", " TFLOP/s"), ("gbps", " GB/s")):
            if metric in got:
                groups.setdefault((SPEC_OF.get(name, ""), unit), []).append(
                    (got[metric], name, got["ok"]))
    for (spec, unit), runs in groups.items():
        if len(runs) < 2:
            continue
        runs.sort(key=lambda run: -run[0])
        print("variants %s (%s): %s" % (spec, unit.strip(), ", ".join(
            "%s %.2f%s" % (name, value, "" if ok else " (wrong results)")
            for value, name, ok in runs)))


def report_floors(path="floors.txt"):
    """Prints each floor of `path` (gpu-artifacts.sh's copy of its FLOORS:
    NAME METRIC MIN WHAT) against what this run measured. A report, not a
    verdict on the exit status: times are the machine's."""
    if not os.path.exists(path):
        return
    met = total = 0
    with open(path) as f:
        for line in f:
            name, metric, least, what = (line.split(None, 3) + [""])[:4]
            total += 1
            got = MEASURED.get(name, {})
            value = got.get(metric)
            unit = " TFLOP/s" if metric == "tflops" else "x"
            if value is None:
                verdict, value = "not measured", "-"
            else:
                verdict = ("not met (wrong results)" if not got["ok"] else
                           "met" if value >= float(least) else "not met")
                value = "%.2f%s" % (value, unit)
            met += verdict == "met"
            print("floor %-18s %-7s %s, floor %s%s: %s  (%s)" % (
                name, metric, value, least, unit, verdict, what.strip()))
    print("gpu-check: %d of %d floors met" % (met, total))


class Stopped(BaseException):
    """SIGTERM (gpu-check.sh's timeout) while checking: the kernels checked
    so far still get their variants and floors reported."""


def main():
    def stop(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second one kills
        raise Stopped()

    signal.signal(signal.SIGTERM, stop)
    print("gpu-check on %s, torch %s" % (torch.cuda.get_device_name(),
                                         torch.__version__))
    failures = checked = 0
    with open("specs.txt") as f:
        specs = [line.split() for line in f if line.strip()]
    try:
        for name, spec in specs:
            SPEC_OF[name] = spec
            try:
                failures += not check(name, spec)
            except Exception as e:  # report, keep checking the others
                print("%-16s %s: %s" % (name, spec, e), flush=True)
                failures += 1
            checked += 1
    except Stopped:
        print("gpu-check: stopped by SIGTERM after %d of %d kernels" %
              (checked, len(specs)))
    print("gpu-check: %d failed" % failures)
    report_variants()
    report_floors()
    return 1 if failures or checked < len(specs) else 0


if __name__ == "__main__":
    sys.exit(main())
