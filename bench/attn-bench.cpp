//===- attn-bench.cpp - attn against a naive loop nest and OpenBLAS -------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
// attn-bench [--quick] [--configs HxSxD,HQ:HKVxSQ:SKxD,...] [--runs N]
//            [--threads 1,2] [--json]
// For each (H, S, D) problem (B = 1, fp32, Hq = Hkv = H, Sq = Sk = S), or
// (Hq:Hkv, Sq:Sk, D) (GQA, decoding), with and without a causal mask
// (bottom-right where Sq < Sk), and for each thread count, times in one
// process
//   attn:  the kernel compiled from the SPEC b=1,hq=Hq,hkv=Hkv,sq=Sq,sk=Sk,
//          d=D[,mask=causal or causal_bottom_right][,mod=...]
//          (compileCPUKernel, JIT-loaded, called through its DLPack entry),
//   naive: a plain C++ loop nest (bench/Peers.cpp),
//   blas:  PyTorch's unfused math path on OpenBLAS (GEMM, softmax, GEMM),
// on the same random inputs, after checking that the naive and BLAS outputs
// agree with attn's. Reports the median time of each and attn's speedups.
//
//===----------------------------------------------------------------------===//

#include "Peers.h"

#include "attn/Target/CPUKernel.h"
#include "attn/Tools/KernelSource.h"
#include "attn/Transforms/Transforms.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"

#include <dlpack/dlpack.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <thread>

using namespace mlir;
using namespace mlir::attn;
using namespace attn_bench;
namespace cl = llvm::cl;

// From libomp, which runs the kernels' parallel loops.
extern "C" void omp_set_num_threads(int);

static cl::OptionCategory benchCategory("attn-bench options");

static cl::opt<bool> quick("quick",
                           cl::desc("Only the 8x512x64 problem, 3 runs"),
                           cl::cat(benchCategory));
static cl::list<std::string>
    configList("configs", cl::CommaSeparated,
               cl::desc("Problems as HxSxD, or HQ:HKVxSQ:SKxD for GQA and "
                        "decoding (e.g. 32:8x1:4096x128; default "
                        "8x512x64,16x2048x64,8x4096x128)"),
               cl::cat(benchCategory));
static cl::list<std::string>
    maskList("masks", cl::CommaSeparated,
             cl::desc("Masks among none, causal (default both)"),
             cl::cat(benchCategory));
static cl::list<std::string>
    modList("mods", cl::CommaSeparated,
            cl::desc("Score mods among none, alibi, softcap:C (default "
                     "none); the ONNX Runtime peer runs only without one"),
            cl::cat(benchCategory));
static cl::opt<unsigned> runs("runs",
                              cl::desc("Timed runs per measurement; the "
                                       "median is reported (default 5)"),
                              cl::init(5), cl::cat(benchCategory));
static cl::opt<unsigned>
    largeRuns("large-runs",
              cl::desc("At most this many runs when S >= 2048 (default 3)"),
              cl::init(3), cl::cat(benchCategory));
static cl::opt<bool> json("json", cl::desc("Also print one JSON line per row"),
                          cl::cat(benchCategory));
static cl::opt<std::string> ortScript(
    "ort",
    cl::desc("Also time ONNX Runtime's MultiHeadAttention with this node "
             "script (bench/ort-peer.mjs; onnxruntime-node on NODE_PATH)"),
    cl::init(""));
static cl::opt<bool>
    fused("fused",
          cl::desc("Benchmark attn's fused (tiled online-softmax) kernel "
                   "(default); --fused=false: the naive lowering"),
          cl::init(true));
static cl::opt<bool>
    ukernels("ukernels",
             cl::desc("With --fused, run the f32 tile steps in the C "
                      "micro-kernel (default); --ukernels=false: through "
                      "linalg"),
             cl::init(true));
static cl::opt<unsigned> seed("seed", cl::desc("Random seed of the inputs"),
                              cl::init(1), cl::cat(benchCategory));
static cl::opt<double> tolerance(
    "tolerance",
    cl::desc("Max abs difference of the naive and BLAS outputs from attn's"),
    cl::init(1e-4), cl::cat(benchCategory));

static constexpr int64_t kLargeSeqLen = 2048;

[[noreturn]] static void fatal(const llvm::Twine &message) {
  llvm::outs().flush();
  llvm::errs() << "attn-bench: error: " << message << "\n";
  std::exit(1);
}

