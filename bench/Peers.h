//===- Peers.h - the baselines attn-bench measures attn against -*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
// Two reference implementations of fp32 scaled dot-product attention on BHSD
// tensors with B = 1 (GQA: query head h reads KV head h / (Hq / Hkv)): a
// plain C++ loop nest, and the unfused BLAS path that PyTorch's math fallback
// takes (GEMM, softmax, GEMM). They use no MLIR and no LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_BENCH_PEERS_H
#define ATTN_BENCH_PEERS_H

#include <cstdint>
#include <string>

namespace attn_bench {

/// A score modification, as attn's specs spell them: `mod=alibi` adds
/// slope(h) * (j - i) (the standard geometric slopes), `mod=softcap:C` maps
/// s to C tanh(s / C).
enum class ScoreMod { None, Alibi, Softcap };

/// One problem: q and out are [heads, queryLen, headDim], k and v
/// [kvHeads, seqLen, headDim], row-major.
struct Problem {
  int64_t heads = 0, kvHeads = 0, queryLen = 0, seqLen = 0, headDim = 0;
  /// Key j is visible to query i iff j <= i + seqLen - queryLen (causal
  /// aligned bottom-right: the queries are the last of the keys' positions).
  bool causal = false;
  float scale = 1.0f;
  ScoreMod mod = ScoreMod::None;
  float softcap = 0.0f; // C of ScoreMod::Softcap
};

/// The score of (head h, query i, key j) after `p.mod`, from the scaled
/// product `s`.
float modifyScore(const Problem &p, int64_t h, int64_t i, int64_t j, float s);

/// Per head, per query row: scores, max, exp, sum, weighted sum of V, with
/// float accumulation. Parallel over heads on `threads` OpenMP threads.
void naiveAttention(const Problem &p, const float *q, const float *k,
                    const float *v, float *out, int threads);

/// PyTorch's math path: for every head S = scale * Q K^T (cblas_sgemm), then
/// a row softmax over the whole [heads, queryLen, seqLen] score tensor
/// (scores modified and masked ones set to -inf first) on `threads` threads,
/// then O = P V (cblas_sgemm). `scores` holds heads * queryLen * seqLen
/// floats. The GEMMs run on the OpenBLAS thread count set by setBlasThreads.
void blasAttention(const Problem &p, const float *q, const float *k,
                   const float *v, float *out, float *scores, int threads);

/// openblas_set_num_threads.
void setBlasThreads(int threads);

/// OpenBLAS's build configuration and the core type whose kernels it chose.
std::string blasDescription();

} // namespace attn_bench

#endif // ATTN_BENCH_PEERS_H
