//===- PTX.h - PTX kernels decoded for the CPU emulator ---------*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//
//
// The CUDA emulator (libcuda.so.1 of build/lib/cuda-emulator) runs the PTX
// attn emits on the CPU, so the launchers and kernels of `attn-compile
// --target nvptx --embed=ptx` are executed and checked on machines without a
// GPU. It knows the subset of PTX that LLVM's NVPTX back end writes for
// attn's kernels (integer and f32 arithmetic, f16/bf16 conversions, global,
// shared and parameter memory, cp.async, bar.sync, bar.red, shfl.sync,
// ldmatrix and mma.sync m16n8k16); anything else is refused when the module
// loads, naming the instruction. It is stricter than a GPU where that finds
// bugs: global accesses outside an allocation, shared accesses outside the
// block's shared memory, shared-memory races between barriers and divergent
// warp collectives stop the launch with a message.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_EMULATOR_PTX_H
#define ATTN_EMULATOR_PTX_H

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attn::emulator {

/// A PTX scalar type; vectors (f16x2, bf16x2) live in 32-bit registers.
enum class Type : uint8_t {
  None,
  Pred,
  B8,
  B16,
  B32,
  B64,
  U8,
  U16,
  U32,
  U64,
  S8,
  S16,
  S32,
  S64,
  F16,
  BF16,
  F32,
  F64,
  F16x2,
  BF16x2,
  F32x2 // sm_100's packed pair: element 0 in the low 32 bits
};

enum class Opcode : uint8_t {
  Mov,
  Add,
  Sub,
  Mul,
  MulWide,
  MulHi,
  Mad,
  Div,
  Rem,
  Min,
  Max,
  Neg,
  Abs,
  And,
  Or,
  Xor,
  Not,
  Shl,
  Shr,
  Shf,
  Prmt,
  Bfe,
  Selp,
  Setp,
  Cvt,
  Cvta,
  Fma,
  Rcp,
  Ex2,
  Copysign,
  Ld,
  St,
  CpAsync,
  CpAsyncCommit,
  CpAsyncWait,
  Bra,
  Ret,
  Shfl,
  BarSync,
  BarRedOr,
  Mma,
  Ldmatrix
};

/// The state space of a load or store.
enum class Space : uint8_t { None, Global, Shared, Param };

/// Special registers read by `mov`.
enum class Special : uint8_t {
  TidX,
  TidY,
  TidZ,
  NtidX,
  NtidY,
  NtidZ,
  CtaidX,
  CtaidY,
  CtaidZ,
  NctaidX,
  NctaidY,
  NctaidZ,
  LaneId
};

struct Operand {
  enum Kind : uint8_t { Reg, Imm, Mem, Sreg } kind = Imm;
  /// Reg: the register's slot; Mem: the base register's slot, or kNoReg
  /// for an absolute address (a shared variable or a parameter).
  uint32_t reg = 0;
  /// Imm: the value's bits; Mem: the offset added to the base; Sreg: the
  /// Special.
  int64_t imm = 0;
  static constexpr uint32_t kNoReg = ~0u;
};

struct Instruction {
  Opcode op = Opcode::Mov;
  Type type = Type::None;
  /// cvt: the source type; mma: the input (A and B) type.
  Type srcType = Type::None;
  Space space = Space::None;
  /// setp's comparison (see PTX.cpp), shf's direction and mode
  /// (kShfLeft, kShfClamp) and the like.
  uint8_t cmp = 0;
  /// ld/st: the vector width; ldmatrix: the matrix count.
  uint8_t vec = 1;
  bool ftz = false, sat = false, nan = false, trans = false, roundDown = false;
  /// The guard predicate's slot, or kNoReg; `@!%p` negates it.
  uint32_t guard = Operand::kNoReg;
  bool guardNegated = false;
  /// Destinations first, as PTX writes them; vector operands flattened.
  std::vector<Operand> operands;
  /// bra: the index of the target instruction.
  uint32_t target = 0;
  /// The PTX line, for diagnostics.
  uint32_t line = 0;
};

struct Parameter {
  std::string name;
  uint32_t offset = 0, size = 0;
};

struct Kernel {
  std::string name;
  std::vector<Parameter> parameters;
  uint32_t parameterBytes = 0;
  /// Static shared memory (the variables the kernel declares and the
  /// module's), and where dynamic shared memory starts.
  uint32_t staticShared = 0;
  /// The dynamic shared memory a launch may ask for beyond the default
  /// (48 KiB less the static), as cuFuncSetAttribute's
  /// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES allows it; 0: none.
  uint32_t maxDynamicShared = 0;
  /// .maxntid / .reqntid, 0 when absent.
  uint32_t maxThreads = 0;
  uint32_t registers = 0;
  std::vector<Instruction> code;
};

struct Module {
  std::map<std::string, Kernel, std::less<>> kernels;
  /// The device memory of the module's .global variables.
  std::vector<uint64_t> globals;
};

/// Places a .global variable of the module in device memory: its initial
/// bytes (zeros past the initializer) and alignment; returns its address.
using GlobalAllocator = uint64_t (*)(const std::vector<uint8_t> &bytes,
                                     uint32_t align);

/// Parses PTX text, placing its .global variables with `allocate`. Null on
/// failure, with `error` naming the line and the construct the emulator
/// does not know.
std::unique_ptr<Module> parsePTX(std::string_view text,
                                 GlobalAllocator allocate, std::string &error);

/// Device memory: the allocations a launch may touch.
class DeviceMemory {
public:
  void add(uint64_t base, uint64_t size) { allocations[base] = size; }
  void remove(uint64_t base) { allocations.erase(base); }
  bool contains(uint64_t base) const { return allocations.count(base); }
  /// Whether [address, address + bytes) lies inside one allocation.
  bool covers(uint64_t address, uint64_t bytes) const;

private:
  std::map<uint64_t, uint64_t> allocations;
};

struct LaunchShape {
  uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  uint32_t dynamicShared = 0;
  /// A thread running more instructions than this without reaching a
  /// barrier is a runaway loop.
  uint64_t maxSteps = uint64_t(1) << 30;
  /// A block whose threads run more instructions than this in all is one
  /// too, though its loop passes barriers (ATTN_EMULATOR_MAX_STEPS).
  uint64_t maxBlockSteps = UINT64_MAX;
};

/// What one block may hold: sm_90's shared memory and registers per thread
/// (the parser refuses more), and the largest .global variable.
constexpr uint32_t kMaxSharedBytes = 228 * 1024;
constexpr uint32_t kMaxRegisters = 1 << 16;
constexpr uint64_t kMaxGlobalBytes = uint64_t(1) << 28;

/// What a launch did, counted when runKernel is given one: a model of the
/// work a GPU would issue, not a timing. The instructions its warps issued
/// by opcode (a guarded-off one too, as on a GPU; a warp issues an
/// instruction as often as its busiest lane runs it, so each side of a
/// divergent branch costs the whole warp), and the shared-memory
/// wavefronts and global 32-byte sectors its warps' memory instructions
/// took next to the fewest their bytes need (a bank conflict or an
/// uncoalesced access shows as the difference). The lanes of a warp access
/// together on their n-th run of an instruction between two barriers.
struct Profile {
  static constexpr size_t kOpcodes = size_t(Opcode::Ldmatrix) + 1;
  uint64_t issued[kOpcodes] = {};
  /// Warp instructions (ld, st) that accessed global and shared memory
  /// (cp.async and ldmatrix are counted apart).
  uint64_t globalAccesses = 0, sharedAccesses = 0;
  uint64_t sharedWavefronts = 0, sharedIdealWavefronts = 0;
  uint64_t globalSectors = 0, globalIdealSectors = 0;
  uint64_t blocks = 0;
};

/// Runs `kernel` over the grid, parameters laid out as `parameters`
/// describes, counting into `profile` when given. Returns "" on success,
/// else what stopped it (the block, the thread, the PTX line and the fault).
std::string runKernel(const Kernel &kernel, const LaunchShape &shape,
                      const std::vector<uint8_t> &parameters,
                      const DeviceMemory &memory, Profile *profile = nullptr);

} // namespace attn::emulator

#endif // ATTN_EMULATOR_PTX_H
