//===- PTXInterpreter.cpp - Runs decoded PTX, block by block --------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//
//
// Each block runs its threads one at a time, each up to its next
// synchronization point: a barrier (bar.sync, bar.red) or a warp collective
// (shfl.sync, ldmatrix, mma.sync). When every live thread of a warp waits at
// the same collective it runs for the whole warp; when every live thread of
// the block waits at a barrier the barrier completes. Any other state is a
// deadlock or a divergent collective, and stops the launch.
//
// Stricter than a GPU, to find bugs a GPU may hide: shared memory starts as
// NaN bytes (0xff); cp.async copies land only at the cp.async.wait_group that
// covers them; shared bytes written and read (or written twice) by different
// threads with no barrier in between are a race; global and shared accesses
// must lie inside an allocation and be naturally aligned.
//
//===----------------------------------------------------------------------===//

#include "PTXSemantics.h"
#include "attn/Emulator/PTX.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>

using namespace attn::emulator;

bool DeviceMemory::covers(uint64_t address, uint64_t bytes) const {
  auto it = allocations.upper_bound(address);
  if (it == allocations.begin())
    return false;
  --it;
  uint64_t offset = address - it->first;
  return offset < it->second && bytes <= it->second - offset;
}

namespace {

/// What stops a launch.
struct Fault {
  std::string message;
};

struct AsyncCopy {
  uint32_t shared;
  uint64_t global;
  uint32_t bytes, sourceBytes;
};

struct Thread {
  enum State : uint8_t { Running, AtBarrier, AtCollective, Exited };
  uint64_t *regs = nullptr;
  uint32_t pc = 0;
  State state = Running;
  uint32_t id = 0, tid[3] = {0, 0, 0};
  std::vector<AsyncCopy> openGroup;
  std::deque<std::vector<AsyncCopy>> groups;
};

uint64_t widthMask(uint32_t bytes) {
  return bytes >= 8 ? ~uint64_t(0) : (uint64_t(1) << (8 * bytes)) - 1;
}

/// The low `bytes` of `v`, sign-extended when `sign`.
uint64_t narrow(uint64_t v, uint32_t bytes, bool sign) {
  if (bytes >= 8)
    return v;
  if (!bytes)
    return 0;
  v &= widthMask(bytes);
  if (sign && (v >> (8 * bytes - 1)) & 1)
    v |= ~widthMask(bytes);
  return v;
}

float flushDenormal(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
}

/// Counts the wavefronts of one shared-memory phase, whose lanes touch the
/// 4-byte `words`: the most distinct words in one of the 32 banks (lanes
/// reading the same word share it), next to the fewest their number allows.
void tallyPhase(std::vector<uint64_t> &words, Profile &profile) {
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  uint64_t perBank[32] = {}, most = 0;
  for (uint64_t word : words)
    most = std::max(most, ++perBank[word % 32]);
  profile.sharedWavefronts += most;
  profile.sharedIdealWavefronts += (words.size() + 31) / 32;
}

class BlockRunner {
public:
  BlockRunner(const Kernel &kernel, const LaunchShape &shape,
              const std::vector<uint8_t> &parameters,
              const DeviceMemory &memory, Profile *profile)
      : kernel(kernel), shape(shape), parameters(parameters), memory(memory),
        profile(profile) {
    threadCount = shape.block[0] * shape.block[1] * shape.block[2];
    sharedBytes = kernel.staticShared + shape.dynamicShared;
    registerFile.resize(size_t(threadCount) * (kernel.registers + 1));
    threads.resize(threadCount);
    shared.resize(sharedBytes);
    writeEpoch.resize(sharedBytes);
    readEpoch.resize(sharedBytes);
    writer.resize(sharedBytes);
    reader.resize(sharedBytes);
    if (profile) {
      runs.resize(threadCount);
      executed.resize(size_t(threadCount) * kernel.code.size());
    }
  }

  void run(uint32_t x, uint32_t y, uint32_t z);

private:
  [[noreturn]] void fault(const Thread &t, const std::string &message);
  void runThread(Thread &t);
  bool step(Thread &t);
  void runCollective(std::vector<Thread *> &lanes);
  /// The collectives, on the warp's lanes by lane id (null where absent).
  void shuffle(const Instruction &inst, const std::vector<Thread *> &lanes,
               Thread *const *byLane, uint32_t here, uint32_t exist);
  void loadMatrices(const Instruction &inst, Thread *const *byLane);
  void multiplyFragments(const Instruction &inst, Thread *const *byLane);
  void runBarrier();

  uint64_t special(const Thread &t, int64_t which) const;
  uint64_t read(const Thread &t, const Operand &o) const {
    switch (o.kind) {
    case Operand::Reg:
      return t.regs[o.reg];
    case Operand::Imm:
      return static_cast<uint64_t>(o.imm);
    case Operand::Sreg:
      return special(t, o.imm);
    case Operand::Mem:
      break;
    }
    return 0;
  }
  uint64_t address(const Thread &t, const Operand &o) const {
    return (o.reg == Operand::kNoReg ? 0 : t.regs[o.reg]) +
           static_cast<uint64_t>(o.imm);
  }
  /// The f32 in bits [32 half, 32 half + 32) of `o` (half 1: the second
  /// element of an f32x2).
  float readFloat(const Thread &t, const Operand &o, bool ftz,
                  unsigned half = 0) const {
    float x = bitsToFloat(static_cast<uint32_t>(read(t, o) >> (32 * half)));
    return ftz ? flushDenormal(x) : x;
  }

  void load(Thread &t, Space space, uint64_t at, uint32_t bytes, void *to);
  void store(Thread &t, Space space, uint64_t at, uint32_t bytes,
             const void *from);
  void checkShared(const Thread &t, uint64_t at, uint32_t bytes, bool write);
  void completeCopies(Thread &t, size_t keep);

