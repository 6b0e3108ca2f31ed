//===- StructuredMasks.cpp - what each structured mask shows --------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//
//
// Each structured mask answers three questions: is key j visible to query i;
// which keys can queries [i0, i1] see (the loops' key range); does the tile
// [i0, i1] x [j0, j1] hide or show every pair (skip it, or drop the per-score
// test). Each answer is written once, over an arithmetic that either computes
// constants (the attribute interface, folding) or emits index IR (every
// lowering), so the two cannot disagree.
//
// Tiles are classified through d = i - j, which takes every value of
// [i0 - j1, i1 - j0] on a tile: a pattern of d alone (causal, window,
// strided, dilated) is decided exactly from that range.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/StructuredMasks.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::attn;

/// Marks the memref.get_global of a block bitmap's table until
/// materializeBlockBitmapTables defines the table.
static constexpr StringLiteral kBitmapTableAttr = "attn.block_bitmap_table";

namespace {
/// Integer arithmetic on constants.
struct ConstantMath {
  using Int = int64_t;
  using Bool = bool;
  Int constant(int64_t v) { return v; }
  Bool truth(bool v) { return v; }
  Int add(Int x, Int y) { return x + y; }
  Int sub(Int x, Int y) { return x - y; }
  Int mul(Int x, int64_t c) { return x * c; }
  Int floorDiv(Int x, int64_t c) { return llvm::divideFloorSigned(x, c); }
  Int min(Int x, Int y) { return std::min(x, y); }
  Int max(Int x, Int y) { return std::max(x, y); }
  Bool lt(Int x, Int y) { return x < y; }
  Bool le(Int x, Int y) { return x <= y; }
  Bool eq(Int x, Int y) { return x == y; }
  Bool both(Bool x, Bool y) { return x && y; }
  Bool either(Bool x, Bool y) { return x || y; }
  Bool negate(Bool x) { return !x; }
  Int select(Bool c, Int x, Int y) { return c ? x : y; }
  Int ceilDiv(Int x, int64_t c) { return llvm::divideCeilSigned(x, c); }
  /// BigBird's random key block r of query block `row` (see BigBirdMaskAttr).
  Int randomBlock(Int row, int64_t r, int64_t seed, Int blocks) {
    uint64_t x = uint64_t(seed) * 0x9E3779B97F4A7C15ull +
                 uint64_t(row) * 0xBF58476D1CE4E5B9ull +
                 uint64_t(r) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    x *= 0xD6E8FEB86659FD93ull;
    x ^= x >> 32;
    return int64_t(x % uint64_t(std::max<int64_t>(blocks, 1)));
  }
  /// Whether `test` holds for some x in [lo, hi].
  Bool anyOf(Int lo, Int hi, function_ref<Bool(Int)> test) {
    for (Int x = lo; x <= hi; ++x)
      if (test(x))
        return true;
    return false;
  }
  /// Whether any (or, with `all`, every) key block of [lo, hi] is visible
  /// to query block `row` in `bitmap`.
  Bool blockBits(BlockBitmapMaskAttr bitmap, Int row, Int lo, Int hi,
                 bool all) {
    for (Int bj = lo; bj <= hi; ++bj)
      if (bitmap.shows(row, bj) != all)
        return !all;
    return all;
  }
};

/// The same arithmetic emitted as index and i1 IR (folded where constant).
struct IRMath {
  OpBuilder &b;
  Location loc;
  using Int = Value;
  using Bool = Value;
  Int constant(int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  }
  Bool truth(bool v) {
    return arith::ConstantIntOp::create(b, loc, v, /*width=*/1).getResult();
  }
  Int add(Int x, Int y) { return b.createOrFold<arith::AddIOp>(loc, x, y); }
  Int sub(Int x, Int y) { return b.createOrFold<arith::SubIOp>(loc, x, y); }
  Int mul(Int x, int64_t c) {
    return b.createOrFold<arith::MulIOp>(loc, x, constant(c));
  }
  Int floorDiv(Int x, int64_t c) {
    return b.createOrFold<arith::FloorDivSIOp>(loc, x, constant(c));
  }
  Int min(Int x, Int y) { return b.createOrFold<arith::MinSIOp>(loc, x, y); }
  Int max(Int x, Int y) { return b.createOrFold<arith::MaxSIOp>(loc, x, y); }
  Bool lt(Int x, Int y) { return cmp(arith::CmpIPredicate::slt, x, y); }
  Bool le(Int x, Int y) { return cmp(arith::CmpIPredicate::sle, x, y); }
  Bool eq(Int x, Int y) { return cmp(arith::CmpIPredicate::eq, x, y); }
  Bool both(Bool x, Bool y) { return b.createOrFold<arith::AndIOp>(loc, x, y); }
  Bool either(Bool x, Bool y) {
    return b.createOrFold<arith::OrIOp>(loc, x, y);
  }
  Bool negate(Bool x) {
    return b.createOrFold<arith::XOrIOp>(loc, x, truth(true));
  }
  Int select(Bool c, Int x, Int y) {
    return b.createOrFold<arith::SelectOp>(loc, c, x, y);
  }
  Int ceilDiv(Int x, int64_t c) {
    return b.createOrFold<arith::CeilDivSIOp>(loc, x, constant(c));
  }
  Int randomBlock(Int row, int64_t r, int64_t seed, Int blocks) {
    Type i64 = b.getI64Type();
    auto word = [&](uint64_t v) -> Value {
      return arith::ConstantIntOp::create(b, loc, i64, int64_t(v));
    };
    auto mix = [&](Value x, unsigned shift) -> Value {
      return b.createOrFold<arith::XOrIOp>(
          loc, x, b.createOrFold<arith::ShRUIOp>(loc, x, word(shift)));
    };
    Value x = b.createOrFold<arith::MulIOp>(
        loc, b.createOrFold<arith::IndexCastOp>(loc, i64, row),
        word(0xBF58476D1CE4E5B9ull));
    x = b.createOrFold<arith::AddIOp>(
        loc, x,
        word(uint64_t(seed) * 0x9E3779B97F4A7C15ull +
             uint64_t(r) * 0x94D049BB133111EBull));
    x = mix(x, 31);
    x = b.createOrFold<arith::MulIOp>(loc, x, word(0xD6E8FEB86659FD93ull));
    x = mix(x, 32);
    Value count =
        b.createOrFold<arith::IndexCastOp>(loc, i64, max(blocks, constant(1)));
    return b.createOrFold<arith::IndexCastOp>(
        loc, b.getIndexType(), b.createOrFold<arith::RemUIOp>(loc, x, count));
  }
  /// The same over the bitmap's words, read from a constant table: one
  /// word for a single key block, else a loop over the words of [lo, hi].
  Bool blockBits(BlockBitmapMaskAttr bitmap, Int row, Int lo, Int hi,
                 bool all) {
    Type i64 = b.getI64Type();
    auto word = [&](uint64_t v) -> Value {
      return arith::ConstantIntOp::create(b, loc, i64, int64_t(v));
    };
    auto asI64 = [&](Value v) {
      return b.createOrFold<arith::IndexCastOp>(loc, i64, v);
    };
    int64_t words = bitmap.getWordsPerRow(), keyBlocks = bitmap.getKeyBlocks();
    Value table = bitmapTable(bitmap);
    Bool rowShown =
        both(le(constant(0), row), ltConst(row, bitmap.getNumRows()));
    Int rowStart = mul(
        min(max(row, constant(0)), constant(bitmap.getNumRows() - 1)), words);
    auto load = [&](OpBuilder &lb, Int w) -> Value {
      return memref::LoadOp::create(
          lb, loc, table,
          ValueRange{lb.createOrFold<arith::AddIOp>(loc, rowStart, w)});
    };
    if (lo == hi) {
      Int bj = min(max(lo, constant(0)), constant(keyBlocks - 1));
      Value bits = b.createOrFold<arith::ShRUIOp>(
          loc, load(b, floorDiv(bj, 64)), asI64(floorMod(bj, 64)));
      Bool set = b.createOrFold<arith::TruncIOp>(loc, b.getI1Type(), bits);
      return both(both(rowShown, set),
                  both(le(constant(0), lo), ltConst(lo, keyBlocks)));
    }
    // The key blocks of the bitmap in [lo, hi], word by word.
    Int first = max(lo, constant(0)), last = min(hi, constant(keyBlocks - 1));
    auto loop = scf::ForOp::create(
        b, loc, floorDiv(first, 64), add(floorDiv(last, 64), constant(1)),
        constant(1), ValueRange{truth(all)},
        [&](OpBuilder &lb, Location, Value w, ValueRange found) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
          Int base = mul(w, 64);
          Int a = sub(max(first, base), base);
          Int z = sub(min(last, add(base, constant(63))), base);
          Value mask = b.createOrFold<arith::AndIOp>(
              loc,
              b.createOrFold<arith::ShRUIOp>(loc, word(~0ull),
                                             asI64(sub(constant(63), z))),
              b.createOrFold<arith::ShLIOp>(loc, word(~0ull), asI64(a)));
          Value met = b.createOrFold<arith::AndIOp>(loc, load(b, w), mask);
          Bool test = b.createOrFold<arith::CmpIOp>(
              loc, all ? arith::CmpIPredicate::eq : arith::CmpIPredicate::ne,
              met, all ? mask : word(0));
          scf::YieldOp::create(
              b, loc, all ? both(found[0], test) : either(found[0], test));
        });
    Bool result = both(rowShown, loop.getResult(0));
    // Every block of [lo, hi] must exist to be shown.
    return all ? both(result, both(le(constant(0), lo), ltConst(hi, keyBlocks)))
               : result;
  }
  Bool anyOf(Int lo, Int hi, function_ref<Bool(Int)> test) {
    auto loop = scf::ForOp::create(
        b, loc, lo, add(hi, constant(1)), constant(1), ValueRange{truth(false)},
        [&](OpBuilder &lb, Location, Value x, ValueRange found) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
          scf::YieldOp::create(b, loc, either(found[0], test(x)));
        });
    return loop.getResult(0);
  }

