//===- Peers.cpp - the baselines attn-bench measures attn against ---------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
// Compiled with -fopenmp: the naive loop nest runs its heads on OpenMP
// threads (the same libomp as the attn kernels). The BLAS path's softmax uses
// short-lived std::threads instead, so that no OpenMP worker spins while
// OpenBLAS's own threads run the GEMMs.
//
//===----------------------------------------------------------------------===//

#include "Peers.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

// OpenBLAS extensions; declared here too in case <cblas.h> is netlib's.
extern "C" {
void openblas_set_num_threads(int num_threads);
char *openblas_get_corename(void);
char *openblas_get_config(void);
}

namespace attn_bench {

float modifyScore(const Problem &p, int64_t h, int64_t i, int64_t j, float s) {
  switch (p.mod) {
  case ScoreMod::None:
    return s;
  case ScoreMod::Softcap:
    return p.softcap * std::tanh(s / p.softcap);
  case ScoreMod::Alibi: {
    // 2^(-8 (h + 1) / n) for the largest power of two n <= heads; heads past
    // n take every other slope of 2n: 2^(-4 (2 (h - n) + 1) / n).
    int64_t n = int64_t(1) << (63 - __builtin_clzll(p.heads));
    float exponent =
        h < n ? -8.0f / n * (h + 1.0f) : -8.0f / n * (h + 0.5f - n);
    return s + std::exp2(exponent) * float(j - i);
  }
  }
  return s;
}

/// How many keys query i sees: all, or those up to its causal position.
static int64_t visibleKeys(const Problem &p, int64_t i) {
  return p.causal ? std::min(p.seqLen, i + p.seqLen - p.queryLen + 1)
                  : p.seqLen;
}

void naiveAttention(const Problem &p, const float *q, const float *k,
                    const float *v, float *out, int threads) {
  const int64_t M = p.queryLen, S = p.seqLen, D = p.headDim;
  const int64_t groups = p.heads / p.kvHeads;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t h = 0; h < p.heads; ++h) {
    const float *qh = q + h * M * D, *kh = k + h / groups * S * D,
                *vh = v + h / groups * S * D;
    float *oh = out + h * M * D;
    std::vector<float> scores(S), acc(D);
    for (int64_t i = 0; i < M; ++i) {
      int64_t visible = visibleKeys(p, i);
      const float *qi = qh + i * D;
      float rowMax = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < visible; ++j) {
        const float *kj = kh + j * D;
        float s = 0.0f;
        for (int64_t d = 0; d < D; ++d)
          s += qi[d] * kj[d];
        s = modifyScore(p, h, i, j, s * p.scale);
        scores[j] = s;
        rowMax = std::max(rowMax, s);
      }
      float sum = 0.0f;
      for (int64_t j = 0; j < visible; ++j) {
        scores[j] = std::exp(scores[j] - rowMax);
        sum += scores[j];
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < visible; ++j) {
        const float *vj = vh + j * D;
        for (int64_t d = 0; d < D; ++d)
          acc[d] += scores[j] * vj[d];
      }
      float *oi = oh + i * D;
      for (int64_t d = 0; d < D; ++d)
        oi[d] = acc[d] / sum;
    }
  }
}

/// Softmax of rows [begin, end) of the [heads * queryLen, seqLen] score
/// matrix.
static void softmaxRows(const Problem &p, float *scores, int64_t begin,
                        int64_t end) {
  const int64_t M = p.queryLen, S = p.seqLen;
  const float negInf = -std::numeric_limits<float>::infinity();
  for (int64_t row = begin; row < end; ++row) {
    float *s = scores + row * S;
    int64_t h = row / M, i = row % M;
    if (p.mod != ScoreMod::None)
      for (int64_t j = 0; j < S; ++j)
        s[j] = modifyScore(p, h, i, j, s[j]);
    std::fill(s + visibleKeys(p, i), s + S, negInf);
    float rowMax = negInf;
    for (int64_t j = 0; j < S; ++j)
      rowMax = std::max(rowMax, s[j]);
    float sum = 0.0f;
    for (int64_t j = 0; j < S; ++j) {
      s[j] = std::exp(s[j] - rowMax);
      sum += s[j];
    }
    float inv = 1.0f / sum;
    for (int64_t j = 0; j < S; ++j)
      s[j] *= inv;
  }
}

void blasAttention(const Problem &p, const float *q, const float *k,
                   const float *v, float *out, float *scores, int threads) {
  const int64_t M = p.queryLen, S = p.seqLen, D = p.headDim;
  const int64_t groups = p.heads / p.kvHeads;
  for (int64_t h = 0; h < p.heads; ++h)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, S, D, p.scale,
                q + h * M * D, D, k + h / groups * S * D, D, 0.0f,
                scores + h * M * S, S);

  const int64_t rows = p.heads * M;
  if (threads <= 1) {
    softmaxRows(p, scores, 0, rows);
  } else {
    std::vector<std::thread> workers;
    int64_t chunk = (rows + threads - 1) / threads;
    for (int t = 1; t < threads; ++t) {
      int64_t begin = std::min(rows, t * chunk);
      int64_t end = std::min(rows, begin + chunk);
      workers.emplace_back(softmaxRows, std::cref(p), scores, begin, end);
    }
    softmaxRows(p, scores, 0, std::min(rows, chunk));
    for (std::thread &worker : workers)
      worker.join();
  }

  for (int64_t h = 0; h < p.heads; ++h)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, D, S, 1.0f,
                scores + h * M * S, S, v + h / groups * S * D, D, 0.0f,
                out + h * M * D, D);
}

void setBlasThreads(int threads) { openblas_set_num_threads(threads); }

std::string blasDescription() {
  std::string text = "OpenBLAS ";
  text += openblas_get_config();
  text += ", core ";
  text += openblas_get_corename();
  return text;
}

} // namespace attn_bench