namespace {
/// Hq query heads of Sq rows against Hkv KV heads of Sk keys, head dim D.
struct Config {
  int64_t heads, kvHeads, queryLen, seqLen, headDim;
  /// Self-attention of H heads: the HxSxD form.
  bool isSquare() const { return heads == kvHeads && queryLen == seqLen; }
  std::string name() const {
    if (isSquare())
      return llvm::formatv("{0}x{1}x{2}", heads, seqLen, headDim).str();
    return llvm::formatv("{0}:{1}x{2}:{3}x{4}", heads, kvHeads, queryLen,
                         seqLen, headDim)
        .str();
  }
};

/// 64-byte aligned floats.
class Buffer {
public:
  explicit Buffer(size_t n)
      : n(n), data(static_cast<float *>(
                       std::aligned_alloc(64, ((n * 4 + 63) / 64) * 64)),
                   std::free) {
    if (!data)
      fatal(llvm::formatv("cannot allocate {0} MiB", n * 4 >> 20));
  }
  float *get() const { return data.get(); }
  size_t size() const { return n; }

private:
  size_t n;
  std::unique_ptr<float, void (*)(void *)> data;
};

/// A JIT-compiled attn kernel taking (q, k, v, out) DLTensors.
struct AttnKernel {
  int (*entry)(void *, void *, void *, void *) = nullptr;
  const char *(*errorString)(int) = nullptr;
};

/// Compiles SPECs into one LLJIT, each under its own entry name.
class AttnCompiler {
public:
  AttnCompiler() : ctx(makeRegistry()), diagnostics(sourceMgr, &ctx) {
    ctx.disableMultithreading();
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto machineBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!machineBuilder)
      fatal(llvm::toString(machineBuilder.takeError()));
    machineBuilder->setCPU(resolveHostCPU("host"));
    machineBuilder->getFeatures() =
        llvm::SubtargetFeatures(resolveHostFeatures("host"));
    machineBuilder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    auto created = llvm::orc::LLJITBuilder()
                       .setJITTargetMachineBuilder(std::move(*machineBuilder))
                       .create();
    if (!created)
      fatal(llvm::toString(created.takeError()));
    jit = std::move(*created);
    // The kernels call libm, libc and libomp, all in this process.
    auto processSymbols =
        llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
            jit->getDataLayout().getGlobalPrefix());
    if (!processSymbols)
      fatal(llvm::toString(processSymbols.takeError()));
    jit->getMainJITDylib().addGenerator(std::move(*processSymbols));
  }

  AttnKernel compile(const std::string &spec) {
    llvm::Expected<AttentionSpec> parsed = parseAttentionSpec(spec);
    if (!parsed)
      fatal(llvm::toString(parsed.takeError()));
    FailureOr<KernelSource> source =
        loadKernelSource(&ctx, /*file=*/"", *parsed, /*funcName=*/"");
    if (failed(source))
      fatal("cannot build the kernel for SPEC " + spec);
    FailureOr<KernelSignature> signature = analyzeKernel(source->func);
    if (failed(signature))
      fatal("cannot analyze the kernel for SPEC " + spec);
    const char *expected[] = {"q", "k", "v", "out"};
    if (signature->operands.size() != 4)
      fatal("the kernel for SPEC " + spec + " does not take (q, k, v, out)");
    for (auto [operand, name] : llvm::zip(signature->operands, expected))
      if (operand.name != name || operand.desc.dtype_bits != 32)
        fatal("the kernel for SPEC " + spec +
              " does not take f32 (q, k, v, out)");

    std::string entryName = llvm::formatv("attn_bench_kernel_{0}", count++);
    auto llvmCtx = std::make_unique<llvm::LLVMContext>();
    CPUTargetOptions options; // host CPU and features, as attn-run
    options.fused = fused;
    options.ukernels = ukernels;
    FailureOr<std::unique_ptr<llvm::Module>> module = compileCPUKernel(
        source->func, entryName, *signature, options, *llvmCtx);
    if (failed(module))
      fatal("cannot compile the kernel for SPEC " + spec);
    if (llvm::Error error = jit->addIRModule(llvm::orc::ThreadSafeModule(
            std::move(*module), std::move(llvmCtx))))
      fatal(llvm::toString(std::move(error)));
    auto entry = jit->lookup(entryName);
    if (!entry)
      fatal(llvm::toString(entry.takeError()));
    auto errorString = jit->lookup(entryName + "_error_string");
    if (!errorString)
      fatal(llvm::toString(errorString.takeError()));
    AttnKernel kernel;
    kernel.entry = entry->toPtr<int(void *, void *, void *, void *)>();
    kernel.errorString = errorString->toPtr<const char *(int)>();
    return kernel;
  }