private:
  Bool cmp(arith::CmpIPredicate predicate, Int x, Int y) {
    return b.createOrFold<arith::CmpIOp>(loc, predicate, x, y);
  }
  Bool ltConst(Int x, int64_t c) { return lt(x, constant(c)); }
  Int floorMod(Int x, int64_t c) { return sub(x, mul(floorDiv(x, c), c)); }

  /// The bitmap's words: a memref.get_global of a table named after their
  /// hash, which materializeBlockBitmapTables defines (the code being built
  /// may not be in its module yet).
  Value bitmapTable(BlockBitmapMaskAttr bitmap) {
    ArrayRef<uint64_t> rows = bitmap.getRows();
    auto type = MemRefType::get({int64_t(rows.size())}, b.getI64Type());
    std::string name;
    llvm::raw_string_ostream(name)
        << "attn_block_bitmap_"
        << llvm::format_hex_no_prefix(
               uint64_t(llvm::hash_combine(bitmap.getKeyBlocks(),
                                           llvm::hash_combine_range(rows))),
               16);
    auto table = memref::GetGlobalOp::create(b, loc, type, name);
    table->setAttr(kBitmapTableAttr, bitmap);
    return table;
  }
};

/// Derived operations, over either arithmetic.
template <typename M>
struct MaskMath : M {
  using Int = typename M::Int;
  using Bool = typename M::Bool;
  Bool ge(Int x, int64_t c) { return this->le(this->constant(c), x); }
  Bool ltConst(Int x, int64_t c) { return this->lt(x, this->constant(c)); }
  /// x mod c in [0, c).
  Int floorMod(Int x, int64_t c) {
    return this->sub(x, this->mul(this->floorDiv(x, c), c));
  }
  /// Whether [lo, hi] holds a multiple of c.
  Bool holdsMultiple(Int lo, Int hi, int64_t c) {
    return this->le(lo, this->mul(this->floorDiv(hi, c), c));
  }
  /// The least i mod c over i in [lo, hi]: 0 when the range holds a
  /// multiple of c, else lo mod c.
  Int leastResidue(Int lo, Int hi, int64_t c) {
    return this->select(this->eq(this->floorDiv(lo, c), this->floorDiv(hi, c)),
                        floorMod(lo, c), this->constant(0));
  }
};