  /// Profiling: the number of earlier runs of t's instruction this epoch.
  uint32_t nextRun(const Thread &t) { return runs[t.id][t.pc]++; }
  void recordAccess(const Thread &t, uint32_t run, bool toShared, uint64_t at,
                    uint32_t bytes) {
    accesses[{t.id / 32, t.pc, run, toShared}].push_back(
        {t.id % 32, at, bytes});
  }
  /// Records an ld or st of global or shared memory.
  void profileAccess(const Thread &t, const Instruction &inst, uint64_t at,
                     uint32_t bytes) {
    if (inst.space != Space::Global && inst.space != Space::Shared)
      return;
    recordAccess(t, nextRun(t), inst.space == Space::Shared, at, bytes);
  }
  /// Counts the wavefronts and sectors of this epoch's accesses.
  void tallyAccesses();
  /// Counts the block's warp instructions: a warp issues an instruction as
  /// often as the lane that ran it most (its lanes run it together, or the
  /// warp issues it once per divergent path), so the count per PC is the
  /// most runs of any lane.
  void tallyInstructions();

  void execArithmetic(Thread &t, const Instruction &inst);
  void execFloat(Thread &t, const Instruction &inst);
  /// The f32 result of `inst` on the `half`-th f32 of each operand.
  float floatOf(Thread &t, const Instruction &inst, unsigned half);
  void execConvert(Thread &t, const Instruction &inst);
  bool compare(const Instruction &inst, uint64_t a, uint64_t b) const;

  const Kernel &kernel;
  const LaunchShape &shape;
  const std::vector<uint8_t> &parameters;
  const DeviceMemory &memory;
  uint32_t threadCount, sharedBytes;
  uint32_t ctaid[3] = {0, 0, 0};
  std::vector<uint64_t> registerFile;
  std::vector<Thread> threads;
  std::vector<uint8_t> shared;
  // Race detection: per shared byte, the epoch (barriers completed) and
  // thread of its last write and last read; kSeveral when several threads
  // read it in the epoch.
  static constexpr uint32_t kSeveral = ~0u;
  uint32_t epoch = 1;
  std::vector<uint32_t> writeEpoch, readEpoch, writer, reader;
  uint64_t steps = 0;

  Profile *profile;
  struct LaneAccess {
    uint32_t lane;
    uint64_t at;
    uint32_t bytes;
  };
  /// This epoch's memory accesses of each warp instruction, by (warp, pc,
  /// run, shared), and each thread's runs of each pc.
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, bool>,
           std::vector<LaneAccess>>
      accesses;
  std::vector<std::unordered_map<uint32_t, uint32_t>> runs;
  /// Each thread's runs of each PC this block, [thread][pc].
  std::vector<uint32_t> executed;
};

} // namespace

void BlockRunner::fault(const Thread &t, const std::string &message) {
  std::ostringstream os;
  os << kernel.name << ": block (" << ctaid[0] << ", " << ctaid[1] << ", "
     << ctaid[2] << "), thread " << t.id;
  if (t.pc < kernel.code.size())
    os << ", PTX line " << kernel.code[t.pc].line;
  os << ": " << message;
  throw Fault{os.str()};
}

uint64_t BlockRunner::special(const Thread &t, int64_t which) const {
  switch (static_cast<Special>(which)) {
  case Special::TidX:
    return t.tid[0];
  case Special::TidY:
    return t.tid[1];
  case Special::TidZ:
    return t.tid[2];
  case Special::NtidX:
    return shape.block[0];
  case Special::NtidY:
    return shape.block[1];
  case Special::NtidZ:
    return shape.block[2];
  case Special::CtaidX:
    return ctaid[0];
  case Special::CtaidY:
    return ctaid[1];
  case Special::CtaidZ:
    return ctaid[2];
  case Special::NctaidX:
    return shape.grid[0];
  case Special::NctaidY:
    return shape.grid[1];
  case Special::NctaidZ:
    return shape.grid[2];
  case Special::LaneId:
    return t.id % 32;
  }
  return 0;
}

void BlockRunner::checkShared(const Thread &t, uint64_t at, uint32_t bytes,
                              bool write) {
  if (at % bytes && bytes <= 16)
    fault(t, "misaligned shared access of " + std::to_string(bytes) +
                 " bytes at offset " + std::to_string(at));
  if (at + bytes > sharedBytes || at + bytes < at)
    fault(t, "shared access of " + std::to_string(bytes) + " bytes at offset " +
                 std::to_string(at) + " outside the " +
                 std::to_string(sharedBytes) + " bytes of shared memory");
  for (uint64_t i = at; i < at + bytes; ++i) {
    bool writtenByOther = writeEpoch[i] == epoch && writer[i] != t.id;
    if (write) {
      bool readByOther = readEpoch[i] == epoch && reader[i] != t.id;
      if (writtenByOther || readByOther)
        fault(t, "shared-memory race: byte " + std::to_string(i) +
                     " written after " +
                     (writtenByOther
                          ? "thread " + std::to_string(writer[i]) + " wrote"
                      : reader[i] == kSeveral
                          ? std::string("several threads read")
                          : "thread " + std::to_string(reader[i]) + " read") +
                     " it with no barrier between");
      writeEpoch[i] = epoch;
      writer[i] = t.id;
    } else {
      if (writtenByOther)
        fault(t, "shared-memory race: byte " + std::to_string(i) +
                     " read after thread " + std::to_string(writer[i]) +
                     " wrote it with no barrier between");
      if (readEpoch[i] != epoch) {
        readEpoch[i] = epoch;
        reader[i] = t.id;
      } else if (reader[i] != t.id) {
        reader[i] = kSeveral;
      }
    }
  }
}

