//===- attn-run.cpp - compile, run, check and time an attention kernel ----===//
//
// Part of the attn project: an MLIR compiler for attention.
//
// attn-run (FILE.mlir | --spec SPEC) [--check] [--bench] [--json] ...
// compiles the kernel exactly as attn-compile does, JIT-loads it, runs it on
// random inputs through its DLPack entry point, and compares the output with
// the independent reference in lib/Tools/Reference.cpp.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnOps.h"
#include "attn/Support/OutputFile.h"
#include "attn/Target/CPUKernel.h"
#include "attn/Target/GPUKernel.h"
#include "attn/Tools/BlockMap.h"
#include "attn/Tools/CPUKernelFlags.h"
#include "attn/Tools/CUDADriver.h"
#include "attn/Tools/KernelSource.h"
#include "attn/Tools/Reference.h"
#include "attn/Tools/RegionInterpreter.h"
#include "attn/Transforms/Transforms.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"

#include <dlpack/dlpack.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <utility>

#include <sys/resource.h>
#include <unistd.h>

using namespace mlir;
using namespace mlir::attn;
namespace cl = llvm::cl;

// From libomp, which runs the kernels' parallel loops.
extern "C" void omp_set_num_threads(int);

// --help lists these and the code generation flags, not the hundreds of
// options LLVM and MLIR register.
static cl::OptionCategory toolOptions("attn-run options");

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("[kernel.mlir]"),
                                      cl::init(""), cl::cat(toolOptions));
static cl::opt<std::string> specText("spec",
                                     cl::desc("Build the kernel from a SPEC"),
                                     cl::init(""), cl::cat(toolOptions));
static cl::opt<std::string>
    target("target",
           cl::desc("Target: cpu, or gpu (this machine's first NVIDIA GPU)"),
           cl::init("cpu"), cl::cat(toolOptions));
static cl::opt<std::string>
    chip("chip",
         cl::desc("NVIDIA architecture for --target gpu (default: the GPU's)"),
         cl::init(""), cl::cat(toolOptions));
static cl::opt<std::string> funcName("function",
                                     cl::desc("The kernel function in FILE"),
                                     cl::init(""), cl::cat(toolOptions));
static cl::list<std::string>
    dimsList("dims",
             cl::desc("Sizes of dynamic dimensions, e.g. sq=17,sk=33 (b, hq, "
                      "hkv, sq, sk, d, dv); repeat to run the same kernel "
                      "at several sizes"),
             cl::cat(toolOptions));
static cl::opt<bool> check("check",
                           cl::desc("Compare with the naive reference; exit 1 "
                                    "when the error exceeds the tolerance"),
                           cl::cat(toolOptions));
static cl::opt<bool> bench("bench",
                           cl::desc("Time repeated runs, report the median"),
                           cl::cat(toolOptions));
static cl::opt<bool> json("json",
                          cl::desc("Print one JSON object on the last line"),
                          cl::cat(toolOptions));
static cl::opt<unsigned> seed("seed", cl::desc("Random seed of the inputs"),
                              cl::init(1), cl::cat(toolOptions));
static cl::opt<unsigned> runs("runs", cl::desc("Timed runs for --bench"),
                              cl::init(10), cl::cat(toolOptions));
static cl::opt<double>
    toleranceOpt("tolerance",
                 cl::desc("Max abs error for --check (default: by dtype)"),
                 cl::init(-1), cl::cat(toolOptions));

static cl::opt<std::string> blockMap(
    "block-map",
    cl::desc("Draw the tile map of the kernel's structured mask (skipped / "
             "full / partial tiles of --query-tile-size x --kv-tile-size, "
             "default 64) into FILE.svg instead of running"),
    cl::value_desc("FILE.svg"), cl::init(""), cl::cat(toolOptions));

static cl::list<std::string> weights(
    "weights", cl::multi_val(2),
    cl::desc("--weights ROWS FILE: write the attention weights of query rows "
             "ROWS (e.g. 0,5,17) of every batch entry and head, recomputed "
             "as exp(score - lse) from the kernel's lse output, to FILE (CSV: "
             "b,h,i, then one weight per key); needs lse=true"),
    cl::value_desc("ROWS FILE"), cl::cat(toolOptions));

static CPUKernelFlags flags;

static int usageError(const Twine &message) {
  llvm::errs() << "attn-run: error: " << message << "\n";
  return kUsageErrorExitCode;
}

namespace {
/// One DLTensor argument with its storage, and the float values the
/// reference reads (after rounding to the tensor's element type).
struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  std::vector<float> values;
  DLTensor tensor;
};

/// Everything the reference needs that is not data, taken from the op
/// before lowering consumes it.
struct ProblemTemplate {
  ReferenceProblem problem;
  std::optional<double> scale;
};
} // namespace

static int64_t numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t size : shape)
    n *= size;
  return n;
}

/// Fills `t` with random values of its dtype: uniform [-bound, bound]
/// floats, i32 lengths in [0, maxLen], and booleans that are true 3 times
/// in 4.
static void fillRandom(HostTensor &t, const attn_operand_desc &desc,
                       std::mt19937_64 &rng, int64_t maxLen,
                       float bound = 1.0f) {
  int64_t n = numElements(t.shape);
  t.values.resize(n);
  t.bytes.assign(n * ((desc.dtype_bits + 7) / 8), 0);
  std::uniform_real_distribution<float> uniform(-bound, bound);
  for (int64_t i = 0; i < n; ++i) {
    if (desc.dtype_code == ATTN_DL_BOOL) {
      t.bytes[i] = (rng() % 4) != 0;
      t.values[i] = t.bytes[i];
    } else if (desc.dtype_code == kDLInt && desc.dtype_bits == 8) {
      // A block mask: 30 % empty, 40 % partial, 30 % full blocks.
      int64_t draw = rng() % 10;
      t.bytes[i] = draw < 3 ? 0 : draw < 7 ? 1 : 2;
      t.values[i] = t.bytes[i];
    } else if (desc.dtype_code == kDLInt) {
      int32_t len = static_cast<int32_t>(rng() % (maxLen + 1));
      std::memcpy(&t.bytes[4 * i], &len, 4);
      t.values[i] = len;
    } else if (desc.dtype_bits == 32) {
      float x = uniform(rng);
      std::memcpy(&t.bytes[4 * i], &x, 4);
      t.values[i] = x;
    } else {
      bool bf16 = desc.dtype_code == kDLBfloat;
      float x = uniform(rng);
      uint16_t bits = bf16 ? floatToBf16(x) : floatToHalf(x);
      std::memcpy(&t.bytes[2 * i], &bits, 2);
      t.values[i] = bf16 ? bf16ToFloat(bits) : halfToFloat(bits);
    }
  }
}

/// Reads element `i` of a float tensor as double.
static double readFloat(const HostTensor &t, const attn_operand_desc &desc,
                        int64_t i) {
  if (desc.dtype_bits == 32) {
    float x;
    std::memcpy(&x, &t.bytes[4 * i], 4);
    return x;
  }
  uint16_t bits;
  std::memcpy(&bits, &t.bytes[2 * i], 2);
  return desc.dtype_code == kDLBfloat ? bf16ToFloat(bits) : halfToFloat(bits);
}

