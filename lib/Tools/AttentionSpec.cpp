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
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace mlir::attn;

//===----------------------------------------------------------------------===//
// AttentionSpec
//===----------------------------------------------------------------------===//

/// The spelling of each kind of mask term, how many numbers it takes and the
/// least value of each.
static constexpr struct {
  MaskTerm::Kind kind;
  const char *name;
  int numbers;
  int64_t least[5];
} kMaskTerms[] = {
    {MaskTerm::Kind::Causal, "causal", 0, {}},
    {MaskTerm::Kind::CausalBottomRight, "causal_bottom_right", 0, {}},
    {MaskTerm::Kind::Window, "window", 2, {0, 0}},
    {MaskTerm::Kind::Chunked, "chunked", 1, {1}},
    {MaskTerm::Kind::Prefix, "prefix", 1, {0}},
    {MaskTerm::Kind::Strided, "strided", 1, {1}},
    {MaskTerm::Kind::Fixed, "fixed", 2, {1, 0}},
    {MaskTerm::Kind::Dilated, "dilated", 2, {1, 1}},
    {MaskTerm::Kind::Global, "global", 1, {0}},
    {MaskTerm::Kind::BigBird, "bigbird", 5, {1, 0, 0, 0, 0}}};

static void printMaskTerm(llvm::raw_ostream &os, const MaskTerm &term) {
  if (term.kind == MaskTerm::Kind::Blocks) {
    os << "blocks:" << term.file;
    return;
  }
  for (const auto &entry : kMaskTerms) {
    if (entry.kind != term.kind)
      continue;
    os << entry.name;
    for (int n = 0; n < entry.numbers; ++n)
      os << ":" << term.n[n];
  }
}

std::string AttentionSpec::str() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "b=" << batch << ",hq=" << qHeads << ",hkv=" << kvHeads
     << ",sq=" << qLen << ",sk=" << kvLen << ",d=" << headDim
     << ",dv=" << valueDim << ",dtype=" << dtype
     << ",layout=" << (layout == Layout::BHSD ? "bhsd" : "bshd");
  // 17 significant digits round-trip every double exactly.
  auto number = [](double value) {
    char buffer[64];
    snprintf(buffer, sizeof(buffer), "%.17g", value);
    return std::string(buffer);
  };
  if (kind == Kind::Gaussian)
    os << ",kind=gaussian:" << number(sigma);
  if (kind == Kind::Linear)
    os << ",kind=linear";
  if (kind == Kind::Additive)
    os << ",kind=additive";
  if (kind == Kind::Additive && attentionDim)
    os << ":" << attentionDim;
  if (kind == Kind::MultiHead)
    os << ",kind=mha,e=" << embed;
  if (scale)
    os << ",scale=" << number(*scale);
  os << ",mask=";
  if (mask.empty())
    os << "none";
  llvm::interleave(
      mask, os,
      [&](const std::vector<MaskTerm> &all) {
        llvm::interleave(
            all, os, [&](const MaskTerm &term) { printMaskTerm(os, term); },
            "&");
      },
      "|");
  if (mod == ScoreMod::Alibi)
    os << ",mod=alibi";
  if (mod == ScoreMod::Softcap)
    os << ",mod=softcap:" << number(softcap);
  if (mod == ScoreMod::RelPos)
    os << ",mod=relpos:" << relposBuckets << ":" << relposMaxDistance
       << (relposBidirectional ? "" : ":uni");
  if (temperature)
    os << ",temperature=" << number(*temperature);
  if (kvLens)
    os << ",kv_lens=random";
  if (lse)
    os << ",lse=true";
  if (spans)
    os << ",spans=random";
  if (blockMask[0])
    os << ",block_mask=random:" << blockMask[0] << ":" << blockMask[1];
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