void BlockRunner::load(Thread &t, Space space, uint64_t at, uint32_t bytes,
                       void *to) {
  switch (space) {
  case Space::Global:
    if (at % bytes)
      fault(t, "misaligned global load of " + std::to_string(bytes) +
                   " bytes at " + std::to_string(at));
    if (!memory.covers(at, bytes))
      fault(t, "global load of " + std::to_string(bytes) +
                   " bytes outside every allocation (address " +
                   std::to_string(at) + ")");
    std::memcpy(to, reinterpret_cast<const void *>(at), bytes);
    return;
  case Space::Shared:
    checkShared(t, at, bytes, false);
    std::memcpy(to, shared.data() + at, bytes);
    return;
  case Space::Param:
    if (at > parameters.size() || bytes > parameters.size() - at)
      fault(t, "parameter load outside the parameters");
    std::memcpy(to, parameters.data() + at, bytes);
    return;
  case Space::None:
    break;
  }
  fault(t, "load from an unknown state space");
}

void BlockRunner::store(Thread &t, Space space, uint64_t at, uint32_t bytes,
                        const void *from) {
  switch (space) {
  case Space::Global:
    if (at % bytes)
      fault(t, "misaligned global store of " + std::to_string(bytes) +
                   " bytes at " + std::to_string(at));
    if (!memory.covers(at, bytes))
      fault(t, "global store of " + std::to_string(bytes) +
                   " bytes outside every allocation (address " +
                   std::to_string(at) + ")");
    std::memcpy(reinterpret_cast<void *>(at), from, bytes);
    return;
  case Space::Shared:
    checkShared(t, at, bytes, true);
    std::memcpy(shared.data() + at, from, bytes);
    return;
  default:
    break;
  }
  fault(t, "store to a state space the kernel cannot write");
}

void BlockRunner::completeCopies(Thread &t, size_t keep) {
  while (t.groups.size() > keep) {
    for (const AsyncCopy &copy : t.groups.front()) {
      // The bytes past the source size are zeros.
      uint8_t bytes[16] = {};
      if (copy.sourceBytes && !memory.covers(copy.global, copy.sourceBytes))
        fault(t, "cp.async reads " + std::to_string(copy.sourceBytes) +
                     " bytes outside every allocation (address " +
                     std::to_string(copy.global) + ")");
      if (copy.sourceBytes)
        std::memcpy(bytes, reinterpret_cast<const void *>(copy.global),
                    copy.sourceBytes);
      store(t, Space::Shared, copy.shared, copy.bytes, bytes);
    }
    t.groups.pop_front();
  }
}

/// `cmp` (Eq to Ge) of two ordered values.
template <typename T>
static bool compareOrdered(Compare cmp, T x, T y) {
  switch (cmp) {
  case Compare::Eq:
    return x == y;
  case Compare::Ne:
    return x != y;
  case Compare::Lt:
    return x < y;
  case Compare::Le:
    return x <= y;
  case Compare::Gt:
    return x > y;
  case Compare::Ge:
    return x >= y;
  default:
    break;
  }
  throw Fault{"unordered comparison of integers"};
}

bool BlockRunner::compare(const Instruction &inst, uint64_t a,
                          uint64_t b) const {
  Compare cmp = static_cast<Compare>(inst.cmp);
  uint32_t bytes = typeBytes(inst.type);
  if (!isFloat(inst.type)) {
    if (isSigned(inst.type))
      return compareOrdered(cmp, int64_t(narrow(a, bytes, true)),
                            int64_t(narrow(b, bytes, true)));
    return compareOrdered(cmp, narrow(a, bytes, false),
                          narrow(b, bytes, false));
  }
  float x, y;
  if (inst.type == Type::F32) {
    x = bitsToFloat(static_cast<uint32_t>(a));
    y = bitsToFloat(static_cast<uint32_t>(b));
  } else if (inst.type == Type::F16) {
    x = halfToFloat(static_cast<uint16_t>(a));
    y = halfToFloat(static_cast<uint16_t>(b));
  } else if (inst.type == Type::BF16) {
    x = bfloatToFloat(static_cast<uint16_t>(a));
    y = bfloatToFloat(static_cast<uint16_t>(b));
  } else {
    throw Fault{"setp on f64 is not supported"};
  }
  if (inst.ftz)
    x = flushDenormal(x), y = flushDenormal(y);
  bool unordered = std::isnan(x) || std::isnan(y);
  switch (cmp) {
  case Compare::Num:
    return !unordered;
  case Compare::Nan:
    return unordered;
  case Compare::Equ:
  case Compare::Neu:
  case Compare::Ltu:
  case Compare::Leu:
  case Compare::Gtu:
  case Compare::Geu:
    // Equ..Geu follow Eq..Ge in Compare.
    return unordered ||
           compareOrdered(static_cast<Compare>(inst.cmp - 6), x, y);
  default:
    return !unordered && compareOrdered(cmp, x, y);
  }
}

void BlockRunner::execFloat(Thread &t, const Instruction &inst) {
  // An f32x2 is two f32 operations (add, sub, mul and fma only), one per
  // half of each 64-bit operand.
  if (inst.type == Type::F32x2) {
    uint64_t pair = 0;
    for (unsigned half = 0; half < 2; ++half)
      pair |= uint64_t(floatToBits(floatOf(t, inst, half))) << (32 * half);
    t.regs[inst.operands[0].reg] = pair;
    return;
  }
  switch (inst.op) {
  case Opcode::Neg:
    t.regs[inst.operands[0].reg] = read(t, inst.operands[1]) ^ 0x80000000u;
    return;
  case Opcode::Abs:
    t.regs[inst.operands[0].reg] = read(t, inst.operands[1]) & 0x7fffffffu;
    return;
  default:
    t.regs[inst.operands[0].reg] = floatToBits(floatOf(t, inst, 0));
  }
}