/// The shift that lines a query up with the keys: Sk - Sq bottom-right.
template <typename M>
static typename M::Int alignmentShift(M &m, Alignment alignment,
                                      typename M::Int qLen,
                                      typename M::Int kvLen) {
  return alignment == Alignment::BottomRight ? m.sub(kvLen, qLen)
                                             : m.constant(0);
}

/// A causal or sliding-window mask: query i, at key position p = i + shift,
/// sees keys [p - left, p + right] (no left bound when causal).
struct Band {
  int64_t right;
  std::optional<int64_t> left;
  Alignment alignment;
};
static Band bandOf(StructuredMaskAttrInterface mask) {
  if (auto causal = dyn_cast<CausalMaskAttr>(mask))
    return {0, std::nullopt, causal.getAlignment()};
  auto window = cast<SlidingWindowMaskAttr>(mask);
  return {window.getRight(), window.getLeft(), window.getAlignment()};
}

//===----------------------------------------------------------------------===//
// Is key j visible to query i
//===----------------------------------------------------------------------===//

template <typename M, typename Int = typename M::Int,
          typename Bool = typename M::Bool>
static Bool visible(M &m, StructuredMaskAttrInterface mask, typename M::Int i,
                    typename M::Int j, typename M::Int qLen,
                    typename M::Int kvLen) {
  // Built by the patterns of d = i - j only.
  auto diff = [&] { return m.sub(i, j); };
  auto causal = [&] { return m.le(j, i); };
  return llvm::TypeSwitch<Attribute, Bool>(mask)
      .template Case<CausalMaskAttr, SlidingWindowMaskAttr>([&](auto) {
        Band band = bandOf(mask);
        Int p = m.add(i, alignmentShift(m, band.alignment, qLen, kvLen));
        Bool upTo = m.le(j, m.add(p, m.constant(band.right)));
        if (!band.left)
          return upTo;
        return m.both(m.le(m.sub(p, m.constant(*band.left)), j), upTo);
      })
      .Case([&](ChunkedMaskAttr chunked) {
        return m.eq(m.floorDiv(i, chunked.getSize()),
                    m.floorDiv(j, chunked.getSize()));
      })
      .Case([&](PrefixMaskAttr prefix) {
        return m.either(m.ltConst(j, prefix.getSize()), causal());
      })
      .Case([&](StridedMaskAttr strided) {
        int64_t l = strided.getStride();
        Int d = diff();
        return m.both(causal(), m.either(m.ltConst(d, l), m.eq(m.floorMod(d, l),
                                                               m.constant(0))));
      })
      .Case([&](FixedMaskAttr fixed) {
        int64_t l = fixed.getStride();
        Bool sameBlock = m.eq(m.floorDiv(i, l), m.floorDiv(j, l));
        Bool summary = m.ge(m.floorMod(j, l), l - fixed.getSummary());
        return m.both(causal(), m.either(sameBlock, summary));
      })
      .Case([&](DilatedMaskAttr dilated) {
        int64_t dil = dilated.getDilation();
        Int d = diff();
        return m.both(m.both(causal(), m.ltConst(d, dilated.getWindow() * dil)),
                      m.eq(m.floorMod(d, dil), m.constant(0)));
      })
      .Case([&](GlobalMaskAttr global) {
        return m.either(m.ltConst(i, global.getTokens()),
                        m.ltConst(j, global.getTokens()));
      })
      .Case([&](BlockBitmapMaskAttr bitmap) {
        int64_t blk = bitmap.getBlock();
        Int bj = m.floorDiv(j, blk);
        return m.blockBits(bitmap, m.floorDiv(i, blk), bj, bj, /*all=*/false);
      })
      .Case([&](BigBirdMaskAttr bird) {
        int64_t blk = bird.getBlock(), h = bird.getWindow() / 2;
        Int bi = m.floorDiv(i, blk), bj = m.floorDiv(j, blk);
        Int blocks = m.ceilDiv(kvLen, blk);
        Bool any = m.both(m.le(m.sub(bi, m.constant(h)), bj),
                          m.le(bj, m.add(bi, m.constant(h))));
        any = m.either(any, m.either(m.ltConst(bi, bird.getGlobal()),
                                     m.ltConst(bj, bird.getGlobal())));
        for (int64_t r = 0; r < bird.getRandom(); ++r)
          any = m.either(
              any, m.eq(m.randomBlock(bi, r, bird.getSeed(), blocks), bj));
        return any;
      })
      .Case([&](UnionMaskAttr all) {
        Bool any = m.truth(false);
        for (StructuredMaskAttrInterface part : all.getMasks())
          any = m.either(any, visible(m, part, i, j, qLen, kvLen));
        return any;
      })
      .Case([&](IntersectionMaskAttr all) {
        Bool every = m.truth(true);
        for (StructuredMaskAttrInterface part : all.getMasks())
          every = m.both(every, visible(m, part, i, j, qLen, kvLen));
        return every;
      });
}

