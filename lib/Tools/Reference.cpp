//===- Reference.cpp - naive attention reference --------------------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
// Plain C++ on purpose: see Reference.h.
//
//===----------------------------------------------------------------------===//

#include "attn/Tools/Reference.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace mlir::attn;

/// Offset of element (b, h, s, f) of a [B, H, S, F] tensor stored in BHSD or
/// BSHD order.
static int64_t headOffset(bool bshd, int64_t heads, int64_t seq,
                          int64_t feature, int64_t b, int64_t h, int64_t s,
                          int64_t f) {
  if (bshd)
    return ((b * seq + s) * heads + h) * feature + f;
  return ((b * heads + h) * seq + s) * feature + f;
}

/// Offset of logical element (b, h, i, j) in a row-major tensor of `dims`
/// broadcast to [B, Hq, Sq, Sk]: a size-1 dimension always reads index 0.
static int64_t broadcastOffset(const int64_t dims[4], int64_t b, int64_t h,
                               int64_t i, int64_t j) {
  int64_t index[4] = {b, h, i, j};
  int64_t offset = 0;
  for (int d = 0; d < 4; ++d)
    offset = offset * dims[d] + (dims[d] == 1 ? 0 : index[d]);
  return offset;
}

#ifndef NDEBUG
static bool isBroadcastable(const int64_t dims[4], const ReferenceProblem &p) {
  int64_t full[4] = {p.batch, p.qHeads, p.qLen, p.kvLen};
  for (int d = 0; d < 4; ++d)
    if (dims[d] != 1 && dims[d] != full[d])
      return false;
  return true;
}
#endif

/// Whether the structured mask `m` lets query i see key j (positions are
/// non-negative, so / and % are floor division and modulo).
static bool maskShows(const ReferenceMask &m, const ReferenceProblem &p,
                      int64_t i, int64_t j) {
  using Kind = ReferenceMask::Kind;
  int64_t shifted = i + (m.bottomRight ? p.kvLen - p.qLen : 0);
  int64_t d = i - j;
  switch (m.kind) {
  case Kind::Causal:
    return j <= shifted;
  case Kind::Window:
    return shifted - m.n[0] <= j && j <= shifted + m.n[1];
  case Kind::Chunked:
    return i / m.n[0] == j / m.n[0];
  case Kind::Prefix:
    return j < m.n[0] || j <= i;
  case Kind::Strided:
    return j <= i && (d < m.n[0] || d % m.n[0] == 0);
  case Kind::Fixed:
    return j <= i &&
           (j / m.n[0] == i / m.n[0] || j % m.n[0] >= m.n[0] - m.n[1]);
  case Kind::Dilated:
    return j <= i && d < m.n[0] * m.n[1] && d % m.n[1] == 0;
  case Kind::Global:
    return i < m.n[0] || j < m.n[0];
  case Kind::BlockBitmap: {
    uint64_t bi = i / m.n[0], bj = j / m.n[0], words = (m.n[1] + 63) / 64;
    return bi < m.bits.size() / words && bj < uint64_t(m.n[1]) &&
           (m.bits[bi * words + bj / 64] >> (bj % 64) & 1);
  }
  case Kind::BigBird: {
    int64_t block = m.n[0], bi = i / block, bj = j / block;
    if (std::abs(bi - bj) <= m.n[1] / 2 || bi < m.n[2] || bj < m.n[2])
      return true;
    uint64_t blocks = std::max<int64_t>((p.kvLen + block - 1) / block, 1);
    for (int64_t r = 0; r < m.n[3]; ++r) {
      uint64_t x = uint64_t(m.n[4]) * 0x9E3779B97F4A7C15ull +
                   uint64_t(bi) * 0xBF58476D1CE4E5B9ull +
                   uint64_t(r) * 0x94D049BB133111EBull;
      x ^= x >> 31;
      x *= 0xD6E8FEB86659FD93ull;
      x ^= x >> 32;
      if (int64_t(x % blocks) == bj)
        return true;
    }
    return false;
  }
  case Kind::Union:
    for (const ReferenceMask &part : m.parts)
      if (maskShows(part, p, i, j))
        return true;
    return false;
  case Kind::Intersection:
    for (const ReferenceMask &part : m.parts)
      if (!maskShows(part, p, i, j))
        return false;
    return true;
  }
  return true;
}

