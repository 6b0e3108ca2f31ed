//===- AttnOps.td - attn operations ------------------------*- tablegen -*-===//
//
// Operations of the attn dialect. All are destination-passing style on
// tensors: the `outs` operand gives the shape of the result and a buffer to
// bufferize into.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_OPS_TD
#define ATTN_OPS_TD

include "AttnDialect.td"
include "AttnAttrs.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/IR/OpBase.td"

def Attn_FloatTensor : RankedTensorOf<[F32, F16, BF16]>;
def Attn_F32Tensor : RankedTensorOf<[F32]>;
def Attn_MaskTensor : RankedTensorOf<[I1]>;
def Attn_LengthsTensor : RankedTensorOf<[I32]>;
def Attn_BlockMaskTensor : RankedTensorOf<[I8]>;

def Attn_StructuredMask
    : Attr<CPred<"::llvm::isa<::mlir::attn::StructuredMaskAttrInterface>($_self)">,
           "structured mask attribute"> {
  let storageType = "::mlir::attn::StructuredMaskAttrInterface";
  let returnType = "::mlir::attn::StructuredMaskAttrInterface";
  let convertFromStorage = "$_self";
}

// Operands and attributes shared by attention and online_attention.
defvar AttentionMaskOperands = (ins
  Optional<Attn_MaskTensor>:$mask,
  Optional<Attn_FloatTensor>:$bias,
  Optional<Attn_F32Tensor>:$rel_bias,
  Optional<Attn_F32Tensor>:$additive_weight,
  Optional<Attn_LengthsTensor>:$kv_lens,
  Optional<Attn_LengthsTensor>:$spans,
  Optional<Attn_BlockMaskTensor>:$block_mask);

// Where a tile sits in the whole problem: offsets(b, h, q, kv) of its first
// element (all 0 when absent) and extents(Sq, Sk), the whole sequence lengths
// (the tile's own when absent). Masks and regions see whole-problem indices.
defvar AttentionPositionOperands = (ins Variadic<Index>:$offsets,
                                        Variadic<Index>:$extents);

defvar AttentionAttributes = (ins
  OptionalAttr<F32Attr>:$scale,
  OptionalAttr<Attn_StructuredMask>:$structured_mask,
  DefaultValuedAttr<Attn_LayoutAttr, "::mlir::attn::Layout::BHSD">:$layout,
  DefaultValuedAttr<Attn_SimilarityAttr,
                    "::mlir::attn::Similarity::Dot">:$similarity,
  OptionalAttr<Attn_RelPosAttr>:$relpos,
  OptionalAttr<DenseI64ArrayAttr>:$block_sizes);

defvar AttentionRegions = (region MaxSizedRegion<1>:$score_mod,
                               MaxSizedRegion<1>:$mask_mod);

//===----------------------------------------------------------------------===//
// attn.attention
//===----------------------------------------------------------------------===//

