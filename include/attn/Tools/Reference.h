//===- Reference.h - naive attention reference ------------------*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
// The oracle that attn-run compares compiled kernels against. It is
// deliberately naive (one query row at a time, double accumulation, no
// tiling) and shares no code with the compiler, so that a bug in a lowering
// cannot hide by also being in the reference. It uses no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TOOLS_REFERENCE_H
#define ATTN_TOOLS_REFERENCE_H

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace mlir::attn {

/// A structured mask as the reference reads it: a pattern of positions with
/// up to two numbers, or a union / intersection of parts.
struct ReferenceMask {
  enum class Kind {
    Causal,       // j <= i'
    Window,       // i' - n0 <= j <= i' + n1
    Chunked,      // i / n0 == j / n0
    Prefix,       // j < n0 or j <= i
    Strided,      // j <= i and (i - j < n0 or (i - j) % n0 == 0)
    Fixed,        // j <= i and (j / n0 == i / n0 or j % n0 >= n0 - n1)
    Dilated,      // j <= i, i - j < n0 * n1, (i - j) % n1 == 0
    Global,       // i < n0 or j < n0
    BigBird,      // blocks of n0: window n1, global n2, random n3, seed n4
    BlockBitmap,  // blocks of n0, n1 key blocks: bit j / n0 of row i / n0
    Union,        // any part
    Intersection, // every part
  };
  Kind kind = Kind::Causal;
  std::array<int64_t, 5> n = {};
  /// BlockBitmap: ceil(n1 / 64) words per query block (bit j: key block
  /// j).
  std::vector<uint64_t> bits;
  /// Causal and window: i' is i + kvLen - qLen instead of i.
  bool bottomRight = false;
  std::vector<ReferenceMask> parts;
};

/// One attention problem as the reference sees it. Sizes are concrete.
struct ReferenceProblem {
  int64_t batch = 0, qHeads = 0, kvHeads = 0, qLen = 0, kvLen = 0, headDim = 0,
          valueDim = 0;
  /// q/k/v/out are [B, S, H, F] instead of [B, H, S, F].
  bool bshd = false;
  /// The effective scale (the caller resolves the 1/sqrt(D) default).
  double scale = 1.0;
  /// Gaussian-kernel attention: the score is -scale/2 (|q - k|^2 - |q|^2)
  /// (the Gaussian's exponent shifted per row, as attn.attention defines it)
  /// instead of scale q.k.
  bool gaussian = false;
  /// Kernelized linear attention: row i's weights are phi(q_i) . phi(k_j)
  /// over its visible keys, normalized by their sum, with phi(x) = elu(x) + 1
  /// (no scale, no softmax).
  bool linear = false;

  /// Optional structured mask.
  std::optional<ReferenceMask> structuredMask;

  /// Optional i1 mask, one byte per element (0 hides the key), row-major over
  /// maskDims, which broadcast right-aligned to [B, Hq, Sq, Sk]: each is 1 or
  /// the full size; a mask of rank < 4 pads maskDims with leading 1s.
  const uint8_t *maskData = nullptr;
  int64_t maskDims[4] = {1, 1, 1, 1};

  /// Optional additive bias, row-major over biasDims, broadcast like the mask.
  const float *biasData = nullptr;
  int64_t biasDims[4] = {1, 1, 1, 1};

  /// Optional T5 relative-position bias: relBias [Hq, relBuckets] indexed by
  /// the bucket of j - i (Hugging Face's relative_position_bucket).
  const float *relBias = nullptr;
  int64_t relBuckets = 0, relMaxDistance = 0;
  bool relBidirectional = true;

  /// Additive (Bahdanau) attention: the score is
  /// scale sum_d w[h, d] tanh(q[d] + k[d]) with this [Hq, D] table w.
  const float *additiveWeight = nullptr;

  /// Optional number of valid keys per batch entry ([B]).
  const int32_t *kvLens = nullptr;
  /// Optional adaptive spans ([Hq]): keys j < i - spans[h] are hidden.
  const int32_t *spans = nullptr;
  /// Optional run-time block mask (FlexAttention's BlockMask): one class
  /// per (b, h, query block, key block), row-major over blockMaskDims (b and
  /// h dims 1 when broadcast), blocks of blockSizes (queries, keys). Class 2
  /// (or more) shows the pair, 1 leaves it to the other masks, 0 (or less)
  /// hides it.
  const int8_t *blockMask = nullptr;
  int64_t blockMaskDims[4] = {1, 1, 1, 1};
  int64_t blockSizes[2] = {1, 1};

  /// Optional score modification (s, b, h, i, j) -> s and mask predicate
  /// (b, h, i, j) -> visible.
  std::function<double(double, int64_t, int64_t, int64_t, int64_t)> scoreMod;
  std::function<bool(int64_t, int64_t, int64_t, int64_t)> maskMod;
};

/// Computes attention into `out` (qHeads * qLen * valueDim per batch entry,
/// in the layout of `p.bshd`). q, k and v are in that layout too; the caller
/// converts f16/bf16 inputs to float first. Query head h reads key/value head
/// h / (qHeads / kvHeads). For each (b, h, i, j): s = scale * q_i.k_j, then
/// scoreMod, then + bias; the key is hidden by the structured mask, a zero
/// mask byte, j >= kvLens[b], j < i - spans[h] or a false maskMod, unless
/// the blockMask decides first. Softmax over the visible keys
/// in double; a row with no visible key (or whose visible scores are all
/// -inf) is 0. When `lse` is given, it receives each row's log-sum-exp
/// ([B, Hq, Sq] in both layouts; -inf for such a row).
void referenceAttention(const ReferenceProblem &p, const float *q,
                        const float *k, const float *v, double *out,
                        double *lse = nullptr);

/// The projections of a multi-head attention: activations [B, S, E],
/// weights [in, out], row-major (see attn.multi_head_attention).
struct MultiHeadProjections {
  const float *xq, *xk, *xv, *wq, *wk, *wv, *wo;
  int64_t embed, outEmbed;
  /// Rounds each projected q, k and v value and each head's output to the
  /// kernel's storage type (f16 or bf16), as the kernels store them; null
  /// for f32.
  float (*round)(float) = nullptr;
};

/// out [B, Sq, outEmbed] = concat_h(attention_h(x_q W_q, x_k W_k, x_v W_v))
/// W_o, the projections split into heads as [B, S, H, D]; `p` describes the
/// attention (its layout is ignored).
void referenceMultiHeadAttention(const ReferenceProblem &p,
                                 const MultiHeadProjections &m, double *out);

/// Additive attention with its projections (attn.additive_attention): the
/// additive attention of `p` (its additiveWeight ignored) on q W_q and k W_k
/// ([D, A] each, row-major) with every head's score weights `wScore` [A].
/// `round` rounds each projected value to the kernel's storage type (f16 or
/// bf16), as the kernels store the projections; null for f32.
void referenceAdditiveAttention(const ReferenceProblem &p, const float *q,
                                const float *k, const float *v, const float *wq,
                                const float *wk, const float *wScore,
                                int64_t attentionDim, float (*round)(float),
                                double *out);

/// The score of query i and key j of batch b, head h (scaled dot product or
/// Gaussian, then scoreMod, then + bias), or nullopt when a mask hides the
/// key.
std::optional<double> referenceScore(const ReferenceProblem &p, const float *q,
                                     const float *k, int64_t b, int64_t h,
                                     int64_t i, int64_t j);

/// The number of visible (b, h, i, j) quadruples: the useful work of the
/// problem, for GFLOP/s.
int64_t countVisiblePairs(const ReferenceProblem &p);

/// Brute force: the (query tile, key tile) pairs a fused loop must visit,
/// summed over (batch, kv head): query tiles of `queryTile` rows of every
/// query head sharing the kv head, key tiles of `kvTile` keys, and a pair
/// counts when a query of the one sees a key of the other.
int64_t countVisibleTiles(const ReferenceProblem &p, int64_t queryTile,
                          int64_t kvTile);

/// The ALiBi slopes of `heads` heads (Press et al., 2022, as their code
/// computes them): a geometric sequence from 2^(-8/n) for a power of two n,
/// else those of the largest power of two below and every other one of
/// twice that.
std::vector<double> referenceAlibiSlopes(int64_t heads);

/// IEEE binary16 <-> float. floatToHalf rounds to nearest even, overflows to
/// inf, keeps NaNs quiet and produces subnormals.
float halfToFloat(uint16_t bits);
uint16_t floatToHalf(float value);

/// bfloat16 <-> float. floatToBf16 rounds to nearest even and keeps NaNs
/// quiet.
float bf16ToFloat(uint16_t bits);
uint16_t floatToBf16(float value);

} // namespace mlir::attn

#endif // ATTN_TOOLS_REFERENCE_H
