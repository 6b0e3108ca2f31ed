//===- AttentionSpec.cpp - textual attention problem descriptions ---------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/Tools/AttentionSpec.h"

#include "attn/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace mlir::attn;

//===----------------------------------------------------------------------===//
// AttentionSpec
//===----------------------------------------------------------------------===//

std::string AttentionSpec::str() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "b=" << batch << ",hq=" << qHeads << ",hkv=" << kvHeads
     << ",sq=" << qLen << ",sk=" << kvLen << ",d=" << headDim
     << ",dv=" << valueDim << ",dtype=" << dtype
     << ",layout=" << (layout == Layout::BHSD ? "bhsd" : "bshd");
  if (scale) {
    // 17 significant digits round-trip every double exactly.
    char buffer[64];
    snprintf(buffer, sizeof(buffer), "%.17g", *scale);
    os << ",scale=" << buffer;
  }
  os << ",mask=";
  switch (mask) {
  case Mask::None:
    os << "none";
    break;
  case Mask::Causal:
    os << "causal";
    break;
  case Mask::CausalBottomRight:
    os << "causal_bottom_right";
    break;
  case Mask::Window:
    os << "window:" << windowLeft << ":" << windowRight;
    break;
  }
  if (dynamicBatch || dynamicHeads || dynamicSeq) {
    os << ",dynamic=";
    if (dynamicBatch)
      os << "b";
    if (dynamicHeads)
      os << "h";
    if (dynamicSeq)
      os << "s";
  }
  return text;
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

static llvm::Error specError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "invalid attention spec: " + message);
}

/// Parses a size: a decimal integer > 0.
static llvm::Expected<int64_t> parseSize(StringRef key, StringRef value) {
  int64_t result;
  if (value.getAsInteger(10, result))
    return specError("'" + key + "' must be an integer, got '" + value + "'");
  if (result <= 0)
    return specError("'" + key + "' must be > 0, got " + value);
  return result;
}

/// Parses a window bound: a decimal integer >= 0.
static llvm::Expected<int64_t>
parseWindowBound(StringRef which, StringRef value, StringRef whole) {
  int64_t result;
  if (value.getAsInteger(10, result) || result < 0)
    return specError("'mask' window " + which +
                     " bound must be an integer >= 0, got '" + value +
                     "' in 'mask=" + whole + "'");
  return result;
}

static llvm::Error parseMask(StringRef value, AttentionSpec &spec) {
  if (value == "none") {
    spec.mask = AttentionSpec::Mask::None;
    return llvm::Error::success();
  }
  if (value == "causal") {
    spec.mask = AttentionSpec::Mask::Causal;
    return llvm::Error::success();
  }
  if (value == "causal_bottom_right") {
    spec.mask = AttentionSpec::Mask::CausalBottomRight;
    return llvm::Error::success();
  }
  if (value.starts_with("window")) {
    SmallVector<StringRef> parts;
    value.split(parts, ':');
    if (parts.size() != 3 || parts[0] != "window")
      return specError("'mask' window must be 'window:L:R', got '" + value +
                       "'");
    llvm::Expected<int64_t> left = parseWindowBound("left", parts[1], value);
    if (!left)
      return left.takeError();
    llvm::Expected<int64_t> right = parseWindowBound("right", parts[2], value);
    if (!right)
      return right.takeError();
    spec.mask = AttentionSpec::Mask::Window;
    spec.windowLeft = *left;
    spec.windowRight = *right;
    return llvm::Error::success();
  }
  return specError("unknown 'mask' value '" + value +
                   "' (expected none, causal, causal_bottom_right or "
                   "window:L:R)");
}

static llvm::Error parseDynamic(StringRef value, AttentionSpec &spec) {
  for (char c : value) {
    bool *flag = c == 'b'   ? &spec.dynamicBatch
                 : c == 'h' ? &spec.dynamicHeads
                 : c == 's' ? &spec.dynamicSeq
                            : nullptr;
    if (!flag)
      return specError("'dynamic' takes letters among b, h, s; got '" + value +
                       "'");
    if (*flag)
      return specError("'dynamic' repeats the letter '" + StringRef(&c, 1) +
                       "' in '" + value + "'");
    *flag = true;
  }
  return llvm::Error::success();
}