static bool structuredVisible(const ReferenceProblem &p, int64_t i, int64_t j) {
  return !p.structuredMask || maskShows(*p.structuredMask, p, i, j);
}

/// Every mask but the block mask: structured, i1 tensor, kv_lens, spans and
/// mask_mod.
static bool isVisibleByOthers(const ReferenceProblem &p, int64_t b, int64_t h,
                              int64_t i, int64_t j) {
  if (!structuredVisible(p, i, j))
    return false;
  if (p.maskData && !p.maskData[broadcastOffset(p.maskDims, b, h, i, j)])
    return false;
  if (p.kvLens && j >= p.kvLens[b])
    return false;
  if (p.spans && j < i - p.spans[h])
    return false;
  return !p.maskMod || p.maskMod(b, h, i, j);
}

/// Every mask together: the block mask's class decides, 1 defers.
static bool isKeyVisible(const ReferenceProblem &p, int64_t b, int64_t h,
                         int64_t i, int64_t j) {
  if (!p.blockMask)
    return isVisibleByOthers(p, b, h, i, j);
  int8_t c = p.blockMask[broadcastOffset(
      p.blockMaskDims, b, h, i / p.blockSizes[0], j / p.blockSizes[1])];
  return c >= 2 || (c == 1 && isVisibleByOthers(p, b, h, i, j));
}

/// x [rows, in] W [in, out] as f32 (the attention's inputs), each value
/// rounded by `round` when given (as kernels store a projection in f16 or
/// bf16).
static std::vector<float> project(const float *x, const float *w, int64_t rows,
                                  int64_t in, int64_t out,
                                  float (*round)(float)) {
  std::vector<float> result(rows * out);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < out; ++c) {
      double sum = 0;
      for (int64_t e = 0; e < in; ++e)
        sum += double(x[r * in + e]) * w[e * out + c];
      result[r * out + c] = round ? round(float(sum)) : float(sum);
    }
  return result;
}

void mlir::attn::referenceAdditiveAttention(
    const ReferenceProblem &p, const float *q, const float *k, const float *v,
    const float *wq, const float *wk, const float *wScore, int64_t attentionDim,
    float (*round)(float), double *out) {
  // The projections keep the layout: they act on the feature dim only.
  std::vector<float> qa = project(q, wq, p.batch * p.qHeads * p.qLen, p.headDim,
                                  attentionDim, round);
  std::vector<float> ka = project(k, wk, p.batch * p.kvHeads * p.kvLen,
                                  p.headDim, attentionDim, round);
  std::vector<float> table;
  for (int64_t h = 0; h < p.qHeads; ++h)
    table.insert(table.end(), wScore, wScore + attentionDim);
  ReferenceProblem projected = p;
  projected.headDim = attentionDim;
  projected.additiveWeight = table.data();
  referenceAttention(projected, qa.data(), ka.data(), v, out);
}