float BlockRunner::floatOf(Thread &t, const Instruction &inst, unsigned half) {
  const auto &ops = inst.operands;
  bool ftz = inst.ftz;
  auto in = [&](size_t i) { return readFloat(t, ops[i], ftz, half); };
  float r = 0;
  switch (inst.op) {
  case Opcode::Add:
    r = in(1) + in(2);
    break;
  case Opcode::Sub:
    r = in(1) - in(2);
    break;
  case Opcode::Mul:
    r = in(1) * in(2);
    break;
  case Opcode::Div:
    r = in(1) / in(2);
    break;
  case Opcode::Fma:
    if (inst.roundDown) {
      // Exact in double for the products of floats; then round down.
      double exact = std::fma(double(in(1)), double(in(2)), double(in(3)));
      r = static_cast<float>(exact);
      if (double(r) > exact)
        r = std::nextafter(r, -INFINITY);
    } else {
      r = std::fma(in(1), in(2), in(3));
    }
    break;
  case Opcode::Min:
  case Opcode::Max: {
    float a = in(1), b = in(2);
    if (std::isnan(a) || std::isnan(b)) {
      r = inst.nan ? NAN : std::isnan(a) ? b : a;
    } else if (a == b) {
      // min(-0, +0) = -0, max(-0, +0) = +0.
      bool negative = std::signbit(a) && std::signbit(b);
      bool either = std::signbit(a) || std::signbit(b);
      r = std::copysign(a, inst.op == Opcode::Min ? (either ? -1.0f : 1.0f)
                                                  : (negative ? -1.0f : 1.0f));
    } else {
      r = inst.op == Opcode::Min ? std::min(a, b) : std::max(a, b);
    }
    break;
  }
  case Opcode::Rcp:
    r = 1.0f / in(1);
    break;
  case Opcode::Ex2:
    r = std::exp2(in(1));
    break;
  case Opcode::Copysign:
    r = std::copysign(in(2), in(1));
    break;
  default:
    fault(t, "unsupported f32 instruction");
  }
  if (inst.sat)
    r = std::isnan(r) ? 0.0f : std::min(std::max(r, 0.0f), 1.0f);
  return ftz ? flushDenormal(r) : r;
}

void BlockRunner::execArithmetic(Thread &t, const Instruction &inst) {
  const auto &ops = inst.operands;
  uint32_t bytes = typeBytes(inst.type);
  bool sign = isSigned(inst.type);
  auto in = [&](size_t i) { return narrow(read(t, ops[i]), bytes, sign); };
  auto out = [&](uint64_t v) {
    t.regs[ops[0].reg] =
        inst.type == Type::Pred ? (v & 1) : narrow(v, bytes, sign);
  };
  uint64_t bits = 8 * bytes;
  switch (inst.op) {
  case Opcode::Mov: {
    uint32_t half = 4 * bytes;
    if (inst.vec == kMovSplit) {
      uint64_t v = narrow(read(t, ops[2]), bytes, false);
      t.regs[ops[0].reg] = narrow(v, bytes / 2, false);
      t.regs[ops[1].reg] = v >> half;
      return;
    }
    if (inst.vec == kMovJoin)
      return out(narrow(read(t, ops[1]), bytes / 2, false) |
                 narrow(read(t, ops[2]), bytes / 2, false) << half);
    return out(read(t, ops[1]));
  }
  case Opcode::Add:
    return out(in(1) + in(2));
  case Opcode::Sub:
    return out(in(1) - in(2));
  case Opcode::Mul:
    return out(in(1) * in(2));
  case Opcode::Mad:
    return out(in(1) * in(2) + in(3));
  case Opcode::MulWide:
    // The product of two `bytes` values, twice as wide.
    t.regs[ops[0].reg] = narrow(in(1) * in(2), 2 * bytes, sign);
    return;
  case Opcode::MulHi:
    if (bytes == 8 && sign)
      return out(uint64_t((__int128)int64_t(in(1)) * int64_t(in(2)) >> 64));
    if (bytes == 8)
      return out(uint64_t((unsigned __int128)in(1) * in(2) >> 64));
    if (sign)
      return out(uint64_t(int64_t(in(1)) * int64_t(in(2)) >> bits));
    return out((in(1) * in(2)) >> bits);
  case Opcode::Div:
  case Opcode::Rem: {
    uint64_t b = in(2);
    if (!narrow(b, bytes, false))
      fault(t, "integer division by zero");
    uint64_t a = in(1);
    if (sign)
      return out(inst.op == Opcode::Div ? uint64_t(int64_t(a) / int64_t(b))
                                        : uint64_t(int64_t(a) % int64_t(b)));
    return out(inst.op == Opcode::Div ? a / b : a % b);
  }
  case Opcode::Min:
  case Opcode::Max: {
    uint64_t a = in(1), b = in(2);
    bool less = sign ? int64_t(a) < int64_t(b) : a < b;
    return out((inst.op == Opcode::Min) == less ? a : b);
  }
  case Opcode::Neg:
    return out(0 - in(1));
  case Opcode::Abs:
    return out(int64_t(in(1)) < 0 ? 0 - in(1) : in(1));
  case Opcode::And:
    return out(in(1) & in(2));
  case Opcode::Or:
    return out(in(1) | in(2));
  case Opcode::Xor:
    return out(in(1) ^ in(2));
  case Opcode::Not:
    return out(~in(1));
  case Opcode::Shl: {
    uint64_t amount = narrow(read(t, ops[2]), 4, false);
    return out(amount >= bits ? 0 : in(1) << amount);
  }
  case Opcode::Shr: {
    uint64_t amount = narrow(read(t, ops[2]), 4, false);
    if (sign)
      return out(
          uint64_t(int64_t(in(1)) >> (amount >= bits ? bits - 1 : amount)));
    return out(amount >= bits ? 0 : narrow(in(1), bytes, false) >> amount);
  }
  case Opcode::Shf: {
    // {b, a} as 64 bits shifted by n (c mod 32, or c capped at 32): shf.l
    // keeps the high word, shf.r the low one.
    uint64_t pair = in(2) << 32 | in(1), c = in(3);
    uint64_t n = (inst.cmp & kShfClamp) ? std::min<uint64_t>(c, 32) : c & 31;
    return out((inst.cmp & kShfLeft) ? (pair << n) >> 32 : pair >> n);
  }
  case Opcode::Prmt: {
    // Byte i of the result is byte s & 7 of {b, a} (a's bytes 0-3, b's
    // 4-7), s the selector in bits [4i, 4i + 4) of c, or its sign
    // replicated when s & 8.
    uint64_t pair = in(2) << 32 | in(1), c = in(3), result = 0;
    for (unsigned i = 0; i < 4; ++i) {
      uint64_t s = (c >> (4 * i)) & 0xf;
      uint64_t byte = (pair >> (8 * (s & 7))) & 0xff;
      if (s & 8)
        byte = (byte & 0x80) ? 0xff : 0;
      result |= byte << (8 * i);
    }
    return out(result);
  }
  case Opcode::Bfe: {
    // Bit i of the result is bit position + i of a while both lie inside
    // the field and a, else the field's sign (0 when unsigned).
    uint64_t a = narrow(read(t, ops[1]), bytes, false);
    uint64_t position = read(t, ops[2]) & 0xff, length = read(t, ops[3]) & 0xff;
    if (!length)
      return out(0);
    uint64_t signBit = std::min(position + length - 1, bits - 1);
    uint64_t fill = sign ? (a >> signBit) & 1 : 0, d = 0;
    for (uint64_t i = 0; i < bits; ++i) {
      uint64_t bit =
          i < length && position + i < bits ? (a >> (position + i)) & 1 : fill;
      d |= bit << i;
    }
    return out(d);
  }
  case Opcode::Selp:
    return out((read(t, ops[3]) & 1) ? read(t, ops[1]) : read(t, ops[2]));
  default:
    break;
  }
  fault(t, "unsupported integer instruction");
}