//===----------------------------------------------------------------------===//
// Which keys can queries [i0, i1] see
//===----------------------------------------------------------------------===//

/// [begin, end): no query sees a key before begin (for every mask but an
/// intersection, begin is the first key one of them sees) or from end on.
template <typename M, typename Int = typename M::Int>
static std::pair<Int, Int>
keyHull(M &m, StructuredMaskAttrInterface mask, typename M::Int i0,
        typename M::Int i1, typename M::Int qLen, typename M::Int kvLen) {
  Int zero = m.constant(0), past = m.add(i1, m.constant(1));
  return llvm::TypeSwitch<Attribute, std::pair<Int, Int>>(mask)
      .template Case<CausalMaskAttr, SlidingWindowMaskAttr>([&](auto) {
        // Query i sees down to i + shift - left and up to i + shift + right.
        Band band = bandOf(mask);
        Int shift = alignmentShift(m, band.alignment, qLen, kvLen);
        Int begin =
            band.left ? m.sub(m.add(i0, shift), m.constant(*band.left)) : zero;
        return std::make_pair(
            begin, m.add(m.add(i1, shift), m.constant(band.right + 1)));
      })
      .Case([&](ChunkedMaskAttr chunked) {
        int64_t c = chunked.getSize();
        return std::make_pair(
            m.mul(m.floorDiv(i0, c), c),
            m.mul(m.add(m.floorDiv(i1, c), m.constant(1)), c));
      })
      .Case([&](PrefixMaskAttr prefix) {
        return std::make_pair(zero, m.max(m.constant(prefix.getSize()), past));
      })
      .Case([&](StridedMaskAttr strided) {
        // Query i >= L sees down to i mod L (and those below L see key 0).
        int64_t l = strided.getStride();
        return std::make_pair(
            m.select(m.ltConst(i0, l), zero, m.leastResidue(i0, i1, l)), past);
      })
      .Case([&](FixedMaskAttr fixed) {
        // Past the first block, the first summary key (or the own block).
        int64_t l = fixed.getStride(), c = fixed.getSummary();
        Int later = c ? m.constant(l - c) : m.mul(m.floorDiv(i0, l), l);
        return std::make_pair(m.select(m.ltConst(i0, l), zero, later), past);
      })
      .Case([&](DilatedMaskAttr dilated) {
        // The widest step back, or the least residue where that is < 0.
        int64_t dil = dilated.getDilation();
        Int back = m.sub(i0, m.constant((dilated.getWindow() - 1) * dil));
        return std::make_pair(
            m.select(m.lt(back, zero), m.leastResidue(i0, i1, dil), back),
            past);
      })
      .Case([&](GlobalMaskAttr global) {
        Int g = m.constant(global.getTokens());
        return std::make_pair(zero, m.select(m.lt(i0, g), kvLen, g));
      })
      .Case([&](BlockBitmapMaskAttr) { return std::make_pair(zero, kvLen); })
      .Case([&](BigBirdMaskAttr bird) {
        // Random and global blocks may be anywhere; without them, the
        // window of blocks.
        if (bird.getRandom() || bird.getGlobal())
          return std::make_pair(zero, kvLen);
        int64_t blk = bird.getBlock(), h = bird.getWindow() / 2;
        return std::make_pair(
            m.mul(m.sub(m.floorDiv(i0, blk), m.constant(h)), blk),
            m.mul(m.add(m.floorDiv(i1, blk), m.constant(h + 1)), blk));
      })
      .Case([&](UnionMaskAttr all) {
        std::pair<Int, Int> hull = {m.constant(int64_t(1) << 62),
                                    m.constant(-(int64_t(1) << 62))};
        for (StructuredMaskAttrInterface part : all.getMasks()) {
          auto [begin, end] = keyHull(m, part, i0, i1, qLen, kvLen);
          hull = {m.min(hull.first, begin), m.max(hull.second, end)};
        }
        return hull;
      })
      .Case([&](IntersectionMaskAttr all) {
        std::pair<Int, Int> hull = {m.constant(-(int64_t(1) << 62)),
                                    m.constant(int64_t(1) << 62)};
        for (StructuredMaskAttrInterface part : all.getMasks()) {
          auto [begin, end] = keyHull(m, part, i0, i1, qLen, kvLen);
          hull = {m.max(hull.first, begin), m.min(hull.second, end)};
        }
        return hull;
      });
}