/// Reads the block bitmap of `blocks:FILE`: `block N`, then one line of 0/1
/// per query block (key block j is column j, the longest line sets the key
/// blocks); `#` starts a comment line.
static llvm::Expected<MaskTerm> readBlockBitmap(StringRef path,
                                                StringRef whole) {
  auto fail = [&](const Twine &why) {
    return specError("'mask' term 'blocks:" + path + "': " + why +
                     " in 'mask=" + whole + "'");
  };
  // A device or a pipe may never end: only regular files, of a size a
  // bitmap of 2^20 words with comments can have.
  constexpr uint64_t kMaxBytes = uint64_t(1) << 28;
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status))
    return fail("cannot read the file (" + ec.message() + ")");
  if (status.type() != llvm::sys::fs::file_type::regular_file)
    return fail("not a regular file");
  if (status.getSize() > kMaxBytes)
    return fail("the file is larger than 256 MiB");
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return fail("cannot read the file (" + buffer.getError().message() + ")");
  MaskTerm term;
  term.kind = MaskTerm::Kind::Blocks;
  term.file = path.str();
  SmallVector<StringRef> lines, bitRows;
  (*buffer)->getBuffer().split(lines, '\n');
  for (StringRef line : lines) {
    line = line.trim();
    if (line.empty() || line.starts_with("#"))
      continue;
    if (line.consume_front("block ")) {
      if (term.n[0] || line.trim().getAsInteger(10, term.n[0]) ||
          term.n[0] < 1 || term.n[0] > (int64_t(1) << 20))
        return fail("'block N' must come once, with N in [1, 2^20]");
      continue;
    }
    if (!term.n[0])
      return fail("the first line must be 'block N'");
    if (line.find_first_not_of("01") != StringRef::npos)
      return fail("a row must be characters 0 or 1, got '" + line + "'");
    bitRows.push_back(line);
    term.n[1] = std::max<int64_t>(term.n[1], line.size());
  }
  // Rows of ceil(key blocks / 64) words, as #attn.block_bitmap stores them.
  int64_t words = (term.n[1] + 63) / 64;
  if (bitRows.empty() || int64_t(bitRows.size()) * words > (int64_t(1) << 20))
    return fail("the bitmap needs 1 row and at most 2^20 64-bit words");
  for (StringRef line : bitRows) {
    term.rows.resize(term.rows.size() + words, 0);
    uint64_t *row = &term.rows[term.rows.size() - words];
    for (auto [column, c] : llvm::enumerate(line))
      row[column / 64] |= uint64_t(c == '1') << (column % 64);
  }
  return term;
}

/// Parses one term of `mask=`, e.g. `window:128:0`.
static llvm::Expected<MaskTerm> parseMaskTerm(StringRef text, StringRef whole) {
  if (text.starts_with("blocks:"))
    return readBlockBitmap(text.drop_front(strlen("blocks:")), whole);
  SmallVector<StringRef> parts;
  text.split(parts, ':');
  for (const auto &entry : kMaskTerms) {
    if (parts[0] != entry.name)
      continue;
    if (static_cast<int>(parts.size()) != entry.numbers + 1)
      return specError("'mask' term '" + text + "' must have " +
                       Twine(entry.numbers) + " ':'-separated number" +
                       (entry.numbers == 1 ? "" : "s") + " after '" +
                       entry.name + "' in 'mask=" + whole + "'");
    MaskTerm term;
    term.kind = entry.kind;
    for (int n = 0; n < entry.numbers; ++n)
      if (parts[n + 1].getAsInteger(10, term.n[n]) ||
          term.n[n] < entry.least[n] || term.n[n] > (int64_t(1) << 20))
        return specError("'mask' term '" + text + "' needs integers in [" +
                         Twine(entry.least[n]) + ", 2^20], got '" +
                         parts[n + 1] + "' in 'mask=" + whole + "'");
    if (term.kind == MaskTerm::Kind::Fixed && term.n[1] > term.n[0])
      return specError("'mask' term '" + text +
                       "' needs C <= L in fixed:L:C, in 'mask=" + whole + "'");
    return term;
  }
  return specError("unknown 'mask' term '" + text + "' in 'mask=" + whole +
                   "' (expected none, or terms joined by | and &: causal, "
                   "causal_bottom_right, window:L:R, chunked:C, prefix:P, "
                   "strided:L, fixed:L:C, dilated:W:DIL, global:G, "
                   "bigbird:BLK:W:G:R:SEED, blocks:FILE)");
}