void BlockRunner::execConvert(Thread &t, const Instruction &inst) {
  const auto &ops = inst.operands;
  Type to = inst.type, from = inst.srcType;
  auto toHalf = [&](float x) -> uint64_t {
    return to == Type::BF16 || to == Type::BF16x2 ? floatToBfloat(x)
                                                  : floatToHalf(x);
  };
  if (to == Type::F16x2 || to == Type::BF16x2) {
    if (from != Type::F32)
      fault(t, "unsupported cvt to a half pair");
    // The first source goes to the upper half.
    t.regs[ops[0].reg] = (toHalf(readFloat(t, ops[1], inst.ftz)) << 16) |
                         toHalf(readFloat(t, ops[2], inst.ftz));
    return;
  }
  float value;
  uint64_t source = read(t, ops[1]);
  switch (from) {
  case Type::F32:
    value = bitsToFloat(static_cast<uint32_t>(source));
    break;
  case Type::F16:
    value = halfToFloat(static_cast<uint16_t>(source));
    break;
  case Type::BF16:
    value = bfloatToFloat(static_cast<uint16_t>(source));
    break;
  default: {
    uint64_t v = narrow(source, typeBytes(from), isSigned(from));
    if (isFloat(to)) {
      value = isSigned(from) ? static_cast<float>(int64_t(v))
                             : static_cast<float>(v);
      break;
    }
    t.regs[ops[0].reg] = narrow(v, typeBytes(to), isSigned(to));
    return;
  }
  }
  if (inst.ftz)
    value = flushDenormal(value);
  if (inst.sat)
    value = std::isnan(value) ? 0.0f : std::min(std::max(value, 0.0f), 1.0f);
  switch (to) {
  case Type::F32:
    t.regs[ops[0].reg] = floatToBits(value);
    return;
  case Type::F16:
  case Type::BF16:
    t.regs[ops[0].reg] = toHalf(value);
    return;
  default:
    break;
  }
  fault(t, "unsupported cvt from a float to an integer");
}

void BlockRunner::tallyAccesses() {
  for (auto &[key, lanes] : accesses) {
    Opcode op = kernel.code[std::get<1>(key)].op;
    if (op == Opcode::Ld || op == Opcode::St)
      ++(std::get<3>(key) ? profile->sharedAccesses : profile->globalAccesses);
    if (std::get<3>(key)) {
      // 32 lanes of up to 4 bytes are one phase, 16 of 8 or 8 of 16.
      uint32_t bytes = lanes.front().bytes;
      uint32_t perPhase = bytes >= 16 ? 8 : bytes == 8 ? 16 : 32;
      std::map<uint32_t, std::vector<uint64_t>> phases;
      for (const LaneAccess &access : lanes)
        for (uint64_t w = access.at / 4;
             w <= (access.at + access.bytes - 1) / 4; ++w)
          phases[access.lane / perPhase].push_back(w);
      for (auto &phase : phases)
        tallyPhase(phase.second, *profile);
      continue;
    }
    std::set<uint64_t> sectors, bytes;
    for (const LaneAccess &access : lanes)
      for (uint64_t at = access.at; at < access.at + access.bytes; ++at) {
        sectors.insert(at / 32);
        bytes.insert(at);
      }
    profile->globalSectors += sectors.size();
    profile->globalIdealSectors += (bytes.size() + 31) / 32;
  }
  accesses.clear();
  for (auto &threadRuns : runs)
    threadRuns.clear();
}