/// The rounding of a float to the 16-bit type of `desc` and back; null for
/// f32.
static float (*roundTo(const attn_operand_desc &desc))(float) {
  if (desc.dtype_bits == 32)
    return nullptr;
  if (desc.dtype_code == kDLBfloat)
    return [](float x) { return bf16ToFloat(floatToBf16(x)); };
  return [](float x) { return halfToFloat(floatToHalf(x)); };
}

/// The default tolerance: what rounding the output to its dtype costs, with
/// room for f32 accumulation (outputs are convex combinations of values in
/// [-1, 1]).
static double defaultTolerance(const attn_operand_desc &out) {
  if (out.dtype_bits == 32)
    return 1e-4;
  return out.dtype_code == kDLBfloat ? 1.6e-2 : 2e-3;
}

/// The reference's copy of a structured mask: its parameters only (the
/// reference evaluates them by its own formulas).
static ReferenceMask describeMask(StructuredMaskAttrInterface mask) {
  using Kind = ReferenceMask::Kind;
  ReferenceMask m;
  auto parts = [&](Kind kind, ArrayRef<StructuredMaskAttrInterface> masks) {
    m.kind = kind;
    for (StructuredMaskAttrInterface part : masks)
      m.parts.push_back(describeMask(part));
  };
  auto set = [&](Kind kind, std::initializer_list<int64_t> numbers) {
    m.kind = kind;
    llvm::copy(numbers, m.n.begin());
  };
  llvm::TypeSwitch<Attribute>(mask)
      .Case([&](CausalMaskAttr causal) {
        set(Kind::Causal, {0});
        m.bottomRight = causal.getAlignment() == Alignment::BottomRight;
      })
      .Case([&](SlidingWindowMaskAttr window) {
        set(Kind::Window, {window.getLeft(), window.getRight()});
        m.bottomRight = window.getAlignment() == Alignment::BottomRight;
      })
      .Case([&](ChunkedMaskAttr a) { set(Kind::Chunked, {a.getSize()}); })
      .Case([&](PrefixMaskAttr a) { set(Kind::Prefix, {a.getSize()}); })
      .Case([&](StridedMaskAttr a) { set(Kind::Strided, {a.getStride()}); })
      .Case([&](FixedMaskAttr a) {
        set(Kind::Fixed, {a.getStride(), a.getSummary()});
      })
      .Case([&](DilatedMaskAttr a) {
        set(Kind::Dilated, {a.getWindow(), a.getDilation()});
      })
      .Case([&](GlobalMaskAttr a) { set(Kind::Global, {a.getTokens()}); })
      .Case([&](BlockBitmapMaskAttr a) {
        set(Kind::BlockBitmap, {a.getBlock(), a.getKeyBlocks()});
        m.bits.assign(a.getRows().begin(), a.getRows().end());
      })
      .Case([&](BigBirdMaskAttr a) {
        set(Kind::BigBird, {a.getBlock(), a.getWindow(), a.getGlobal(),
                            a.getRandom(), a.getSeed()});
      })
      .Case([&](UnionMaskAttr a) { parts(Kind::Union, a.getMasks()); })
      .Case([&](IntersectionMaskAttr a) {
        parts(Kind::Intersection, a.getMasks());
      });
  return m;
}

/// --block-map: the tile map of the kernel's structured mask, at the SPEC's
/// (or the compiled) sequence lengths.
static int drawBlockMap(KernelSource &source) {
  if (!StringRef(blockMap).ends_with(".svg"))
    return usageError("--block-map writes SVG: give a FILE.svg");
  auto ops = source.func.getOps<AttentionOp>();
  StructuredMaskAttrInterface mask =
      ops.empty() ? nullptr : (*ops.begin()).getStructuredMaskAttr();
  if (!mask)
    return usageError("--block-map draws the structured mask of an "
                      "attn.attention; this kernel has none");
  AttentionOp op = *ops.begin();
  Layout layout = op.getLayout();
  int64_t seqPos = getSeqDimPos(layout);
  int64_t qLen = cast<ShapedType>(op.getQuery().getType()).getDimSize(seqPos);
  int64_t kvLen = cast<ShapedType>(op.getKey().getType()).getDimSize(seqPos);
  if (source.spec) {
    qLen = source.spec->qLen;
    kvLen = source.spec->kvLen;
  }
  if (ShapedType::isDynamic(qLen) || ShapedType::isDynamic(kvLen))
    return usageError("--block-map needs static sequence lengths (or a SPEC)");
  int64_t queryTile = flags.queryTileSize > 0 ? flags.queryTileSize : 64;
  int64_t keyTile = flags.kvTileSize > 0 ? flags.kvTileSize : 64;
  // One SVG rectangle per tile.
  constexpr int64_t kMaxTiles = int64_t(1) << 22;
  if (llvm::divideCeil(qLen, queryTile) >
      kMaxTiles / llvm::divideCeil(kvLen, keyTile))
    return usageError("--block-map draws at most 2^22 tiles; give larger "
                      "--query-tile-size and --kv-tile-size");
  std::error_code error;
  llvm::raw_fd_ostream file(blockMap, error);
  if (error)
    return usageError("cannot write '" + blockMap + "': " + error.message());
  std::string title = source.spec ? source.spec->str() : source.description;
  BlockMapCounts counts =
      writeBlockMapSVG(file, mask, qLen, kvLen, queryTile, keyTile, title);
  if (llvm::Error error = closeOutput(file, blockMap))
    return usageError(llvm::toString(std::move(error)));
  llvm::outs() << llvm::formatv(
      "block map {0}: {1} skipped, {2} full, {3} partial tiles\n",
      blockMap.getValue(), counts.skipped, counts.full, counts.partial);
  return 0;
}

template <typename OpTy>
static FailureOr<ProblemTemplate>
describeScoresAndMasks(OpTy op, ProblemTemplate &result);

static FailureOr<ProblemTemplate> describeProblem(func::FuncOp func) {
  ProblemTemplate result;
  ReferenceProblem &p = result.problem;
  auto linearOps = func.getOps<LinearAttentionOp>();
  if (!linearOps.empty()) {
    LinearAttentionOp linear = *linearOps.begin();
    p.linear = true;
    p.bshd = linear.getLayout() == Layout::BSHD;
    if (CausalMaskAttr causal = linear.getStructuredMaskAttr())
      p.structuredMask = describeMask(causal);
    return result;
  }
  auto multiHead = func.getOps<MultiHeadAttentionOp>();
  if (!multiHead.empty())
    return describeScoresAndMasks(*multiHead.begin(), result);
  auto additiveOps = func.getOps<AdditiveAttentionOp>();
  if (!additiveOps.empty()) {
    AdditiveAttentionOp additive = *additiveOps.begin();
    p.bshd = additive.getLayout() == Layout::BSHD;
    // Additive scores default to scale 1, not 1/sqrt(D).
    std::optional<APFloat> scale = additive.getScale();
    result.scale = scale ? scale->convertToDouble() : 1.0;
    if (StructuredMaskAttrInterface mask = additive.getStructuredMaskAttr())
      p.structuredMask = describeMask(mask);
    return result;
  }
  AttentionOp op = *func.getOps<AttentionOp>().begin();
  p.bshd = op.getLayout() == Layout::BSHD;
  if (RelPosAttr relpos = op.getRelposAttr()) {
    p.relBuckets = relpos.getBuckets();
    p.relMaxDistance = relpos.getMaxDistance();
    p.relBidirectional = relpos.getBidirectional();
  }
  p.gaussian = op.getSimilarity() == Similarity::Gaussian;
  return describeScoresAndMasks(op, result);
}