//===----------------------------------------------------------------------===//
// Does a tile hide or show every pair
//===----------------------------------------------------------------------===//

/// The bounds of d = i - j a pattern of d alone keeps to (either may be
/// open); nothing for the other patterns.
template <typename Int>
struct DiffBounds {
  std::optional<Int> lo, hi;
};
template <typename M, typename Int = typename M::Int>
static std::optional<DiffBounds<Int>>
diffBounds(M &m, StructuredMaskAttrInterface mask, typename M::Int qLen,
           typename M::Int kvLen) {
  if (isBandMask(mask)) {
    // j <= i + shift + right, and i + shift - left <= j.
    Band band = bandOf(mask);
    Int shift = alignmentShift(m, band.alignment, qLen, kvLen);
    DiffBounds<Int> bounds{m.sub(m.constant(-band.right), shift), {}};
    if (band.left)
      bounds.hi = m.sub(m.constant(*band.left), shift);
    return bounds;
  }
  if (isa<StridedMaskAttr>(mask))
    return DiffBounds<Int>{m.constant(0), {}};
  if (auto dilated = dyn_cast<DilatedMaskAttr>(mask))
    return DiffBounds<Int>{m.constant(0), m.constant((dilated.getWindow() - 1) *
                                                     dilated.getDilation())};
  return std::nullopt;
}

template <typename Bool>
struct TileClass {
  Bool hidesAll, showsAll;
};

template <typename M, typename Int = typename M::Int,
          typename Bool = typename M::Bool>
static TileClass<Bool>
classifyTile(M &m, StructuredMaskAttrInterface mask, typename M::Int i0,
             typename M::Int i1, typename M::Int j0, typename M::Int j1,
             typename M::Int qLen, typename M::Int kvLen);

/// Whether the tile [i0, i1] x [j0, j1] hides or shows every pair of one
/// mask: a method per kind of mask.
template <typename M>
class TileClassifier {
  using Int = typename M::Int;
  using Bool = typename M::Bool;

public:
  TileClassifier(M &m, Int i0, Int i1, Int j0, Int j1, Int qLen, Int kvLen)
      : m(m), i0(i0), i1(i1), j0(j0), j1(j1), qLen(qLen), kvLen(kvLen),
        zero(m.constant(0)) {}

  TileClass<Bool> classify(StructuredMaskAttrInterface mask) {
    return llvm::TypeSwitch<Attribute, TileClass<Bool>>(mask)
        .template Case<CausalMaskAttr, SlidingWindowMaskAttr>(
            [&](auto) { return classifyBand(mask); })
        .Case([&](ChunkedMaskAttr chunked) { return classifyChunked(chunked); })
        .Case([&](PrefixMaskAttr prefix) { return classifyPrefix(prefix); })
        .Case([&](StridedMaskAttr strided) { return classifyStrided(strided); })
        .Case([&](FixedMaskAttr fixed) { return classifyFixed(fixed); })
        .Case([&](DilatedMaskAttr dilated) { return classifyDilated(dilated); })
        .Case([&](GlobalMaskAttr global) { return classifyGlobal(global); })
        .Case(
            [&](BlockBitmapMaskAttr bitmap) { return classifyBitmap(bitmap); })
        .Case([&](BigBirdMaskAttr bird) { return classifyBigBird(bird); })
        .Case([&](UnionMaskAttr all) { return classifyUnion(all); })
        .Case([&](IntersectionMaskAttr all) {
          return classifyIntersection(all);
        });
  }

private:
  /// Another mask on the same tile.
  TileClass<Bool> classifyPart(StructuredMaskAttrInterface part) {
    return classifyTile(m, part, i0, i1, j0, j1, qLen, kvLen);
  }

  /// Every d = i - j of the tile lies in [dlo, dhi], and each is reached
  /// (built by the patterns of d only).
  std::pair<Int, Int> diffRange() { return {m.sub(i0, j1), m.sub(i1, j0)}; }

  /// Keys [a, b] all in the last `c` positions of one block of `l`.
  Bool allSummary(Int a, Int b, int64_t l, int64_t c) {
    if (c == 0 || c == l)
      return c ? m.truth(true) : m.lt(b, a);
    return m.either(m.lt(b, a), m.both(m.eq(m.floorDiv(a, l), m.floorDiv(b, l)),
                                       m.ge(m.floorMod(a, l), l - c)));
  }

  TileClass<Bool> classifyBand(StructuredMaskAttrInterface mask) {
    // The first query sees up to p0 + right, the last down to p1 - left.
    Band band = bandOf(mask);
    Int shift = alignmentShift(m, band.alignment, qLen, kvLen);
    Int p0 = m.add(i0, shift), p1 = m.add(i1, shift);
    Int right = m.constant(band.right);
    TileClass<Bool> tile{m.lt(m.add(p1, right), j0),
                         m.le(j1, m.add(p0, right))};
    if (band.left) {
      Int left = m.constant(*band.left);
      tile.hidesAll = m.either(tile.hidesAll, m.lt(j1, m.sub(p0, left)));
      tile.showsAll = m.both(m.le(m.sub(p1, left), j0), tile.showsAll);
    }
    return tile;
  }