/// Parses `mask=`: none, or a union (|) of intersections (&) of terms.
static llvm::Error parseMask(StringRef value, AttentionSpec &spec) {
  spec.mask.clear();
  if (value == "none")
    return llvm::Error::success();
  SmallVector<StringRef> alternatives;
  value.split(alternatives, '|');
  for (StringRef alternative : alternatives) {
    SmallVector<StringRef> texts;
    alternative.split(texts, '&');
    std::vector<MaskTerm> all;
    for (StringRef text : texts) {
      llvm::Expected<MaskTerm> term = parseMaskTerm(text, value);
      if (!term)
        return term.takeError();
      all.push_back(*term);
    }
    spec.mask.push_back(std::move(all));
  }
  return llvm::Error::success();
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

/// Parses a finite positive f32 value of `key`.
static llvm::Expected<double> parsePositive(StringRef key, StringRef value) {
  double result;
  // getAsDouble returns true on error; allow inexact decimal fractions.
  if (value.getAsDouble(result, /*AllowInexact=*/true))
    return specError("'" + key + "' must be a number, got '" + value + "'");
  // The op stores the scale as f32: it must stay finite and positive there.
  float asFloat = static_cast<float>(result);
  if (!std::isfinite(result) || result <= 0 || !std::isfinite(asFloat) ||
      asFloat <= 0)
    return specError("'" + key +
                     "' must be a finite positive f32 value, got '" + value +
                     "'");
  return result;
}

static llvm::Error parseScoreMod(StringRef value, AttentionSpec &spec) {
  if (value == "none")
    return llvm::Error::success();
  if (value == "alibi") {
    spec.mod = AttentionSpec::ScoreMod::Alibi;
    return llvm::Error::success();
  }
  if (value.consume_front("softcap:")) {
    llvm::Expected<double> cap = parsePositive("mod=softcap", value);
    if (!cap)
      return cap.takeError();
    spec.mod = AttentionSpec::ScoreMod::Softcap;
    spec.softcap = *cap;
    return llvm::Error::success();
  }
  if (value.consume_front("relpos:")) {
    // relpos:NB[:MAXDIST[:uni]], T5's defaults otherwise.
    SmallVector<StringRef> parts;
    value.split(parts, ':');
    int64_t buckets = 0, maxDistance = 128;
    bool bidirectional = parts.size() < 3;
    if (parts.size() > 3 || parts[0].getAsInteger(10, buckets) ||
        (parts.size() > 1 && parts[1].getAsInteger(10, maxDistance)) ||
        (parts.size() > 2 && parts[2] != "uni"))
      return specError("'mod=relpos:" + value +
                       "' is not relpos:NB[:MAXDIST[:uni]]");
    int64_t perDirection = bidirectional ? buckets / 2 : buckets;
    if (perDirection < 2 || (bidirectional && buckets % 2) ||
        maxDistance <= perDirection / 2)
      return specError("'mod=relpos:" + value +
                       "' needs at least 2 buckets per direction (an even "
                       "count unless ':uni') and MAXDIST above half of them");
    // #attn.relpos's bounds: the kernels hold a threshold per bucket.
    if (buckets > (int64_t(1) << 16) || maxDistance > (int64_t(1) << 20))
      return specError("'mod=relpos:" + value +
                       "' takes at most 2^16 buckets and a MAXDIST of at most "
                       "2^20");
    spec.mod = AttentionSpec::ScoreMod::RelPos;
    spec.relposBuckets = buckets;
    spec.relposMaxDistance = maxDistance;
    spec.relposBidirectional = bidirectional;
    return llvm::Error::success();
  }
  return specError("unknown 'mod' value '" + value +
                   "' (expected none, alibi, softcap:C or relpos:NB)");
}

/// Parses `kind=`; runs after `scale` and `mod`, which it constrains.
static llvm::Error parseKind(StringRef value, AttentionSpec &spec) {
  if (value == "sdpa")
    return llvm::Error::success();
  if (value == "linear" || value == "additive" || value == "mha") {
    spec.kind = value == "linear"     ? AttentionSpec::Kind::Linear
                : value == "additive" ? AttentionSpec::Kind::Additive
                                      : AttentionSpec::Kind::MultiHead;
    return llvm::Error::success();
  }
  if (value.consume_front("additive:")) {
    llvm::Expected<int64_t> dim = parseSize("kind=additive", value);
    if (!dim)
      return dim.takeError();
    spec.kind = AttentionSpec::Kind::Additive;
    spec.attentionDim = *dim;
    return llvm::Error::success();
  }
  if (!value.consume_front("gaussian:"))
    return specError("unknown 'kind' value '" + value +
                     "' (expected sdpa, gaussian:SIGMA, linear, additive, "
                     "additive:A or mha)");
  llvm::Expected<double> sigma = parsePositive("kind=gaussian", value);
  if (!sigma)
    return sigma.takeError();
  if (spec.scale)
    return specError("'kind=gaussian' sets the scale to 1/SIGMA^2; drop "
                     "'scale' (or use 'temperature')");
  // The kernel scores q.k - |k|^2 / 2, which is the Gaussian score shifted
  // per row: only mods that commute with such a shift keep the meaning.
  if (spec.mod == AttentionSpec::ScoreMod::Softcap)
    return specError("'kind=gaussian' does not combine with 'mod=softcap': a "
                     "soft cap is not invariant to the per-row shift the "
                     "kernel scores with");
  // 1/sigma^2 must stay a finite positive f32, like any scale.
  float scale = static_cast<float>(1.0 / (*sigma * *sigma));
  if (!std::isfinite(scale) || scale <= 0)
    return specError("'kind=gaussian:" + value +
                     "' puts the scale 1/SIGMA^2 outside the f32 range");
  spec.kind = AttentionSpec::Kind::Gaussian;
  spec.sigma = *sigma;
  return llvm::Error::success();
}

/// kind=mha runs attn.multi_head_attention: activations [B, S, E] (e=E
/// required), heads fixed by its attributes, and of the extra operands only
/// kv_lens.
static llvm::Error checkMultiHeadKind(const AttentionSpec &spec) {
  const char *unsupported = spec.layout == Layout::BSHD ? "layout"
                            : spec.mod == AttentionSpec::ScoreMod::RelPos
                                ? "mod=relpos"
                            : spec.spans        ? "spans"
                            : spec.blockMask[0] ? "block_mask"
                            : spec.lse          ? "lse"
                            : spec.dynamicHeads ? "dynamic=h"
                                                : nullptr;
  if (unsupported)
    return specError("'kind=mha' takes no '" + Twine(unsupported) +
                     "' (activations are [B, S, E]; the head counts are "
                     "attributes)");
  return llvm::Error::success();
}

/// kind=additive:A runs attn.additive_attention, which takes a structured
/// mask, kv_lens, a scale and a temperature only.
static llvm::Error checkAdditiveAttentionKind(const AttentionSpec &spec) {
  const char *unsupported = spec.mod != AttentionSpec::ScoreMod::None ? "mod"
                            : spec.spans                              ? "spans"
                            : spec.blockMask[0] ? "block_mask"
                            : spec.lse          ? "lse"
                                                : nullptr;
  if (unsupported)
    return specError("'kind=additive:A' takes no '" + Twine(unsupported) +
                     "' (attn.additive_attention has masks, kv_lens and a "
                     "scale)");
  return llvm::Error::success();
}

/// `block_mask=none` or `random:BQ:BK`.
static llvm::Error parseBlockMask(StringRef value, AttentionSpec &spec) {
  if (value == "none")
    return llvm::Error::success();
  SmallVector<StringRef> parts;
  value.split(parts, ':');
  if (parts.size() != 3 || parts[0] != "random")
    return specError("unknown 'block_mask' value '" + value +
                     "' (expected none or random:BQ:BK)");
  for (int i = 0; i < 2; ++i) {
    llvm::Expected<int64_t> size = parseSize(
        i ? "block_mask key block" : "block_mask query block", parts[i + 1]);
    if (!size)
      return size.takeError();
    spec.blockMask[i] = *size;
  }
  return llvm::Error::success();
}

/// attn.linear_attention has no softmax: no scale, score mod, key lengths or
/// lse, and of the masks only causal.
static llvm::Error checkLinearKind(const AttentionSpec &spec) {
  const char *unsupported = spec.scale         ? "scale"
                            : spec.temperature ? "temperature"
                            : spec.mod != AttentionSpec::ScoreMod::None ? "mod"
                            : spec.kvLens       ? "kv_lens"
                            : spec.spans        ? "spans"
                            : spec.blockMask[0] ? "block_mask"
                            : spec.lse          ? "lse"
                                                : nullptr;
  if (unsupported)
    return specError("'kind=linear' takes no '" + Twine(unsupported) +
                     "' (linear attention has no softmax)");
  bool causal = spec.mask.size() == 1 && spec.mask[0].size() == 1 &&
                (spec.mask[0][0].kind == MaskTerm::Kind::Causal ||
                 spec.mask[0][0].kind == MaskTerm::Kind::CausalBottomRight);
  if (!spec.mask.empty() && !causal)
    return specError("'kind=linear' takes mask=none, causal or "
                     "causal_bottom_right");
  return llvm::Error::success();
}

/// The scale `spec`'s op gets, when not the op's default 1/sqrt(D): a
/// temperature divides the (given, Gaussian or default) scale.
static std::optional<double> effectiveScale(const AttentionSpec &spec) {
  std::optional<double> scale = spec.scale;
  if (spec.kind == AttentionSpec::Kind::Gaussian)
    scale = 1.0 / (spec.sigma * spec.sigma);
  // Additive scores are not dot products: no 1/sqrt(D) by default.
  if (spec.kind == AttentionSpec::Kind::Additive && !scale)
    scale = 1.0;
  if (spec.temperature)
    scale = scale.value_or(1.0 / std::sqrt(static_cast<double>(spec.headDim))) /
            *spec.temperature;
  return scale;
}

/// The spec's `key=value` pairs, checked for unknown, duplicate and missing
/// keys before any value is interpreted.
static llvm::Expected<llvm::StringMap<StringRef>>
splitSpecPairs(StringRef text) {
  static constexpr const char *kKnownKeys[] = {
      "b",     "hq",    "hkv",        "sq",          "sk",
      "d",     "dv",    "dtype",      "layout",      "kind",
      "scale", "mask",  "mod",        "temperature", "kv_lens",
      "lse",   "spans", "block_mask", "e",           "dynamic"};

  if (text.trim().empty())
    return specError("the spec is empty; required keys are b, hq, sq, d");

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
                       "kind, scale, mask, mod, temperature, kv_lens, lse, "
                       "spans, block_mask, e or dynamic)");
    if (!values.try_emplace(key, value).second)
      return specError("duplicate key '" + key + "'");
  }

  for (const char *key : {"b", "hq", "sq", "d"})
    if (!values.count(key))
      return specError("missing required key '" + StringRef(key) + "'");
  return values;
}

