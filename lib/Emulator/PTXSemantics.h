//===- PTXSemantics.h - What the emulator's instructions mean ---*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//
//
// Shared by the parser (which checks operands once) and the interpreter:
// comparison and shuffle kinds, type widths, and the half-precision
// conversions with PTX's rounding (round to nearest even, NaN kept NaN).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_LIB_EMULATOR_PTXSEMANTICS_H
#define ATTN_LIB_EMULATOR_PTXSEMANTICS_H

#include "attn/Emulator/PTX.h"

#include <cstring>
#include <string>

namespace attn::emulator {

/// setp's comparisons; the unsigned spellings (lo, ls, hi, hs) map to Lt,
/// Le, Gt, Ge of an unsigned type.
enum class Compare : uint8_t {
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  Equ,
  Neu,
  Ltu,
  Leu,
  Gtu,
  Geu,
  Num,
  Nan
};

enum class ShuffleMode : uint8_t { Up, Down, Bfly, Idx };

/// Instruction::vec of a mov that splits a register into two halves, or
/// joins two halves.
constexpr uint8_t kMovSplit = 2, kMovJoin = 3;

/// Instruction::cmp of shf: shf.l (else shf.r), .clamp (else .wrap).
constexpr uint8_t kShfLeft = 1, kShfClamp = 2;

inline uint32_t typeBytes(Type type) {
  switch (type) {
  case Type::Pred:
  case Type::B8:
  case Type::U8:
  case Type::S8:
    return 1;
  case Type::B16:
  case Type::U16:
  case Type::S16:
  case Type::F16:
  case Type::BF16:
    return 2;
  case Type::B32:
  case Type::U32:
  case Type::S32:
  case Type::F32:
  case Type::F16x2:
  case Type::BF16x2:
    return 4;
  case Type::B64:
  case Type::U64:
  case Type::S64:
  case Type::F64:
  case Type::F32x2:
    return 8;
  case Type::None:
    return 0;
  }
  return 0;
}

inline bool isSigned(Type type) {
  return type == Type::S8 || type == Type::S16 || type == Type::S32 ||
         type == Type::S64;
}

inline bool isFloat(Type type) {
  return type == Type::F16 || type == Type::BF16 || type == Type::F32 ||
         type == Type::F64;
}

inline float bitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

inline uint32_t floatToBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

inline float halfToFloat(uint16_t bits) {
  _Float16 half;
  std::memcpy(&half, &bits, 2);
  return static_cast<float>(half);
}

/// Round to nearest even (the conversion clang emits for _Float16).
inline uint16_t floatToHalf(float value) {
  _Float16 half = static_cast<_Float16>(value);
  uint16_t bits;
  std::memcpy(&bits, &half, 2);
  return bits;
}

inline float bfloatToFloat(uint16_t bits) {
  return bitsToFloat(static_cast<uint32_t>(bits) << 16);
}

/// Round to nearest even; NaN stays a (quiet) NaN.
inline uint16_t floatToBfloat(float value) {
  uint32_t bits = floatToBits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

/// Checks that `inst` has the operands its opcode needs, so that the
/// interpreter can index them without looking; calls `fail` otherwise.
template <typename Fail>
void checkOperands(const Instruction &inst, Fail fail) {
  const auto &ops = inst.operands;
  auto count = [&](size_t n) {
    if (ops.size() != n)
      fail("expected " + std::to_string(n) + " operands, got " +
           std::to_string(ops.size()));
  };
  auto isReg = [&](size_t i) {
    if (ops[i].kind != Operand::Reg)
      fail("operand " + std::to_string(i + 1) + " must be a register");
  };
  auto isValue = [&](size_t i) {
    if (ops[i].kind == Operand::Mem)
      fail("operand " + std::to_string(i + 1) + " must be a value");
  };
  auto isMem = [&](size_t i) {
    if (ops[i].kind != Operand::Mem)
      fail("operand " + std::to_string(i + 1) + " must be an address");
  };
  switch (inst.op) {
  case Opcode::Mov:
    if (inst.vec == kMovSplit)
      count(3), isReg(0), isReg(1), isValue(2);
    else if (inst.vec == kMovJoin)
      count(3), isReg(0), isValue(1), isValue(2);
    else
      count(2), isReg(0), isValue(1);
    return;
  case Opcode::Neg:
  case Opcode::Abs:
  case Opcode::Not:
  case Opcode::Rcp:
  case Opcode::Ex2:
  case Opcode::Cvta:
    count(2), isReg(0), isValue(1);
    return;
  case Opcode::Cvt:
    if (inst.type == Type::F16x2 || inst.type == Type::BF16x2)
      count(3), isReg(0), isValue(1), isValue(2);
    else
      count(2), isReg(0), isValue(1);
    return;
  case Opcode::Add:
  case Opcode::Sub:
  case Opcode::Mul:
  case Opcode::MulWide:
  case Opcode::MulHi:
  case Opcode::Div:
  case Opcode::Rem:
  case Opcode::Min:
  case Opcode::Max:
  case Opcode::And:
  case Opcode::Or:
  case Opcode::Xor:
  case Opcode::Shl:
  case Opcode::Shr:
  case Opcode::Copysign:
  case Opcode::Setp:
    count(3), isReg(0), isValue(1), isValue(2);
    return;
  case Opcode::Mad:
  case Opcode::Fma:
  case Opcode::Selp:
  case Opcode::Shf:
  case Opcode::Prmt:
  case Opcode::Bfe:
    count(4), isReg(0), isValue(1), isValue(2), isValue(3);
    return;
  case Opcode::Ld:
  case Opcode::Ldmatrix:
    count(inst.vec + 1u);
    for (size_t i = 0; i < inst.vec; ++i)
      isReg(i);
    isMem(inst.vec);
    return;
  case Opcode::St:
    count(inst.vec + 1u), isMem(0);
    for (size_t i = 1; i <= inst.vec; ++i)
      isValue(i);
    return;
  case Opcode::CpAsync:
    if (ops.size() != 3 && ops.size() != 4)
      fail("expected 3 or 4 operands");
    isMem(0), isMem(1), isValue(2);
    if (ops[2].kind != Operand::Imm ||
        (ops[2].imm != 4 && ops[2].imm != 8 && ops[2].imm != 16))
      fail("the copy size must be 4, 8 or 16");
    if (ops.size() == 4)
      isValue(3);
    return;
  case Opcode::CpAsyncCommit:
  case Opcode::Bra:
  case Opcode::Ret:
    count(0);
    return;
  case Opcode::CpAsyncWait:
    count(inst.vec ? 0 : 1);
    if (!inst.vec && ops[0].kind != Operand::Imm)
      fail("the group count must be a constant");
    return;
  case Opcode::Shfl:
    count(5), isReg(0);
    for (size_t i = 1; i < 5; ++i)
      isValue(i);
    return;
  case Opcode::BarSync:
    if (ops.empty() || ops.size() > 2 || ops[0].kind != Operand::Imm ||
        ops[0].imm != 0 || (ops.size() == 2 && ops[1].kind != Operand::Imm))
      fail("only barrier 0 of the whole block is supported");
    return;
  case Opcode::BarRedOr:
    count(3), isReg(0), isValue(2);
    if (ops[1].kind != Operand::Imm || ops[1].imm != 0)
      fail("only barrier 0 of the whole block is supported");
    return;
  case Opcode::Mma:
    count(14);
    for (size_t i = 0; i < 14; ++i)
      isReg(i);
    return;
  }
}

} // namespace attn::emulator

#endif // ATTN_LIB_EMULATOR_PTXSEMANTICS_H