void BlockRunner::tallyInstructions() {
  size_t codeSize = kernel.code.size();
  for (uint32_t warp = 0; warp * 32 < threadCount; ++warp) {
    uint32_t lanes = std::min(threadCount - warp * 32, 32u);
    for (size_t pc = 0; pc < codeSize; ++pc) {
      uint32_t most = 0;
      for (uint32_t lane = 0; lane < lanes; ++lane)
        most = std::max(most, executed[(warp * 32 + lane) * codeSize + pc]);
      profile->issued[size_t(kernel.code[pc].op)] += most;
    }
  }
  std::fill(executed.begin(), executed.end(), 0);
}

/// Runs one instruction of `t`; false when `t` stops (a barrier, a warp
/// collective or its end).
bool BlockRunner::step(Thread &t) {
  if (t.pc >= kernel.code.size())
    fault(t, "ran past the end of the kernel");
  const Instruction &inst = kernel.code[t.pc];
  if (profile)
    ++executed[size_t(t.id) * kernel.code.size() + t.pc];
  if (inst.guard != Operand::kNoReg &&
      bool(t.regs[inst.guard] & 1) == inst.guardNegated) {
    ++t.pc;
    return true;
  }
  const auto &ops = inst.operands;
  switch (inst.op) {
  case Opcode::Bra:
    t.pc = inst.target;
    return true;
  case Opcode::Ret:
    completeCopies(t, 0);
    t.state = Thread::Exited;
    return false;
  case Opcode::BarSync:
  case Opcode::BarRedOr:
    t.state = Thread::AtBarrier;
    return false;
  case Opcode::Shfl:
  case Opcode::Mma:
  case Opcode::Ldmatrix:
    t.state = Thread::AtCollective;
    return false;
  case Opcode::Setp:
    t.regs[ops[0].reg] = compare(inst, read(t, ops[1]), read(t, ops[2]));
    break;
  case Opcode::Cvt:
    execConvert(t, inst);
    break;
  case Opcode::Cvta:
    t.regs[ops[0].reg] = read(t, ops[1]);
    break;
  case Opcode::Ld: {
    uint32_t bytes = typeBytes(inst.type);
    uint64_t at = address(t, ops[inst.vec]);
    if (inst.vec > 1 && inst.space != Space::Param && at % (bytes * inst.vec))
      fault(t, "misaligned vector load of " + std::to_string(bytes * inst.vec) +
                   " bytes at " + std::to_string(at));
    if (profile)
      profileAccess(t, inst, at, bytes * inst.vec);
    for (uint32_t i = 0; i < inst.vec; ++i) {
      uint64_t v = 0;
      load(t, inst.space, at + i * bytes, bytes, &v);
      t.regs[ops[i].reg] = narrow(v, bytes, isSigned(inst.type));
    }
    break;
  }
  case Opcode::St: {
    uint32_t bytes = typeBytes(inst.type);
    uint64_t at = address(t, ops[0]);
    if (inst.vec > 1 && at % (bytes * inst.vec))
      fault(t, "misaligned vector store of " +
                   std::to_string(bytes * inst.vec) + " bytes at " +
                   std::to_string(at));
    if (profile)
      profileAccess(t, inst, at, bytes * inst.vec);
    for (uint32_t i = 0; i < inst.vec; ++i) {
      uint64_t v = read(t, ops[i + 1]);
      store(t, inst.space, at + i * bytes, bytes, &v);
    }
    break;
  }
  case Opcode::CpAsync: {
    AsyncCopy copy;
    copy.shared = static_cast<uint32_t>(address(t, ops[0]));
    copy.global = address(t, ops[1]);
    copy.bytes = static_cast<uint32_t>(ops[2].imm);
    copy.sourceBytes =
        ops.size() == 4 ? static_cast<uint32_t>(read(t, ops[3])) : copy.bytes;
    if (copy.sourceBytes > copy.bytes)
      fault(t, "cp.async source size above the copy size");
    if (copy.global % copy.bytes)
      fault(t, "misaligned cp.async source");
    // The copy may land any time before its wait: it must not race with
    // this epoch's accesses either.
    checkShared(t, copy.shared, copy.bytes, true);
    if (profile) {
      uint32_t run = nextRun(t);
      recordAccess(t, run, /*toShared=*/true, copy.shared, copy.bytes);
      if (copy.sourceBytes)
        recordAccess(t, run, /*toShared=*/false, copy.global, copy.sourceBytes);
    }
    t.openGroup.push_back(copy);
    break;
  }
  case Opcode::CpAsyncCommit:
    t.groups.push_back(std::move(t.openGroup));
    t.openGroup.clear();
    break;
  case Opcode::CpAsyncWait:
    if (inst.vec) {
      t.groups.push_back(std::move(t.openGroup));
      t.openGroup.clear();
    }
    completeCopies(t, inst.vec ? 0 : static_cast<size_t>(ops[0].imm));
    break;
  default:
    if ((inst.type == Type::F32 || inst.type == Type::F32x2) &&
        inst.op != Opcode::Mov && inst.op != Opcode::Selp)
      execFloat(t, inst);
    else
      execArithmetic(t, inst);
    break;
  }
  ++t.pc;
  return true;
}

void BlockRunner::runThread(Thread &t) {
  uint64_t start = steps;
  while (step(t)) {
    if (++steps - start > shape.maxSteps)
      fault(t, "more than " + std::to_string(shape.maxSteps) +
                   " instructions without a barrier: a runaway loop");
    if (steps > shape.maxBlockSteps)
      fault(t, "more than " + std::to_string(shape.maxBlockSteps) +
                   " instructions in the block: a runaway loop");
  }
}