private:
  static DialectRegistry makeRegistry() {
    DialectRegistry registry;
    registerAttnToolDialects(registry);
    return registry;
  }

  MLIRContext ctx;
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  unsigned count = 0;
};

/// A [1, H, S, D] f32 DLTensor over `data`.
struct Tensor4D {
  Tensor4D(int64_t heads, int64_t seqLen, int64_t headDim, float *data)
      : shape{1, heads, seqLen, headDim} {
    tensor.data = data;
    tensor.device = {kDLCPU, 0};
    tensor.ndim = 4;
    tensor.dtype = {kDLFloat, 32, 1};
    tensor.shape = shape;
    tensor.strides = nullptr;
    tensor.byte_offset = 0;
  }
  int64_t shape[4];
  DLTensor tensor;
};

/// A score mod of --mods: its spec suffix and the peers' form.
struct Mod {
  std::string name; // as --mods spells it
  ScoreMod kind = ScoreMod::None;
  float softcap = 0.0f;
};

/// One row of the report.
struct Row {
  Config config;
  bool causal;
  Mod mod;
  unsigned threads, runs;
  double attnMs, naiveMs, blasMs;
  double naiveDiff, blasDiff;
  std::optional<double> ortMs; // with --ort
};
} // namespace

/// ONNX Runtime's median time for `c` through the node script of --ort, or
/// nothing (with a warning) when it cannot run.
static std::optional<double> timeOrt(const Config &c, bool causal,
                                     unsigned threads, unsigned runs) {
  std::string command = llvm::formatv("node '{0}' {1} {2} {3} {4} {5} {6} 2>&1",
                                      ortScript.getValue(), c.heads, c.seqLen,
                                      c.headDim, causal ? 1 : 0, threads, runs);
  FILE *pipe = popen(command.c_str(), "r");
  if (!pipe)
    return std::nullopt;
  std::string output;
  char buffer[512];
  while (fgets(buffer, sizeof(buffer), pipe))
    output += buffer;
  int status = pclose(pipe);
  StringRef line = StringRef(output).trim().rsplit('\n').second;
  if (line.empty())
    line = StringRef(output).trim();
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(line);
  std::optional<double> ms;
  if (parsed)
    if (const llvm::json::Object *object = parsed->getAsObject())
      ms = object->getNumber("ms");
  if (!parsed)
    llvm::consumeError(parsed.takeError());
  if (status != 0 || !ms) {
    llvm::errs() << "attn-bench: warning: the ONNX Runtime peer failed: "
                 << StringRef(output).trim() << "\n";
    return std::nullopt;
  }
  return ms;
}

static double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

/// The median wall time of `runs` calls of `fn`, in milliseconds.
static double medianMs(const std::function<void()> &fn, unsigned runs,
                       bool warmUp) {
  if (warmUp)
    fn();
  std::vector<double> times;
  for (unsigned r = 0; r < runs; ++r) {
    auto start = std::chrono::steady_clock::now();
    fn();
    times.push_back(secondsSince(start) * 1e3);
  }
  std::sort(times.begin(), times.end());
  size_t mid = times.size() / 2;
  return times.size() % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
}

/// Lets the OpenMP and OpenBLAS workers of the previous peer stop spinning
/// (libomp's default blocktime is 200 ms) before the next peer is timed.
static void quiesce() {
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

static double maxAbsDiff(const Buffer &a, const Buffer &b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double diff = std::fabs(double(a.get()[i]) - double(b.get()[i]));
    if (std::isnan(diff))
      return std::numeric_limits<double>::infinity();
    worst = std::max(worst, diff);
  }
  return worst;
}

/// (query, key) pairs a head computes; causal is aligned bottom-right.
static double visiblePairs(const Config &c, bool causal) {
  double m = static_cast<double>(c.queryLen), s = static_cast<double>(c.seqLen);
  return causal ? m * (s - m) + m * (m + 1) / 2 : m * s;
}

/// Useful GFLOP/s: 2 * H * (D + Dv) * visible (query, key) pairs.
static double gflops(const Config &c, bool causal, double ms) {
  return 2.0 * c.heads * (c.headDim + c.headDim) * visiblePairs(c, causal) /
         (ms * 1e-3) / 1e9;
}