static llvm::Expected<double> parseScale(StringRef value) {
  double result;
  // getAsDouble returns true on error; allow inexact decimal fractions.
  if (value.getAsDouble(result, /*AllowInexact=*/true))
    return specError("'scale' must be a number, got '" + value + "'");
  // The op stores the scale as f32: it must stay finite and positive there.
  float asFloat = static_cast<float>(result);
  if (!std::isfinite(result) || result <= 0 || !std::isfinite(asFloat) ||
      asFloat <= 0)
    return specError("'scale' must be a finite positive f32 value, got '" +
                     value + "'");
  return result;
}

llvm::Expected<AttentionSpec> mlir::attn::parseAttentionSpec(StringRef text) {
  static constexpr const char *kKnownKeys[] = {
      "b",  "hq",    "hkv",    "sq",    "sk",   "d",
      "dv", "dtype", "layout", "scale", "mask", "dynamic"};

  if (text.trim().empty())
    return specError("the spec is empty; required keys are b, hq, sq, d");

  // First split into pairs so that duplicates and unknown keys are reported
  // before any value is interpreted.
  llvm::StringMap<StringRef> values;
  SmallVector<StringRef> pairs;
  text.split(pairs, ',');
  for (StringRef pair : pairs) {
    auto [rawKey, rawValue] = pair.split('=');
    if (!pair.contains('='))
      return specError("expected 'key=value', got '" + pair.trim() + "'");
    StringRef key = rawKey.trim(), value = rawValue.trim();
    if (!llvm::is_contained(kKnownKeys, key))
      return specError("unknown key '" + key +
                       "' (expected b, hq, hkv, sq, sk, d, dv, dtype, layout, "
                       "scale, mask or dynamic)");
    if (!values.try_emplace(key, value).second)
      return specError("duplicate key '" + key + "'");
  }

  for (const char *key : {"b", "hq", "sq", "d"})
    if (!values.count(key))
      return specError("missing required key '" + StringRef(key) + "'");

  AttentionSpec spec;
  // Sizes, with the defaults of the optional ones.
  struct SizeKey {
    const char *key;
    int64_t *field;
    const char *defaultKey;
  } sizeKeys[] = {{"b", &spec.batch, nullptr},  {"hq", &spec.qHeads, nullptr},
                  {"sq", &spec.qLen, nullptr},  {"d", &spec.headDim, nullptr},
                  {"hkv", &spec.kvHeads, "hq"}, {"sk", &spec.kvLen, "sq"},
                  {"dv", &spec.valueDim, "d"}};
  for (SizeKey &size : sizeKeys) {
    StringRef key = size.key;
    if (!values.count(key))
      key = size.defaultKey;
    llvm::Expected<int64_t> value = parseSize(key, values.lookup(key));
    if (!value)
      return value.takeError();
    *size.field = *value;
  }
  if (spec.qHeads % spec.kvHeads != 0)
    return specError("'hq' (" + llvm::Twine(spec.qHeads) +
                     ") must be a multiple of 'hkv' (" +
                     llvm::Twine(spec.kvHeads) + ")");

  if (values.count("dtype")) {
    StringRef dtype = values.lookup("dtype");
    if (dtype != "f32" && dtype != "f16" && dtype != "bf16")
      return specError("unknown 'dtype' value '" + dtype +
                       "' (expected f32, f16 or bf16)");
    spec.dtype = dtype.str();
  }

  if (values.count("layout")) {
    StringRef layout = values.lookup("layout");
    if (layout == "bhsd")
      spec.layout = Layout::BHSD;
    else if (layout == "bshd")
      spec.layout = Layout::BSHD;
    else
      return specError("unknown 'layout' value '" + layout +
                       "' (expected bhsd or bshd)");
  }

  if (values.count("scale")) {
    llvm::Expected<double> scale = parseScale(values.lookup("scale"));
    if (!scale)
      return scale.takeError();
    spec.scale = *scale;
  }

  if (values.count("mask"))
    if (llvm::Error error = parseMask(values.lookup("mask"), spec))
      return std::move(error);

  if (values.count("dynamic"))
    if (llvm::Error error = parseDynamic(values.lookup("dynamic"), spec))
      return std::move(error);

  return spec;
}