  TileClass<Bool> classifyChunked(ChunkedMaskAttr chunked) {
    int64_t c = chunked.getSize();
    Int ci0 = m.floorDiv(i0, c), ci1 = m.floorDiv(i1, c);
    Int cj0 = m.floorDiv(j0, c), cj1 = m.floorDiv(j1, c);
    return {m.either(m.lt(ci1, cj0), m.lt(cj1, ci0)),
            m.both(m.both(m.eq(ci0, ci1), m.eq(cj0, cj1)), m.eq(ci0, cj0))};
  }

  TileClass<Bool> classifyPrefix(PrefixMaskAttr prefix) {
    int64_t p = prefix.getSize();
    return {m.both(m.ge(j0, p), m.lt(i1, j0)),
            m.le(j1, m.max(m.constant(p - 1), i0))};
  }

  TileClass<Bool> classifyStrided(StridedMaskAttr strided) {
    // Hidden: no d >= 0 below L or at a multiple of L. Shown: every d is
    // >= 0 and below L or (one d) a multiple of L.
    int64_t l = strided.getStride();
    auto [dlo, dhi] = diffRange();
    Int a = m.max(dlo, zero);
    Bool hides =
        m.either(m.lt(dhi, zero),
                 m.both(m.ge(a, l), m.negate(m.holdsMultiple(a, dhi, l))));
    Bool onlyMultiples = l == 1 ? m.truth(true)
                                : m.both(m.eq(m.max(dlo, m.constant(l)), dhi),
                                         m.eq(m.floorMod(dhi, l), zero));
    return {hides,
            m.both(m.ge(dlo, 0), m.either(m.ltConst(dhi, l), onlyMultiples))};
  }

  TileClass<Bool> classifyFixed(FixedMaskAttr fixed) {
    int64_t l = fixed.getStride(), c = fixed.getSummary();
    Int bi0 = m.floorDiv(i0, l), bi1 = m.floorDiv(i1, l);
    // A causal pair in one block: the blocks overlap and j0 <= i1.
    Bool sameBlock = m.both(m.le(j0, i1), m.le(m.max(bi0, m.floorDiv(j0, l)),
                                               m.min(bi1, m.floorDiv(j1, l))));
    // A summary key j <= i1: one of [j0, min(j1, i1)] in a block's tail.
    Bool summary = m.truth(false);
    if (c) {
      Int b = m.min(j1, i1);
      Int firstTail = m.add(m.mul(m.floorDiv(j0, l), l), m.constant(l - c));
      summary = m.both(m.le(j0, b), m.either(m.ge(m.floorMod(j0, l), l - c),
                                             m.le(firstTail, b)));
    }
    // Shown: every j <= i0, and each key is a summary key or in the one
    // block of every query.
    Int blockStart = m.mul(bi0, l);
    Bool ownBlock = m.both(
        m.both(
            m.eq(bi0, bi1),
            allSummary(j0, m.min(j1, m.sub(blockStart, m.constant(1))), l, c)),
        allSummary(m.max(j0, m.add(blockStart, m.constant(l))), j1, l, c));
    Bool shows =
        m.both(m.le(j1, i0), m.either(allSummary(j0, j1, l, c), ownBlock));
    return {m.negate(m.either(sameBlock, summary)), shows};
  }

  TileClass<Bool> classifyDilated(DilatedMaskAttr dilated) {
    int64_t dil = dilated.getDilation();
    int64_t widest = (dilated.getWindow() - 1) * dil;
    auto [dlo, dhi] = diffRange();
    Int a = m.max(dlo, zero), z = m.min(dhi, m.constant(widest));
    Bool hides = m.either(m.lt(z, a), m.negate(m.holdsMultiple(a, z, dil)));
    Bool steps = dil == 1
                     ? m.truth(true)
                     : m.both(m.eq(dlo, dhi), m.eq(m.floorMod(dlo, dil), zero));
    return {hides,
            m.both(m.both(m.ge(dlo, 0), m.le(dhi, m.constant(widest))), steps)};
  }

  TileClass<Bool> classifyGlobal(GlobalMaskAttr global) {
    int64_t g = global.getTokens();
    return {m.both(m.ge(i0, g), m.ge(j0, g)),
            m.either(m.ltConst(i1, g), m.ltConst(j1, g))};
  }

  TileClass<Bool> classifyBitmap(BlockBitmapMaskAttr bitmap) {
    // Over the tile's query blocks: hidden when no row shows a key block
    // of [bj0, bj1], shown when every row shows them all (both exact).
    int64_t blk = bitmap.getBlock();
    Int bi0 = m.floorDiv(i0, blk), bi1 = m.floorDiv(i1, blk);
    Int bj0 = m.floorDiv(j0, blk), bj1 = m.floorDiv(j1, blk);
    Bool any = m.anyOf(bi0, bi1, [&](Int bi) {
      return m.blockBits(bitmap, bi, bj0, bj1, /*all=*/false);
    });
    Bool gap = m.anyOf(bi0, bi1, [&](Int bi) {
      return m.negate(m.blockBits(bitmap, bi, bj0, bj1, /*all=*/true));
    });
    return {m.negate(any), m.negate(gap)};
  }

