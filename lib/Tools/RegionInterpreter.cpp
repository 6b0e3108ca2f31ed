//===- RegionInterpreter.cpp - evaluate score_mod/mask_mod regions --------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
// The region is translated once into a flat list of instructions over
// numbered scalar slots. Every op is checked during that translation, so a
// region the interpreter cannot handle fails before the reference runs, and
// the closures handed out own the program outright: they keep no pointer into
// the IR.
//
//===----------------------------------------------------------------------===//

#include "attn/Tools/RegionInterpreter.h"

#include "attn/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

using namespace mlir;
using namespace mlir::attn;

namespace {

enum class Opcode : uint8_t {
  // Float arithmetic (all in double).
  AddF,
  SubF,
  MulF,
  DivF,
  RemF,
  NegF,
  MaximumF,
  MinimumF,
  MaxNumF,
  MinNumF,
  CopySign,
  PowF,
  Tanh,
  Exp,
  Exp2,
  Expm1,
  Log,
  Log2,
  Log1p,
  Sqrt,
  Rsqrt,
  AbsF,
  Sin,
  Cos,
  Floor,
  Ceil,
  Erf,
  CmpF,
  // Integer arithmetic, wrapped to the result width.
  AddI,
  SubI,
  MulI,
  DivSI,
  DivUI,
  RemSI,
  RemUI,
  FloorDivSI,
  CeilDivSI,
  CeilDivUI,
  MinSI,
  MaxSI,
  MinUI,
  MaxUI,
  AndI,
  OrI,
  XOrI,
  AbsI,
  CmpI,
  // Conversions.
  SignExtend, // index_cast, extsi, trunci: sign-extend from the result width.
  ZeroExtend, // index_castui, extui: zero-extend the operand first.
  SIToFP,
  UIToFP,
  FPToSI,
  FPToUI,
  FloatCopy, // extf, truncf: identity on double.
  Select,
};

/// A value of the region: floats as double, integers sign-extended from their
/// width (so i1 true is -1, as arith.extsi would make it).
union Scalar {
  double f;
  int64_t i;
};

struct Instr {
  Opcode opcode;
  uint8_t predicate = 0; // arith::CmpFPredicate / arith::CmpIPredicate.
  uint8_t width = 64;    // Integer result width.
  uint8_t srcWidth = 64; // Integer width of operand 0.
  uint32_t result = 0;
  uint32_t operands[3] = {0, 0, 0};
};

/// The compiled region. Slots 0..numArgs-1 are the block arguments; constants
/// are preset in `initial`; the rest are temporaries.
struct Program {
  std::vector<Scalar> initial;
  std::vector<Instr> code;
  unsigned numArgs = 0;
  uint32_t result = 0;

  Scalar run(ArrayRef<Scalar> args) const;
};

} // namespace

//===----------------------------------------------------------------------===//
// Evaluation
//===----------------------------------------------------------------------===//

static int64_t signExtend(uint64_t value, unsigned width) {
  if (width >= 64)
    return static_cast<int64_t>(value);
  unsigned shift = 64 - width;
  return static_cast<int64_t>(value << shift) >> shift;
}

static uint64_t zeroExtend(int64_t value, unsigned width) {
  if (width >= 64)
    return static_cast<uint64_t>(value);
  return static_cast<uint64_t>(value) & ((uint64_t(1) << width) - 1);
}