void BlockRunner::runCollective(std::vector<Thread *> &lanes) {
  Thread &first = *lanes.front();
  const Instruction &inst = kernel.code[first.pc];
  for (Thread *lane : lanes)
    if (lane->pc != first.pc)
      fault(*lane, "divergent warp: lanes wait at different collectives "
                   "(PTX lines " +
                       std::to_string(kernel.code[lane->pc].line) + " and " +
                       std::to_string(inst.line) + ")");
  uint32_t warpBase = first.id / 32 * 32;
  // Lanes by lane id, and the mask of those here and of those that exist.
  Thread *byLane[32] = {};
  uint32_t here = 0, exist = 0;
  for (Thread *t : lanes) {
    byLane[t->id % 32] = t;
    here |= 1u << (t->id % 32);
  }
  for (uint32_t l = 0; l < 32 && warpBase + l < threadCount; ++l)
    exist |= 1u << l;
  if (inst.op == Opcode::Shfl) {
    shuffle(inst, lanes, byLane, here, exist);
  } else {
    if (lanes.size() != 32)
      fault(first,
            std::string(inst.op == Opcode::Mma ? "mma.sync" : "ldmatrix") +
                " needs all 32 lanes of the warp, " +
                std::to_string(lanes.size()) + " reach it");
    if (inst.op == Opcode::Ldmatrix)
      loadMatrices(inst, byLane);
    else
      multiplyFragments(inst, byLane);
  }
  for (Thread *lane : lanes) {
    lane->state = Thread::Running;
    ++lane->pc;
  }
}

void BlockRunner::shuffle(const Instruction &inst,
                          const std::vector<Thread *> &lanes,
                          Thread *const *byLane, uint32_t here,
                          uint32_t exist) {
  const auto &ops = inst.operands;
  std::vector<uint64_t> result(lanes.size());
  for (size_t i = 0; i < lanes.size(); ++i) {
    Thread &t = *lanes[i];
    uint32_t lane = t.id % 32, b = read(t, ops[2]) & 31,
             c = static_cast<uint32_t>(read(t, ops[3]));
    uint32_t members = static_cast<uint32_t>(read(t, ops[4]));
    if ((members ^ here) & exist)
      fault(t, "shfl.sync's member mask does not match the lanes "
               "that reach it");
    uint32_t segment = (c >> 8) & 31, clamp = c & 31;
    uint32_t maxLane = (lane & segment) | (clamp & ~segment);
    uint32_t minLane = lane & segment;
    int32_t j = 0;
    bool inRange = false;
    switch (static_cast<ShuffleMode>(inst.cmp)) {
    case ShuffleMode::Up:
      j = int32_t(lane) - int32_t(b), inRange = j >= int32_t(maxLane);
      break;
    case ShuffleMode::Down:
      j = int32_t(lane + b), inRange = j <= int32_t(maxLane);
      break;
    case ShuffleMode::Bfly:
      j = int32_t(lane ^ b), inRange = j <= int32_t(maxLane);
      break;
    case ShuffleMode::Idx:
      j = int32_t(minLane | (b & ~segment)), inRange = j <= int32_t(maxLane);
      break;
    }
    if (!inRange)
      j = int32_t(lane);
    Thread *source = byLane[j];
    if (!source)
      fault(t, "shfl.sync reads lane " + std::to_string(j) +
                   ", which does not take part");
    result[i] = narrow(read(*source, ops[1]), 4, false);
  }
  for (size_t i = 0; i < lanes.size(); ++i)
    lanes[i]->regs[ops[0].reg] = result[i];
}

void BlockRunner::loadMatrices(const Instruction &inst, Thread *const *byLane) {
  const auto &ops = inst.operands;
  // Matrix m's row r comes from the address of lane 8 m + r.
  uint16_t rows[4][8][8];
  for (uint32_t m = 0; m < inst.vec; ++m)
    for (uint32_t r = 0; r < 8; ++r) {
      Thread &source = *byLane[8 * m + r];
      uint64_t at = address(source, ops[inst.vec]);
      if (at % 16)
        fault(source, "misaligned ldmatrix row address");
      load(source, Space::Shared, at, 16, rows[m][r]);
    }
  // Each matrix is one phase: 8 rows of 16 bytes.
  if (profile)
    for (uint32_t m = 0; m < inst.vec; ++m) {
      std::vector<uint64_t> words;
      for (uint32_t r = 0; r < 8; ++r)
        for (uint64_t w = 0; w < 4; ++w)
          words.push_back(address(*byLane[8 * m + r], ops[inst.vec]) / 4 + w);
      tallyPhase(words, *profile);
    }
  for (uint32_t lane = 0; lane < 32; ++lane)
    for (uint32_t m = 0; m < inst.vec; ++m) {
      uint32_t g = lane / 4, c = 2 * (lane % 4);
      uint32_t lo = inst.trans ? rows[m][c][g] : rows[m][g][c];
      uint32_t hi = inst.trans ? rows[m][c + 1][g] : rows[m][g][c + 1];
      byLane[lane]->regs[ops[m].reg] = lo | (hi << 16);
    }
}