  TileClass<Bool> classifyBigBird(BigBirdMaskAttr bird) {
    // On the tile's query blocks [bi0, bi1] and key blocks [bj0, bj1]:
    // hidden when no block pair is in the window, global or drawn (a loop
    // over the query blocks for the random ones: exact); shown when the
    // window or the global blocks cover every pair, or the tile lies in one
    // drawn block pair (exact for tiles within blocks).
    int64_t blk = bird.getBlock(), h = bird.getWindow() / 2;
    int64_t g = bird.getGlobal();
    Int bi0 = m.floorDiv(i0, blk), bi1 = m.floorDiv(i1, blk);
    Int bj0 = m.floorDiv(j0, blk), bj1 = m.floorDiv(j1, blk);
    Int hw = m.constant(h);
    Bool any = m.both(m.le(bj0, m.add(bi1, hw)), m.le(m.sub(bi0, hw), bj1));
    any = m.either(any, m.either(m.ltConst(bi0, g), m.ltConst(bj0, g)));
    if (int64_t random = bird.getRandom()) {
      Int blocks = m.ceilDiv(kvLen, blk);
      any = m.either(any, m.anyOf(bi0, bi1, [&](Int bi) {
        Bool drawn = m.truth(false);
        for (int64_t r = 0; r < random; ++r) {
          Int bj = m.randomBlock(bi, r, bird.getSeed(), blocks);
          drawn = m.either(drawn, m.both(m.le(bj0, bj), m.le(bj, bj1)));
        }
        return drawn;
      }));
    }
    Bool windowAll =
        m.both(m.le(bj1, m.add(bi0, hw)), m.le(m.sub(bi1, hw), bj0));
    Bool shows =
        m.either(windowAll, m.either(m.ltConst(bi1, g), m.ltConst(bj1, g)));
    if (int64_t random = bird.getRandom()) {
      // A tile inside one block pair is shown when that pair was drawn.
      Int blocks = m.ceilDiv(kvLen, blk);
      Bool drawn = m.truth(false);
      for (int64_t r = 0; r < random; ++r)
        drawn = m.either(
            drawn, m.eq(m.randomBlock(bi0, r, bird.getSeed(), blocks), bj0));
      shows = m.either(shows,
                       m.both(m.both(m.eq(bi0, bi1), m.eq(bj0, bj1)), drawn));
    }
    return {m.negate(any), shows};
  }

  TileClass<Bool> classifyUnion(UnionMaskAttr all) {
    TileClass<Bool> result{m.truth(true), m.truth(false)};
    for (StructuredMaskAttrInterface part : all.getMasks()) {
      TileClass<Bool> one = classifyPart(part);
      result = {m.both(result.hidesAll, one.hidesAll),
                m.either(result.showsAll, one.showsAll)};
    }
    return result;
  }

  TileClass<Bool> classifyIntersection(IntersectionMaskAttr all) {
    ArrayRef<StructuredMaskAttrInterface> parts = all.getMasks();
    const auto *bitmapPart = llvm::find_if(
        parts, [](Attribute part) { return isa<BlockBitmapMaskAttr>(part); });
    if (bitmapPart != parts.end() && parts.size() > 1) {
      SmallVector<StructuredMaskAttrInterface> others(parts.begin(),
                                                      bitmapPart);
      others.append(std::next(bitmapPart), parts.end());
      StructuredMaskAttrInterface rest =
          others.size() == 1
              ? others.front()
              : IntersectionMaskAttr::get(all.getContext(), others);
      return classifyBitmapAnd(cast<BlockBitmapMaskAttr>(*bitmapPart), rest);
    }
    // The patterns of d alone first narrow the tile's [dlo, dhi] to the d
    // all their bounds allow, [a, z]; then a strided or dilated part needs
    // one of its steps in it. Exact with at most one such part and no other
    // kind; any other part hides on its own (sound).
    auto [a, z] = diffRange();
    TileClass<Bool> result{m.truth(false), m.truth(true)};
    SmallVector<StructuredMaskAttrInterface> stepped;
    for (StructuredMaskAttrInterface part : parts) {
      TileClass<Bool> one = classifyPart(part);
      result.showsAll = m.both(result.showsAll, one.showsAll);
      std::optional<DiffBounds<Int>> bounds = diffBounds(m, part, qLen, kvLen);
      if (!bounds) {
        result.hidesAll = m.either(result.hidesAll, one.hidesAll);
        continue;
      }
      if (bounds->lo)
        a = m.max(a, *bounds->lo);
      if (bounds->hi)
        z = m.min(z, *bounds->hi);
      if (isa<StridedMaskAttr, DilatedMaskAttr>(part))
        stepped.push_back(part);
    }
    result.hidesAll = m.either(result.hidesAll, m.lt(z, a));
    for (StructuredMaskAttrInterface part : stepped) {
      Bool step;
      if (auto strided = dyn_cast<StridedMaskAttr>(part))
        step = m.either(m.ltConst(a, strided.getStride()),
                        m.holdsMultiple(a, z, strided.getStride()));
      else
        step = m.holdsMultiple(a, z, cast<DilatedMaskAttr>(part).getDilation());
      result.hidesAll = m.either(result.hidesAll, m.negate(step));
    }
    return result;
  }