/// IEEE maximum/minimum: NaN propagates and -0 < +0.
static double maximumF(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  if (a == b)
    return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

static double minimumF(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  if (a == b)
    return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

static bool compareF(arith::CmpFPredicate predicate, double a, double b) {
  bool unordered = std::isnan(a) || std::isnan(b);
  switch (predicate) {
  case arith::CmpFPredicate::AlwaysFalse:
    return false;
  case arith::CmpFPredicate::OEQ:
    return !unordered && a == b;
  case arith::CmpFPredicate::OGT:
    return !unordered && a > b;
  case arith::CmpFPredicate::OGE:
    return !unordered && a >= b;
  case arith::CmpFPredicate::OLT:
    return !unordered && a < b;
  case arith::CmpFPredicate::OLE:
    return !unordered && a <= b;
  case arith::CmpFPredicate::ONE:
    return !unordered && a != b;
  case arith::CmpFPredicate::ORD:
    return !unordered;
  case arith::CmpFPredicate::UEQ:
    return unordered || a == b;
  case arith::CmpFPredicate::UGT:
    return unordered || a > b;
  case arith::CmpFPredicate::UGE:
    return unordered || a >= b;
  case arith::CmpFPredicate::ULT:
    return unordered || a < b;
  case arith::CmpFPredicate::ULE:
    return unordered || a <= b;
  case arith::CmpFPredicate::UNE:
    return unordered || a != b;
  case arith::CmpFPredicate::UNO:
    return unordered;
  case arith::CmpFPredicate::AlwaysTrue:
    return true;
  }
  return false;
}

static bool compareI(arith::CmpIPredicate predicate, int64_t a, int64_t b,
                     unsigned width) {
  uint64_t ua = zeroExtend(a, width), ub = zeroExtend(b, width);
  switch (predicate) {
  case arith::CmpIPredicate::eq:
    return a == b;
  case arith::CmpIPredicate::ne:
    return a != b;
  case arith::CmpIPredicate::slt:
    return a < b;
  case arith::CmpIPredicate::sle:
    return a <= b;
  case arith::CmpIPredicate::sgt:
    return a > b;
  case arith::CmpIPredicate::sge:
    return a >= b;
  case arith::CmpIPredicate::ult:
    return ua < ub;
  case arith::CmpIPredicate::ule:
    return ua <= ub;
  case arith::CmpIPredicate::ugt:
    return ua > ub;
  case arith::CmpIPredicate::uge:
    return ua >= ub;
  }
  return false;
}

/// fptosi/fptoui of an out-of-range value is poison in MLIR; saturating keeps
/// the reference deterministic.
static int64_t floatToSigned(double value, unsigned width) {
  if (std::isnan(value))
    return 0;
  double limit = std::ldexp(1.0, width - 1); // 2^(width-1)
  if (value <= -limit)
    return signExtend(uint64_t(1) << (width - 1), width);
  if (value >= limit)
    return signExtend((uint64_t(1) << (width - 1)) - 1, width);
  return static_cast<int64_t>(std::trunc(value));
}

static int64_t floatToUnsigned(double value, unsigned width) {
  if (std::isnan(value) || value <= 0)
    return 0;
  if (value >= std::ldexp(1.0, width))
    return signExtend(~uint64_t(0), width);
  return signExtend(static_cast<uint64_t>(std::trunc(value)), width);
}

Scalar Program::run(ArrayRef<Scalar> args) const {
  // Small regions fit on the stack; the copy keeps the closure reentrant.
  SmallVector<Scalar, 32> s(initial.begin(), initial.end());
  for (unsigned i = 0; i < numArgs; ++i)
    s[i] = args[i];

  for (const Instr &in : code) {
    const Scalar a = s[in.operands[0]], b = s[in.operands[1]];
    Scalar &r = s[in.result];
    const unsigned w = in.width;
    const uint64_t ua = static_cast<uint64_t>(a.i),
                   ub = static_cast<uint64_t>(b.i);
    switch (in.opcode) {
    case Opcode::AddF:
      r.f = a.f + b.f;
      break;
    case Opcode::SubF:
      r.f = a.f - b.f;
      break;
    case Opcode::MulF:
      r.f = a.f * b.f;
      break;
    case Opcode::DivF:
      r.f = a.f / b.f;
      break;
    case Opcode::RemF:
      r.f = std::fmod(a.f, b.f);
      break;
    case Opcode::NegF:
      r.f = -a.f;
      break;
    case Opcode::MaximumF:
      r.f = maximumF(a.f, b.f);
      break;
    case Opcode::MinimumF:
      r.f = minimumF(a.f, b.f);
      break;
    case Opcode::MaxNumF:
      r.f = std::fmax(a.f, b.f);
      break;
    case Opcode::MinNumF:
      r.f = std::fmin(a.f, b.f);
      break;
    case Opcode::CopySign:
      r.f = std::copysign(a.f, b.f);
      break;
    case Opcode::PowF:
      r.f = std::pow(a.f, b.f);
      break;
    case Opcode::Tanh:
      r.f = std::tanh(a.f);
      break;
    case Opcode::Exp:
      r.f = std::exp(a.f);
      break;
    case Opcode::Exp2:
      r.f = std::exp2(a.f);
      break;
    case Opcode::Expm1:
      r.f = std::expm1(a.f);
      break;
    case Opcode::Log:
      r.f = std::log(a.f);
      break;
    case Opcode::Log2:
      r.f = std::log2(a.f);
      break;
    case Opcode::Log1p:
      r.f = std::log1p(a.f);
      break;
    case Opcode::Sqrt:
      r.f = std::sqrt(a.f);
      break;
    case Opcode::Rsqrt:
      r.f = 1.0 / std::sqrt(a.f);
      break;
    case Opcode::AbsF:
      r.f = std::fabs(a.f);
      break;
    case Opcode::Sin:
      r.f = std::sin(a.f);
      break;
    case Opcode::Cos:
      r.f = std::cos(a.f);
      break;
    case Opcode::Floor:
      r.f = std::floor(a.f);
      break;
    case Opcode::Ceil:
      r.f = std::ceil(a.f);
      break;
    case Opcode::Erf:
      r.f = std::erf(a.f);
      break;
    case Opcode::CmpF:
      r.i = compareF(static_cast<arith::CmpFPredicate>(in.predicate), a.f, b.f)
                ? -1
                : 0;
      break;
    case Opcode::AddI:
      r.i = signExtend(ua + ub, w);
      break;
    case Opcode::SubI:
      r.i = signExtend(ua - ub, w);
      break;
    case Opcode::MulI:
      r.i = signExtend(ua * ub, w);
      break;
    case Opcode::DivSI:
      // Division by zero is undefined in MLIR; -1 wraps INT_MIN / -1.
      r.i = b.i == 0    ? 0
            : b.i == -1 ? signExtend(0 - ua, w)
                        : signExtend(static_cast<uint64_t>(a.i / b.i), w);
      break;
    case Opcode::DivUI: {
      uint64_t x = zeroExtend(a.i, w), y = zeroExtend(b.i, w);
      r.i = y == 0 ? 0 : signExtend(x / y, w);
      break;
    }
    case Opcode::RemSI:
      r.i = (b.i == 0 || b.i == -1) ? 0 : a.i % b.i;
      break;
    case Opcode::RemUI: {
      uint64_t x = zeroExtend(a.i, w), y = zeroExtend(b.i, w);
      r.i = y == 0 ? 0 : signExtend(x % y, w);
      break;
    }
    case Opcode::FloorDivSI:
    case Opcode::CeilDivSI: {
      // Round the truncated quotient towards -inf (floor) or +inf (ceil).
      if (b.i == 0 || b.i == -1) {
        r.i = b.i == 0 ? 0 : signExtend(0 - ua, w);
        break;
      }
      int64_t q = a.i / b.i, rem = a.i % b.i;
      bool inexact = rem != 0, negative = (rem < 0) != (b.i < 0);
      if (inexact && in.opcode == Opcode::FloorDivSI && negative)
        --q;
      if (inexact && in.opcode == Opcode::CeilDivSI && !negative)
        ++q;
      r.i = q;
      break;
    }
    case Opcode::CeilDivUI: {
      uint64_t x = zeroExtend(a.i, w), y = zeroExtend(b.i, w);
      r.i = y == 0 ? 0 : signExtend(x / y + (x % y != 0), w);
      break;
    }
    case Opcode::MinSI:
      r.i = std::min(a.i, b.i);
      break;
    case Opcode::MaxSI:
      r.i = std::max(a.i, b.i);
      break;
    case Opcode::MinUI:
    case Opcode::MaxUI: {
      uint64_t x = zeroExtend(a.i, w), y = zeroExtend(b.i, w);
      bool takeX = in.opcode == Opcode::MinUI ? x <= y : x >= y;
      r.i = takeX ? a.i : b.i;
      break;
    }
    case Opcode::AndI:
      r.i = a.i & b.i;
      break;
    case Opcode::OrI:
      r.i = a.i | b.i;
      break;
    case Opcode::XOrI:
      r.i = a.i ^ b.i;
      break;
    case Opcode::AbsI:
      r.i = a.i < 0 ? signExtend(0 - ua, w) : a.i;
      break;
    case Opcode::CmpI:
      r.i = compareI(static_cast<arith::CmpIPredicate>(in.predicate), a.i, b.i,
                     in.srcWidth)
                ? -1
                : 0;
      break;
    case Opcode::SignExtend:
      r.i = signExtend(ua, w);
      break;
    case Opcode::ZeroExtend:
      r.i = signExtend(zeroExtend(a.i, in.srcWidth), w);
      break;
    case Opcode::SIToFP:
      r.f = static_cast<double>(a.i);
      break;
    case Opcode::UIToFP:
      r.f = static_cast<double>(zeroExtend(a.i, in.srcWidth));
      break;
    case Opcode::FPToSI:
      r.i = floatToSigned(a.f, w);
      break;
    case Opcode::FPToUI:
      r.i = floatToUnsigned(a.f, w);
      break;
    case Opcode::FloatCopy:
      r.f = a.f;
      break;
    case Opcode::Select:
      r = a.i != 0 ? b : s[in.operands[2]];
      break;
    }
  }
  return s[result];
}

//===----------------------------------------------------------------------===//
// Translation
//===----------------------------------------------------------------------===//

static std::optional<Opcode> lookupOpcode(StringRef name) {
  return llvm::StringSwitch<std::optional<Opcode>>(name)
      .Case("arith.addf", Opcode::AddF)
      .Case("arith.subf", Opcode::SubF)
      .Case("arith.mulf", Opcode::MulF)
      .Case("arith.divf", Opcode::DivF)
      .Case("arith.remf", Opcode::RemF)
      .Case("arith.negf", Opcode::NegF)
      .Case("arith.maximumf", Opcode::MaximumF)
      .Case("arith.minimumf", Opcode::MinimumF)
      .Case("arith.maxnumf", Opcode::MaxNumF)
      .Case("arith.minnumf", Opcode::MinNumF)
      .Case("arith.cmpf", Opcode::CmpF)
      .Case("arith.addi", Opcode::AddI)
      .Case("arith.subi", Opcode::SubI)
      .Case("arith.muli", Opcode::MulI)
      .Case("arith.divsi", Opcode::DivSI)
      .Case("arith.divui", Opcode::DivUI)
      .Case("arith.remsi", Opcode::RemSI)
      .Case("arith.remui", Opcode::RemUI)
      .Case("arith.floordivsi", Opcode::FloorDivSI)
      .Case("arith.ceildivsi", Opcode::CeilDivSI)
      .Case("arith.ceildivui", Opcode::CeilDivUI)
      .Case("arith.minsi", Opcode::MinSI)
      .Case("arith.maxsi", Opcode::MaxSI)
      .Case("arith.minui", Opcode::MinUI)
      .Case("arith.maxui", Opcode::MaxUI)
      .Case("arith.andi", Opcode::AndI)
      .Case("arith.ori", Opcode::OrI)
      .Case("arith.xori", Opcode::XOrI)
      .Case("arith.cmpi", Opcode::CmpI)
      .Case("arith.select", Opcode::Select)
      .Case("arith.index_cast", Opcode::SignExtend)
      .Case("arith.extsi", Opcode::SignExtend)
      .Case("arith.trunci", Opcode::SignExtend)
      .Case("arith.index_castui", Opcode::ZeroExtend)
      .Case("arith.extui", Opcode::ZeroExtend)
      .Case("arith.sitofp", Opcode::SIToFP)
      .Case("arith.uitofp", Opcode::UIToFP)
      .Case("arith.fptosi", Opcode::FPToSI)
      .Case("arith.fptoui", Opcode::FPToUI)
      .Case("arith.extf", Opcode::FloatCopy)
      .Case("arith.truncf", Opcode::FloatCopy)
      .Case("math.copysign", Opcode::CopySign)
      .Case("math.powf", Opcode::PowF)
      .Case("math.tanh", Opcode::Tanh)
      .Case("math.exp", Opcode::Exp)
      .Case("math.exp2", Opcode::Exp2)
      .Case("math.expm1", Opcode::Expm1)
      .Case("math.log", Opcode::Log)
      .Case("math.log2", Opcode::Log2)
      .Case("math.log1p", Opcode::Log1p)
      .Case("math.sqrt", Opcode::Sqrt)
      .Case("math.rsqrt", Opcode::Rsqrt)
      .Case("math.absf", Opcode::AbsF)
      .Case("math.sin", Opcode::Sin)
      .Case("math.cos", Opcode::Cos)
      .Case("math.floor", Opcode::Floor)
      .Case("math.ceil", Opcode::Ceil)
      .Case("math.erf", Opcode::Erf)
      .Case("math.absi", Opcode::AbsI)
      .Default(std::nullopt);
}

/// The width of a scalar the interpreter handles: 64 for index, N for iN up
/// to 64, 0 for floats; nullopt for anything else (vectors, tensors, i128).
static std::optional<unsigned> scalarWidth(Type type) {
  if (isa<FloatType>(type))
    return 0u;
  if (isa<IndexType>(type))
    return 64u;
  if (auto integer = dyn_cast<IntegerType>(type))
    if (integer.getWidth() >= 1 && integer.getWidth() <= 64)
      return integer.getWidth();
  return std::nullopt;
}

namespace {
/// Translates one region into a Program.
class Translator {
public:
  Translator(Region &region, StringRef regionName)
      : region(region), regionName(regionName) {}

  /// `floatArgs` says which block arguments are floats (the rest are index);
  /// `yieldFloat` whether the region yields a float (else an integer).
  FailureOr<std::shared_ptr<Program>> run(ArrayRef<bool> floatArgs,
                                          bool yieldFloat);

private:
  /// A slot preset to a constant.
  uint32_t addConstant(Scalar value) {
    program->initial.push_back(value);
    return program->initial.size() - 1;
  }
  uint32_t addTemporary() { return addConstant(Scalar{0.0}); }

  /// The constant value of `attr` of scalar type `type`, if it is one.
  static std::optional<Scalar> constantValue(Attribute attr, Type type);

  /// The slot of `value`, folding constants defined above the region.
  FailureOr<uint32_t> slotOf(Value value, Operation *user);

  LogicalResult translate(Operation &op);

  Region &region;
  StringRef regionName;
  std::shared_ptr<Program> program;
  llvm::DenseMap<Value, uint32_t> slots;
};
} // namespace

std::optional<Scalar> Translator::constantValue(Attribute attr, Type type) {
  std::optional<unsigned> width = scalarWidth(type);
  if (!width)
    return std::nullopt;
  if (auto floatAttr = dyn_cast<FloatAttr>(attr)) {
    Scalar s;
    s.f = floatAttr.getValueAsDouble();
    return s;
  }
  if (auto intAttr = dyn_cast<IntegerAttr>(attr)) {
    if (intAttr.getValue().getBitWidth() > 64)
      return std::nullopt;
    Scalar s;
    s.i = intAttr.getValue().getSExtValue();
    return s;
  }
  return std::nullopt;
}

FailureOr<uint32_t> Translator::slotOf(Value value, Operation *user) {
  auto it = slots.find(value);
  if (it != slots.end())
    return it->second;
  // Not produced in this block: only a constant from above is evaluable.
  Attribute attr;
  if (matchPattern(value, m_Constant(&attr)))
    if (std::optional<Scalar> constant = constantValue(attr, value.getType())) {
      uint32_t slot = addConstant(*constant);
      slots[value] = slot;
      return slot;
    }
  return user->emitOpError()
         << "uses a value defined outside the " << regionName
         << " region that is not a scalar constant; the region interpreter "
            "cannot evaluate it";
}

LogicalResult Translator::translate(Operation &op) {
  for (Type type :
       llvm::concat<const Type>(op.getOperandTypes(), op.getResultTypes()))
    if (!scalarWidth(type))
      return op.emitOpError() << "has a non-scalar operand or result of type "
                              << type << ", which the " << regionName
                              << " region interpreter cannot evaluate";

  if (op.getNumRegions() == 0 && op.getNumOperands() == 0 &&
      op.getNumResults() == 1 && op.hasTrait<OpTrait::ConstantLike>()) {
    Attribute attr;
    std::optional<Scalar> constant;
    if (matchPattern(op.getResult(0), m_Constant(&attr)))
      constant = constantValue(attr, op.getResult(0).getType());
    if (!constant)
      return op.emitOpError() << "is a constant the " << regionName
                              << " region interpreter cannot evaluate";
    slots[op.getResult(0)] = addConstant(*constant);
    return success();
  }

  std::optional<Opcode> opcode = lookupOpcode(op.getName().getStringRef());
  if (!opcode || op.getNumRegions() != 0 || op.getNumResults() != 1 ||
      op.getNumOperands() < 1 || op.getNumOperands() > 3)
    return op.emitOpError()
           << "is not supported by the " << regionName << " region interpreter";

  Instr instr;
  instr.opcode = *opcode;
  for (auto [i, operand] : llvm::enumerate(op.getOperands())) {
    FailureOr<uint32_t> slot = slotOf(operand, &op);
    if (failed(slot))
      return failure();
    instr.operands[i] = *slot;
  }
  instr.width = *scalarWidth(op.getResult(0).getType());
  instr.srcWidth = *scalarWidth(op.getOperand(0).getType());
  if (auto cmpf = dyn_cast<arith::CmpFOp>(op))
    instr.predicate = static_cast<uint8_t>(cmpf.getPredicate());
  if (auto cmpi = dyn_cast<arith::CmpIOp>(op))
    instr.predicate = static_cast<uint8_t>(cmpi.getPredicate());

  instr.result = addTemporary();
  slots[op.getResult(0)] = instr.result;
  program->code.push_back(instr);
  return success();
}

FailureOr<std::shared_ptr<Program>> Translator::run(ArrayRef<bool> floatArgs,
                                                    bool yieldFloat) {
  Operation *parent = region.getParentOp();
  auto emitRegionError = [&]() -> InFlightDiagnostic {
    return parent ? parent->emitOpError()
                  : emitError(UnknownLoc::get(region.getContext()));
  };
  if (region.empty()) {
    if (!parent) // A detached empty region has no context to report in.
      return failure();
    return emitRegionError() << "has an empty " << regionName << " region";
  }
  if (!region.hasOneBlock())
    return emitRegionError() << regionName
                             << " region must have exactly one block to be "
                                "interpreted";
  Block &block = region.front();

  // The signature: the op verifier checks it too, but the closures rely on
  // it, so do not trust that the op was verified.
  bool signatureOk = block.getNumArguments() == floatArgs.size();
  for (unsigned i = 0; signatureOk && i < floatArgs.size(); ++i) {
    Type type = block.getArgument(i).getType();
    signatureOk = floatArgs[i] ? isa<FloatType>(type) : isa<IndexType>(type);
  }
  if (!signatureOk)
    return emitRegionError()
           << "has a " << regionName
           << " region whose arguments the interpreter does not expect: ("
           << block.getArgumentTypes() << ")";

  auto yield =
      dyn_cast_or_null<YieldOp>(block.empty() ? nullptr : &block.back());
  if (!yield || yield->getNumOperands() != 1 ||
      (yieldFloat ? !isa<FloatType>(yield->getOperand(0).getType())
                  : !isa<IntegerType>(yield->getOperand(0).getType())))
    return emitRegionError()
           << regionName << " region must end with attn.yield of one "
           << (yieldFloat ? "float" : "i1");

  program = std::make_shared<Program>();
  program->numArgs = block.getNumArguments();
  for (BlockArgument arg : block.getArguments())
    slots[arg] = addTemporary();
  for (Operation &op : block.without_terminator())
    if (failed(translate(op)))
      return failure();
  FailureOr<uint32_t> result = slotOf(yield->getOperand(0), yield);
  if (failed(result))
    return failure();
  program->result = *result;
  return program;
}

//===----------------------------------------------------------------------===//
// Public entry points
//===----------------------------------------------------------------------===//

FailureOr<std::function<double(double, int64_t, int64_t, int64_t, int64_t)>>
mlir::attn::interpretScoreMod(Region &region) {
  FailureOr<std::shared_ptr<Program>> program =
      Translator(region, "score_mod")
          .run({true, false, false, false, false}, /*yieldFloat=*/true);
  if (failed(program))
    return failure();
  std::shared_ptr<const Program> p = *program;
  return std::function<double(double, int64_t, int64_t, int64_t, int64_t)>(
      [p](double score, int64_t b, int64_t h, int64_t i, int64_t j) {
        Scalar args[5];
        args[0].f = score;
        args[1].i = b;
        args[2].i = h;
        args[3].i = i;
        args[4].i = j;
        return p->run(args).f;
      });
}

FailureOr<std::function<bool(int64_t, int64_t, int64_t, int64_t)>>
mlir::attn::interpretMaskMod(Region &region) {
  FailureOr<std::shared_ptr<Program>> program =
      Translator(region, "mask_mod")
          .run({false, false, false, false}, /*yieldFloat=*/false);
  if (failed(program))
    return failure();
  std::shared_ptr<const Program> p = *program;
  return std::function<bool(int64_t, int64_t, int64_t, int64_t)>(
      [p](int64_t b, int64_t h, int64_t i, int64_t j) {
        Scalar args[4];
        args[0].i = b;
        args[1].i = h;
        args[2].i = i;
        args[3].i = j;
        return p->run(args).i != 0;
      });
}