/// The scale, structured mask and regions of `op` into `result`.
template <typename OpTy>
static FailureOr<ProblemTemplate>
describeScoresAndMasks(OpTy op, ProblemTemplate &result) {
  ReferenceProblem &p = result.problem;
  if (std::optional<APFloat> scale = op.getScale())
    result.scale = scale->convertToDouble();
  if (StructuredMaskAttrInterface mask = op.getStructuredMaskAttr())
    p.structuredMask = describeMask(mask);
  if (!op.getScoreMod().empty()) {
    auto fn = interpretScoreMod(op.getScoreMod());
    if (failed(fn))
      return failure();
    p.scoreMod = *fn;
  }
  if (!op.getMaskMod().empty()) {
    auto fn = interpretMaskMod(op.getMaskMod());
    if (failed(fn))
      return failure();
    p.maskMod = *fn;
  }
  return result;
}

/// Parses "sq=17,sk=33" into `sizes`.
static llvm::Error parseDims(StringRef text, int64_t *sizes) {
  SmallVector<StringRef> pairs;
  text.split(pairs, ',', -1, /*KeepEmpty=*/false);
  if (pairs.empty())
    return llvm::createStringError("--dims needs NAME=SIZE pairs, got '" +
                                   text + "'");
  unsigned given = 0;
  for (StringRef pair : pairs) {
    auto [key, value] = pair.split('=');
    int symbol = llvm::StringSwitch<int>(key.trim())
                     .Case("b", ATTN_SYM_B)
                     .Case("hq", ATTN_SYM_HQ)
                     .Case("hkv", ATTN_SYM_HKV)
                     .Case("sq", ATTN_SYM_SQ)
                     .Case("sk", ATTN_SYM_SK)
                     .Case("d", ATTN_SYM_D)
                     .Case("dv", ATTN_SYM_DV)
                     .Default(-1);
    int64_t size;
    if (symbol < 0)
      return llvm::createStringError("unknown dimension '" + key +
                                     "' in --dims (expected b, hq, hkv, sq, "
                                     "sk, d or dv)");
    if (value.trim().getAsInteger(10, size) || size <= 0)
      return llvm::createStringError(
          "--dims " + key + " must be a positive integer, got '" + value + "'");
    if (given & (1u << symbol))
      return llvm::createStringError("--dims gives '" + key.trim() + "' twice");
    given |= 1u << symbol;
    sizes[symbol] = size;
  }
  return llvm::Error::success();
}

/// The shape of `operand` for the problem sizes `sizes`.
static SmallVector<int64_t> operandShape(const KernelOperand &operand,
                                         ArrayRef<int64_t> sizes) {
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < operand.desc.ndim; ++d) {
    int64_t symbol = operand.desc.dims[d], block = operand.desc.blocks[d];
    shape.push_back(symbol < 0  ? -symbol // ATTN_DIM_FIXED
                    : block > 0 ? llvm::divideCeil(sizes[symbol], block)
                                : sizes[symbol]);
  }
  return shape;
}

/// Fails, saying how much, when the tensors of a problem (twice: the
/// reference keeps its own f32 copies) would not fit in this machine's
/// memory, or their size overflows.
static llvm::Error checkHostMemory(const KernelSignature &signature,
                                   ArrayRef<int64_t> sizes) {
  uint64_t total = 0;
  for (const KernelOperand &operand : signature.operands) {
    uint64_t bytes = std::max<int64_t>(operand.desc.dtype_bits / 8, 4) * 2;
    for (int64_t size : operandShape(operand, sizes))
      bytes = llvm::SaturatingMultiply<uint64_t>(bytes, size);
    total = llvm::SaturatingAdd(total, bytes);
  }
  uint64_t memory = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                    static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (total <= memory)
    return llvm::Error::success();
  auto gib = [](uint64_t bytes) {
    return llvm::formatv("{0:F1} GiB", bytes / double(1 << 30)).str();
  };
  return llvm::createStringError(
      "the problem's tensors need " +
      (total == UINT64_MAX ? std::string("more than 2^64 bytes") : gib(total)) +
      " of host memory, more than this machine's " + gib(memory));
}

/// The process's peak resident set so far, in MiB (Linux reports KiB).
static double peakRssMegabytes() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

/// One problem on the GPU: every tensor copied to device memory, the
/// kernel's scratch buffers, and each launch's arguments (each buffer as a
/// 1-D memref: allocated and aligned pointer, offset, size, stride; then the
/// scalars) and grid.
struct GPURun {
  std::vector<uint64_t> pointers, scratch;
  std::vector<int64_t> sizes, scratchSizes;
  int64_t zero = 0, one = 1;
  /// Per launch: its scalars, parameters and grid (the scalars and params
  /// point into these vectors, which are sized once).
  std::vector<std::vector<int64_t>> scalars;
  std::vector<std::vector<void *>> params;
  std::vector<std::array<unsigned, 3>> grids;
};

