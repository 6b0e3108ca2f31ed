//===- AttentionSpec.h - textual attention problem descriptions -*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
// A SPEC is the one-line description of an attention problem that
// attn-compile and attn-run take on the command line, e.g.
//
//   b=2,hq=8,hkv=2,sq=128,d=64,dtype=f16,mask=causal,dynamic=bs
//
// Keys: b, hq, sq, d (required); hkv (default hq), sk (default sq), dv
// (default d), dtype (f32|f16|bf16, default f32), layout (bhsd|bshd, default
// bhsd), kind (sdpa, the default; gaussian:SIGMA: Gaussian-kernel
// attention, score -|q - k|^2 / (2 SIGMA^2); it sets the scale; linear:
// attn.linear_attention, with mask none or causal only; additive: Bahdanau
// scores sum_d w[h, d] tanh(q[d] + k[d]) of projected q and k, with a weight
// argument [Hq, D] after v; additive:A: attn.additive_attention, Bahdanau
// scores w . tanh(q W_q + k W_k) with attention dim A, weights W_q, W_k
// [D, A] and w [A] after v; mha: attn.multi_head_attention on activations
// [B, S, E] with the key e=E, weights W_q [E, Hq D], W_k [E, Hkv D], W_v
// [E, Hkv Dv], W_o [Hq Dv, E]), scale
// (finite positive float, default 1/sqrt(d)), mask (none, or a
// union `|` of intersections `&` of: causal | causal_bottom_right |
// window:L:R | chunked:C | prefix:P | strided:L | fixed:L:C | dilated:W:DIL |
// global:G | bigbird:BLK:W:G:R:SEED | blocks:FILE; e.g.
// window:128:0|global:16), mod (none | alibi | softcap:C: a
// score_mod; relpos:NB[:MAXDIST[:uni]]: T5's bucketed relative-position bias,
// a table argument), temperature (finite positive: scores divided by it),
// kv_lens (none | random: a kv_lens operand), lse (false | true: also
// output each row's log-sum-exp), spans (none | random: an adaptive-span
// operand, per-head windows of run-time width), block_mask (none |
// random:BQ:BK: a run-time block mask operand, FlexAttention-style, over
// blocks of BQ queries and BK keys), dynamic (letters among b, h, s: the
// dimensions compiled as `?`).
//
// The spec always carries concrete sizes, even for dynamic dimensions: they
// are the sizes a run uses, while `dynamic*` only says what the compiled
// kernel must not assume.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TOOLS_ATTENTIONSPEC_H
#define ATTN_TOOLS_ATTENTIONSPEC_H

#include "attn/IR/AttnDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::attn {

/// One structured mask of a spec and its numbers, e.g. `window:L:R`,
/// `fixed:L:C`, `bigbird:BLK:W:G:R:SEED`.
struct MaskTerm {
  enum class Kind {
    Causal,
    CausalBottomRight,
    Window,
    Chunked,
    Prefix,
    Strided,
    Fixed,
    Dilated,
    Global,
    BigBird,
    Blocks
  };
  Kind kind = Kind::Causal;
  std::array<int64_t, 5> n = {};
  /// `blocks:FILE`: the file, its block size (n[0]), its key blocks (n[1])
  /// and its rows of ceil(n[1] / 64) words.
  std::string file;
  std::vector<uint64_t> rows;
  bool operator==(const MaskTerm &other) const {
    return kind == other.kind && n == other.n && file == other.file &&
           rows == other.rows;
  }
};

/// One attention problem: sizes, element type, layout and masking.
struct AttentionSpec {

  int64_t batch = 0, qHeads = 0, kvHeads = 0, qLen = 0, kvLen = 0, headDim = 0,
          valueDim = 0;
  /// "f32", "f16" or "bf16": the element type of q, k, v and the output.
  std::string dtype = "f32";
  Layout layout = Layout::BHSD;
  /// How a query and a key score: scaled dot product, or a Gaussian kernel
  /// of their distance with width `sigma` (scale 1/sigma^2, see
  /// attn.attention's `similarity`).
  enum class Kind { SDPA, Gaussian, Linear, Additive, MultiHead };
  Kind kind = Kind::SDPA;
  /// The embedding size E of kind=mha (0 otherwise).
  int64_t embed = 0;
  /// The attention dim A of kind=additive:A (0 for the projected
  /// kind=additive).
  int64_t attentionDim = 0;
  double sigma = 0;
  /// Absent means the op's default, 1/sqrt(headDim).
  std::optional<double> scale;
  /// The structured mask: a union of intersections of terms (none when
  /// empty).
  std::vector<std::vector<MaskTerm>> mask;
  /// A score modification: ALiBi (score + slope(h) (j - i), the standard
  /// geometric slopes for Hq heads) or a soft cap (C tanh(score / C)).
  /// Or T5's relative-position bias: a rel_bias table [Hq, buckets] (an
  /// argument after v) indexed by bucketed j - i (see #attn.relpos).
  enum class ScoreMod { None, Alibi, Softcap, RelPos };
  ScoreMod mod = ScoreMod::None;
  int64_t relposBuckets = 0, relposMaxDistance = 0;
  bool relposBidirectional = true;
  double softcap = 0;
  /// Scores are divided by it (folded into the scale).
  std::optional<double> temperature;
  /// A kv_lens operand (i32 [B], the valid keys per batch entry).
  bool kvLens = false;
  /// A second output: each query row's log-sum-exp (f32 [B, Hq, Sq]).
  bool lse = false;
  /// A spans operand (i32 [Hq]: adaptive span, keys j < i - spans[h] hidden).
  bool spans = false;
  /// A block_mask operand (i8 [B, Hq, ceil(Sq / BQ), ceil(Sk / BK)]) over
  /// blocks of {BQ, BK}; {0, 0} when absent.
  std::array<int64_t, 2> blockMask = {0, 0};
  /// Dimensions compiled as dynamic: `h` covers both head counts, `s` both
  /// sequence lengths.
  bool dynamicBatch = false, dynamicHeads = false, dynamicSeq = false;

  /// The canonical text: every key except an absent scale, a default kind
  /// and an empty `dynamic`, in a fixed order. parseAttentionSpec(str()) gives
  /// back an equal spec.
  std::string str() const;
};

/// Parses a SPEC (see the file comment). Errors name the offending key or
/// value.
llvm::Expected<AttentionSpec> parseAttentionSpec(llvm::StringRef text);

/// The structured mask of `spec` (null when it has none).
StructuredMaskAttrInterface buildStructuredMask(MLIRContext *ctx,
                                                const AttentionSpec &spec);

/// Builds a module holding `func.func @<funcName>(%q, %k, %v, %init) -> out`
/// whose body is a single attn.attention described by `spec`. Loads the attn,
/// func, arith, math and tensor dialects into `ctx`. Returns null, after
/// emitting a diagnostic, if the module does not verify.
OwningOpRef<ModuleOp> buildAttentionModule(MLIRContext *ctx,
                                           const AttentionSpec &spec,
                                           StringRef funcName);

} // namespace mlir::attn

#endif // ATTN_TOOLS_ATTENTIONSPEC_H