void mlir::attn::referenceMultiHeadAttention(const ReferenceProblem &p,
                                             const MultiHeadProjections &m,
                                             double *out) {
  ReferenceProblem heads = p;
  heads.bshd = true;
  std::vector<float> q = project(m.xq, m.wq, p.batch * p.qLen, m.embed,
                                 p.qHeads * p.headDim, m.round);
  std::vector<float> k = project(m.xk, m.wk, p.batch * p.kvLen, m.embed,
                                 p.kvHeads * p.headDim, m.round);
  std::vector<float> v = project(m.xv, m.wv, p.batch * p.kvLen, m.embed,
                                 p.kvHeads * p.valueDim, m.round);
  int64_t rows = p.batch * p.qLen, merged = p.qHeads * p.valueDim;
  std::vector<double> attention(rows * merged);
  referenceAttention(heads, q.data(), k.data(), v.data(), attention.data());
  if (m.round)
    for (double &x : attention)
      x = m.round(static_cast<float>(x));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < m.outEmbed; ++c) {
      double sum = 0;
      for (int64_t e = 0; e < merged; ++e)
        sum += attention[r * merged + e] * m.wo[e * m.outEmbed + c];
      out[r * m.outEmbed + c] = sum;
    }
}

int64_t mlir::attn::countVisiblePairs(const ReferenceProblem &p) {
  int64_t count = 0;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.qHeads; ++h)
      for (int64_t i = 0; i < p.qLen; ++i)
        for (int64_t j = 0; j < p.kvLen; ++j)
          count += isKeyVisible(p, b, h, i, j);
  return count;
}

/// T5's relative_position_bucket as Hugging Face transformers computes it,
/// in f32.
static int64_t relativePositionBucket(const ReferenceProblem &p,
                                      int64_t relative) {
  int64_t buckets = p.relBuckets, bucket = 0, n;
  if (p.relBidirectional) {
    buckets /= 2;
    bucket += relative > 0 ? buckets : 0;
    n = relative < 0 ? -relative : relative;
  } else {
    n = relative < 0 ? -relative : 0;
  }
  int64_t maxExact = buckets / 2;
  if (n < maxExact)
    return bucket + n;
  float logRatio = std::log(static_cast<float>(n) / float(maxExact));
  float logRange =
      static_cast<float>(std::log(double(p.relMaxDistance) / double(maxExact)));
  int64_t large =
      maxExact + static_cast<int64_t>(logRatio / logRange *
                                      static_cast<float>(buckets - maxExact));
  return bucket + std::min(large, buckets - 1);
}

std::optional<double> mlir::attn::referenceScore(const ReferenceProblem &p,
                                                 const float *q, const float *k,
                                                 int64_t b, int64_t h,
                                                 int64_t i, int64_t j) {
  if (!isKeyVisible(p, b, h, i, j))
    return std::nullopt;
  int64_t kvh = h / (p.qHeads / p.kvHeads);
  double dot = 0, distance = 0, queryNorm = 0;
  for (int64_t f = 0; f < p.headDim; ++f) {
    double qf = q[headOffset(p.bshd, p.qHeads, p.qLen, p.headDim, b, h, i, f)];
    double kf =
        k[headOffset(p.bshd, p.kvHeads, p.kvLen, p.headDim, b, kvh, j, f)];
    dot += qf * kf;
    distance += (qf - kf) * (qf - kf);
    queryNorm += qf * qf;
  }
  // The op's Gaussian score is the distance's shifted by the row constant
  // scale |q|^2 / 2 (softmax cancels it; the lse keeps it). Computed from
  // the distance, so the shift is checked, not assumed.
  double s =
      p.gaussian ? -0.5 * p.scale * (distance - queryNorm) : p.scale * dot;
  if (p.additiveWeight) {
    double sum = 0;
    for (int64_t f = 0; f < p.headDim; ++f)
      sum += p.additiveWeight[h * p.headDim + f] *
             std::tanh(double(q[headOffset(p.bshd, p.qHeads, p.qLen, p.headDim,
                                           b, h, i, f)]) +
                       double(k[headOffset(p.bshd, p.kvHeads, p.kvLen,
                                           p.headDim, b, kvh, j, f)]));
    s = p.scale * sum;
  }
  if (p.linear) {
    // phi(q) . phi(k): the weight itself.
    auto phi = [](double x) { return x > 0 ? x + 1 : std::exp(x); };
    s = 0;
    for (int64_t f = 0; f < p.headDim; ++f)
      s += phi(q[headOffset(p.bshd, p.qHeads, p.qLen, p.headDim, b, h, i, f)]) *
           phi(k[headOffset(p.bshd, p.kvHeads, p.kvLen, p.headDim, b, kvh, j,
                            f)]);
    return s;
  }
  if (p.scoreMod)
    s = p.scoreMod(s, b, h, i, j);
  if (p.biasData)
    s += static_cast<double>(
        p.biasData[broadcastOffset(p.biasDims, b, h, i, j)]);
  if (p.relBias)
    s += p.relBias[h * p.relBuckets + relativePositionBucket(p, j - i)];
  return s;
}