/// "A" as (A, A), or "A:B" as (A, B); false unless both are positive.
static bool parsePair(StringRef text, int64_t &first, int64_t &second) {
  auto [a, b] = text.split(':');
  if (a.getAsInteger(10, first))
    return false;
  second = first;
  if (text.contains(':') && b.getAsInteger(10, second))
    return false;
  return first > 0 && second > 0;
}

static Config parseConfig(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef> parts;
  text.trim().split(parts, 'x');
  Config c;
  if (parts.size() != 3 || !parsePair(parts[0], c.heads, c.kvHeads) ||
      !parsePair(parts[1], c.queryLen, c.seqLen) ||
      parts[2].getAsInteger(10, c.headDim) || c.headDim <= 0)
    fatal("bad --configs entry '" + text +
          "' (expected HxSxD or HQ:HKVxSQ:SKxD, e.g. 8x512x64 or "
          "32:8x1:4096x128)");
  if (c.heads % c.kvHeads != 0)
    fatal("bad --configs entry '" + text + "': HQ is not a multiple of HKV");
  if (c.queryLen > c.seqLen)
    fatal("bad --configs entry '" + text + "': SQ is longer than SK");
  return c;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // libMLIR registers an undocumented global -threads; ours replaces it.
  if (cl::Option *clash = cl::getRegisteredOptions().lookup("threads"))
    clash->removeArgument();
  static cl::list<unsigned> threadList("threads", cl::CommaSeparated,
                                       cl::desc("Thread counts (default 1,2)"),
                                       cl::cat(benchCategory));
  cl::HideUnrelatedOptions(benchCategory);
  cl::ParseCommandLineOptions(
      argc, argv, "attn-bench: attn against a naive loop nest and OpenBLAS\n");

  std::vector<Config> configs;
  if (!configList.empty()) {
    for (const std::string &text : configList)
      configs.push_back(parseConfig(text));
  } else if (quick) {
    configs = {{8, 8, 512, 512, 64}};
  } else {
    configs = {{8, 8, 512, 512, 64},
               {16, 16, 2048, 2048, 64},
               {8, 8, 4096, 4096, 128}};
  }
  unsigned baseRuns = runs;
  if (quick && runs.getNumOccurrences() == 0)
    baseRuns = 3;
  if (baseRuns == 0 || largeRuns == 0)
    fatal("--runs and --large-runs must be positive");
  std::vector<unsigned> threadCounts(threadList.begin(), threadList.end());
  if (threadCounts.empty())
    threadCounts = {1, 2};
  for (unsigned t : threadCounts)
    if (t == 0)
      fatal("--threads must be positive");
  unsigned maxThreads =
      *std::max_element(threadCounts.begin(), threadCounts.end());
  std::vector<bool> masks;
  for (const std::string &m : maskList) {
    if (m != "none" && m != "causal")
      fatal("bad --masks entry '" + m + "' (expected none or causal)");
    masks.push_back(m == "causal");
  }
  if (masks.empty())
    masks = {false, true};
  std::vector<Mod> mods;
  for (StringRef m : modList) {
    Mod mod{m.str()};
    double cap = 0;
    if (m == "alibi")
      mod.kind = ScoreMod::Alibi;
    else if (m.consume_front("softcap:") && !m.getAsDouble(cap) && cap > 0)
      mod = Mod{mod.name, ScoreMod::Softcap, float(cap)};
    else if (m != "none")
      fatal("bad --mods entry '" + mod.name +
            "' (expected none, alibi or softcap:C with C > 0)");
    mods.push_back(mod);
  }
  if (mods.empty())
    mods = {Mod{"none"}};

  const char *coreType = std::getenv("OPENBLAS_CORETYPE");
  llvm::outs() << "attn-bench: host " << llvm::sys::getHostCPUName() << ", "
               << std::thread::hardware_concurrency() << " hardware threads; "
               << blasDescription()
               << " (OPENBLAS_CORETYPE=" << (coreType ? coreType : "unset")
               << ")\n";
  llvm::outs() << llvm::formatv(
      "B=1, fp32, Hq=Hkv=H, Sq=Sk=S (or Hq:Hkv, Sq:Sk); median of {0} runs "
      "({1} when Sq*Sk >= {2}^2); GF/s = useful GFLOP/s = "
      "2*Hq*(D+D)*visible_pairs/time\n",
      baseRuns, std::min(baseRuns, largeRuns.getValue()), kLargeSeqLen);
  llvm::outs() << "attn kernel: "
               << (!fused     ? "naive (unfused) lowering"
                   : ukernels ? "fused (tiled online softmax, default tile "
                                "sizes, C micro-kernel steps)"
                              : "fused (tiled online softmax, default tile "
                                "sizes, linalg steps)")
               << "\n";
  llvm::outs().flush();

  AttnCompiler compiler;
  std::vector<Row> rows;
  const char *header = "{0,-16} {1,-14} {2,3} {3,4} {4,11} {5,11} {6,11} "
                       "{7,7} {8,7} {9,7} {10,9} {11,9}\n";
  bool printedHeader = false;
  auto benchStart = std::chrono::steady_clock::now();

  for (const Config &c : configs) {
    size_t n = c.heads * c.queryLen * c.headDim;
    size_t kvN = c.kvHeads * c.seqLen * c.headDim;
    Buffer q(n), k(kvN), v(kvN), attnOut(n), naiveOut(n), blasOut(n);
    Buffer scores(c.heads * c.queryLen * c.seqLen);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (const Buffer *b : {&q, &k, &v})
      for (size_t i = 0; i < b->size(); ++i)
        b->get()[i] = uniform(rng);
    Tensor4D qT(c.heads, c.queryLen, c.headDim, q.get()),
        kT(c.kvHeads, c.seqLen, c.headDim, k.get()),
        vT(c.kvHeads, c.seqLen, c.headDim, v.get()),
        outT(c.heads, c.queryLen, c.headDim, attnOut.get());
    bool large = c.queryLen * c.seqLen >= kLargeSeqLen * kLargeSeqLen;
    unsigned configRuns =
        large ? std::min(baseRuns, largeRuns.getValue()) : baseRuns;

    for (const Mod &mod : mods)
      for (bool causal : masks) {
        std::string maskName = causal ? "causal" : "none";
        if (mod.kind != ScoreMod::None)
          maskName += "+" + mod.name;
        std::string spec = llvm::formatv(
            "b=1,hq={0},hkv={1},sq={2},sk={3},d={4}{5}{6}", c.heads, c.kvHeads,
            c.queryLen, c.seqLen, c.headDim,
            !causal                  ? ""
            : c.queryLen == c.seqLen ? ",mask=causal"
                                     : ",mask=causal_bottom_right",
            mod.kind == ScoreMod::None ? "" : ",mod=" + mod.name);
        auto compileStart = std::chrono::steady_clock::now();
        AttnKernel kernel = compiler.compile(spec);
        llvm::errs() << llvm::formatv("[{0,7:f1}s] {1}: compiled in {2:f2} s\n",
                                      secondsSince(benchStart), spec,
                                      secondsSince(compileStart));

        Problem problem;
        problem.heads = c.heads;
        problem.kvHeads = c.kvHeads;
        problem.queryLen = c.queryLen;
        problem.seqLen = c.seqLen;
        problem.headDim = c.headDim;
        problem.causal = causal;
        problem.scale = 1.0f / std::sqrt(static_cast<float>(c.headDim));
        problem.mod = mod.kind;
        problem.softcap = mod.softcap;

        auto runAttn = [&] {
          int status =
              kernel.entry(&qT.tensor, &kT.tensor, &vT.tensor, &outT.tensor);
          if (status != 0)
            fatal(llvm::formatv("the attn kernel for {0} returned {1}: {2}",
                                spec, status, kernel.errorString(status)));
        };
        unsigned threads = maxThreads;
        auto runNaive = [&] {
          naiveAttention(problem, q.get(), k.get(), v.get(), naiveOut.get(),
                         threads);
        };
        auto runBlas = [&] {
          blasAttention(problem, q.get(), k.get(), v.get(), blasOut.get(),
                        scores.get(), threads);
        };

        // Check the peers against attn on the largest thread count (these
        // calls also warm up every peer's code and pages).
        omp_set_num_threads(threads);
        setBlasThreads(threads);
        runAttn();
        runNaive();
        runBlas();
        double naiveDiff = maxAbsDiff(naiveOut, attnOut);
        double blasDiff = maxAbsDiff(blasOut, attnOut);
        llvm::errs() << llvm::formatv(
            "[{0,7:f1}s] {1} {2}: max |naive - attn| = {3:e2}, max |blas - "
            "attn| = {4:e2}\n",
            secondsSince(benchStart), c.name(), maskName, naiveDiff, blasDiff);
        if (!(naiveDiff <= tolerance) || !(blasDiff <= tolerance))
          fatal(llvm::formatv("{0} mask={1}: the outputs disagree with attn's "
                              "(naive {2:e2}, blas {3:e2}, tolerance {4:e2})",
                              c.name(), maskName, naiveDiff, blasDiff,
                              tolerance.getValue()));

        for (unsigned t : threadCounts) {
          threads = t;
          omp_set_num_threads(t);
          setBlasThreads(t);
          // Large problems run for seconds: the check above warmed them up.
          bool warmUp = !large;
          Row row{c, causal, mod,       t,        configRuns,  0,
                  0, 0,      naiveDiff, blasDiff, std::nullopt};
          quiesce();
          row.attnMs = medianMs(runAttn, configRuns, warmUp);
          quiesce();
          row.naiveMs = medianMs(runNaive, configRuns, warmUp);
          quiesce();
          row.blasMs = medianMs(runBlas, configRuns, warmUp);
          // ORT's MultiHeadAttention peer takes H heads of S rows only.
          if (!ortScript.empty() && mod.kind == ScoreMod::None &&
              c.isSquare()) {
            quiesce();
            row.ortMs = timeOrt(c, causal, t, configRuns);
          }
          rows.push_back(row);

          if (!printedHeader) {
            llvm::outs() << llvm::formatv(
                header, "config", "mask", "thr", "runs", "attn_ms", "naive_ms",
                "blas_ms", "attn", "naive", "blas", "vs_naive", "vs_blas");
            llvm::outs() << llvm::formatv(header, "(HxSxD)", "", "", "", "", "",
                                          "", "GF/s", "GF/s", "GF/s", "speedup",
                                          "speedup");
            printedHeader = true;
          }
          llvm::outs() << llvm::formatv(
              header, c.name(), maskName, t, configRuns,
              llvm::formatv("{0:f2}", row.attnMs),
              llvm::formatv("{0:f2}", row.naiveMs),
              llvm::formatv("{0:f2}", row.blasMs),
              llvm::formatv("{0:f2}", gflops(c, causal, row.attnMs)),
              llvm::formatv("{0:f2}", gflops(c, causal, row.naiveMs)),
              llvm::formatv("{0:f2}", gflops(c, causal, row.blasMs)),
              llvm::formatv("{0:f3}", row.naiveMs / row.attnMs),
              llvm::formatv("{0:f3}", row.blasMs / row.attnMs));
          if (row.ortMs)
            llvm::outs() << llvm::formatv(
                "{0,-16} {1,-14} {2,3}      ort "
                "(com.microsoft.MultiHeadAttention"
                "): {3:f2} ms, {4:f2} GF/s, attn speedup {5:f3}\n",
                "", "", "", *row.ortMs, gflops(c, causal, *row.ortMs),
                *row.ortMs / row.attnMs);
          llvm::outs().flush();
          llvm::errs() << llvm::formatv(
              "[{0,7:f1}s] {1} {2} threads={3} done\n",
              secondsSince(benchStart), c.name(), maskName, t);
        }
      }
  }

  if (json) {
    for (const Row &row : rows) {
      const Config &c = row.config;
      llvm::json::Object object{
          {"config", c.name()},
          {"b", 1},
          {"h", c.heads},
          {"hkv", c.kvHeads},
          {"sq", c.queryLen},
          {"s", c.seqLen},
          {"d", c.headDim},
          {"dtype", "f32"},
          {"mask", row.causal ? "causal" : "none"},
          {"mod", row.mod.name},
          {"threads", row.threads},
          {"runs", row.runs},
          {"attn_ms", row.attnMs},
          {"naive_ms", row.naiveMs},
          {"blas_ms", row.blasMs},
          {"attn_gflops", gflops(c, row.causal, row.attnMs)},
          {"naive_gflops", gflops(c, row.causal, row.naiveMs)},
          {"blas_gflops", gflops(c, row.causal, row.blasMs)},
          {"attn_speedup_vs_naive", row.naiveMs / row.attnMs},
          {"attn_speedup_vs_blas", row.blasMs / row.attnMs},
          {"max_abs_diff_naive", row.naiveDiff},
          {"max_abs_diff_blas", row.blasDiff},
      };
      if (row.ortMs) {
        object["ort_ms"] = *row.ortMs;
        object["ort_gflops"] = gflops(c, row.causal, *row.ortMs);
        object["attn_speedup_vs_ort"] = *row.ortMs / row.attnMs;
      }
      llvm::outs() << llvm::json::Value(std::move(object)) << "\n";
    }
  }
  llvm::errs() << llvm::formatv("[{0,7:f1}s] done\n", secondsSince(benchStart));
  return 0;
}