def Attn_AttentionOp : Attn_Op<"attention", [
    AttrSizedOperandSegments, RecursiveMemoryEffects,
    DestinationStyleOpInterface]> {
  let summary = "scaled dot-product attention";
  let description = [{
    Computes `out = softmax(mods(scale * Q K^T)) V` per batch and query head,
    where the key/value head of query head `h` is `h / (Hq / Hkv)` (GQA/MQA).
    Shapes (BHSD, the default `layout`): Q [B, Hq, Sq, D], K [B, Hkv, Sk, D],
    V [B, Hkv, Sk, Dv], out [B, Hq, Sq, Dv]; under `layout = #attn.layout<bshd>`
    the sequence and head dimensions of all four swap places.

    The score of query `i` and key `j` is, in order:
    1. `s = scale * dot(q_i, k_j)`; `scale` defaults to `1/sqrt(D)`. Under
       `similarity = #attn.similarity<gaussian>` (Gaussian-kernel, or
       Nadaraya-Watson, attention with `scale = 1/sigma^2`) it is instead
       `s = scale * (dot(q_i, k_j) - |k_j|^2 / 2)`: a dot product plus a
       per-key bias, equal to `-scale/2 * |q_i - k_j|^2` up to the per-row
       constant `scale/2 * |q_i|^2`, which the softmax cancels (the `lse`
       output keeps it) under
       `similarity = #attn.similarity<additive>` (Bahdanau attention on
       projected queries and keys, D being the attention dim) it is
       `s = scale * sum_d w[h, d] tanh(q_i[d] + k_j[d])` with the
       `additive_weight` table w ([Hq, D] f32);
    2. `s = score_mod(s, b, h, i, j)` when the `score_mod` region is present;
    3. `s = s + bias[b, h, i, j]` when a `bias` tensor is given, and
       `s = s + rel_bias[h, bucket(j - i)]` with a `rel_bias` table
       ([Hq, buckets] f32, whole-problem heads) indexed as its `relpos`
       attribute says (T5's relative-position buckets);
    4. the key is hidden when the `structured_mask` attribute hides it, when
       `mask[b, h, i, j]` is false, when `j >= kv_lens[b]`, when
       `j < i - spans[h]` (adaptive span: a window whose width is a run-time
       value per head, whole-problem heads), or when the `mask_mod` region
       yields false;
    5. with a `block_mask` (a run-time block mask, as FlexAttention's
       BlockMask: i8 [B or 1, Hq or 1, ceil(Sq / bq), ceil(Sk / bk)] with
       `block_sizes = array<i64: bq, bk>`, whole-problem indices), the class
       `c` of the block holding (i, j) decides first: 0 (or less) hides the
       pair, 2 (full, or more) shows it whatever step 4 says, 1 (partial)
       leaves it to step 4.
       Tiles whose blocks are all 0 are skipped; tiles whose blocks are all 2
       run without any per-score mask test.
    The softmax runs over the visible keys in fp32. A query that sees no key
    gets an output row of zeros.

    With an `lse` init ([B, Hq, Sq] f32 in every layout) the op also returns
    each row's log-sum-exp, `log(sum_j exp(s_j))` over its visible keys
    (natural log): the weights are then `exp(s_j - lse)`, and partial
    attentions over disjoint keys merge by it. A row that sees no key gets
    `-inf`.

    `mask` (i1) and `bias` (float) broadcast to [B, Hq, Sq, Sk] by the usual
    right-aligned rule: rank at most 4, each dimension 1 or the full size.
    `kv_lens` (i32 [B]) is the number of valid keys per batch entry.

    `score_mod` takes the f32 score and the indices (b, h, q_idx, kv_idx) and
    yields the new f32 score; `mask_mod` takes the indices and yields an i1.

    A tile of a larger attention (as `attn-tile` makes them) says where it
    sits with `offsets(b, h, q, kv)` and `extents(Sq, Sk)`, as
    `attn.online_attention` does: indices seen by masks and regions are the
    whole problem's.

    Example (GQA 4:1, causal, tanh soft-capping):

    ```mlir
    %out = attn.attention ins(%q, %k, %v : tensor<2x16x128x64xf16>,
                              tensor<2x4x128x64xf16>, tensor<2x4x128x64xf16>)
        outs(%init : tensor<2x16x128x64xf32>)
        {structured_mask = #attn.causal<top_left>}
        score_mod {
        ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
          %c = arith.constant 30.0 : f32
          %d = arith.divf %s, %c : f32
          %t = math.tanh %d : f32
          %r = arith.mulf %t, %c : f32
          attn.yield %r : f32
        } -> tensor<2x16x128x64xf32>
    ```
  }];
  let arguments = !con(
    (ins Attn_FloatTensor:$query, Attn_FloatTensor:$key,
         Attn_FloatTensor:$value),
    AttentionMaskOperands,
    AttentionPositionOperands,
    (ins Attn_FloatTensor:$init, Optional<Attn_F32Tensor>:$lse_init),
    AttentionAttributes);
  let results = (outs Attn_FloatTensor:$result,
                      Optional<Attn_F32Tensor>:$lse);
  let regions = AttentionRegions;
  let assemblyFormat = [{
    `ins` `(` $query `,` $key `,` $value `:` type($query) `,` type($key) `,`
      type($value) `)`
    (`mask` `(` $mask^ `:` type($mask) `)`)?
    (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`rel_bias` `(` $rel_bias^ `:` type($rel_bias) `)`)?
    (`additive_weight` `(` $additive_weight^ `:` type($additive_weight) `)`)?
    (`kv_lens` `(` $kv_lens^ `:` type($kv_lens) `)`)?
    (`spans` `(` $spans^ `:` type($spans) `)`)?
    (`block_mask` `(` $block_mask^ `:` type($block_mask) `)`)?
    (`offsets` `(` $offsets^ `:` type($offsets) `)`)?
    (`extents` `(` $extents^ `:` type($extents) `)`)?
    `outs` `(` $init `:` type($init) `)`
    (`lse` `(` $lse_init^ `:` type($lse_init) `)`)?
    attr-dict
    (`score_mod` $score_mod^)?
    (`mask_mod` $mask_mod^)?
    `->` type($result) (`,` type($lse)^)?
  }];
  let extraClassDeclaration = [{
    /// The output's init, then the lse init when present (contiguous).
    MutableOperandRange getDpsInitsMutable() {
      return MutableOperandRange(getOperation(),
                                 getInitMutable().getOperandNumber(),
                                 getLseInit() ? 2 : 1);
    }
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// attn.online_attention
//===----------------------------------------------------------------------===//

def Attn_OnlineAttentionOp : Attn_Op<"online_attention", [
    AttrSizedOperandSegments, RecursiveMemoryEffects,
    DestinationStyleOpInterface]> {
  let summary = "one step of attention with an online (running) softmax";
  let description = [{
    The tileable form of `attn.attention` (FlashAttention): it folds the keys
    and values it is given into running statistics and returns them updated,
    so a loop over key/value tiles computes attention without materializing
    the [Sq, Sk] score matrix. For each query row, with `s_j` the scores of
    the visible keys (same definition and order of modifications as
    `attn.attention`):

    ```
    max' = max(max, max_j s_j)
    sum' = sum * exp(max - max') + sum_j exp(s_j - max')
    acc' = acc * exp(max - max') + sum_j exp(s_j - max') v_j
    ```

    Initialize `max` to -inf, `sum` and `acc` to 0, then finish with
    `attn.finalize_online_attention`. Statistics are fp32: `acc` is
    [B, Hq, Sq, Dv] (or BSHD), `max` and `sum` are [B, Hq, Sq] in both layouts.

    A tile needs to know where it sits to apply position-dependent masks and
    modifications: `offsets(b, h, q, kv)` gives the position of the first
    element of this tile in the whole problem (all zero when absent) and
    `extents(Sq, Sk)` the whole sequence lengths (the tile's own when absent).
    Indices handed to `score_mod`/`mask_mod` and compared by structured masks
    and `kv_lens` are the whole-problem ones.

    ```mlir
    %acc1, %max1, %sum1 = attn.online_attention
        ins(%q, %k, %v : tensor<1x8x64x64xf32>, tensor<1x8x32x64xf32>,
                         tensor<1x8x32x64xf32>)
        offsets(%c0, %c0, %c0, %kv0 : index, index, index, index)
        extents(%c64, %c128 : index, index)
        outs(%acc, %max, %sum : tensor<1x8x64x64xf32>, tensor<1x8x64xf32>,
                                tensor<1x8x64xf32>)
        {structured_mask = #attn.causal<top_left>}
        -> tensor<1x8x64x64xf32>, tensor<1x8x64xf32>, tensor<1x8x64xf32>
    ```
  }];
  let arguments = !con(
    (ins Attn_FloatTensor:$query, Attn_FloatTensor:$key,
         Attn_FloatTensor:$value),
    AttentionMaskOperands,
    AttentionPositionOperands,
    (ins Attn_F32Tensor:$acc, Attn_F32Tensor:$max, Attn_F32Tensor:$sum),
    AttentionAttributes);
  let results = (outs Attn_F32Tensor:$result_acc, Attn_F32Tensor:$result_max,
                      Attn_F32Tensor:$result_sum);
  let regions = AttentionRegions;
  let assemblyFormat = [{
    `ins` `(` $query `,` $key `,` $value `:` type($query) `,` type($key) `,`
      type($value) `)`
    (`mask` `(` $mask^ `:` type($mask) `)`)?
    (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`rel_bias` `(` $rel_bias^ `:` type($rel_bias) `)`)?
    (`additive_weight` `(` $additive_weight^ `:` type($additive_weight) `)`)?
    (`kv_lens` `(` $kv_lens^ `:` type($kv_lens) `)`)?
    (`spans` `(` $spans^ `:` type($spans) `)`)?
    (`block_mask` `(` $block_mask^ `:` type($block_mask) `)`)?
    (`offsets` `(` $offsets^ `:` type($offsets) `)`)?
    (`extents` `(` $extents^ `:` type($extents) `)`)?
    `outs` `(` $acc `,` $max `,` $sum `:` type($acc) `,` type($max) `,`
      type($sum) `)`
    attr-dict
    (`score_mod` $score_mod^)?
    (`mask_mod` $mask_mod^)?
    `->` type($result_acc) `,` type($result_max) `,` type($result_sum)
  }];
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() {
      return MutableOperandRange(getOperation(),
                                 getAccMutable().getOperandNumber(), 3);
    }
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// attn.finalize_online_attention
//===----------------------------------------------------------------------===//

def Attn_FinalizeOnlineAttentionOp : Attn_Op<"finalize_online_attention", [
    Pure, AttrSizedOperandSegments, DestinationStyleOpInterface]> {
  let summary = "normalizes the running statistics of online attention";
  let description = [{
    Computes `out = sum > 0 ? acc / sum : 0` per query row and converts to
    the element type of `out`. The zero case is a query that saw no visible
    key: its output is 0, not NaN. `acc` and `out` have the same shape
    (in the layout of the attention they came from); `sum` is [B, Hq, Sq].

    Given the running `max` and an `lse` init (both [B, Hq, Sq]), it also
    returns the log-sum-exp, `sum > 0 ? max + log(sum) : -inf`.

    ```mlir
    %out = attn.finalize_online_attention
        ins(%acc, %sum : tensor<1x8x64x64xf32>, tensor<1x8x64xf32>)
        outs(%init : tensor<1x8x64x64xf16>) -> tensor<1x8x64x64xf16>
    ```
  }];
  let arguments = (ins Attn_F32Tensor:$acc, Attn_F32Tensor:$sum,
                       Optional<Attn_F32Tensor>:$max,
                       Attn_FloatTensor:$init,
                       Optional<Attn_F32Tensor>:$lse_init,
                       DefaultValuedAttr<Attn_LayoutAttr,
                                         "::mlir::attn::Layout::BHSD">:$layout);
  let results = (outs Attn_FloatTensor:$result,
                      Optional<Attn_F32Tensor>:$lse);
  let assemblyFormat = [{
    `ins` `(` $acc `,` $sum `:` type($acc) `,` type($sum) `)`
    (`max` `(` $max^ `:` type($max) `)`)?
    `outs` `(` $init `:` type($init) `)`
    (`lse` `(` $lse_init^ `:` type($lse_init) `)`)?
    attr-dict `->` type($result) (`,` type($lse)^)?
  }];
  let extraClassDeclaration = [{
    /// The output's init, then the lse init when present (contiguous).
    MutableOperandRange getDpsInitsMutable() {
      return MutableOperandRange(getOperation(),
                                 getInitMutable().getOperandNumber(),
                                 getLseInit() ? 2 : 1);
    }
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// attn.linear_attention
//===----------------------------------------------------------------------===//

def Attn_LinearAttentionOp : Attn_Op<"linear_attention", [
    Pure, DestinationStyleOpInterface]> {
  let summary = "kernelized linear attention (Katharopoulos et al., 2020)";
  let description = [{
    Attention with the softmax replaced by a positive feature map
    `phi(x) = elu(x) + 1` applied to queries and keys:

    ```
    out_i = sum_j (phi(q_i) . phi(k_j)) v_j / sum_j phi(q_i) . phi(k_j)
    ```

    over the keys row `i` sees: all of them, or under
    `structured_mask = #attn.causal<...>` (the only mask it takes) keys
    `j <= i` (top-left) or `j <= i + Sk - Sq` (bottom-right). A row that sees
    no key outputs 0. Shapes, GQA and `layout` as `attn.attention`.

    Its cost is linear in the sequence: without a mask it is
    `phi(Q) (phi(K)^T V)` normalized by `phi(Q) sum_j phi(k_j)`; with the
    causal mask `attn-lower-linear-attention` walks query chunks carrying the
    prefix sums `sum_j phi(k_j) v_j^T` and `sum_j phi(k_j)`, and only the
    chunk's own keys form a (masked) quadratic block.

    ```mlir
    %out = attn.linear_attention ins(%q, %k, %v : tensor<2x8x1024x64xf32>,
                                     tensor<2x8x1024x64xf32>,
                                     tensor<2x8x1024x64xf32>)
        outs(%init : tensor<2x8x1024x64xf32>)
        {structured_mask = #attn.causal<top_left>} -> tensor<2x8x1024x64xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$query, Attn_FloatTensor:$key,
                       Attn_FloatTensor:$value, Attn_FloatTensor:$init,
                       OptionalAttr<Attn_CausalMaskAttr>:$structured_mask,
                       DefaultValuedAttr<Attn_LayoutAttr,
                                         "::mlir::attn::Layout::BHSD">:$layout);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    `ins` `(` $query `,` $key `,` $value `:` type($query) `,` type($key) `,`
      type($value) `)`
    `outs` `(` $init `:` type($init) `)` attr-dict `->` type($result)
  }];
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() { return getInitMutable(); }
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// attn.additive_attention
//===----------------------------------------------------------------------===//

def Attn_AdditiveAttentionOp : Attn_Op<"additive_attention", [
    Pure, DestinationStyleOpInterface]> {
  let summary = "additive (Bahdanau) attention with its projections";
  let description = [{
    Bahdanau's additive score with attention dim A, then the softmax over
    the visible keys and the weighted sum of the values:

    ```
    s_ij = scale * w_score . tanh(q_i W_q + k_j W_k)
    ```

    `w_q` and `w_k` are [D, A] (shared by every head), `w_score` is [A]; the
    scale defaults to 1. Shapes, GQA, `layout`, `structured_mask` and
    `kv_lens` as `attn.attention`. `attn-expand-additive` projects q and k
    once (O(S D A), accumulating in f32) and leaves an `attn.attention` with
    `similarity = #attn.similarity<additive>` on the projections, whose
    quadratic part the online softmax fuses like any other score.

    ```mlir
    %out = attn.additive_attention
        ins(%q, %k, %v : tensor<2x4x256x64xf32>, tensor<2x4x256x64xf32>,
                         tensor<2x4x256x64xf32>)
        weights(%wq, %wk, %w : tensor<64x32xf32>, tensor<64x32xf32>,
                               tensor<32xf32>)
        outs(%init : tensor<2x4x256x64xf32>)
        {structured_mask = #attn.causal<top_left>} -> tensor<2x4x256x64xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$query, Attn_FloatTensor:$key,
                       Attn_FloatTensor:$value, Attn_FloatTensor:$q_proj,
                       Attn_FloatTensor:$k_proj, Attn_FloatTensor:$score_proj,
                       Optional<Attn_LengthsTensor>:$kv_lens,
                       Attn_FloatTensor:$init, OptionalAttr<F32Attr>:$scale,
                       OptionalAttr<Attn_StructuredMask>:$structured_mask,
                       DefaultValuedAttr<Attn_LayoutAttr,
                                         "::mlir::attn::Layout::BHSD">:$layout);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    `ins` `(` $query `,` $key `,` $value `:` type($query) `,` type($key) `,`
      type($value) `)`
    `weights` `(` $q_proj `,` $k_proj `,` $score_proj `:` type($q_proj) `,`
      type($k_proj) `,` type($score_proj) `)`
    (`kv_lens` `(` $kv_lens^ `:` type($kv_lens) `)`)?
    `outs` `(` $init `:` type($init) `)` attr-dict `->` type($result)
  }];
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() { return getInitMutable(); }
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// attn.multi_head_attention
//===----------------------------------------------------------------------===//

def Attn_MultiHeadAttentionOp : Attn_Op<"multi_head_attention", [
    AttrSizedOperandSegments, RecursiveMemoryEffects,
    DestinationStyleOpInterface]> {
  let summary = "multi-head attention with input and output projections";
  let description = [{
    The graph-level op: projects activations into heads, runs attention, and
    projects the concatenated heads back.

    ```
    Q = x_q  @ W_q + b_q   -> [B, Sq, Hq,  D]
    K = x_kv @ W_k + b_k   -> [B, Sk, Hkv, D]
    V = x_kv @ W_v + b_v   -> [B, Sk, Hkv, Dv]
    O = attention(Q, K, V) -> [B, Sq, Hq * Dv]
    out = O @ W_o + b_o    -> [B, Sq, E_out]
    ```

    `query` is [B, Sq, E], `key` and `value` are [B, Sk, E_kv] (pass the same
    value three times for self-attention). Weights are [in, out]:
    W_q [E, Hq*D], W_k [E_kv, Hkv*D], W_v [E_kv, Hkv*Dv], W_o [Hq*Dv, E_out];
    `proj_biases`, when present, are the four vectors b_q, b_k, b_v, b_o.
    `num_kv_heads` defaults to `num_heads` (set it lower for GQA/MQA). The
    mask, bias, kv_lens, scale, structured_mask and region operands mean what
    they mean on `attn.attention`.

    ```mlir
    %out = attn.multi_head_attention
        ins(%x, %x, %x : tensor<2x128x512xf32>, tensor<2x128x512xf32>,
                         tensor<2x128x512xf32>)
        weights(%wq, %wk, %wv, %wo : tensor<512x512xf32>, tensor<512x128xf32>,
                                     tensor<512x128xf32>, tensor<512x512xf32>)
        outs(%init : tensor<2x128x512xf32>)
        {num_heads = 8 : i64, num_kv_heads = 2 : i64,
         structured_mask = #attn.causal<top_left>}
        -> tensor<2x128x512xf32>
    ```
  }];
  let arguments = !con(
    (ins Attn_FloatTensor:$query, Attn_FloatTensor:$key,
         Attn_FloatTensor:$value, Attn_FloatTensor:$q_proj,
         Attn_FloatTensor:$k_proj, Attn_FloatTensor:$v_proj,
         Attn_FloatTensor:$out_proj, Variadic<Attn_FloatTensor>:$proj_biases,
         Optional<Attn_MaskTensor>:$mask, Optional<Attn_FloatTensor>:$bias,
         Optional<Attn_LengthsTensor>:$kv_lens),
    (ins Attn_FloatTensor:$init, I64Attr:$num_heads,
         OptionalAttr<I64Attr>:$num_kv_heads, OptionalAttr<F32Attr>:$scale,
         OptionalAttr<Attn_StructuredMask>:$structured_mask));
  let results = (outs Attn_FloatTensor:$result);
  let regions = AttentionRegions;
  let assemblyFormat = [{
    `ins` `(` $query `,` $key `,` $value `:` type($query) `,` type($key) `,`
      type($value) `)`
    `weights` `(` $q_proj `,` $k_proj `,` $v_proj `,` $out_proj `:`
      type($q_proj) `,` type($k_proj) `,` type($v_proj) `,` type($out_proj) `)`
    (`proj_biases` `(` $proj_biases^ `:` type($proj_biases) `)`)?
    (`mask` `(` $mask^ `:` type($mask) `)`)?
    (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`kv_lens` `(` $kv_lens^ `:` type($kv_lens) `)`)?
    `outs` `(` $init `:` type($init) `)`
    attr-dict
    (`score_mod` $score_mod^)?
    (`mask_mod` $mask_mod^)?
    `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// `num_kv_heads`, or `num_heads` when it is absent.
    int64_t getNumKvHeadsOrDefault() {
      return getNumKvHeads().value_or(getNumHeads());
    }
    MutableOperandRange getDpsInitsMutable() { return getInitMutable(); }
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// attn.yield
//===----------------------------------------------------------------------===//

def Attn_YieldOp : Attn_Op<"yield", [
    Pure, ReturnLike, Terminator,
    ParentOneOf<["AttentionOp", "OnlineAttentionOp",
                 "MultiHeadAttentionOp"]>]> {
  let summary = "yields the value of a score_mod or mask_mod region";
  let description = [{
    ```mlir
    attn.yield %score : f32
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

//===----------------------------------------------------------------------===//
// attn.ukernel.generic
//===----------------------------------------------------------------------===//

def Attn_UKernelGenericOp : Attn_Op<"ukernel.generic", [
    AttrSizedOperandSegments, DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "a call to a compiler-owned micro-kernel";
  let description = [{
    Calls the micro-kernel `ukernel` (a C routine linked into the kernel,
    see `include/attn/Runtime/UKernels.h`) on shaped `ins`, updating the
    shaped `outs` in place, with `scalars` after them. On tensors it returns
    the updated `outs`; one-shot bufferization turns it into the same op on
    memrefs, which `attn-lower-ukernel-ops-to-calls` makes a `func.call`.
    `attn-lower-to-ukernels` creates it from the ops a micro-kernel
    implements.

    ```mlir
    %acc1, %max1, %sum1 = attn.ukernel.generic "attn_uk_online_step_f32"
        ins(%q, %k, %v : tensor<1x1x64x64xf32>, tensor<1x1x?x64xf32>,
                         tensor<1x1x?x64xf32>)
        outs(%acc, %max, %sum : tensor<1x1x64x64xf32>, tensor<1x1x64xf32>,
                                tensor<1x1x64xf32>)
        (%scale, %layout, %qpos, %kvpos, %lo, %hi : f32, i64, i64, i64, i64,
                                                     i64)
        -> tensor<1x1x64x64xf32>, tensor<1x1x64xf32>, tensor<1x1x64xf32>
    ```
  }];
  let arguments = (ins StrAttr:$ukernel,
                       Variadic<AnyShaped>:$inputs,
                       Variadic<AnyShaped>:$outputs,
                       Variadic<AnyTypeOf<[Index, AnySignlessInteger,
                                           AnyFloat]>>:$scalars);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $ukernel
    (`ins` `(` $inputs^ `:` type($inputs) `)`)?
    `outs` `(` $outputs `:` type($outputs) `)`
    (`(` $scalars^ `:` type($scalars) `)`)?
    attr-dict (`->` type($results)^)?
  }];
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() { return getOutputsMutable(); }
  }];
  let hasVerifier = 1;
}

#endif // ATTN_OPS_TD