static llvm::Error prepareGPURun(CUDADevice &device,
                                 const GPUKernelBinary &kernel,
                                 std::vector<HostTensor> &tensors,
                                 ArrayRef<int64_t> sizes, GPURun &run) {
  for (HostTensor &t : tensors) {
    llvm::Expected<uint64_t> pointer = device.allocate(t.bytes.size());
    if (!pointer)
      return pointer.takeError();
    if (llvm::Error error =
            device.copyToDevice(*pointer, t.bytes.data(), t.bytes.size()))
      return error;
    run.pointers.push_back(*pointer);
    run.sizes.push_back(numElements(t.shape));
  }
  for (const GPUScratch &scratch : kernel.scratch) {
    // The rows of operand rowsOf (all but its last dimension), else a size
    // symbol's (rowsSymbol is -1 then).
    int64_t rows =
        scratch.rowsOf >= 0
            ? numElements(
                  ArrayRef<int64_t>(tensors[scratch.rowsOf].shape).drop_back())
            : sizes[scratch.rowsSymbol];
    run.scratchSizes.push_back(rows * scratch.width);
    llvm::Expected<uint64_t> pointer =
        device.allocate(run.scratchSizes.back() * scratch.elementBytes);
    if (!pointer)
      return pointer.takeError();
    run.scratch.push_back(*pointer);
  }
  run.scalars.resize(kernel.launches.size());
  for (const GPULaunch &launch : kernel.launches) {
    std::vector<void *> &params = run.params.emplace_back();
    for (GPUBuffer buffer : launch.buffers) {
      uint64_t *pointer = buffer.scratch ? &run.scratch[buffer.index]
                                         : &run.pointers[buffer.index];
      int64_t *count = buffer.scratch ? &run.scratchSizes[buffer.index]
                                      : &run.sizes[buffer.index];
      params.insert(params.end(),
                    {pointer, pointer, &run.zero, count, &run.one});
    }
    std::vector<int64_t> &scalars = run.scalars[run.params.size() - 1];
    int64_t gridX, gridY, gridZ = 1;
    if (launch.isAttention()) {
      scalars = {sizes[ATTN_SYM_B], sizes[ATTN_SYM_SQ], sizes[ATTN_SYM_SK],
                 sizes[ATTN_SYM_HQ], sizes[ATTN_SYM_HKV]};
      gridX = llvm::divideCeil(sizes[ATTN_SYM_SQ], launch.blockRows) *
              launch.kvSplits * launch.columnBlocks;
      gridY = sizes[ATTN_SYM_HQ] / launch.packedHeads;
      gridZ = sizes[ATTN_SYM_B];
    } else {
      // y [M, N], its last buffer.
      int64_t *y = static_cast<int64_t *>(params[params.size() - 2]);
      scalars = {*y / launch.columns, launch.reduction, launch.columns};
      gridX = llvm::divideCeil(scalars[0], launch.tileRows);
      gridY = llvm::divideCeil(launch.columns, launch.tileColumns);
    }
    for (int64_t &scalar : scalars)
      params.push_back(&scalar);
    if (gridX > INT32_MAX || gridY > 65535 || gridZ > 65535)
      return llvm::createStringError("the problem exceeds the grid of " +
                                     launch.function);
    run.grids.push_back({static_cast<unsigned>(gridX),
                         static_cast<unsigned>(gridY),
                         static_cast<unsigned>(gridZ)});
  }
  return llvm::Error::success();
}

/// Queues the kernel's launches (none for an empty grid) and waits for
/// them.
static llvm::Error launchGPURun(CUDADevice &device,
                                const GPUKernelBinary &kernel, GPURun &run) {
  for (auto [index, launch] : llvm::enumerate(kernel.launches)) {
    const std::array<unsigned, 3> &grid = run.grids[index];
    if (!grid[0] || !grid[1] || !grid[2])
      continue;
    if (llvm::Error error = device.launch(
            index, grid.data(), static_cast<unsigned>(launch.threads),
            static_cast<unsigned>(launch.dynamicSharedBytes),
            run.params[index]))
      return error;
  }
  return device.synchronize();
}

/// NaN in every element: a kernel that skips an element of an output shows.
static void fillNaN(HostTensor &t, const attn_operand_desc &desc) {
  int64_t n = numElements(t.shape);
  t.bytes.resize(n * desc.dtype_bits / 8);
  for (int64_t i = 0; i < n; ++i) {
    if (desc.dtype_bits == 32) {
      float nan = std::numeric_limits<float>::quiet_NaN();
      std::memcpy(&t.bytes[i * 4], &nan, 4);
      continue;
    }
    // f16 0x7e00, bf16 0x7fc0: quiet NaNs.
    uint16_t nan = desc.dtype_code == kDLBfloat ? 0x7fc0 : 0x7e00;
    std::memcpy(&t.bytes[i * 2], &nan, 2);
  }
}

/// Parses ROWS of --weights: query rows, comma-separated, each below qLen.
static FailureOr<std::vector<int64_t>> parseRows(StringRef text, int64_t qLen) {
  SmallVector<StringRef> parts;
  text.split(parts, ',');
  std::vector<int64_t> rows;
  for (StringRef part : parts) {
    int64_t row;
    if (part.trim().getAsInteger(10, row) || row < 0 || row >= qLen) {
      llvm::errs() << "attn-run: error: --weights: '" << part
                   << "' is not a query row in [0, " << qLen << ")\n";
      return failure();
    }
    rows.push_back(row);
  }
  return rows;
}

/// --weights ROWS FILE: the weights of rows ROWS of every (b, h), from the
/// reference's scores and the kernel's lse: exp(s - lse), 0 where hidden.
static int writeWeights(const ReferenceProblem &p, const float *q,
                        const float *k, const HostTensor &lse,
                        const attn_operand_desc &lseDesc) {
  FailureOr<std::vector<int64_t>> rows = parseRows(weights[0], p.qLen);
  if (failed(rows))
    return kUsageErrorExitCode;
  std::error_code ec;
  llvm::raw_fd_ostream os(weights[1], ec);
  if (ec) {
    llvm::errs() << "attn-run: error: cannot write " << weights[1] << ": "
                 << ec.message() << "\n";
    return 1;
  }
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.qHeads; ++h)
      for (int64_t i : *rows) {
        double rowLse =
            readFloat(lse, lseDesc, (b * p.qHeads + h) * p.qLen + i);
        os << b << "," << h << "," << i;
        for (int64_t j = 0; j < p.kvLen; ++j) {
          std::optional<double> s = referenceScore(p, q, k, b, h, i, j);
          os << "," << (s ? std::exp(*s - rowLse) : 0.0);
        }
        os << "\n";
      }
  if (llvm::Error error = closeOutput(os, weights[1])) {
    llvm::errs() << "attn-run: error: " << llvm::toString(std::move(error))
                 << "\n";
    return 1;
  }
  llvm::outs() << llvm::formatv("weights: {0} rows of {1} keys in {2}\n",
                                p.batch * p.qHeads * rows->size(), p.kvLen,
                                weights[1]);
  return 0;
}

/// Calls `entry` as int(void *...) with the N pointers of `args`.
template <size_t... I>
static int callWithArgs(void *entry, void *const *args,
                        std::index_sequence<I...>) {
  using Fn = int (*)(decltype((void)I, static_cast<void *>(nullptr))...);
  return reinterpret_cast<Fn>(entry)(args[I]...);
}

/// Calls `entry` with the `count` pointers of `args`, for count in [N, 11].
template <size_t N = 4>
static int callWithCount(void *entry, void *const *args, size_t count) {
  if (count == N)
    return callWithArgs(entry, args, std::make_index_sequence<N>());
  if constexpr (N < 11)
    return callWithCount<N + 1>(entry, args, count);
  llvm::report_fatal_error("a kernel takes 4 to 11 DLTensors");
}

/// Calls a kernel's entry point with one DLTensor per operand (4 to 11: q,
/// k, v, out and every optional operand).
static int callEntry(void *entry, std::vector<HostTensor> &tensors) {
  SmallVector<void *, 11> a;
  for (HostTensor &t : tensors)
    a.push_back(&t.tensor);
  return callWithCount(entry, a.data(), a.size());
}

namespace {
/// The sizes of one run, by ATTN_SYM_*.
using ProblemSizes = std::array<int64_t, ATTN_NUM_SYMBOLS>;
} // namespace

static const char *const kSymbolNames[ATTN_NUM_SYMBOLS] = {
    "b", "hq", "hkv", "sq", "sk", "d", "dv", "nb"};