/// The sizes, with the defaults of the optional ones (hkv = hq, sk = sq,
/// dv = d).
static llvm::Error parseSizes(const llvm::StringMap<StringRef> &values,
                              AttentionSpec &spec) {
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
  return llvm::Error::success();
}

/// dtype, layout, scale and temperature.
static llvm::Error parseNumerics(const llvm::StringMap<StringRef> &values,
                                 AttentionSpec &spec) {
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

  for (auto [key, field] : {std::make_pair("scale", &spec.scale),
                            std::make_pair("temperature", &spec.temperature)}) {
    if (!values.count(key))
      continue;
    llvm::Expected<double> value = parsePositive(key, values.lookup(key));
    if (!value)
      return value.takeError();
    *field = *value;
  }
  return llvm::Error::success();
}

/// Two-valued keys: `off` leaves the flag unset.
static llvm::Error parseFlags(const llvm::StringMap<StringRef> &values,
                              AttentionSpec &spec) {
  struct FlagKey {
    const char *key, *off, *on;
    bool *field;
  } flagKeys[] = {{"kv_lens", "none", "random", &spec.kvLens},
                  {"lse", "false", "true", &spec.lse},
                  {"spans", "none", "random", &spec.spans}};
  for (FlagKey &flag : flagKeys) {
    if (!values.count(flag.key))
      continue;
    StringRef value = values.lookup(flag.key);
    if (value != flag.off && value != flag.on)
      return specError("unknown '" + Twine(flag.key) + "' value '" + value +
                       "' (expected " + flag.off + " or " + flag.on + ")");
    *flag.field = value == flag.on;
  }
  return llvm::Error::success();
}