void mlir::attn::referenceAttention(const ReferenceProblem &p, const float *q,
                                    const float *k, const float *v, double *out,
                                    double *lse) {
  assert(p.kvHeads > 0 && p.qHeads % p.kvHeads == 0 &&
         "qHeads must be a multiple of kvHeads");
  assert((!p.maskData || isBroadcastable(p.maskDims, p)) &&
         "mask does not broadcast to [B, Hq, Sq, Sk]");
  assert((!p.biasData || isBroadcastable(p.biasDims, p)) &&
         "bias does not broadcast to [B, Hq, Sq, Sk]");
  const int64_t group = p.qHeads / p.kvHeads;
  const double negInf = -std::numeric_limits<double>::infinity();
  std::vector<std::optional<double>> scores(p.kvLen);
  std::vector<double> row(p.valueDim);

  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.qHeads; ++h) {
      const int64_t kvh = h / group;
      for (int64_t i = 0; i < p.qLen; ++i) {
        // Scores of every visible key for this query. A NaN score must
        // reach the output rather than be skipped by max.
        double maxScore = negInf;
        for (int64_t j = 0; j < p.kvLen; ++j) {
          scores[j] = referenceScore(p, q, k, b, h, i, j);
          if (scores[j])
            maxScore = std::isnan(*scores[j]) || std::isnan(maxScore)
                           ? std::numeric_limits<double>::quiet_NaN()
                           : std::max(maxScore, *scores[j]);
        }

        std::fill(row.begin(), row.end(), 0.0);
        // No visible key, or only -inf scores: the row is 0 and its lse
        // -inf, matching finalize_online_attention.
        double sum = 0;
        if (maxScore != negInf) {
          for (int64_t j = 0; j < p.kvLen; ++j) {
            if (!scores[j])
              continue;
            double weight =
                p.linear ? *scores[j] : std::exp(*scores[j] - maxScore);
            sum += weight;
            for (int64_t f = 0; f < p.valueDim; ++f)
              row[f] += weight * static_cast<double>(
                                     v[headOffset(p.bshd, p.kvHeads, p.kvLen,
                                                  p.valueDim, b, kvh, j, f)]);
          }
          for (int64_t f = 0; f < p.valueDim; ++f)
            row[f] /= sum;
        }
        for (int64_t f = 0; f < p.valueDim; ++f)
          out[headOffset(p.bshd, p.qHeads, p.qLen, p.valueDim, b, h, i, f)] =
              row[f];
        if (lse)
          lse[(b * p.qHeads + h) * p.qLen + i] =
              maxScore == negInf ? negInf : maxScore + std::log(sum);
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Half and bfloat16 conversions
//===----------------------------------------------------------------------===//

static uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

static float bitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

float mlir::attn::halfToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1f;
  uint32_t mantissa = bits & 0x3ff;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1f) // Inf or NaN (the payload is kept).
    return bitsToFloat(sign | 0x7f800000 | (mantissa << 13));
  return bitsToFloat(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

uint16_t mlir::attn::floatToHalf(float value) {
  uint32_t bits = floatBits(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t magnitude = bits & 0x7fffffff;

  if (magnitude >= 0x7f800000) {
    if (magnitude == 0x7f800000)
      return sign | 0x7c00;
    // NaN: keep the top payload bits and force it quiet (and non-zero).
    return sign | 0x7e00 | static_cast<uint16_t>((magnitude >> 13) & 0x3ff);
  }
  // 65520 is halfway between 65504 (the largest half) and 65536; ties go to
  // the even neighbour, which is inf.
  if (magnitude >= 0x477ff000)
    return sign | 0x7c00;

  if (magnitude >= 0x38800000) {
    // Normal half: rebias the exponent and round away 13 mantissa bits. A
    // carry out of the mantissa correctly bumps the exponent.
    uint32_t half =
        ((magnitude >> 23) - 127 + 15) << 10 | ((magnitude >> 13) & 0x3ff);
    uint32_t rest = magnitude & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
      ++half;
    return sign | static_cast<uint16_t>(half);
  }

  // At most 2^-25 (half the smallest subnormal) rounds to zero: ties to even.
  if (magnitude <= 0x33000000)
    return sign;
  // Subnormal half: value = m * 2^-24 with m = mantissa24 >> (126 - e).
  uint32_t exponent = magnitude >> 23;
  uint32_t mantissa = (magnitude & 0x7fffff) | 0x800000;
  uint32_t shift = 126 - exponent; // 14..24
  uint32_t half = mantissa >> shift;
  uint32_t rest = mantissa & ((1u << shift) - 1);
  uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (half & 1)))
    ++half; // May carry into the smallest normal, which is correct.
  return sign | static_cast<uint16_t>(half);
}

float mlir::attn::bf16ToFloat(uint16_t bits) {
  return bitsToFloat(static_cast<uint32_t>(bits) << 16);
}

uint16_t mlir::attn::floatToBf16(float value) {
  uint32_t bits = floatBits(value);
  if ((bits & 0x7fffffff) > 0x7f800000) // NaN: truncate and force quiet.
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  // Round to nearest even; overflow rounds to inf through the exponent.
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

int64_t mlir::attn::countVisibleTiles(const ReferenceProblem &p,
                                      int64_t queryTile, int64_t kvTile) {
  int64_t group = p.qHeads / p.kvHeads, count = 0;
  std::vector<bool> seen(p.kvLen);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t kvh = 0; kvh < p.kvHeads; ++kvh)
      for (int64_t i0 = 0; i0 < p.qLen; i0 += queryTile) {
        // The keys some query of this tile sees.
        std::fill(seen.begin(), seen.end(), false);
        for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h)
          for (int64_t i = i0; i < std::min(i0 + queryTile, p.qLen); ++i)
            for (int64_t j = 0; j < p.kvLen; ++j)
              if (!seen[j] && isKeyVisible(p, b, h, i, j))
                seen[j] = true;
        for (int64_t j0 = 0; j0 < p.kvLen; j0 += kvTile)
          for (int64_t j = j0; j < std::min(j0 + kvTile, p.kvLen); ++j)
            if (seen[j]) {
              ++count;
              break;
            }
      }
  return count;
}

std::vector<double> mlir::attn::referenceAlibiSlopes(int64_t heads) {
  auto powerOfTwo = [](int64_t n) {
    double start = std::pow(2.0, -std::pow(2.0, -(std::log2(n) - 3)));
    std::vector<double> slopes;
    for (int64_t i = 0; i < n; ++i)
      slopes.push_back(start * std::pow(start, static_cast<double>(i)));
    return slopes;
  };
  int64_t closest = 1;
  while (closest * 2 <= heads)
    closest *= 2;
  std::vector<double> slopes = powerOfTwo(closest);
  if (closest == heads)
    return slopes;
  std::vector<double> doubled = referenceAlibiSlopes(2 * closest);
  for (int64_t i = 0; static_cast<int64_t>(slopes.size()) < heads; i += 2)
    slopes.push_back(doubled[i]);
  return slopes;
}