/// A SPEC's score modification and Gaussian kernel, by the reference's own
/// formulas rather than by interpreting what the compiler built for them.
static void useSpecFormulas(const AttentionSpec &spec, ProblemTemplate &t) {
  if (spec.mod == AttentionSpec::ScoreMod::Alibi) {
    std::vector<double> slopes = referenceAlibiSlopes(spec.qHeads);
    t.problem.scoreMod = [slopes](double s, int64_t, int64_t h, int64_t i,
                                  int64_t j) {
      return s + slopes[h] * static_cast<double>(j - i);
    };
  } else if (spec.mod == AttentionSpec::ScoreMod::Softcap) {
    double cap = spec.softcap;
    t.problem.scoreMod = [cap](double s, int64_t, int64_t, int64_t, int64_t) {
      return cap * std::tanh(s / cap);
    };
  }
  // The Gaussian kernel's width comes from the spec, not from the scale the
  // compiler derived from it.
  if (spec.kind == AttentionSpec::Kind::Gaussian) {
    t.problem.gaussian = true;
    t.scale = 1.0 / (spec.sigma * spec.sigma) / spec.temperature.value_or(1.0);
  }
}

/// The sizes of each run: the compiled sizes, then the SPEC's, then each
/// --dims. Fails unless every size is known, matches what is compiled, and
/// the run's tensors fit in this machine's memory.
static llvm::Expected<SmallVector<ProblemSizes>>
runSizes(const KernelSignature &signature,
         const std::optional<AttentionSpec> &spec) {
  ProblemSizes base;
  std::copy(std::begin(signature.staticSizes), std::end(signature.staticSizes),
            base.begin());
  if (spec)
    base = {spec->batch, spec->qHeads,  spec->kvHeads,  spec->qLen,
            spec->kvLen, spec->headDim, spec->valueDim, spec->relposBuckets};
  // NB exists only with a rel_bias table, whose bucket count is static.
  base[ATTN_SYM_NB] = std::max<int64_t>(base[ATTN_SYM_NB], 0);
  SmallVector<ProblemSizes> sizeSets;
  for (const std::string &text : dimsList) {
    ProblemSizes sizes = base;
    if (llvm::Error error = parseDims(text, sizes.data()))
      return std::move(error);
    sizeSets.push_back(sizes);
  }
  if (sizeSets.empty())
    sizeSets.push_back(base);
  for (const ProblemSizes &sizes : sizeSets) {
    for (int s = 0; s < ATTN_NUM_SYMBOLS; ++s) {
      if (sizes[s] < 0)
        return llvm::createStringError(
            Twine("dimension '") + kSymbolNames[s] +
            "' is dynamic: give its size with --dims");
      int64_t compiled = signature.staticSizes[s];
      if (compiled >= 0 && sizes[s] != compiled)
        return llvm::createStringError(
            Twine("dimension '") + kSymbolNames[s] + "' is compiled as " +
            Twine(compiled) + "; --dims can only size dynamic dimensions");
    }
    if (llvm::Error error = checkHostMemory(signature, sizes))
      return std::move(error);
  }
  return sizeSets;
}

/// "b=2,hq=4,...": a run's sizes as the check lines and --json print them
/// (nb only where there is a rel_bias table).
static std::string formatSizes(const ProblemSizes &sizes) {
  std::string text;
  for (int s = 0; s < ATTN_NUM_SYMBOLS; ++s)
    if (s != ATTN_SYM_NB || sizes[s])
      text +=
          llvm::formatv("{0}{1}={2}", s ? "," : "", kSymbolNames[s], sizes[s]);
  return text;
}

namespace {
/// A CPU kernel JIT-compiled into this process.
struct JITKernel {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  void *entry = nullptr;
  const char *(*errorString)(int) = nullptr;
  // The fused loops' key-tile counters (null when no loop was fused).
  int64_t *tilesTotal = nullptr, *tilesComputed = nullptr;
};
} // namespace

/// Compiles `func` exactly as attn-compile does and JIT-loads it into
/// `kernel`: 0, or the exit code once the reason is printed.
static int jitCPUKernel(func::FuncOp func, const KernelSignature &signature,
                        JITKernel &kernel) {
  CPUTargetOptions options = flags.options();
  if (llvm::Error error = checkCPUTarget(options))
    return usageError(llvm::toString(std::move(error)));
  options.countTiles = flags.fused; // one atomic add per query tile and counter
  auto llvmCtx = std::make_unique<llvm::LLVMContext>();
  StringRef entryName = "attn_run_kernel";
  FailureOr<std::unique_ptr<llvm::Module>> module =
      compileCPUKernel(func, entryName, signature, options, *llvmCtx);
  if (failed(module))
    return 1;
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  auto machineBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!machineBuilder)
    return usageError(llvm::toString(machineBuilder.takeError()));
  machineBuilder->setCPU(resolveHostCPU(flags.cpu));
  machineBuilder->getFeatures() =
      llvm::SubtargetFeatures(resolveHostFeatures(flags.features));
  machineBuilder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto jit = llvm::orc::LLJITBuilder()
                 .setJITTargetMachineBuilder(std::move(*machineBuilder))
                 .create();
  if (!jit)
    return usageError(llvm::toString(jit.takeError()));
  auto processSymbols =
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
          (*jit)->getDataLayout().getGlobalPrefix());
  if (!processSymbols)
    return usageError(llvm::toString(processSymbols.takeError()));
  (*jit)->getMainJITDylib().addGenerator(std::move(*processSymbols));
  if (llvm::Error error = (*jit)->addIRModule(
          llvm::orc::ThreadSafeModule(std::move(*module), std::move(llvmCtx))))
    return usageError(llvm::toString(std::move(error)));
  auto entrySymbol = (*jit)->lookup(entryName);
  if (!entrySymbol)
    return usageError(llvm::toString(entrySymbol.takeError()));
  kernel.entry = entrySymbol->toPtr<void *>();
  kernel.errorString = (*jit)
                           ->lookup((entryName + "_error_string").str())
                           ->toPtr<const char *(int)>();
  auto counter = [&](StringRef name) -> int64_t * {
    auto symbol = (*jit)->lookup(name);
    if (!symbol) {
      llvm::consumeError(symbol.takeError());
      return nullptr;
    }
    return symbol->toPtr<int64_t *>();
  };
  kernel.tilesTotal = counter("attn_tiles_total");
  kernel.tilesComputed = counter("attn_tiles_computed");
  kernel.jit = std::move(*jit);
  return 0;
}

/// Compiles `func` for `device` exactly as attn-compile does and loads the
/// cubin, else the PTX, into `kernel`: 0, or the exit code once the reason
/// is printed.
static int loadGPUKernel(CUDADevice &device, func::FuncOp func,
                         GPUKernelBinary &kernel) {
  GPUTargetOptions options =
      flags.gpuOptions(chip.empty() ? device.chip() : chip.getValue());
  if (llvm::Error error = checkGPUTarget(options))
    return usageError("--target gpu: " + llvm::toString(std::move(error)));
  FailureOr<GPUKernelBinary> binary =
      compileGPUKernel(func, "attn_run_kernel", options);
  if (failed(binary))
    return 1;
  kernel = *binary;
  std::vector<std::string> functions;
  for (const GPULaunch &launch : kernel.launches)
    functions.push_back(launch.function);
  if (llvm::Error error = device.load(kernel.cubin, kernel.ptx, functions)) {
    llvm::errs() << "attn-run: error: " << llvm::toString(std::move(error))
                 << "\n";
    return 1;
  }
  return 0;
}