/// What one key allows another to take, once every key is parsed; and the
/// sizes of the weights and the scale the op gets.
static llvm::Error checkCombination(const llvm::StringMap<StringRef> &values,
                                    AttentionSpec &spec) {
  // The score_mod region built for ALiBi holds its slopes as constants of
  // the head count.
  if (spec.mod == AttentionSpec::ScoreMod::Alibi && spec.dynamicHeads)
    return specError("'mod=alibi' takes its slopes from the head count, "
                     "which 'dynamic=h' leaves to run time: compile a static "
                     "hq, or write the slopes in a score_mod region");

  if (spec.kind == AttentionSpec::Kind::Linear)
    if (llvm::Error error = checkLinearKind(spec))
      return error;

  if (spec.attentionDim)
    if (llvm::Error error = checkAdditiveAttentionKind(spec))
      return error;

  bool multiHead = spec.kind == AttentionSpec::Kind::MultiHead;
  if (values.count("e") != multiHead)
    return specError(multiHead ? "'kind=mha' needs the embedding size 'e'"
                               : "'e' (the embedding size) needs 'kind=mha'");
  if (multiHead) {
    llvm::Expected<int64_t> embed = parseSize("e", values.lookup("e"));
    if (!embed)
      return embed.takeError();
    spec.embed = *embed;
    if (llvm::Error error = checkMultiHeadKind(spec))
      return error;
  }

  // Weights are fixed-size tensors inside the kernel's signature: keep them
  // to sizes a machine holds.
  if (spec.attentionDim > (int64_t(1) << 16) || spec.embed > (int64_t(1) << 20))
    return specError("the attention dim A is at most 2^16 and the embedding "
                     "size e at most 2^20");
  // The scale the op gets, after a temperature, stays a normal f32.
  if (std::optional<double> scale = effectiveScale(spec))
    if (!(*scale >= 0x1p-64 && *scale <= 0x1p64))
      return specError("the scale (after 'temperature') must be in [2^-64, "
                       "2^64], got " +
                       llvm::formatv("{0:e}", *scale).str());
  return llvm::Error::success();
}

