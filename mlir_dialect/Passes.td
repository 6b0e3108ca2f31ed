//===- Passes.td - attn transformation passes --------------*- tablegen -*-===//

#ifndef ATTN_PASSES_TD
#define ATTN_PASSES_TD

include "mlir/Pass/PassBase.td"

def ExpandMultiHeadAttention : Pass<"attn-expand-mha"> {
  let summary = "Expand attn.multi_head_attention into projections and "
                "attn.attention";
  let description = [{
    Rewrites every `attn.multi_head_attention` into `linalg` projections
    (`x @ W + b`, accumulated in f32 and converted back to the activation
    type), a reshape of the projected activations into heads, one
    `attn.attention` in the BSHD layout (so no transpose is needed), and the
    output projection. Masks, scale and regions carry over unchanged.

    Example:

    ```mlir
    %o = attn.multi_head_attention ins(%x, %x, %x : ...) weights(...)
        outs(%init : tensor<2x128x512xf32>) {num_heads = 8 : i64} -> ...
    ```

    becomes three `linalg.generic` projections, `tensor.expand_shape` to
    [2, 128, 8, 64], an `attn.attention` with `layout = #attn.layout<bshd>`,
    a `tensor.collapse_shape` back to [2, 128, 512] and the output projection.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def ExpandAdditiveAttention : Pass<"attn-expand-additive"> {
  let summary = "Expand attn.additive_attention into projections and "
                "attn.attention";
  let description = [{
    Rewrites every `attn.additive_attention` into the projections
    `q W_q` and `k W_k` (`linalg`, accumulated in f32 and converted back to
    the input type: O(S D A) work), the score weights broadcast to one row
    per query head, and an `attn.attention` with
    `similarity = #attn.similarity<additive>` on the projected queries and
    keys (scale 1 unless given), which every later pass tiles, fuses and
    skips like any other attention.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def DecomposeAttention : Pass<"attn-decompose"> {
  let summary = "Lower attn.attention to linalg, arith and math without tiling";
  let description = [{
    The naive, unfused lowering: every `attn.attention` becomes a sequence of
    `linalg.generic` ops on f32 tensors that materialize the whole score
    matrix: `S = scale * Q K^T`, then score_mod, bias and every mask
    (hidden keys become -inf), the row max `M`, `P = exp(S - M)` (0 for a row
    whose keys are all hidden), the row sum `L`, `O = P V`, and
    `out = L > 0 ? O / L : 0` converted to the output element type.

    Query heads are split as [Hkv, Hq / Hkv] with `tensor.expand_shape` so that
    every indexing map is a projected permutation, whatever the GQA ratio and
    whether the head counts are static or dynamic. Both layouts are read in
    place (no transposes).

    This is the reference lowering every fused kernel is checked and
    benchmarked against.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def LowerLinearAttention : Pass<"attn-lower-linear-attention"> {
  let summary = "Lower attn.linear_attention to linalg in linear time";
  let description = [{
    Every `attn.linear_attention` becomes f32 `linalg.generic` ops over
    [B, Hq, S, F] tensors (keys and values gathered per query head, so GQA
    and both layouts need no head arithmetic in indexing maps), with
    `phi(x) = elu(x) + 1`:

    - no mask: the state `S = phi(K)^T V` [D, Dv] and normalizer
      `z = sum_j phi(k_j)` [D] per head, accumulated over key chunks of
      `chunk-size` (an `scf.for`, so a chunk stays in cache), then
      `out = phi(Q) S / phi(Q) z`;
    - causal: an `scf.for` over query chunks of `chunk-size` rows carries
      (out, S, z). A chunk reads the state (every key all its rows see),
      adds its masked [chunk, chunk] block of the keys its rows see in part,
      normalizes, and folds that block's keys into the state. The work is
      O(S (D Dv + chunk (D + Dv))) instead of O(S^2).

    A row that sees no key outputs 0.
  }];
  let options = [
    Option<"chunkSize", "chunk-size", "int64_t", /*default=*/"64",
           "Query rows per chunk of the causal form">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def AttachCPUTarget : Pass<"attn-attach-cpu-target", "ModuleOp"> {
  let summary = "Record the target CPU and features on every llvm.func";
  let description = [{
    Sets `target_cpu` and `target_features` on each `llvm.func` so that
    LLVM's code generator specializes the kernel (AVX2, AVX-512, ...). The
    value `host` stands for the machine the compiler runs on. The last step of
    `attn-cpu-pipeline`.
  }];
  let options = [
    Option<"cpu", "cpu", "std::string", /*default=*/"\"host\"",
           "Target CPU as LLVM names it (e.g. skylake-avx512), or host">,
    Option<"features", "features", "std::string", /*default=*/"\"host\"",
           "Target features (e.g. +avx2,+fma), or host">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def ClassifyBlocks : Pass<"attn-classify-blocks"> {
  let summary = "Cut from each attention the key blocks none of its queries "
                "can see (block skipping)";
  let description = [{
    For each `attn.attention` (typically a tile from `attn-tile`, whose
    `offsets`/`extents` place it in the whole problem), decides which keys
    any of its queries can see and slices K, V and the key dimension of mask
    and bias down to them, advancing the key offset:

    * the structured mask bounds them (causal masks end the keys at the last
      query's diagonal, sliding windows bound them on both sides, chunks to
      the queries' chunks, global tokens to the first tokens, ...);
    * in an attention of one batch entry, `kv_lens[b]` ends them too, and the
      operand is dropped since the cut applies it exactly;
    * adaptive `spans` start them at the first query minus the widest span of
      the attention's heads (the operand stays: it still hides per score).

    The cut starts on a multiple of the key tile of the fused loop, so its
    tiles lie on one grid of the whole problem (and match a brute-force
    count of the tiles a mask leaves visible).

    Skipped blocks are then never visited by any lowering: the fused loop of
    `attn-fuse-online-softmax` runs over what is left and decides per key
    tile whether the band shows it fully (no per-element mask) or partially;
    `attn-run --json` reports both counts (`tiles_total`, `tiles_computed`).
    Attentions with no structured mask, usable kv_lens or spans are left
    alone.

    ```mlir
    // Query tile [64, 128) of a causal attention over 1024 keys:
    %o = attn.attention ins(%q, %k, %v : ...) offsets(%c0, %c0, %c64, %c0 ...)
        extents(%c1024, %c1024 ...) ... {structured_mask = #attn.causal<top_left>}
    // becomes the same attention over keys [0, 128):
    %k0 = tensor.extract_slice %k[0, 0, 0, 0] [1, 2, %n, 64] ...
    ```
  }];
  let options = [
    Option<"kvTileSize", "kv-tile-size", "int64_t", /*default=*/"0",
           "The key tile of the fused loop, that cuts start on a multiple of "
           "(0 with l2-cache-size 0: anywhere)">,
    Option<"l2CacheSize", "l2-cache-size", "int64_t", /*default=*/"0",
           "With kv-tile-size=0, derive the key tile as "
           "attn-fuse-online-softmax does">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def FuseOnlineSoftmax : Pass<"attn-fuse-online-softmax"> {
  let summary = "Turn attn.attention into a loop of attn.online_attention "
                "over key/value tiles";
  let description = [{
    The FlashAttention rewrite: every `attn.attention` becomes an `scf.for`
    over key/value tiles of `kv-tile-size` keys (the last tile may be
    shorter) that carries the running accumulator, row max and row sum as
    `iter_args`, one `attn.online_attention` per tile (K, V and the key
    dimension of mask and bias sliced; `offsets` and `extents` give the tile
    its whole-problem positions), and one `attn.finalize_online_attention`
    that normalizes once at the end. No [Sq, Sk] tensor is left; after
    `attn-decompose` the largest temporary is [Sq, kv-tile-size] per head.

    Full and partial tiles: under a band mask (causal in either alignment,
    sliding window), a key tile the band shows completely to every query
    runs a step without the structured mask (`scf.if`): only tiles on the
    band's edge test it per element. (Key tiles the band hides from every
    query were cut off before, by `attn-classify-blocks`.)

    A `mask_mod` region is classified per key tile too: its ops are
    evaluated on intervals (emitted as IR) over the tile's ranges of
    (b, h, q_idx, kv_idx). A tile the region certainly hides is skipped, the
    statistics passing through; one it (and the band) certainly shows runs
    without the region and the structured mask; the rest apply both per
    element. Regions with an op the intervals do not model (anything but
    integer constants, index casts, add/sub/mul, division and remainder by a
    positive constant, min/max, cmpi, select and i1 logic on index, i64 and
    i1) are not classified.

    ```mlir
    %acc, %max, %sum = scf.for %kv = %c0 to %sk step %c64
        iter_args(%a = %acc0, %m = %max0, %l = %sum0) -> (...) {
      %k_tile = tensor.extract_slice %k[0, 0, %kv, 0] [...] [1, 1, 1, 1]
      ...
      %r:3 = attn.online_attention ins(%q, %k_tile, %v_tile : ...)
          offsets(%c0, %c0, %c0, %kv : ...) extents(%sq, %sk : ...)
          outs(%a, %m, %l : ...) -> ...
      scf.yield %r#0, %r#1, %r#2 : ...
    }
    %out = attn.finalize_online_attention ins(%acc, %sum : ...) outs(%init : ...)
    ```
  }];
  let options = [
    Option<"kvTileSize", "kv-tile-size", "int64_t", /*default=*/"64",
           "Keys per tile of the online-softmax loop (0: derived from "
           "l2-cache-size)">,
    Option<"l2CacheSize", "l2-cache-size", "int64_t", /*default=*/"0",
           "Bytes of L2 cache per core that kv-tile-size=0 derives the tile "
           "from: K and V tiles of L2 / (16 (D + Dv)) keys (ONNX Runtime's "
           "rule), in whole 64-key micro-kernel chunks, 64 to 1024">,
    Option<"countTiles", "count-tiles", "bool", /*default=*/"false",
           "Add the key tiles of each loop (all, and those the loop "
           "visits) to the i64 globals @attn_tiles_total and "
           "@attn_tiles_computed (the pass must run on a module)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def TileAttention : Pass<"attn-tile"> {
  let summary = "Tile attn.attention over batch, key/value heads and query "
                "blocks into an scf.forall";
  let description = [{
    Splits every `attn.attention` (that is not already a tile) into an
    `scf.forall` over (batch, key/value head, query block) tiles, each an
    `attn.attention` on slices of Q, K, V, the output and the mask, bias and
    kv_lens operands, with `offsets` and `extents` recording its place in the
    whole problem. A tile of `head-tile-size` key/value heads holds all the
    query heads that read them (GQA), so K and V are sliced, never copied.
    With a dynamic group count (Hq / Hkv unknown) heads are not tiled.
    The loop is parallel: the CPU pipeline runs it on OpenMP threads.

    ```mlir
    %r = scf.forall (%b, %h, %i) = (0, 0, 0) to (%B, %Hkv, %Sq)
        step (1, 1, 64) shared_outs(%o = %init) -> (tensor<...>) {
      %t = attn.attention ins(%q_tile, %k_tile, %v_tile : ...)
          offsets(%b, %hq, %i, %c0 : ...) extents(%Sq, %Sk : ...)
          outs(%o_tile : ...) -> ...
      scf.forall.in_parallel { tensor.parallel_insert_slice %t into %o[...] }
    }
    ```
  }];
  let options = [
    Option<"batchTileSize", "batch-tile-size", "int64_t", /*default=*/"1",
           "Batch entries per tile">,
    Option<"headTileSize", "head-tile-size", "int64_t", /*default=*/"1",
           "Key/value heads per tile (with all their query heads)">,
    Option<"queryTileSize", "query-tile-size", "int64_t", /*default=*/"64",
           "Queries per tile (0: derived from l2-cache-size)">,
    Option<"l2CacheSize", "l2-cache-size", "int64_t", /*default=*/"0",
           "Bytes of L2 cache per core that query-tile-size=0 derives the "
           "tile from (ONNX Runtime's rule, capped: min(Bc, D + Dv, 128) "
           "queries with Bc = L2 / (16 (D + Dv)))">,
    Option<"parallelism", "parallelism", "int64_t", /*default=*/"1",
           "Threads to keep busy: a derived query tile halves (down to 16 "
           "queries) while static shapes give fewer than 2 tiles per "
           "thread">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def SplitKeyValue : Pass<"attn-split-kv"> {
  let summary = "Split the keys of a decode-shaped attention across parallel "
                "partial attentions and merge them (split-K)";
  let description = [{
    When an attention has too little (batch x key/value head x query) work to
    occupy the machine, e.g. decoding one token against a long KV cache with
    a single key/value head, the key range is split into `splits` parts that
    run in an `scf.forall`, each an `attn.online_attention` producing partial
    (acc, max, sum) statistics from a fresh start. The partials are merged
    exactly: with M the maximum of the partial maxima, acc and sum are the
    sums of each partial scaled by exp(max_s - M), and
    `attn.finalize_online_attention` normalizes.

    `splits = 0` decides automatically (static sizes only): split when
    B x Hkv < `parallelism` and Sq <= 16, into min(8, Sk / min-keys-per-split)
    parts.
  }];
  let options = [
    Option<"splits", "splits", "int64_t", /*default=*/"0",
           "Number of key ranges (0: decide automatically)">,
    Option<"parallelism", "parallelism", "int64_t", /*default=*/"2",
           "Threads the kernel should keep busy (automatic mode)">,
    Option<"minKeysPerSplit", "min-keys-per-split", "int64_t",
           /*default=*/"256", "Fewest keys per range (automatic mode)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def LowerToUKernels : Pass<"attn-lower-to-ukernels"> {
  let summary = "Replace the ops a CPU micro-kernel implements with "
                "attn.ukernel.generic";
  let description = [{
    Rewrites every `attn.online_attention` step that a register-blocked
    CPU micro-kernel implements into an `attn.ukernel.generic` call of it on
    the same tensors: f32, f16 or bf16 query, key and value (one of
    `attn_uk_online_step_f32`, `_f16`, `_bf16`) and no additive similarity.
    A causal or sliding-window mask is passed as a band of visible key -
    query position differences. Mask and bias tensors are passed expanded
    to rank 4 ([B, Hq, Sq, Sk], size-1 dims broadcast), or as 1x1x1x1
    dummies when absent. A `mask_mod` region, any other structured mask,
    kv_lens, spans and a block mask are evaluated over the step's
    whole-problem indices by a `linalg.generic` into an i1 tile passed as
    the mask; a step with both those and a mask tensor is not rewritten. A
    `score_mod` region or a `rel_bias` table runs between two micro-kernels:
    `attn_uk_scores_*` writes the step's scaled scores into an f32 tile, a
    `linalg.generic` applies the region and adds the table in place, and the
    step reads that tile. Other steps are left for `attn-decompose`. The
    scalars are the scale, the layout, the whole-problem positions of the
    first query (shifted for bottom-right alignment) and key, the band, and
    flags saying which of mask, bias and scores are given.

    Every `linalg.matmul` into f32 from f32, f16 or bf16 inputs (the
    projections of `attn-expand-mha` and `attn-expand-additive`) becomes an
    `scf.forall` over tiles of 64 rows, each an `attn_uk_matmul_*` call.

    The micro-kernels (`lib/Runtime/OnlineStepUKernel.c`) pack each chunk of
    keys (or of weight columns) transposed and accumulate in register
    blocks; the online step adds the online softmax with a vector exp and
    P V. The CPU code generator links them in.
  }];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::attn::AttnDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def LowerUKernelOpsToCalls : Pass<"attn-lower-ukernel-ops-to-calls",
                                  "ModuleOp"> {
  let summary = "Lower bufferized attn.ukernel.generic ops to func.call";
  let description = [{
    Each `attn.ukernel.generic` on memrefs becomes a `func.call` of a private
    declaration with `llvm.emit_c_interface`, so the C micro-kernel receives
    pointers to strided memref descriptors (`_mlir_ciface_<ukernel>`). Memref
    operands are cast to fully dynamic strided types, so that one declaration
    serves every call site. A micro-kernel op still on tensors is an error.
  }];
  let dependentDialects = [
    "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

def LowerNestedLinalgToLoops : Pass<"attn-lower-nested-linalg-to-loops"> {
  let summary = "Lower linalg ops inside parallel loops to sequential loops";
  let description = [{
    Every linalg op on buffers nested in an `scf.parallel` (the tile loops of
    the fused kernel, after `scf-forall-to-parallel`) becomes a nest of
    `scf.for` loops. The ops inside a tile (the masks and modified scores of
    a micro-kernel step, the linalg steps) then stay on the tile's thread:
    as `scf.parallel` they would become nested OpenMP regions that run
    serialized anyway, and whose collapsed loop divides its index per
    element, which keeps LLVM from vectorizing it. Linalg ops outside any
    parallel loop (projections, the unfused kernel) are left for
    `convert-linalg-to-parallel-loops`.

    ```mlir
    scf.parallel (%t) = ... {
      linalg.generic ... outs(%tile : memref<64x?xf32, ...>) { ... }
    }
    // becomes
    scf.parallel (%t) = ... {
      scf.for %i = ... { scf.for %j = ... { ... memref.store ... } }
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
  ];
}

def ApproximateMath : Pass<"attn-approximate-math"> {
  let summary = "Replace math.tanh with a polynomial approximation";
  let description = [{
    Rewrites f32 `math.tanh` (and vectors of it) into MLIR's polynomial
    approximation: arithmetic, selects and a clamp, with no call. LLVM lowers
    `math.tanh` to a call of libm's `tanhf`, which keeps every loop holding
    it scalar (about 20 ns a call here); the approximation vectorizes. Its
    error is a few ulp, and it keeps tanh's limits: +-1 past |x| ~ 7.9, x
    itself near 0, and NaN for NaN. The CPU pipeline runs it before the
    math-to-LLVM conversion, for softcap score_mods and additive attention.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def ExpandBF16Conversions : Pass<"attn-expand-bf16-conversions"> {
  let summary = "Rewrite f32 <-> bf16 conversions as integer arithmetic";
  let description = [{
    Rewrites `arith.truncf` to bf16 (and `arith.extf` from it, scalars and
    vectors) into bitcasts, shifts and selects: MLIR's bf16 expansion, which
    rounds to nearest even and keeps NaN a NaN. On an x86 target without
    AVX512-BF16, LLVM lowers the truncation to a call of `__truncsfbf2`,
    which GCC 12's libgcc (Debian 12's) lacks, so a bf16 kernel compiled for
    such a CPU would not link, nor run in attn-run's JIT. The CPU pipeline
    runs it before the arith-to-LLVM conversion. For example

    ```mlir
    %b = arith.truncf %x : vector<16xf32> to vector<16xbf16>
    ```

    becomes an `arith.bitcast` of `%x` to i32 lanes, the rounding bias added,
    a select for NaN, a shift right by 16, an `arith.trunci` to i16 and a
    bitcast to bf16.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def ConvertAttnToGPU : Pass<"attn-convert-to-gpu", "ModuleOp"> {
  let summary = "Turn attention kernel functions into gpu.func kernels and "
                "launching host functions (the GPU FMA path)";
  let description = [{
    Every kernel function `@name(q, k, v, [mask], [bias], [kv_lens], out)`
    on tensors that returns its one `attn.attention` becomes a `gpu.func @name` (in a new
    `gpu.module @name_kernels`) and a host `func.func @name` on memrefs that
    flattens its arguments and `gpu.launch_func`s the kernel over
    (ceil(Sq / block-rows), Hq, B) blocks, block x computing query block
    ceil(Sq / block-rows) - 1 - x (the longest first under a causal mask).
    Kernel arguments: q, k, v,
    [mask], [bias], [kv_lens], out as 1-D memrefs, then B, Sq, Sk, Hq and Hkv.

    In a block, T consecutive lanes (the fewest, a power of two up to a
    warp, whose slices of D and Dv take at most 32 elements each) share a
    query row: each holds about D/T of the row's query (scaled) and Dv/T of
    its accumulator in registers, as round-robin chunks of 4, 2 or 1
    elements (where T does not divide D or Dv, a lane's last chunk may lie
    past the row: zeros, never stored), and the row's score is their partial dot
    products summed with `gpu.shuffle xor`. K and V tiles of `kv-tile-size`
    keys (fewer when they would not fit in 48 KiB of static shared memory)
    are staged through shared memory (f16/bf16 widened to f32). The online softmax runs in registers in steps of 4 keys (2 under
    per-score masks other than bands; one rescale of the accumulator per
    step), in base 2 with
    log2(e) folded into the score; a row that sees no key writes 0. Keys that
    the band mask (causal in both alignments, sliding window) and kv_lens
    hide from every row of a block are never loaded, nor key tiles the
    mask_mod's interval bounds (as in `attn-fuse-online-softmax`) prove
    hidden from the whole block; score_mod and mask_mod
    regions are inlined per score; mask and bias tensors are read per score
    (broadcast dims at stride 0, rows past Sq clamped in bounds).

    With `mma` (run on the CUDA emulator, not yet on a GPU), an f16 or bf16
    attention with D and Dv multiples of 8, both at most 256 (past 128 only
    under causal and window masks), takes the tensor-core kernel instead
    (where D is an odd multiple of 8, the last 16-wide step of Q K^T holds
    zeros in columns 8-15 of its A and B fragments): blocks of `mma-block-rows` / 16 warps (4 by
    default; 1 when a static Sq is at most 16, decoding), each computing 16 query rows with `nvgpu.mma.sync` m16n8k16 (f32 accumulators): the query as A
    fragments in registers, S = Q K^T against f16 K tiles of
    `mma-kv-tile-size` keys in shared memory, the online softmax on the score fragments (row max over
    the 4 lanes of a row by shuffles), and O += P V with P's fragments taken
    from the score fragments of two adjacent 8-key blocks (FlashAttention-2's
    register reuse). bf16 uses `nvvm.mma.sync` directly (MLIR 22's
    nvgpu.mma.sync lowering cannot type bf16 operands). Under a per-row
    mask (a mask tensor, a structured mask, spans, a mask_mod or a block
    mask) its products would carry a NaN or Inf of V to the rows of a block
    that do not see its key (0 x NaN = NaN), so a second kernel follows it
    over the same blocks of rows, `@name_exact`: the FMA kernel, behind a
    vote (an `nvvm.barrier` reduction) over the V of the tensor cores' key
    tiles the block sees partly. A block that finds no NaN or Inf there
    returns at once; the others redo their rows, selecting as the CPU
    kernels do.

    A kernel function `(q, k, v, out)` of one `attn.linear_attention` becomes
    one block of 128 threads per (slice of Dv's columns, query head, batch
    entry[, chunk of rows]) that keeps its slice of the state
    `S = sum_j phi(k_j) v_j^T` and `z = sum_j phi(k_j)` in shared memory,
    each thread owning entries of them: it folds every key and then writes
    its rows, or, causal, walks its rows folding the keys each newly sees
    (linear in Sq + Sk). While static B and Hq make too few blocks to fill
    a GPU (and Hkv is static), the rows come in chunks (`attn.block_rows`
    each): a first kernel, `@name_chunk_states`, a block per KV head
    (`attn.packed_heads` = Hq / Hkv), folds each whole chunk of as many
    keys into a state of its own, in a scratch buffer (`gpu.alloc`, tagged
    `attn.rows_of` and `attn.width`), a second, `@name_chunk_prefixes`,
    adds to each those before it, and each chunk of rows starts from the
    prefix of the key chunks its first row sees.

    A kernel function taking the operands of one
    `attn.multi_head_attention` or `attn.additive_attention` in order keeps
    them: its projections become projection kernels `@name_projectN`
    (16 x 16 tiles of y = x w (+ bias) per block, f32 accumulation; without
    x and w the bias on every row) writing scratch buffers (`gpu.alloc`,
    tagged `attn.rows_of` or `attn.rows_symbol` and `attn.width` for the
    launcher), launched around the attention kernel of the attention between
    them (expanded as by `attn-expand-mha` and `attn-expand-additive`).

    Split-K (`kv-splits`, flash-decoding): where (ceil(Sq / rows), Hq, B)
    blocks are too few for a GPU (decoding: a query block of every row),
    `kv-splits` = S blocks share each query block's keys, a run of whole
    key tiles each (grid x: ceil(Sq / rows) S, `attn.kv_splits` on the
    launch). They write their rows' partial output (normalized, f32) and
    lse into two scratch buffers (`gpu.alloc`, S rows of out and of lse per
    query row), and `@name_combine` (a warp per query row, 4 rows per block)
    merges them exactly into out (and lse) by the splits' lse. `kv-splits =
    0` decides (static sizes only): split when the query fits one block
    (Sq <= its rows) and B Hq blocks are fewer than 264 (two of an H100's
    132 SMs each), into as many splits as make 264 blocks, each at least 4
    key tiles, at most 32.

    GQA packing (`pack-gqa`, FlashAttention's pack_gqa): where a static
    query of the g = Hq / Hkv query heads sharing a KV head fits one block
    (Sq g <= its rows, g dividing them: decoding), the block takes all g
    heads of a KV head, row p holding query row p / g of query head
    g kvHead + p % g: the grid is (ceil(Sq / (rows / g)), Hkv, B)
    (`attn.packed_heads` = g on the launch, `attn.block_rows` = rows / g
    query rows of each head) and each key tile is read once for the g heads,
    not g times. The tensor-core kernel then takes 16 rows per block while
    Sq g <= 16, else as few whole warps as hold them (up to 4). Not under
    spans, a block mask or a mask_mod (the keys a block sees would depend on
    the head).

    Two row blocks a warp (`mma-warp-rows = 32`, FlashAttention-2's 128 x
    64 blocks of 4 warps): each warp computes 32 query rows, so each K and V
    fragment it reads from shared memory by ldmatrix feeds two MMAs, not
    one. Blocks take 128 rows unless `mma-block-rows` says otherwise (a
    multiple of 32), packed GQA heads the 64 rows that hold them; a query
    that would take blocks under 64 rows (decoding) keeps 16 rows a warp. Where two row blocks of Q fragments would take more
    than 32 registers (D > 64), Q goes to shared memory once, in fragment
    order (one 16-byte load a lane per fragment), and Q K^T runs over D
    outermost so a fragment is read once a tile.

    `mma-query-in-shared` puts Q in shared memory that way for any warp
    rows and D: the 16-row kernel at D = 128 then drops from 171 registers
    to 158 with 64-key tiles (3 blocks of 4 warps per SM rather than 2) and
    to 127 with 32-key ones (4 blocks), for 16 KiB more shared memory a
    block and one 16-byte load a lane per fragment and tile.
  }];
  let options = [
    Option<"blockRows", "block-rows", "int64_t", /*default=*/"32",
           "Query rows per thread block">,
    Option<"kvTileSize", "kv-tile-size", "int64_t", /*default=*/"32",
           "Keys per shared-memory tile of the FMA kernel">,
    Option<"mmaKvTileSize", "mma-kv-tile-size", "int64_t", /*default=*/"0",
           "Keys per shared-memory tile of the tensor-core kernel, in whole "
           "16-key steps, fewer where 48 KiB would not hold them (0: 64, or "
           "32 under per-score masks other than causal and sliding-window "
           "ones, a relpos bias, heads wider than 128 or, past D = 64, warps "
           "of 32 rows)">,
    Option<"mmaBlockRows", "mma-block-rows", "int64_t", /*default=*/"0",
           "Query rows per thread block of the tensor-core kernel, a warp "
           "per mma-warp-rows (0: 64, 128 with warps of 32 rows, or 16 for "
           "a static Sq of at most 16)">,
    Option<"mma", "mma", "bool", /*default=*/"false",
           "Run f16/bf16 attentions with D, Dv <= 128, and the projections "
           "of f16/bf16 x and w, on tensor cores (experimental: not yet run "
           "on a GPU)">,
    Option<"minBlocksPerSM", "min-blocks-per-sm", "int64_t", /*default=*/"0",
           "Blocks of the attention kernel each SM must hold at once: ptxas "
           "caps its registers to fit them (nvvm.minctasm, as CUDA's "
           "__launch_bounds__; 0: no bound)">,
    Option<"kvSplits", "kv-splits", "int64_t", /*default=*/"0",
           "Blocks sharing each query block's keys, merged by a combine "
           "kernel (split-K; 0: decided by the sizes, 1: no split; at most "
           "32)">,
    Option<"kvStages", "kv-stages", "int64_t", /*default=*/"1",
           "K/V tile buffers of the tensor-core kernel: 1 (a K and a V "
           "tile, FlashAttention-2's copy schedule) or 2 (double-buffered: "
           "the next tile's K and V copied while a tile runs; the key tile "
           "shrinks to fit 99 KiB of dynamic shared memory)">,
    Option<"packGqa", "pack-gqa", "bool", /*default=*/"true",
           "Pack the query heads sharing a KV head into one block where a "
           "static query of all of them fits it (GQA decoding)">,
    Option<"mmaWarpRows", "mma-warp-rows", "int64_t", /*default=*/"16",
           "Query rows per warp of the tensor-core kernel: 16 or 32 (two "
           "row blocks sharing each K and V fragment, as FlashAttention-2; "
           "blocks of 128 rows by default, Q in shared memory for D > 64; "
           "decoding keeps 16)">,
    Option<"mmaQueryInShared", "mma-query-in-shared", "bool",
           /*default=*/"false",
           "Keep the tensor-core kernel's Q fragments in shared memory, "
           "read back a 16-wide step of D per tile, for any D (fewer "
           "registers, more blocks per SM; default: only where a warp's "
           "would take more than 32 registers, 32-row warps at D > 64)">,
    Option<"mmaRowSums", "mma-row-sums", "bool", /*default=*/"false",
           "Accumulate the tensor-core kernel's softmax row sums on the "
           "tensor cores, as P times a column of ones (a row block's mma "
           "per 16 keys in place of 2 adds per score and a lane; two more "
           "registers per row block)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::cf::ControlFlowDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
}

#endif // ATTN_PASSES_TD