namespace {
/// One run's inputs, as the references read them.
struct ReferenceInputs {
  ReferenceProblem p;
  std::vector<int32_t> kvLens, spans; // p's, as integers
  const float *q = nullptr, *k = nullptr, *v = nullptr;
  // attn.multi_head_attention's activations and weights.
  bool isMultiHead = false;
  MultiHeadProjections multiHead{};
  // attn.additive_attention's score weights (its w_q and w_k are
  // multiHead's); its projections are stored in q's element type.
  const float *scoreProj = nullptr;
  int64_t attentionDim = 0;
  float (*additiveRound)(float) = nullptr;
};
} // namespace

/// Makes one DLTensor per operand of `signature` at `sizes` in `tensors`
/// (inputs random, outputs NaN) and hands their data to the references, in
/// `in`.
static void bindOperands(const KernelSignature &signature,
                         const ProblemSizes &sizes,
                         const ProblemTemplate &problemTemplate,
                         std::mt19937_64 &rng, std::vector<HostTensor> &tensors,
                         ReferenceInputs &in) {
  ReferenceProblem &p = in.p;
  p = problemTemplate.problem;
  p.batch = sizes[ATTN_SYM_B];
  p.qHeads = sizes[ATTN_SYM_HQ];
  p.kvHeads = sizes[ATTN_SYM_HKV];
  p.qLen = sizes[ATTN_SYM_SQ];
  p.kvLen = sizes[ATTN_SYM_SK];
  p.headDim = sizes[ATTN_SYM_D];
  p.valueDim = sizes[ATTN_SYM_DV];
  p.scale = problemTemplate.scale.value_or(
      1.0 / std::sqrt(static_cast<double>(p.headDim)));
  MultiHeadProjections &multiHead = in.multiHead;
  llvm::StringMap<const float **> multiHeadInputs = {
      {"x_q", &multiHead.xq}, {"x_k", &multiHead.xk}, {"x_v", &multiHead.xv},
      {"w_q", &multiHead.wq}, {"w_k", &multiHead.wk}, {"w_v", &multiHead.wv},
      {"w_o", &multiHead.wo}};
  in.isMultiHead =
      llvm::any_of(signature.operands, [](const KernelOperand &operand) {
        return operand.name == "x_q";
      });
  tensors.resize(signature.operands.size());
  for (auto [t, operand] : llvm::zip(tensors, signature.operands)) {
    SmallVector<int64_t> bound = operandShape(operand, sizes);
    t.shape.assign(bound.begin(), bound.end());
    // kind=mha's weights W [in, out] are of unit gain, uniform in
    // +-sqrt(3 / in), as models initialize them: the projected Q, K, V
    // and out keep the size of their inputs (unscaled, |out| ~ 10 and
    // scores ~ 30 would make f16 rounding, not the kernel, the error).
    float weightBound = 1.0f;
    if (in.isMultiHead && multiHeadInputs.count(operand.name) &&
        llvm::StringRef(operand.name).starts_with("w_"))
      weightBound = std::sqrt(3.0f / static_cast<float>(t.shape.front()));
    if (!operand.isOutput())
      fillRandom(t, operand.desc, rng, p.kvLen, weightBound);
    else
      fillNaN(t, operand.desc); // what the kernel does not write shows
    t.tensor.data = t.bytes.data();
    t.tensor.device = {kDLCPU, 0};
    t.tensor.ndim = static_cast<int32_t>(t.shape.size());
    t.tensor.dtype = {static_cast<uint8_t>(operand.desc.dtype_code),
                      static_cast<uint8_t>(operand.desc.dtype_bits), 1};
    t.tensor.shape = t.shape.data();
    t.tensor.strides = nullptr;
    t.tensor.byte_offset = 0;

    // Hand the data to the reference, broadcast dims padded to rank 4.
    const std::vector<int64_t> &shape = t.shape;
    auto padded = [&shape](int64_t *dims) {
      int64_t offset = 4 - static_cast<int64_t>(shape.size());
      for (auto [d, size] : llvm::enumerate(shape))
        dims[d + offset] = size;
    };
    if (const float **input = multiHeadInputs.lookup(operand.name)) {
      *input = t.values.data();
      if (operand.name == "x_q") {
        multiHead.embed = t.shape.back();
        multiHead.round = roundTo(operand.desc);
      }
      if (operand.name == "w_o")
        multiHead.outEmbed = t.shape.back();
    } else if (operand.name == "w_score") {
      in.scoreProj = t.values.data();
      in.attentionDim = t.shape.front();
    } else if (operand.name == "q") {
      in.q = t.values.data();
      in.additiveRound = roundTo(operand.desc);
    } else if (operand.name == "k")
      in.k = t.values.data();
    else if (operand.name == "v")
      in.v = t.values.data();
    else if (operand.name == "mask") {
      p.maskData = t.bytes.data();
      padded(p.maskDims);
    } else if (operand.name == "bias") {
      p.biasData = t.values.data();
      padded(p.biasDims);
    } else if (operand.name == "rel_bias") {
      p.relBias = t.values.data();
    } else if (operand.name == "additive_weight") {
      p.additiveWeight = t.values.data();
    } else if (operand.name == "kv_lens") {
      for (float len : t.values)
        in.kvLens.push_back(static_cast<int32_t>(len));
      p.kvLens = in.kvLens.data();
    } else if (operand.name == "spans") {
      for (float span : t.values)
        in.spans.push_back(static_cast<int32_t>(span));
      p.spans = in.spans.data();
    } else if (operand.name == "block_mask") {
      p.blockMask = reinterpret_cast<const int8_t *>(t.bytes.data());
      padded(p.blockMaskDims);
      p.blockSizes[0] = operand.desc.blocks[2];
      p.blockSizes[1] = operand.desc.blocks[3];
    }
  }
}

/// The reference's output of one run into `expected`, and its lse into
/// `expectedLse` where not null (attention only).
static void computeReference(const ReferenceInputs &in, double *expected,
                             double *expectedLse) {
  if (in.multiHead.xq)
    referenceMultiHeadAttention(in.p, in.multiHead, expected);
  else if (in.scoreProj)
    referenceAdditiveAttention(in.p, in.q, in.k, in.v, in.multiHead.wq,
                               in.multiHead.wk, in.scoreProj, in.attentionDim,
                               in.additiveRound, expected);
  else
    referenceAttention(in.p, in.q, in.k, in.v, expected, expectedLse);
}