llvm::Expected<AttentionSpec> mlir::attn::parseAttentionSpec(StringRef text) {
  llvm::Expected<llvm::StringMap<StringRef>> values = splitSpecPairs(text);
  if (!values)
    return values.takeError();

  AttentionSpec spec;
  if (llvm::Error error = parseSizes(*values, spec))
    return std::move(error);
  if (llvm::Error error = parseNumerics(*values, spec))
    return std::move(error);
  if (llvm::Error error = parseFlags(*values, spec))
    return std::move(error);
  // The keys whose values have grammars of their own; `kind` after `mod`,
  // which it constrains.
  using ValueParser = llvm::Error (*)(StringRef, AttentionSpec &);
  static constexpr std::pair<const char *, ValueParser> kValueParsers[] = {
      {"mask", parseMask},
      {"mod", parseScoreMod},
      {"kind", parseKind},
      {"block_mask", parseBlockMask},
      {"dynamic", parseDynamic}};
  for (auto [key, parse] : kValueParsers)
    if (values->count(key))
      if (llvm::Error error = parse(values->lookup(key), spec))
        return std::move(error);

  if (llvm::Error error = checkCombination(*values, spec))
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

/// The attribute of one mask term.
static StructuredMaskAttrInterface buildMaskTerm(MLIRContext *ctx,
                                                 const MaskTerm &term) {
  switch (term.kind) {
  case MaskTerm::Kind::Causal:
    return CausalMaskAttr::get(ctx, Alignment::TopLeft);
  case MaskTerm::Kind::CausalBottomRight:
    return CausalMaskAttr::get(ctx, Alignment::BottomRight);
  case MaskTerm::Kind::Window:
    return SlidingWindowMaskAttr::get(ctx, term.n[0], term.n[1],
                                      Alignment::TopLeft);
  case MaskTerm::Kind::Chunked:
    return ChunkedMaskAttr::get(ctx, term.n[0]);
  case MaskTerm::Kind::Prefix:
    return PrefixMaskAttr::get(ctx, term.n[0]);
  case MaskTerm::Kind::Strided:
    return StridedMaskAttr::get(ctx, term.n[0]);
  case MaskTerm::Kind::Fixed:
    return FixedMaskAttr::get(ctx, term.n[0], term.n[1]);
  case MaskTerm::Kind::Dilated:
    return DilatedMaskAttr::get(ctx, term.n[0], term.n[1]);
  case MaskTerm::Kind::Global:
    return GlobalMaskAttr::get(ctx, term.n[0]);
  case MaskTerm::Kind::BigBird:
    return BigBirdMaskAttr::get(ctx, term.n[0], term.n[1], term.n[2], term.n[3],
                                term.n[4]);
  case MaskTerm::Kind::Blocks:
    return BlockBitmapMaskAttr::get(ctx, term.n[0], term.n[1], term.rows);
  }
  llvm_unreachable("unknown mask term");
}

StructuredMaskAttrInterface
mlir::attn::buildStructuredMask(MLIRContext *ctx, const AttentionSpec &spec) {
  ctx->getOrLoadDialect<AttnDialect>();
  SmallVector<StructuredMaskAttrInterface> alternatives;
  for (const std::vector<MaskTerm> &all : spec.mask) {
    SmallVector<StructuredMaskAttrInterface> terms;
    for (const MaskTerm &term : all)
      terms.push_back(buildMaskTerm(ctx, term));
    alternatives.push_back(terms.size() == 1
                               ? terms.front()
                               : IntersectionMaskAttr::get(ctx, terms));
  }
  if (alternatives.empty())
    return {};
  return alternatives.size() == 1 ? alternatives.front()
                                  : UnionMaskAttr::get(ctx, alternatives);
}

/// The score_mod region of `spec.mod` in `attention`: (s, b, h, i, j) -> s'.
/// The scale attribute of `spec`'s op (null: the op's 1/sqrt(D)).
static FloatAttr buildScale(Builder &b, const AttentionSpec &spec) {
  std::optional<double> scale = effectiveScale(spec);
  return scale ? b.getF32FloatAttr(static_cast<float>(*scale)) : FloatAttr();
}

/// The score_mod region of mod=alibi or mod=softcap:C into `scoreMod`.
static void buildScoreMod(OpBuilder &b, Location loc, Region &scoreMod,
                          const AttentionSpec &spec) {
  OpBuilder::InsertionGuard guard(b);
  Type f32 = b.getF32Type(), index = b.getIndexType();
  Block *body = b.createBlock(&scoreMod, {}, {f32, index, index, index, index},
                              SmallVector<Location>(5, loc));
  Value score = body->getArgument(0), head = body->getArgument(2);
  Value i = body->getArgument(3), j = body->getArgument(4);
  auto constant = [&](double v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  };
  auto toF32 = [&](Value v) -> Value {
    return arith::SIToFPOp::create(
        b, loc, f32, arith::IndexCastOp::create(b, loc, b.getI64Type(), v));
  };
  Value result;
  if (spec.mod == AttentionSpec::ScoreMod::Softcap) {
    Value cap = constant(spec.softcap);
    result = arith::MulFOp::create(
        b, loc, cap,
        math::TanhOp::create(b, loc,
                             arith::DivFOp::create(b, loc, score, cap)));
  } else {
    // ALiBi slopes for Hq heads: 2^(-8 (h + 1) / n) for the largest power of
    // two n <= Hq, then every other slope of 2n for the heads past n.
    int64_t n = int64_t(1) << llvm::Log2_64(spec.qHeads);
    Value h = toF32(head);
    auto slope = [&](double step, double offset) -> Value {
      // 2^(step (h + offset)).
      return math::Exp2Op::create(
          b, loc,
          arith::MulFOp::create(
              b, loc, constant(step),
              arith::AddFOp::create(b, loc, h, constant(offset))));
    };
    Value m = slope(-8.0 / n, 1.0);
    if (n != spec.qHeads) {
      // Head h >= n takes slope 2 (h - n) of 2n heads: 2^(-4 (2 (h - n) + 1) /
      // n).
      Value past = slope(-8.0 / n, 0.5 - n);
      Value low =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, head,
                                arith::ConstantIndexOp::create(b, loc, n));
      m = arith::SelectOp::create(b, loc, low, m, past);
    }
    Value distance = toF32(arith::SubIOp::create(b, loc, j, i));
    result = arith::AddFOp::create(b, loc, score,
                                   arith::MulFOp::create(b, loc, m, distance));
  }
  YieldOp::create(b, loc, result);
}

/// `module`, or null after a diagnostic when it does not verify.
static OwningOpRef<ModuleOp> verifiedModule(OwningOpRef<ModuleOp> module,
                                            const AttentionSpec &spec) {
  if (failed(verify(*module))) {
    emitError(module->getLoc()) << "the attention module built for spec '"
                                << spec.str() << "' does not verify";
    return nullptr;
  }
  return module;
}