//===----------------------------------------------------------------------===//
// Module construction
//===----------------------------------------------------------------------===//

/// The tensor type of a q/k/v/out operand: logical [B, H, S, F] permuted to
/// the layout, with the dynamic dimensions of the spec as `?`.
static RankedTensorType headTensorType(const AttentionSpec &spec, int64_t heads,
                                       int64_t seq, int64_t feature,
                                       Type elementType) {
  int64_t b = spec.dynamicBatch ? ShapedType::kDynamic : spec.batch;
  int64_t h = spec.dynamicHeads ? ShapedType::kDynamic : heads;
  int64_t s = spec.dynamicSeq ? ShapedType::kDynamic : seq;
  SmallVector<int64_t> shape = spec.layout == Layout::BHSD
                                   ? SmallVector<int64_t>{b, h, s, feature}
                                   : SmallVector<int64_t>{b, s, h, feature};
  return RankedTensorType::get(shape, elementType);
}

static Type elementTypeOf(Builder &b, StringRef dtype) {
  if (dtype == "f16")
    return b.getF16Type();
  if (dtype == "bf16")
    return b.getBF16Type();
  return b.getF32Type();
}

OwningOpRef<ModuleOp>
mlir::attn::buildAttentionModule(MLIRContext *ctx, const AttentionSpec &spec,
                                 StringRef funcName) {
  ctx->loadDialect<AttnDialect, func::FuncDialect, arith::ArithDialect,
                   math::MathDialect, tensor::TensorDialect>();
  Location loc = UnknownLoc::get(ctx);
  if (funcName.empty()) {
    emitError(loc) << "attention function name must not be empty";
    return nullptr;
  }

  OpBuilder b(ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());

  Type elementType = elementTypeOf(b, spec.dtype);
  Type qType =
      headTensorType(spec, spec.qHeads, spec.qLen, spec.headDim, elementType);
  Type kType =
      headTensorType(spec, spec.kvHeads, spec.kvLen, spec.headDim, elementType);
  Type vType = headTensorType(spec, spec.kvHeads, spec.kvLen, spec.valueDim,
                              elementType);
  Type outType =
      headTensorType(spec, spec.qHeads, spec.qLen, spec.valueDim, elementType);

  auto funcType = b.getFunctionType({qType, kType, vType, outType}, {outType});
  auto func = func::FuncOp::create(b, loc, funcName, funcType);
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);

  FloatAttr scale = spec.scale
                        ? b.getF32FloatAttr(static_cast<float>(*spec.scale))
                        : FloatAttr();
  StructuredMaskAttrInterface mask;
  switch (spec.mask) {
  case AttentionSpec::Mask::None:
    break;
  case AttentionSpec::Mask::Causal:
    mask = CausalMaskAttr::get(ctx, Alignment::TopLeft);
    break;
  case AttentionSpec::Mask::CausalBottomRight:
    mask = CausalMaskAttr::get(ctx, Alignment::BottomRight);
    break;
  case AttentionSpec::Mask::Window:
    mask = SlidingWindowMaskAttr::get(ctx, spec.windowLeft, spec.windowRight,
                                      Alignment::TopLeft);
    break;
  }

  auto attention = AttentionOp::create(
      b, loc, outType, entry->getArgument(0), entry->getArgument(1),
      entry->getArgument(2), /*mask=*/Value(), /*bias=*/Value(),
      /*kv_lens=*/Value(), /*offsets=*/ValueRange(), /*extents=*/ValueRange(),
      entry->getArgument(3), scale, mask, spec.layout);
  func::ReturnOp::create(b, loc, attention.getResult());

  if (failed(verify(*module))) {
    emitError(loc) << "the attention module built for spec '" << spec.str()
                   << "' does not verify";
    return nullptr;
  }
  return module;
}