/// Compares the kernel's output `got` with `want`, prints the check line
/// `what` of the run `runDims`, adds the error to `maxErr` and says whether
/// it is within `tolerance` (scaled by the largest wanted value above 1 with
/// `scaleBySize`).
static bool checkOutput(StringRef what, StringRef runDims,
                        const HostTensor &got, const attn_operand_desc &desc,
                        ArrayRef<double> want, double tolerance,
                        bool scaleBySize, double &maxErr) {
  double err = 0, limit = tolerance, largest = 0;
  for (double w : want)
    largest = std::max(largest, std::fabs(w));
  if (scaleBySize && largest > 1)
    limit *= largest;
  for (auto [i, w] : llvm::enumerate(want)) {
    double value = readFloat(got, desc, i);
    // Equal infinities (the lse of a row without keys) agree.
    double diff = value == w ? 0.0 : std::fabs(value - w);
    if (std::isnan(value) || std::isnan(diff))
      diff = std::numeric_limits<double>::infinity();
    err = std::max(err, diff);
  }
  maxErr = std::max(maxErr, err);
  bool ok = err <= limit;
  llvm::outs() << llvm::formatv(
      "{0} {1}: max abs error {2:e} (tolerance {3:e}) {4}\n", what, runDims,
      err, limit, ok ? "ok" : "FAILED");
  return ok;
}