  /// A bitmap and the `rest` of an intersection: hidden unless some block
  /// the bitmap shows holds a pair the rest shows, each block's part of the
  /// tile classified by the rest alone (exact when that is).
  TileClass<Bool> classifyBitmapAnd(BlockBitmapMaskAttr bitmap,
                                    StructuredMaskAttrInterface rest) {
    int64_t blk = bitmap.getBlock();
    Bool seen = m.anyOf(m.floorDiv(i0, blk), m.floorDiv(i1, blk), [&](Int bi) {
      return m.anyOf(m.floorDiv(j0, blk), m.floorDiv(j1, blk), [&](Int bj) {
        Int top = m.mul(bi, blk), left = m.mul(bj, blk);
        TileClass<Bool> block = classifyTile(
            m, rest, m.max(i0, top), m.min(i1, m.add(top, m.constant(blk - 1))),
            m.max(j0, left), m.min(j1, m.add(left, m.constant(blk - 1))), qLen,
            kvLen);
        return m.both(m.blockBits(bitmap, bi, bj, bj, /*all=*/false),
                      m.negate(block.hidesAll));
      });
    });
    Bool shows =
        m.both(classifyPart(bitmap).showsAll, classifyPart(rest).showsAll);
    return {m.negate(seen), shows};
  }

  M &m;
  Int i0, i1, j0, j1, qLen, kvLen;
  Int zero;
};

template <typename M, typename Int, typename Bool>
static TileClass<Bool>
classifyTile(M &m, StructuredMaskAttrInterface mask, typename M::Int i0,
             typename M::Int i1, typename M::Int j0, typename M::Int j1,
             typename M::Int qLen, typename M::Int kvLen) {
  return TileClassifier<M>(m, i0, i1, j0, j1, qLen, kvLen).classify(mask);
}
} // namespace

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

bool mlir::attn::isMaskVisible(Attribute mask, int64_t qIdx, int64_t kvIdx,
                               int64_t qLen, int64_t kvLen) {
  MaskMath<ConstantMath> m;
  return visible(m, cast<StructuredMaskAttrInterface>(mask), qIdx, kvIdx, qLen,
                 kvLen);
}

bool mlir::attn::isMaskAllVisible(Attribute mask, int64_t qLen, int64_t kvLen) {
  return classifyMaskTile(mask, 0, qLen - 1, 0, kvLen - 1, qLen, kvLen)
      .showsAll;
}

MaskTileBits mlir::attn::classifyMaskTile(Attribute mask, int64_t qFirst,
                                          int64_t qLast, int64_t kvFirst,
                                          int64_t kvLast, int64_t qLen,
                                          int64_t kvLen) {
  if (qLast < qFirst || kvLast < kvFirst)
    return {true, true};
  MaskMath<ConstantMath> m;
  TileClass<bool> tile =
      classifyTile(m, cast<StructuredMaskAttrInterface>(mask), qFirst, qLast,
                   kvFirst, kvLast, qLen, kvLen);
  return {tile.hidesAll, tile.showsAll};
}

Value mlir::attn::buildMaskVisible(OpBuilder &b, Location loc,
                                   StructuredMaskAttrInterface mask, Value q,
                                   Value kv, Value qLen, Value kvLen) {
  MaskMath<IRMath> m{{b, loc}};
  return visible(m, mask, q, kv, qLen, kvLen);
}

std::pair<Value, Value>
mlir::attn::buildMaskKeyHull(OpBuilder &b, Location loc,
                             StructuredMaskAttrInterface mask, Value qFirst,
                             Value qLast, Value qLen, Value kvLen) {
  MaskMath<IRMath> m{{b, loc}};
  return keyHull(m, mask, qFirst, qLast, qLen, kvLen);
}

MaskTileValues mlir::attn::buildMaskTile(OpBuilder &b, Location loc,
                                         StructuredMaskAttrInterface mask,
                                         Value qFirst, Value qLast,
                                         Value kvFirst, Value kvLast,
                                         Value qLen, Value kvLen) {
  MaskMath<IRMath> m{{b, loc}};
  TileClass<Value> tile =
      classifyTile(m, mask, qFirst, qLast, kvFirst, kvLast, qLen, kvLen);
  return {tile.hidesAll, tile.showsAll};
}

bool mlir::attn::isBandMask(StructuredMaskAttrInterface mask) {
  return isa_and_nonnull<CausalMaskAttr, SlidingWindowMaskAttr>(mask);
}

void mlir::attn::materializeBlockBitmapTables(Operation *root) {
  root->walk([](memref::GetGlobalOp table) {
    auto bitmap = table->getAttrOfType<BlockBitmapMaskAttr>(kBitmapTableAttr);
    if (!bitmap)
      return;
    table->removeAttr(kBitmapTableAttr);
    Operation *scope = SymbolTable::getNearestSymbolTable(table);
    if (SymbolTable::lookupSymbolIn(scope, table.getNameAttr()))
      return;
    OpBuilder b = OpBuilder::atBlockBegin(&scope->getRegion(0).front());
    SmallVector<APInt> words;
    for (uint64_t word : bitmap.getRows())
      words.push_back(APInt(64, word));
    MemRefType type = table.getType();
    memref::GlobalOp::create(
        b, table.getLoc(), table.getName(), b.getStringAttr("private"), type,
        DenseElementsAttr::get(
            RankedTensorType::get(type.getShape(), b.getI64Type()), words),
        /*constant=*/true, /*alignment=*/IntegerAttr());
  });
}
