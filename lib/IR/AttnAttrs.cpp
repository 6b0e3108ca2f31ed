//===- AttnAttrs.cpp - attn attributes ------------------------------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnDialect.h"

#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::attn;

#include "attn/IR/AttnAttrInterfaces.cpp.inc"
#include "attn/IR/AttnEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "attn/IR/AttnAttrs.cpp.inc"

void AttnDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "attn/IR/AttnAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Verifiers (what each mask shows is in StructuredMasks.cpp)
//===----------------------------------------------------------------------===//

/// The largest value of a mask's size parameters: far beyond any sequence,
/// and small enough that positions plus parameters never overflow int64.
static constexpr int64_t kMaxMaskParam = int64_t(1) << 40;

/// Fails unless `least` <= `value` <= 2^40.
static LogicalResult checkAtLeast(function_ref<InFlightDiagnostic()> emitError,
                                  StringRef mask, StringRef param,
                                  int64_t value, int64_t least) {
  if (value >= least && value <= kMaxMaskParam)
    return success();
  return emitError() << mask << " '" << param << "' must be in [" << least
                     << ", 2^40], got " << value;
}

LogicalResult
SlidingWindowMaskAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                              int64_t left, int64_t right, Alignment) {
  return success(
      succeeded(checkAtLeast(emitError, "sliding_window", "left", left, 0)) &&
      succeeded(checkAtLeast(emitError, "sliding_window", "right", right, 0)));
}

LogicalResult
ChunkedMaskAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        int64_t size) {
  return checkAtLeast(emitError, "chunked", "size", size, 1);
}

LogicalResult
PrefixMaskAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       int64_t size) {
  return checkAtLeast(emitError, "prefix", "size", size, 0);
}

LogicalResult
StridedMaskAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        int64_t stride) {
  return checkAtLeast(emitError, "strided", "stride", stride, 1);
}

LogicalResult
FixedMaskAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      int64_t stride, int64_t summary) {
  if (failed(checkAtLeast(emitError, "fixed", "stride", stride, 1)) ||
      failed(checkAtLeast(emitError, "fixed", "summary", summary, 0)))
    return failure();
  if (summary > stride)
    return emitError() << "fixed 'summary' must be <= 'stride' (" << stride
                       << "), got " << summary;
  return success();
}

LogicalResult
DilatedMaskAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        int64_t window, int64_t dilation) {
  if (failed(checkAtLeast(emitError, "dilated", "window", window, 1)) ||
      failed(checkAtLeast(emitError, "dilated", "dilation", dilation, 1)))
    return failure();
  if (window > (int64_t(1) << 40) / dilation)
    return emitError() << "dilated 'window' * 'dilation' must be <= 2^40";
  return success();
}

LogicalResult
GlobalMaskAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       int64_t tokens) {
  return checkAtLeast(emitError, "global", "tokens", tokens, 0);
}

LogicalResult RelPosAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t buckets, int64_t maxDistance,
                                 bool bidirectional) {
  // Each direction needs a bucket of its own offsets and a logarithmic one.
  int64_t perDirection = bidirectional ? buckets / 2 : buckets;
  // The kernels compare an offset with each bucket's threshold, found by
  // walking the offsets up to max_distance.
  if (buckets > (int64_t(1) << 16) || maxDistance > (int64_t(1) << 20))
    return emitError() << "relpos needs at most 2^16 buckets and a "
                          "max_distance of at most 2^20, got "
                       << buckets << " and " << maxDistance;
  if (perDirection < 2 || (bidirectional && buckets % 2))
    return emitError() << "relpos 'buckets' must be at least "
                       << (bidirectional ? "4 and even (bidirectional)" : "2")
                       << ", got " << buckets;
  if (maxDistance <= perDirection / 2)
    return emitError() << "relpos 'max_distance' must exceed the exact "
                          "offsets ("
                       << perDirection / 2 << "), got " << maxDistance;
  return success();
}

SmallVector<int64_t> RelPosAttr::getThresholds() const {
  // T5's large bucket of offset n, in f32 as the reference implementation
  // computes it: max_exact + int(log(n / max_exact) / log(max_distance /
  // max_exact) * (buckets - max_exact)), capped at the last bucket.
  int64_t buckets = getDirectionBuckets(), exact = getMaxExact();
  float logRange = static_cast<float>(
      std::log(static_cast<double>(getMaxDistance()) / exact));
  auto bucketOf = [&](int64_t n) {
    float ratio = static_cast<float>(n) / static_cast<float>(exact);
    int64_t large = exact + static_cast<int64_t>(std::log(ratio) / logRange *
                                                 float(buckets - exact));
    return std::min(large, buckets - 1);
  };
  // The bucket grows with n and reaches the last one by max_distance.
  SmallVector<int64_t> thresholds;
  for (int64_t n = exact; n <= getMaxDistance(); ++n)
    while (exact + static_cast<int64_t>(thresholds.size()) < bucketOf(n))
      thresholds.push_back(n);
  return thresholds;
}

LogicalResult
BigBirdMaskAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        int64_t block, int64_t window, int64_t global,
                        int64_t random, int64_t seed) {
  if (failed(checkAtLeast(emitError, "bigbird", "block", block, 1)) ||
      failed(checkAtLeast(emitError, "bigbird", "window", window, 0)) ||
      failed(checkAtLeast(emitError, "bigbird", "global", global, 0)) ||
      failed(checkAtLeast(emitError, "bigbird", "random", random, 0)) ||
      failed(checkAtLeast(emitError, "bigbird", "seed", seed, 0)))
    return failure();
  if (random > 64)
    return emitError() << "bigbird 'random' must be <= 64, got " << random;
  return success();
}

LogicalResult
BlockBitmapMaskAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                            int64_t block, int64_t keyBlocks,
                            ArrayRef<uint64_t> rows) {
  if (failed(checkAtLeast(emitError, "block_bitmap", "block", block, 1)) ||
      failed(checkAtLeast(emitError, "block_bitmap", "key_blocks", keyBlocks,
                          1)) ||
      failed(checkAtLeast(emitError, "block_bitmap", "rows", rows.size(), 1)))
    return failure();
  // The table lives in the kernel: 2^20 words (8 MiB) at most.
  if (keyBlocks > 64 * (int64_t(1) << 20))
    return emitError() << "block_bitmap has at most 2^26 key blocks, got "
                       << keyBlocks;
  int64_t words = (keyBlocks + 63) / 64;
  if (rows.size() % words)
    return emitError() << "block_bitmap rows hold " << words
                       << " word(s) each (key_blocks = " << keyBlocks
                       << "), got " << rows.size() << " words";
  if (rows.size() > (size_t(1) << 20))
    return emitError() << "block_bitmap has at most 2^20 words, got "
                       << rows.size();
  return success();
}

LogicalResult
UnionMaskAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      ArrayRef<StructuredMaskAttrInterface> masks) {
  return checkAtLeast(emitError, "union", "masks", masks.size(), 1);
}

LogicalResult
IntersectionMaskAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                             ArrayRef<StructuredMaskAttrInterface> masks) {
  return checkAtLeast(emitError, "intersection", "masks", masks.size(), 1);
}