/// The median time in milliseconds of `count` calls of `runOnce`, after
/// one to warm up.
static double medianMilliseconds(function_ref<void()> runOnce, unsigned count) {
  std::vector<double> times;
  runOnce();
  for (unsigned r = 0; r < count; ++r) {
    auto start = std::chrono::steady_clock::now();
    runOnce();
    std::chrono::duration<double, std::milli> elapsed =
        std::chrono::steady_clock::now() - start;
    times.push_back(elapsed.count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

namespace {
/// What the runs found, for --json.
struct RunResults {
  std::string dims; // each run's, ';'-separated
  bool ok = true;
  double tolerance = 0, maxAbsErr = 0, lseMaxAbsErr = 0;
  double medianMs = 0, gflops = 0; // the first run's, with --bench
  int64_t tilesTotal = 0, tilesComputed = 0, tilesVisible = 0;
};
} // namespace

/// --json: one object describing the runs and the kernel.
static void printJson(const KernelSource &source, const RunResults &r,
                      bool hasLse, unsigned threads, CUDADevice *device,
                      const GPUKernelBinary &gpuKernel) {
  bool onGPU = device != nullptr;
  // On the GPU: the attention kernel's launch.
  auto attention = [&](auto field) -> llvm::json::Value {
    if (!onGPU)
      return nullptr;
    return field(gpuKernel.attention());
  };
  llvm::json::Object result{
      {"spec", source.spec ? source.spec->str() : source.description},
      {"target", target.getValue()},
      {"dims", r.dims},
      {"ok", r.ok},
      {"checked", check.getValue()},
      {"max_abs_err", check ? llvm::json::Value(r.maxAbsErr) : nullptr},
      {"lse_max_abs_err", check && hasLse ? llvm::json::Value(r.lseMaxAbsErr)
                                          : llvm::json::Value(nullptr)},
      {"tolerance", r.tolerance},
      {"median_ms", bench ? llvm::json::Value(r.medianMs) : nullptr},
      {"gflops", bench ? llvm::json::Value(r.gflops) : nullptr},
      {"threads", threads},
      {"fused", flags.fused.getValue()},
      {"ukernels", !onGPU && flags.fused && flags.ukernels},
      {"device",
       onGPU ? llvm::json::Value(device->name() + " (" + gpuKernel.chip + ")")
             : llvm::json::Value(nullptr)},
      // ptxas's registers per thread of the attention kernel.
      {"registers", attention([&](const GPULaunch &launch) {
         return gpuKernel.resourcesOf(launch.function)->registers;
       })},
      // The blocks that share each query block's keys (split-K).
      {"kv_splits",
       attention([](const GPULaunch &launch) { return launch.kvSplits; })},
      // The query heads each block computes (GQA packing).
      {"packed_heads",
       attention([](const GPULaunch &launch) { return launch.packedHeads; })},
      // The blocks that each compute a slice of Dv's columns (linear).
      {"column_blocks",
       attention([](const GPULaunch &launch) { return launch.columnBlocks; })},
      {"tiles_total", r.tilesTotal ? llvm::json::Value(r.tilesTotal) : nullptr},
      {"tiles_computed",
       r.tilesTotal ? llvm::json::Value(r.tilesComputed) : nullptr},
      {"tiles_visible",
       r.tilesVisible ? llvm::json::Value(r.tilesVisible) : nullptr},
      {"seed", seed.getValue()},
      {"peak_rss_mb", peakRssMegabytes()},
  };
  llvm::outs() << llvm::json::Value(std::move(result)) << "\n";
}

/// The options' own errors, before anything is compiled: 0, or the exit
/// code once the reason is printed.
static int checkOptions(unsigned threads) {
  if (inputFile.empty() == specText.empty())
    return usageError("give exactly one of FILE.mlir and --spec");
  if (target != "cpu" && target != "gpu")
    return usageError("unknown --target '" + target +
                      "' (expected cpu or gpu)");
  if (toleranceOpt.getNumOccurrences() && !(toleranceOpt >= 0))
    return usageError("--tolerance must be a non-negative number, got " +
                      llvm::formatv("{0}", toleranceOpt.getValue()).str());
  // Each thread is an OS thread: far more than the machine has only
  // exhausts the process limit.
  if (threads == 0 || threads > 1024)
    return usageError("--threads must be in [1, 1024], got " + Twine(threads));
  if (std::string wrong = flags.check(); !wrong.empty())
    return usageError(wrong);
  if (runs == 0)
    return usageError("--runs must be positive");
  return 0;
}

namespace {
/// The kernel under test: JIT-compiled into this process, or loaded on
/// `device` where there is one.
struct KernelUnderTest {
  CUDADevice *device = nullptr;
  JITKernel cpu;
  GPUKernelBinary gpu;
  GPURun gpuRun; // the current run's buffers and launches

  /// Runs on `tensors` at `sizes` and leaves the outputs (the operands
  /// `outputs`; -1 for none) in them: 0, or 1 once the error is printed.
  int run(std::vector<HostTensor> &tensors, const ProblemSizes &sizes,
          ArrayRef<int64_t> outputs) {
    if (!device) {
      int status = callEntry(cpu.entry, tensors);
      if (status)
        llvm::errs() << "attn-run: error: the kernel returned " << status
                     << ": " << cpu.errorString(status) << "\n";
      return status ? 1 : 0;
    }
    gpuRun = GPURun();
    llvm::Error error = prepareGPURun(*device, gpu, tensors, sizes, gpuRun);
    if (!error)
      error = launchGPURun(*device, gpu, gpuRun);
    for (int64_t i : outputs)
      if (!error && i >= 0)
        error = device->copyToHost(tensors[i].bytes.data(), gpuRun.pointers[i],
                                   tensors[i].bytes.size());
    if (!error)
      return 0;
    llvm::errs() << "attn-run: error: " << llvm::toString(std::move(error))
                 << "\n";
    return 1;
  }

  /// Runs the last run again, for timing (its outputs stay on the GPU).
  void rerun(std::vector<HostTensor> &tensors) {
    if (device)
      llvm::consumeError(launchGPURun(*device, gpu, gpuRun));
    else
      callEntry(cpu.entry, tensors);
  }
};
} // namespace

/// --check: one run's out (and lse, at `lseIndex` >= 0) against the
/// reference's, into `results`.
static void checkRun(const ReferenceInputs &in,
                     const std::vector<HostTensor> &tensors,
                     const KernelSignature &signature, int64_t outIndex,
                     int64_t lseIndex, StringRef runDims, RunResults &results) {
  std::vector<double> expected(numElements(tensors[outIndex].shape));
  std::vector<double> expectedLse(
      lseIndex >= 0 ? numElements(tensors[lseIndex].shape) : 0);
  computeReference(in, expected.data(),
                   lseIndex >= 0 ? expectedLse.data() : nullptr);
  // kind=mha: out's error (its own rounding, and the heads' output's,
  // which W_o passes on) grows with its size.
  bool scaleBySize = in.isMultiHead && toleranceOpt < 0;
  results.ok &= checkOutput("check", runDims, tensors[outIndex],
                            signature.operands[outIndex].desc, expected,
                            results.tolerance, scaleBySize, results.maxAbsErr);
  if (lseIndex >= 0)
    results.ok &=
        checkOutput("check lse", runDims, tensors[lseIndex],
                    signature.operands[lseIndex].desc, expectedLse,
                    results.tolerance, scaleBySize, results.lseMaxAbsErr);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // libMLIR registers an undocumented global -threads; ours replaces it.
  if (cl::Option *clash = cl::getRegisteredOptions().lookup("threads"))
    clash->removeArgument();
  static cl::opt<unsigned> threads(
      "threads", cl::desc("OpenMP threads the kernel runs on"), cl::init(1),
      cl::cat(toolOptions));
  cl::HideUnrelatedOptions({&toolOptions, &codegenOptionCategory()});
  cl::ParseCommandLineOptions(argc, argv,
                              "attn: compile, run, check and benchmark\n");
  if (int error = checkOptions(threads))
    return error;
  omp_set_num_threads(static_cast<int>(threads));
  bool onGPU = target == "gpu";
  // A GPU run needs a GPU: say so before compiling anything.
  std::unique_ptr<CUDADevice> device;
  if (onGPU) {
    llvm::Expected<std::unique_ptr<CUDADevice>> opened = CUDADevice::open();
    if (!opened)
      return usageError("--target gpu: no CUDA GPU here: " +
                        llvm::toString(opened.takeError()));
    device = std::move(*opened);
  }

  DialectRegistry registry;
  registerAttnToolDialects(registry);
  MLIRContext ctx(registry);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &ctx);

  int exitCode = 0;
  FailureOr<KernelSource> source = loadToolKernelSource(
      &ctx, "attn-run", inputFile, specText, funcName, exitCode);
  if (failed(source))
    return exitCode;
  FailureOr<KernelSignature> signature = analyzeKernel(source->func);
  if (failed(signature))
    return 1;
  FailureOr<ProblemTemplate> problemTemplate = describeProblem(source->func);
  if (failed(problemTemplate))
    return 1;
  if (source->spec)
    useSpecFormulas(*source->spec, *problemTemplate);

  if (blockMap.getNumOccurrences() || !blockMap.empty())
    return drawBlockMap(*source);
  if (!weights.empty() &&
      llvm::none_of(signature->operands,
                    [](const KernelOperand &o) { return o.name == "lse"; }))
    return usageError("--weights needs a kernel with an lse output (spec: "
                      "lse=true)");
  llvm::Expected<SmallVector<ProblemSizes>> sizeSets =
      runSizes(*signature, source->spec);
  if (!sizeSets)
    return usageError(llvm::toString(sizeSets.takeError()));

  KernelUnderTest kernel;
  kernel.device = device.get();
  if (int error = onGPU ? loadGPUKernel(*device, source->func, kernel.gpu)
                        : jitCPUKernel(source->func, *signature, kernel.cpu))
    return error;
  JITKernel &cpuKernel = kernel.cpu;
  bool countsTiles = cpuKernel.tilesTotal && cpuKernel.tilesComputed;

  // Where the outputs sit among the operands (lse: -1 when absent).
  auto operandIndex = [&](StringRef name) -> int64_t {
    for (auto [i, operand] : llvm::enumerate(signature->operands))
      if (operand.name == name)
        return i;
    return -1;
  };
  int64_t outIndex = operandIndex("out"), lseIndex = operandIndex("lse");
  RunResults results;
  results.tolerance =
      toleranceOpt >= 0 ? toleranceOpt.getValue()
                        : defaultTolerance(signature->operands[outIndex].desc);
  // Tensor cores multiply P rounded to the inputs' type (FlashAttention's
  // P·V): an f32 output of f16/bf16 inputs is as exact as that type.
  if (onGPU && flags.mma && toleranceOpt < 0)
    results.tolerance = std::max(results.tolerance,
                                 defaultTolerance(signature->operands[0].desc));
  std::mt19937_64 rng(seed);

  for (auto [runIndex, sizes] : llvm::enumerate(*sizeSets)) {
    std::vector<HostTensor> tensors;
    ReferenceInputs in;
    bindOperands(*signature, sizes, *problemTemplate, rng, tensors, in);
    const ReferenceProblem &p = in.p;

    if (countsTiles)
      *cpuKernel.tilesTotal = *cpuKernel.tilesComputed = 0;
    if (int error = kernel.run(tensors, sizes, {outIndex, lseIndex}))
      return error;
    if (countsTiles) {
      results.tilesTotal += *cpuKernel.tilesTotal;
      results.tilesComputed += *cpuKernel.tilesComputed;
      // The brute-force count, when the tile sizes are known.
      if (flags.queryTileSize > 0 && flags.kvTileSize > 0)
        results.tilesVisible +=
            countVisibleTiles(p, flags.queryTileSize, flags.kvTileSize);
    }

    std::string runDims = formatSizes(sizes);
    results.dims += (runIndex ? ";" : "") + runDims;
    if (check)
      checkRun(in, tensors, *signature, outIndex, lseIndex, runDims, results);

    if (!weights.empty() && runIndex == 0)
      if (int error = writeWeights(p, in.q, in.k, tensors[lseIndex],
                                   signature->operands[lseIndex].desc))
        return error;

    if (bench && runIndex == 0) {
      results.medianMs =
          medianMilliseconds([&] { kernel.rerun(tensors); }, runs);
      double flops = 2.0 * (p.headDim + p.valueDim) *
                     static_cast<double>(countVisiblePairs(p));
      results.gflops = flops / (results.medianMs * 1e-3) / 1e9;
      llvm::outs() << llvm::formatv(
          "bench {0}: median {1:f3} ms over {2} runs, {3:f2} GFLOP/s\n",
          runDims, results.medianMs, runs.getValue(), results.gflops);
    }
  }

  if (json)
    printJson(*source, results, lseIndex >= 0, threads, device.get(),
              kernel.gpu);
  return results.ok ? 0 : 1;
}