void BlockRunner::multiplyFragments(const Instruction &inst,
                                    Thread *const *byLane) {
  const auto &ops = inst.operands;
  // m16n8k16: A 16x16 (4 registers), B 16x8 (2), C and D 16x8 (4).
  float a[16][16], b[16][8], c[16][8];
  auto element = [&](uint64_t reg, bool high) {
    uint16_t bits = static_cast<uint16_t>(high ? reg >> 16 : reg);
    return inst.srcType == Type::BF16 ? bfloatToFloat(bits) : halfToFloat(bits);
  };
  for (uint32_t lane = 0; lane < 32; ++lane) {
    Thread &t = *byLane[lane];
    uint32_t g = lane / 4, k = 2 * (lane % 4);
    for (uint32_t i = 0; i < 4; ++i) {
      uint64_t reg = t.regs[ops[4 + i].reg];
      uint32_t row = g + 8 * (i % 2), col = k + 8 * (i / 2);
      a[row][col] = element(reg, false);
      a[row][col + 1] = element(reg, true);
    }
    for (uint32_t i = 0; i < 2; ++i) {
      uint64_t reg = t.regs[ops[8 + i].reg];
      b[k + 8 * i][g] = element(reg, false);
      b[k + 8 * i + 1][g] = element(reg, true);
    }
    for (uint32_t i = 0; i < 4; ++i)
      c[g + 8 * (i / 2)][k + i % 2] =
          bitsToFloat(static_cast<uint32_t>(t.regs[ops[10 + i].reg]));
  }
  for (uint32_t lane = 0; lane < 32; ++lane) {
    uint32_t g = lane / 4, k = 2 * (lane % 4);
    for (uint32_t i = 0; i < 4; ++i) {
      uint32_t row = g + 8 * (i / 2), col = k + i % 2;
      float sum = c[row][col];
      for (uint32_t x = 0; x < 16; ++x)
        sum += a[row][x] * b[x][col];
      byLane[lane]->regs[ops[i].reg] = floatToBits(sum);
    }
  }
}

void BlockRunner::runBarrier() {
  const Thread *first = nullptr;
  bool any = false;
  for (Thread &t : threads) {
    if (t.state == Thread::Exited)
      continue;
    if (!first)
      first = &t;
    const Instruction &inst = kernel.code[t.pc];
    if (inst.op != kernel.code[first->pc].op)
      fault(t, "threads wait at different kinds of barrier");
    if (inst.op == Opcode::BarRedOr)
      any |= read(t, inst.operands[2]) & 1;
  }
  for (Thread &t : threads) {
    if (t.state == Thread::Exited)
      continue;
    const Instruction &inst = kernel.code[t.pc];
    if (inst.op == Opcode::BarRedOr)
      t.regs[inst.operands[0].reg] = any;
    t.state = Thread::Running;
    ++t.pc;
  }
  if (profile)
    tallyAccesses();
  ++epoch;
  // A copy still in flight may land in the new epoch too: it is a write
  // there, so another thread's access before its wait is a race.
  for (Thread &t : threads) {
    if (t.state == Thread::Exited)
      continue;
    auto stillWriting = [&](const std::vector<AsyncCopy> &copies) {
      for (const AsyncCopy &copy : copies)
        checkShared(t, copy.shared, copy.bytes, true);
    };
    for (const std::vector<AsyncCopy> &group : t.groups)
      stillWriting(group);
    stillWriting(t.openGroup);
  }
}

void BlockRunner::run(uint32_t x, uint32_t y, uint32_t z) {
  ctaid[0] = x, ctaid[1] = y, ctaid[2] = z;
  std::fill(shared.begin(), shared.end(), 0xff);
  std::fill(writeEpoch.begin(), writeEpoch.end(), 0);
  std::fill(readEpoch.begin(), readEpoch.end(), 0);
  epoch = 1;
  // A GPU's registers start undefined: all ones (NaN as a float, a
  // misaligned address) makes a read before a write show.
  std::fill(registerFile.begin(), registerFile.end(), ~uint64_t(0));
  for (uint32_t i = 0; i < threadCount; ++i) {
    Thread &t = threads[i];
    t = Thread();
    t.id = i;
    t.tid[0] = i % shape.block[0];
    t.tid[1] = i / shape.block[0] % shape.block[1];
    t.tid[2] = i / (shape.block[0] * shape.block[1]);
    t.regs = registerFile.data() + size_t(i) * (kernel.registers + 1);
  }
  std::vector<Thread *> lanes;
  while (true) {
    for (Thread &t : threads)
      if (t.state == Thread::Running)
        runThread(t);
    bool progressed = false, live = false;
    for (uint32_t warp = 0; warp * 32 < threadCount; ++warp) {
      lanes.clear();
      bool atBarrier = false;
      for (uint32_t i = warp * 32; i < std::min(threadCount, warp * 32 + 32);
           ++i) {
        Thread &t = threads[i];
        if (t.state == Thread::AtCollective)
          lanes.push_back(&t);
        else if (t.state == Thread::AtBarrier)
          atBarrier = true;
      }
      if (lanes.empty())
        continue;
      if (atBarrier)
        fault(*lanes.front(), "deadlock: lanes of this warp wait at a "
                              "collective while others wait at a barrier");
      runCollective(lanes);
      progressed = true;
    }
    if (progressed)
      continue;
    for (Thread &t : threads)
      live |= t.state != Thread::Exited;
    if (!live) {
      if (profile) {
        tallyAccesses();
        tallyInstructions();
        ++profile->blocks;
      }
      return;
    }
    runBarrier();
  }
}

std::string attn::emulator::runKernel(const Kernel &kernel,
                                      const LaunchShape &shape,
                                      const std::vector<uint8_t> &parameters,
                                      const DeviceMemory &memory,
                                      Profile *profile) {
  try {
    BlockRunner runner(kernel, shape, parameters, memory, profile);
    for (uint32_t z = 0; z < shape.grid[2]; ++z)
      for (uint32_t y = 0; y < shape.grid[1]; ++y)
        for (uint32_t x = 0; x < shape.grid[0]; ++x)
          runner.run(x, y, z);
  } catch (const Fault &fault) {
    return fault.message;
  }
  return "";
}
