//===- MaskModBounds.cpp - decide a mask_mod over a whole tile ------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//
//
// Interval arithmetic over the ops of a mask_mod region, emitted as IR: from
// the index ranges of a tile it computes whether the region certainly hides,
// or certainly shows, every (b, h, q_idx, kv_idx) of the tile. The bounds are
// sound, not always tight (x - x is [-w, w]): "certain" is exact, "unknown"
// only costs the per-element test.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnOps.h"
#include "attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attn;

namespace {
/// The values an integer of the region may take, [lo, hi] as index values,
/// and whether it is statically known not to be negative (which unsigned ops
/// need to be read as signed ones). For an i1, lo is "certainly true" and hi
/// "possibly true".
struct Interval {
  Value lo, hi;
  bool nonNegative = false;
};

/// Emits the interval of each op of a mask_mod region.
class IntervalEmitter {
public:
  IntervalEmitter(OpBuilder &b, Location loc) : b(b), loc(loc), m{b, loc} {}

  /// The interval of `op`'s result, or failure for an op not modelled.
  FailureOr<Interval> emit(Operation *op);

  Value negate(Value x) {
    return arith::XOrIOp::create(b, loc, x, m.constantBool(true));
  }

  DenseMap<Value, Interval> intervals;

private:
  Value constant(int64_t v) { return m.constant(v); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value both(Value x, Value y) { return m.both(x, y); }
  Value either(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }
  /// Smallest and largest of two values; for i1, and / or.
  Value min(Value x, Value y) {
    return x.getType().isInteger(1) ? both(x, y)
                                    : arith::MinSIOp::create(b, loc, x, y);
  }
  Value max(Value x, Value y) {
    return x.getType().isInteger(1) ? either(x, y)
                                    : arith::MaxSIOp::create(b, loc, x, y);
  }

  FailureOr<Interval> operand(Value v) {
    auto it = intervals.find(v);
    if (it == intervals.end())
      return failure();
    return it->second;
  }
  /// The positive constant divisor of a division or remainder.
  std::optional<int64_t> positiveDivisor(Value rhs) {
    APInt value;
    if (!matchPattern(rhs, m_ConstantInt(&value)) ||
        !value.isStrictlyPositive())
      return std::nullopt;
    return value.getSExtValue();
  }

  FailureOr<Interval> compare(arith::CmpIOp op);
  template <typename DivOp>
  FailureOr<Interval> divide(Operation *op);
  FailureOr<Interval> remainder(Operation *op);

  OpBuilder &b;
  Location loc;
  IndexMath m;
};
} // namespace

/// Whether `type` holds values the intervals model exactly: index and i64
/// (no narrower integer, whose wrap-around they do not model), and i1.
static bool isModelledType(Type type) {
  return type.isIndex() || type.isInteger(64) || type.isInteger(1);
}

FailureOr<Interval> IntervalEmitter::compare(arith::CmpIOp op) {
  FailureOr<Interval> x = operand(op.getLhs()), y = operand(op.getRhs());
  if (failed(x) || failed(y) || op.getLhs().getType().isInteger(1))
    return failure();
  using P = arith::CmpIPredicate;
  P predicate = op.getPredicate();
  bool isUnsigned = predicate == P::ult || predicate == P::ule ||
                    predicate == P::ugt || predicate == P::uge;
  // Unsigned order is the signed one only between non-negative values.
  if (isUnsigned && !(x->nonNegative && y->nonNegative))
    return failure();
  // x < y (or <=) for all values when x.hi < y.lo; for some when x.lo < y.hi.
  auto less = [&](const Interval &l, const Interval &r, P strictness) {
    return Interval{cmp(strictness, l.hi, r.lo), cmp(strictness, l.lo, r.hi)};
  };
  auto equal = [&]() {
    Value single = both(cmp(P::eq, x->lo, x->hi), cmp(P::eq, y->lo, y->hi));
    return Interval{both(single, cmp(P::eq, x->lo, y->lo)),
                    both(cmp(P::sle, x->lo, y->hi), cmp(P::sle, y->lo, x->hi))};
  };
  switch (predicate) {
  case P::slt:
  case P::ult:
    return less(*x, *y, P::slt);
  case P::sle:
  case P::ule:
    return less(*x, *y, P::sle);
  case P::sgt:
  case P::ugt:
    return less(*y, *x, P::slt);
  case P::sge:
  case P::uge:
    return less(*y, *x, P::sle);
  case P::eq:
    return equal();
  case P::ne: {
    Interval eq = equal();
    return Interval{negate(eq.hi), negate(eq.lo)};
  }
  }
  return failure();
}

/// Division by a positive constant is monotonic: [lo / c, hi / c].
template <typename DivOp>
FailureOr<Interval> IntervalEmitter::divide(Operation *op) {
  FailureOr<Interval> x = operand(op->getOperand(0));
  std::optional<int64_t> divisor = positiveDivisor(op->getOperand(1));
  bool isUnsigned = isa<arith::DivUIOp, arith::CeilDivUIOp>(op);
  if (failed(x) || !divisor || (isUnsigned && !x->nonNegative))
    return failure();
  Value c = constant(*divisor);
  return Interval{DivOp::create(b, loc, x->lo, c),
                  DivOp::create(b, loc, x->hi, c), x->nonNegative};
}

/// x rem c for x >= 0 and c > 0: [lo rem c, hi rem c] when lo and hi share a
/// quotient, else [0, c - 1].
FailureOr<Interval> IntervalEmitter::remainder(Operation *op) {
  FailureOr<Interval> x = operand(op->getOperand(0));
  std::optional<int64_t> divisor = positiveDivisor(op->getOperand(1));
  if (failed(x) || !divisor || !x->nonNegative)
    return failure();
  Value c = constant(*divisor);
  Value same =
      cmp(arith::CmpIPredicate::eq, arith::DivSIOp::create(b, loc, x->lo, c),
          arith::DivSIOp::create(b, loc, x->hi, c));
  return Interval{
      select(same, arith::RemSIOp::create(b, loc, x->lo, c), constant(0)),
      select(same, arith::RemSIOp::create(b, loc, x->hi, c),
             constant(*divisor - 1)),
      /*nonNegative=*/true};
}

FailureOr<Interval> IntervalEmitter::emit(Operation *op) {
  if (op->getNumRegions() != 0 || op->getNumResults() != 1 ||
      !isModelledType(op->getResult(0).getType()) ||
      !llvm::all_of(op->getOperandTypes(), isModelledType))
    return failure();
  return llvm::TypeSwitch<Operation *, FailureOr<Interval>>(op)
      .Case([&](arith::ConstantOp c) -> FailureOr<Interval> {
        auto attr = dyn_cast<IntegerAttr>(c.getValue());
        if (!attr)
          return failure();
        int64_t v = attr.getValue().getSExtValue();
        Value value =
            c.getType().isInteger(1) ? m.constantBool(v != 0) : constant(v);
        return Interval{value, value, v >= 0 || c.getType().isInteger(1)};
      })
      // index <-> i64 keeps every bit.
      .Case<arith::IndexCastOp, arith::IndexCastUIOp>(
          [&](Operation *cast) { return operand(cast->getOperand(0)); })
      .Case([&](arith::AddIOp add) -> FailureOr<Interval> {
        FailureOr<Interval> x = operand(add.getLhs()),
                            y = operand(add.getRhs());
        if (failed(x) || failed(y) || add.getType().isInteger(1))
          return failure();
        return Interval{arith::AddIOp::create(b, loc, x->lo, y->lo),
                        arith::AddIOp::create(b, loc, x->hi, y->hi),
                        x->nonNegative && y->nonNegative};
      })
      .Case([&](arith::SubIOp sub) -> FailureOr<Interval> {
        FailureOr<Interval> x = operand(sub.getLhs()),
                            y = operand(sub.getRhs());
        if (failed(x) || failed(y) || sub.getType().isInteger(1))
          return failure();
        return Interval{arith::SubIOp::create(b, loc, x->lo, y->hi),
                        arith::SubIOp::create(b, loc, x->hi, y->lo)};
      })
      .Case([&](arith::MulIOp mul) -> FailureOr<Interval> {
        FailureOr<Interval> x = operand(mul.getLhs()),
                            y = operand(mul.getRhs());
        if (failed(x) || failed(y) || mul.getType().isInteger(1))
          return failure();
        // The extremes are among the corner products.
        SmallVector<Value, 4> corners;
        for (Value l : {x->lo, x->hi})
          for (Value r : {y->lo, y->hi})
            corners.push_back(arith::MulIOp::create(b, loc, l, r));
        return Interval{
            min(min(corners[0], corners[1]), min(corners[2], corners[3])),
            max(max(corners[0], corners[1]), max(corners[2], corners[3])),
            x->nonNegative && y->nonNegative};
      })
      .Case<arith::DivSIOp, arith::DivUIOp>(
          [&](Operation *div) { return divide<arith::DivSIOp>(div); })
      .Case([&](arith::FloorDivSIOp div) {
        return divide<arith::FloorDivSIOp>(div);
      })
      .Case<arith::CeilDivSIOp, arith::CeilDivUIOp>(
          [&](Operation *div) { return divide<arith::CeilDivSIOp>(div); })
      .Case<arith::RemSIOp, arith::RemUIOp>(
          [&](Operation *rem) { return remainder(rem); })
      .Case<arith::MinSIOp, arith::MaxSIOp, arith::MinUIOp, arith::MaxUIOp>(
          [&](Operation *minMax) -> FailureOr<Interval> {
            FailureOr<Interval> x = operand(minMax->getOperand(0)),
                                y = operand(minMax->getOperand(1));
            if (failed(x) || failed(y))
              return failure();
            bool isMin = isa<arith::MinSIOp, arith::MinUIOp>(minMax);
            if (isa<arith::MinUIOp, arith::MaxUIOp>(minMax) &&
                !(x->nonNegative && y->nonNegative))
              return failure();
            if (isMin)
              return Interval{min(x->lo, y->lo), min(x->hi, y->hi),
                              x->nonNegative && y->nonNegative};
            return Interval{max(x->lo, y->lo), max(x->hi, y->hi),
                            x->nonNegative || y->nonNegative};
          })
      .Case([&](arith::CmpIOp c) { return compare(c); })
      // Boolean logic: lo is "certainly true", hi "possibly true".
      .Case<arith::AndIOp, arith::OrIOp, arith::XOrIOp>(
          [&](Operation *logic) -> FailureOr<Interval> {
            FailureOr<Interval> x = operand(logic->getOperand(0)),
                                y = operand(logic->getOperand(1));
            if (failed(x) || failed(y) ||
                !logic->getResult(0).getType().isInteger(1))
              return failure();
            if (isa<arith::AndIOp>(logic))
              return Interval{both(x->lo, y->lo), both(x->hi, y->hi), true};
            if (isa<arith::OrIOp>(logic))
              return Interval{either(x->lo, y->lo), either(x->hi, y->hi), true};
            // x ^ y is certainly true when one is certainly true and the
            // other certainly false; certainly false when both are certain
            // and agree.
            Value xFalse = negate(x->hi), yFalse = negate(y->hi);
            return Interval{
                either(both(x->lo, yFalse), both(xFalse, y->lo)),
                negate(either(both(x->lo, y->lo), both(xFalse, yFalse))), true};
          })
      .Case([&](arith::SelectOp s) -> FailureOr<Interval> {
        FailureOr<Interval> c = operand(s.getCondition()),
                            x = operand(s.getTrueValue()),
                            y = operand(s.getFalseValue());
        if (failed(c) || failed(x) || failed(y))
          return failure();
        // Certainly true -> x; certainly false -> y; unknown -> the hull.
        auto pick = [&](Value fromX, Value fromY, Value hull) {
          return select(c->lo, fromX, select(c->hi, hull, fromY));
        };
        return Interval{pick(x->lo, y->lo, min(x->lo, y->lo)),
                        pick(x->hi, y->hi, max(x->hi, y->hi)),
                        x->nonNegative && y->nonNegative};
      })
      .Default([](Operation *) { return failure(); });
}

FailureOr<MaskModBounds>
mlir::attn::boundMaskMod(OpBuilder &b, Location loc, Region &maskMod,
                         ArrayRef<std::pair<Value, Value>> argRanges) {
  Block &body = maskMod.front();
  if (body.getNumArguments() != argRanges.size())
    return failure();
  // Emitted into a detached block, moved in place only when every op is
  // modelled, so a failure leaves nothing behind.
  auto scratch = std::make_unique<Block>();
  OpBuilder sb(b.getContext());
  sb.setInsertionPointToEnd(scratch.get());
  IntervalEmitter emitter(sb, loc);
  for (auto [arg, range] : llvm::zip(body.getArguments(), argRanges)) {
    if (!arg.getType().isIndex())
      return failure();
    emitter.intervals[arg] = Interval{range.first, range.second, true};
  }
  for (Operation &op : body.without_terminator()) {
    FailureOr<Interval> interval = emitter.emit(&op);
    if (failed(interval))
      return failure();
    emitter.intervals[op.getResult(0)] = *interval;
  }
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield || yield->getNumOperands() != 1)
    return failure();
  auto visible = emitter.intervals.find(yield->getOperand(0));
  if (visible == emitter.intervals.end())
    return failure();
  MaskModBounds bounds{emitter.negate(visible->second.hi), visible->second.lo};
  b.getInsertionBlock()->getOperations().splice(b.getInsertionPoint(),
                                                scratch->getOperations());
  return bounds;
}