/// kind=additive:A: `funcName`(q, k, v, w_q, w_k, w_score, [kv_lens], out)
/// computing attn.additive_attention.
static OwningOpRef<ModuleOp> buildAdditiveModule(OpBuilder &b,
                                                 OwningOpRef<ModuleOp> module,
                                                 const AttentionSpec &spec,
                                                 StringRef funcName) {
  Location loc = module->getLoc();
  Type element = elementTypeOf(b, spec.dtype);
  Type qType =
      headTensorType(spec, spec.qHeads, spec.qLen, spec.headDim, element);
  Type kType =
      headTensorType(spec, spec.kvHeads, spec.kvLen, spec.headDim, element);
  Type vType =
      headTensorType(spec, spec.kvHeads, spec.kvLen, spec.valueDim, element);
  Type outType =
      headTensorType(spec, spec.qHeads, spec.qLen, spec.valueDim, element);
  Type projType =
      RankedTensorType::get({spec.headDim, spec.attentionDim}, element);
  SmallVector<Type> argTypes = {
      qType,    kType,    vType,
      projType, projType, RankedTensorType::get({spec.attentionDim}, element)};
  if (spec.kvLens)
    argTypes.push_back(RankedTensorType::get(
        {spec.dynamicBatch ? ShapedType::kDynamic : spec.batch},
        b.getI32Type()));
  argTypes.push_back(outType);
  auto func = func::FuncOp::create(b, loc, funcName,
                                   b.getFunctionType(argTypes, {outType}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto arg = [&](unsigned i) { return entry->getArgument(i); };
  auto additive = AdditiveAttentionOp::create(
      b, loc, outType, arg(0), arg(1), arg(2), arg(3), arg(4), arg(5),
      spec.kvLens ? arg(6) : Value(), entry->getArguments().back(),
      buildScale(b, spec), buildStructuredMask(b.getContext(), spec),
      spec.layout);
  func::ReturnOp::create(b, loc, additive.getResult());
  return verifiedModule(std::move(module), spec);
}

/// kind=mha: `funcName`(x_q, x_k, x_v, w_q, w_k, w_v, w_o, [kv_lens], out)
/// computing attn.multi_head_attention.
static OwningOpRef<ModuleOp> buildMultiHeadModule(OpBuilder &b,
                                                  OwningOpRef<ModuleOp> module,
                                                  const AttentionSpec &spec,
                                                  StringRef funcName) {
  Location loc = module->getLoc();
  Type element = elementTypeOf(b, spec.dtype);
  int64_t batch = spec.dynamicBatch ? ShapedType::kDynamic : spec.batch;
  auto activations = [&](int64_t seq) {
    return RankedTensorType::get(
        {batch, spec.dynamicSeq ? ShapedType::kDynamic : seq, spec.embed},
        element);
  };
  auto weight = [&](int64_t rows, int64_t cols) {
    return RankedTensorType::get({rows, cols}, element);
  };
  SmallVector<Type> argTypes = {
      activations(spec.qLen),
      activations(spec.kvLen),
      activations(spec.kvLen),
      weight(spec.embed, spec.qHeads * spec.headDim),
      weight(spec.embed, spec.kvHeads * spec.headDim),
      weight(spec.embed, spec.kvHeads * spec.valueDim),
      weight(spec.qHeads * spec.valueDim, spec.embed)};
  if (spec.kvLens)
    argTypes.push_back(RankedTensorType::get({batch}, b.getI32Type()));
  Type outType = activations(spec.qLen);
  argTypes.push_back(outType);
  auto func = func::FuncOp::create(b, loc, funcName,
                                   b.getFunctionType(argTypes, {outType}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto arg = [&](unsigned i) { return entry->getArgument(i); };
  auto mha = MultiHeadAttentionOp::create(
      b, loc, outType, arg(0), arg(1), arg(2), arg(3), arg(4), arg(5), arg(6),
      /*proj_biases=*/ValueRange(), /*mask=*/Value(), /*bias=*/Value(),
      spec.kvLens ? arg(7) : Value(), entry->getArguments().back(),
      b.getI64IntegerAttr(spec.qHeads), b.getI64IntegerAttr(spec.kvHeads),
      buildScale(b, spec), buildStructuredMask(b.getContext(), spec));
  if (spec.mod != AttentionSpec::ScoreMod::None)
    buildScoreMod(b, loc, mha.getScoreMod(), spec);
  func::ReturnOp::create(b, loc, mha.getResult());
  return verifiedModule(std::move(module), spec);
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

  if (spec.kind == AttentionSpec::Kind::MultiHead)
    return buildMultiHeadModule(b, std::move(module), spec, funcName);
  if (spec.attentionDim)
    return buildAdditiveModule(b, std::move(module), spec, funcName);

  Type elementType = elementTypeOf(b, spec.dtype);
  Type qType =
      headTensorType(spec, spec.qHeads, spec.qLen, spec.headDim, elementType);
  Type kType =
      headTensorType(spec, spec.kvHeads, spec.kvLen, spec.headDim, elementType);
  Type vType = headTensorType(spec, spec.kvHeads, spec.kvLen, spec.valueDim,
                              elementType);
  Type outType =
      headTensorType(spec, spec.qHeads, spec.qLen, spec.valueDim, elementType);

  SmallVector<Type> argTypes = {qType, kType, vType};
  bool relpos = spec.mod == AttentionSpec::ScoreMod::RelPos;
  if (relpos)
    argTypes.push_back(RankedTensorType::get(
        {spec.dynamicHeads ? ShapedType::kDynamic : spec.qHeads,
         spec.relposBuckets},
        b.getF32Type()));
  bool additive = spec.kind == AttentionSpec::Kind::Additive;
  if (additive)
    argTypes.push_back(RankedTensorType::get(
        {spec.dynamicHeads ? ShapedType::kDynamic : spec.qHeads, spec.headDim},
        b.getF32Type()));
  if (spec.kvLens)
    argTypes.push_back(RankedTensorType::get(
        {spec.dynamicBatch ? ShapedType::kDynamic : spec.batch},
        b.getI32Type()));
  if (spec.spans)
    argTypes.push_back(RankedTensorType::get(
        {spec.dynamicHeads ? ShapedType::kDynamic : spec.qHeads},
        b.getI32Type()));
  if (spec.blockMask[0]) {
    auto blocks = [&](int64_t len, int64_t block) {
      return spec.dynamicSeq ? ShapedType::kDynamic
                             : llvm::divideCeilSigned(len, block);
    };
    argTypes.push_back(RankedTensorType::get(
        {spec.dynamicBatch ? ShapedType::kDynamic : spec.batch,
         spec.dynamicHeads ? ShapedType::kDynamic : spec.qHeads,
         blocks(spec.qLen, spec.blockMask[0]),
         blocks(spec.kvLen, spec.blockMask[1])},
        b.getI8Type()));
  }
  SmallVector<Type> resultTypes = {outType};
  if (spec.lse)
    resultTypes.push_back(RankedTensorType::get(
        {spec.dynamicBatch ? ShapedType::kDynamic : spec.batch,
         spec.dynamicHeads ? ShapedType::kDynamic : spec.qHeads,
         spec.dynamicSeq ? ShapedType::kDynamic : spec.qLen},
        b.getF32Type()));
  llvm::append_range(argTypes, resultTypes);
  auto func = func::FuncOp::create(b, loc, funcName,
                                   b.getFunctionType(argTypes, resultTypes));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);

  FloatAttr scale = buildScale(b, spec);
  StructuredMaskAttrInterface mask = buildStructuredMask(ctx, spec);

  ValueRange inits = func.getArguments().take_back(resultTypes.size());
  if (spec.kind == AttentionSpec::Kind::Linear) {
    auto linear = LinearAttentionOp::create(
        b, loc, outType, entry->getArgument(0), entry->getArgument(1),
        entry->getArgument(2), inits.front(),
        dyn_cast_or_null<CausalMaskAttr>(mask), spec.layout);
    func::ReturnOp::create(b, loc, linear.getResult());
    return verifiedModule(std::move(module), spec);
  }
  // The optional operands after v, in the op's order.
  unsigned next = 3;
  auto optionalArg = [&](bool present) {
    return present ? entry->getArgument(next++) : Value();
  };
  Value table = optionalArg(relpos), weight = optionalArg(additive);
  Value lens = optionalArg(spec.kvLens), spans = optionalArg(spec.spans);
  Value blockMask = optionalArg(spec.blockMask[0]);
  auto attention = AttentionOp::create(
      b, loc, resultTypes, entry->getArgument(0), entry->getArgument(1),
      entry->getArgument(2), /*mask=*/Value(), /*bias=*/Value(), table, weight,
      lens, spans, blockMask, /*offsets=*/ValueRange(),
      /*extents=*/ValueRange(), inits.front(),
      /*lse_init=*/spec.lse ? inits.back() : Value(), scale, mask, spec.layout,
      spec.kind == AttentionSpec::Kind::Gaussian ? Similarity::Gaussian
      : additive                                 ? Similarity::Additive
                                                 : Similarity::Dot,
      relpos ? RelPosAttr::get(ctx, spec.relposBuckets, spec.relposMaxDistance,
                               spec.relposBidirectional)
             : RelPosAttr(),
      blockMask ? b.getDenseI64ArrayAttr(spec.blockMask) : DenseI64ArrayAttr());
  if (spec.mod == AttentionSpec::ScoreMod::Alibi ||
      spec.mod == AttentionSpec::ScoreMod::Softcap)
    buildScoreMod(b, loc, attention.getScoreMod(), spec);
  func::ReturnOp::create(b, loc, attention.getResults());
  return verifiedModule(std::move(module), spec);
}
