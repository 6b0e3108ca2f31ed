//===- ProjectionKernel.cpp - the projections' GEMM kernels ---------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//
//
// y = x w (+ bias), the projections of multi-head and additive attention on
// the GPU (see ProjectedAttention.cpp): on tensor cores for f16 and bf16
// (128 x 64 tiles of y a block), else on FMAs (64 x 64), through slices of
// x and w staged in shared memory.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"
#include "Launches.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::gpu_codegen;

/// memref[at] where `inside`, else `zero` (converted to `to` when set).
static Value loadOrZero(OpBuilder &b, Location loc, Value inside, Value memref,
                        Value at, Value zero, Type to = Type()) {
  return scf::IfOp::create(
             b, loc, inside,
             [&](OpBuilder &tb, Location tl) {
               Value loaded = memref::LoadOp::create(tb, tl, memref, at);
               scf::YieldOp::create(
                   tb, tl, to ? convertFloat(tb, tl, loaded, to) : loaded);
             },
             [&](OpBuilder &eb, Location el) {
               scf::YieldOp::create(eb, el, zero);
             })
      .getResult(0);
}

/// A shared-memory buffer of `shape` and `element`.
static MemRefType sharedBuffer(MLIRContext *ctx, ArrayRef<int64_t> shape,
                               Type element) {
  return MemRefType::get(shape, element, MemRefLayoutAttrInterface(),
                         gpu::AddressSpaceAttr::get(
                             ctx, gpu::GPUDialect::getWorkgroupAddressSpace()));
}

/// Element [row, column] of a row-major [rows, columns] matrix: its 1-D
/// offset, and whether it exists.
static std::pair<Value, Value> elementAt(OpBuilder &b, Location loc, Value row,
                                         Value column, Value rows,
                                         Value columns) {
  IndexMath m{b, loc};
  return {m.add(arith::MulIOp::create(b, loc, row, columns), column),
          m.both(m.slt(row, rows), m.slt(column, columns))};
}

namespace {
/// A projection kernel's operands and shared-memory slices (null where
/// absent).
struct ProjectionOperands {
  Value x, w, bias, y, rows, reduction, columns;
  Value xSlice, wSlice;
};
} // namespace

/// The gpu.func `name` in `module`, in blocks of `threads`, taking [x], [w],
/// [bias] and y as 1-D memrefs, then M, K and N, with the shared-memory
/// slices `workgroup` (16-byte aligned for cp.async and ldmatrix, as
/// createKernelFunc makes every shared buffer); `b` is left at the start of
/// its body.
static ProjectionOperands
createProjectionKernel(OpBuilder &b, gpu::GPUModuleOp module, StringRef name,
                       Location loc, Type x, Type w, Type bias, Type y,
                       TypeRange workgroup, int64_t threads) {
  SmallVector<Type> argTypes;
  for (Type element : {x, w, bias, y})
    if (element)
      argTypes.push_back(MemRefType::get({ShapedType::kDynamic}, element));
  argTypes.append(3, b.getIndexType());
  gpu::GPUFuncOp kernel =
      createKernelFunc(b, loc, module, name, argTypes, workgroup, threads);
  Block &body = kernel.getBody().front();
  b.setInsertionPointToStart(&body);
  // The entry block also holds the workgroup buffers, after the arguments.
  auto args = body.getArguments().take_front(kernel.getNumArguments());
  ProjectionOperands operands;
  operands.x = x ? args[0] : Value();
  operands.w = x ? args[1] : Value();
  operands.bias = bias ? args[x ? 2 : 0] : Value();
  operands.y = args[args.size() - 4];
  operands.rows = args[args.size() - 3];
  operands.reduction = args[args.size() - 2];
  operands.columns = args.back();
  if (!workgroup.empty()) {
    operands.xSlice = kernel.getWorkgroupAttributions()[0];
    operands.wSlice = kernel.getWorkgroupAttributions()[1];
  }
  return operands;
}

/// `value` + bias[column] where there is a bias, as `value`'s type.
static Value addBias(OpBuilder &b, Location loc, Value value, Value column,
                     Value bias) {
  if (!bias)
    return value;
  return arith::AddFOp::create(
      b, loc, value,
      convertFloat(b, loc, memref::LoadOp::create(b, loc, bias, column),
                   value.getType()));
}

/// y[row, column] = value (+ bias[column]) as y's element type, where row < M
/// and column < N.
static void storeOutput(OpBuilder &b, Location loc, Value value, Value row,
                        Value column, Value bias, Value y, Value rows,
                        Value columns) {
  auto [offset, inside] = elementAt(b, loc, row, column, rows, columns);
  auto store = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&store.getThenRegion().front());
  value = addBias(b, loc, value, column, bias);
  memref::StoreOp::create(
      b, loc, convertFloat(b, loc, value, getElementTypeOrSelf(y.getType())), y,
      offset);
}

/// y[row, column + {0, 1}] = `pair` (f32, + bias) as one store, where
/// row < M and column < N: column and N even, y aligned to two elements.
static void storeOutputPair(OpBuilder &b, Location loc, Value pair, Value row,
                            Value column, Value bias, Value y, Value rows,
                            Value columns) {
  auto [offset, inside] = elementAt(b, loc, row, column, rows, columns);
  auto store = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&store.getThenRegion().front());
  if (bias) {
    IndexMath m{b, loc};
    SmallVector<Value> biased;
    for (int64_t c = 0; c < 2; ++c)
      biased.push_back(addBias(b, loc,
                               vector::ExtractOp::create(b, loc, pair, c),
                               m.add(column, m.constant(c)), bias));
    pair = vector::FromElementsOp::create(b, loc, pair.getType(), biased);
  }
  Type element = getElementTypeOrSelf(y.getType());
  if (!element.isF32())
    pair = arith::TruncFOp::create(b, loc, VectorType::get({2}, element), pair);
  vector::StoreOp::create(
      b, loc, pair, y, offset, /*nontemporal=*/false,
      llvm::MaybeAlign(2 * element.getIntOrFloatBitWidth() / 8));
}

/// An FMA projection block of kFmaSide x kFmaSide threads computes its
/// kFmaTile x kFmaTile tile of y, kFmaSpan x kFmaSpan outputs
/// a thread, kFmaSide apart; the reduction runs in slices of kFmaSlice
/// staged in shared memory (in f32). Each step of a slice reads kFmaSpan
/// elements of x and of w from shared memory for kFmaSpan^2 FMAs, where one
/// output a thread read two for one.
static constexpr int64_t kFmaTile = 64;
static constexpr int64_t kFmaSide = 16;
static constexpr int64_t kFmaSpan = 4;
static_assert(kFmaSide * kFmaSpan == kFmaTile);
static constexpr int64_t kFmaThreads = kFmaSide * kFmaSide;
/// Reduction elements of a staged slice.
static constexpr int64_t kFmaSlice = 16;

static void buildFmaProjection(gpu::GPUModuleOp module, StringRef name,
                               Location loc, Type x, Type w, Type bias,
                               Type y) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  IndexMath m{b, loc};
  Type f32 = b.getF32Type();
  SmallVector<Type> workgroup;
  if (x)
    workgroup = {sharedBuffer(ctx, {kFmaTile, kFmaSlice}, f32),
                 sharedBuffer(ctx, {kFmaSlice, kFmaTile}, f32)};
  ProjectionOperands p = createProjectionKernel(
      b, module, name, loc, x, w, bias, y, workgroup, kFmaThreads);
  Value xArg = p.x, wArg = p.w, biasArg = p.bias, yArg = p.y, rows = p.rows,
        reduction = p.reduction, columns = p.columns;
  auto mul = [&](Value a, Value c) -> Value {
    return arith::MulIOp::create(b, loc, a, c);
  };
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value side = m.constant(kFmaSide);
  Value tx = arith::RemUIOp::create(b, loc, tid, side);
  Value ty = arith::DivUIOp::create(b, loc, tid, side);
  Value firstRow = mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
                       m.constant(kFmaTile));
  Value firstColumn = mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::y),
                          m.constant(kFmaTile));
  // The thread's outputs: rows firstRow + ty + 16 i, columns
  // firstColumn + tx + 16 j, so that a warp's shared-memory reads of w are 16
  // consecutive words and its reads of x two words 16 banks apart.
  SmallVector<Value> outRows, outColumns;
  for (int64_t i = 0; i < kFmaSpan; ++i) {
    outRows.push_back(m.add(firstRow, m.add(ty, m.constant(kFmaSide * i))));
    outColumns.push_back(
        m.add(firstColumn, m.add(tx, m.constant(kFmaSide * i))));
  }
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  SmallVector<Value> acc(kFmaSpan * kFmaSpan, zero);
  if (x) {
    Value xTile = p.xSlice, wTile = p.wSlice;
    auto steps = scf::ForOp::create(b, loc, m.constant(0), reduction,
                                    m.constant(kFmaSlice), acc);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(steps.getBody());
    Value first = steps.getInductionVar();
    // Each thread stages kFmaSpan elements of x and of w, a warp's
    // consecutive in memory: x [tile rows, slice] by rows of 16, w [slice,
    // tile columns] by rows of kFmaTile.
    Value xColumn = m.add(first, tx);
    Value tileWide = m.constant(kFmaTile);
    Value wRowInTile = arith::DivUIOp::create(b, loc, tid, tileWide);
    Value wColumnInTile = arith::RemUIOp::create(b, loc, tid, tileWide);
    Value wColumn = m.add(firstColumn, wColumnInTile);
    constexpr int64_t wRowsAtOnce = kFmaThreads / kFmaTile;
    for (int64_t i = 0; i < kFmaSpan; ++i) {
      auto [xOffset, xInside] =
          elementAt(b, loc, outRows[i], xColumn, rows, reduction);
      memref::StoreOp::create(
          b, loc, loadOrZero(b, loc, xInside, xArg, xOffset, zero, f32), xTile,
          ValueRange{m.add(ty, m.constant(kFmaSide * i)), tx});
      Value wRow = m.add(wRowInTile, m.constant(wRowsAtOnce * i));
      auto [wOffset, wInside] =
          elementAt(b, loc, m.add(first, wRow), wColumn, reduction, columns);
      memref::StoreOp::create(
          b, loc, loadOrZero(b, loc, wInside, wArg, wOffset, zero, f32), wTile,
          ValueRange{wRow, wColumnInTile});
    }
    gpu::BarrierOp::create(b, loc);
    auto dot = scf::ForOp::create(
        b, loc, m.constant(0), m.constant(kFmaSlice), m.constant(1),
        steps.getRegionIterArgs(),
        [&](OpBuilder &lb, Location ll, Value kk, ValueRange sums) {
          IndexMath lm{lb, ll};
          SmallVector<Value> xs, ws;
          for (int64_t i = 0; i < kFmaSpan; ++i) {
            Value offset = lm.constant(kFmaSide * i);
            xs.push_back(memref::LoadOp::create(
                lb, ll, xTile, ValueRange{lm.add(ty, offset), kk}));
            ws.push_back(memref::LoadOp::create(
                lb, ll, wTile, ValueRange{kk, lm.add(tx, offset)}));
          }
          SmallVector<Value> next;
          for (int64_t i = 0; i < kFmaSpan; ++i)
            for (int64_t j = 0; j < kFmaSpan; ++j)
              next.push_back(math::FmaOp::create(lb, ll, xs[i], ws[j],
                                                 sums[i * kFmaSpan + j]));
          scf::YieldOp::create(lb, ll, next);
        });
    gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, dot.getResults());
    acc.assign(steps.getResults().begin(), steps.getResults().end());
  }
  for (int64_t i = 0; i < kFmaSpan; ++i)
    for (int64_t j = 0; j < kFmaSpan; ++j)
      storeOutput(b, loc, acc[i * kFmaSpan + j], outRows[i], outColumns[j],
                  biasArg, yArg, rows, columns);
  gpu::ReturnOp::create(b, loc);
}

/// A tensor-core projection block: kMmaWarps warps over a kMmaRows x
/// kMmaColumns tile of y, warp wp computing rows kMmaWarpRows wp + [0,
/// kMmaWarpRows) as two row blocks of kMmaColumns / 8 m16n8k16
/// accumulators (so each B fragment serves two mma.sync, as in
/// FlashAttention-2's warps of 32 rows). Slices of kMmaSlice of the
/// reduction, x [kMmaRows, kMmaSlice] and w [kMmaSlice, kMmaColumns], are
/// staged in shared memory as they are, rows padded to an odd number of
/// 16-byte chunks so that ldmatrix is free of bank conflicts. Each 16 of a
/// slice is two x4 ldmatrix of A, four x4 ldmatrix.trans of B and 16
/// mma.sync a warp.
static constexpr int64_t kMmaWarps = 4;
static constexpr int64_t kMmaWarpRows = 32;
static constexpr int64_t kMmaRows = kMmaWarps * kMmaWarpRows;
static constexpr int64_t kMmaColumns = 64;
static constexpr int64_t kMmaThreads = kMmaWarps * 32;
static constexpr int64_t kMmaSlice = 32;
static constexpr int64_t kMmaPadding = 8; // elements: 16 bytes
// cp.async moves 8 elements: chunks of a slice of x and of w a thread.
static constexpr int64_t kXChunks = kMmaRows * kMmaSlice / 8 / kMmaThreads;
static constexpr int64_t kWChunks = kMmaSlice * kMmaColumns / 8 / kMmaThreads;
static_assert(kXChunks * kMmaThreads * 8 == kMmaRows * kMmaSlice &&
              kWChunks * kMmaThreads * 8 == kMmaSlice * kMmaColumns);

namespace {
/// Builds the body of a tensor-core projection kernel, step by step.
class MmaProjectionBuilder {
public:
  MmaProjectionBuilder(OpBuilder &b, Location loc, const ProjectionOperands &p,
                       Type element)
      : b(b), loc(loc), m{b, loc}, p(p), element(element) {}

  void build();

private:
  Value mul(Value a, int64_t c) {
    return arith::MulIOp::create(b, loc, a, m.constant(c));
  }
  Value div(Value a, int64_t c) {
    return arith::DivUIOp::create(b, loc, a, m.constant(c));
  }
  Value rem(Value a, int64_t c) {
    return arith::RemUIOp::create(b, loc, a, m.constant(c));
  }
  /// x[row, k] and w[k, column] as 1-D offsets, and whether they exist.
  std::pair<Value, Value> xAt(Value row, Value k) {
    return elementAt(b, loc, row, k, p.rows, p.reduction);
  }
  std::pair<Value, Value> wAt(Value k, Value column) {
    return elementAt(b, loc, k, column, p.reduction, p.columns);
  }
  /// Whether `memref`'s data is aligned to `bytes`.
  Value alignedTo(Value memref, int64_t bytes) {
    return m.eq(
        rem(memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref),
            bytes),
        m.constant(0));
  }
  /// Slice `first` of the reduction into `slot` by cp.async, one group:
  /// 16-byte chunks, a chunk wholly inside or outside (K and N are
  /// multiples of 8 here); one outside copies nothing and reads zeros.
  void copySlice(Value first, Value slot);
  /// Slice `first` into slot 0 element by element (zeros outside).
  void stageSlice(Value first);
  /// acc[rb][n] plus the slice in `slot`.
  SmallVector<Value> multiplySlice(Value slot, ValueRange acc);
  /// The accumulators over the whole reduction from `zeros`: slices by
  /// cp.async, double-buffered, or element by element into one slot.
  SmallVector<Value> accumulateAsync(ArrayRef<Value> zeros);
  SmallVector<Value> accumulateByElements(ArrayRef<Value> zeros);
  /// Stores the accumulators `acc` into `block`: a lane's two columns of
  /// a row as one store with `pairs`, else element by element.
  void storeAll(Block &block, bool pairs, ValueRange acc);

  OpBuilder &b;
  Location loc;
  IndexMath m;
  ProjectionOperands p;
  Type element; // of x and w
  Value tid, warp, lane, firstRow, firstColumn, zeroElement;
  Value step; // kMmaSlice, the reduction loops' step
  // The first row and column of this lane's accumulators.
  Value rowOfLane, columnOfLane;
  // ldmatrix addresses: lane l names row l % 8 of matrix l / 8; A's rows
  // of this lane's matrix and B's, and the column its matrix pair starts.
  Value aRow, bRow, matrixPair;
  VectorType fragA, fragC;
  static constexpr int64_t rowBlocks = kMmaWarpRows / 16;
  static constexpr int64_t outFrags = kMmaColumns / 8;
  static constexpr int64_t accumulators = rowBlocks * outFrags; // [rb][n]
};
} // namespace

void MmaProjectionBuilder::copySlice(Value first, Value slot) {
  auto copy = [&](Value tile, Value tileRow, Value tileColumn, Value source,
                  std::pair<Value, Value> at) {
    Value none = m.constant(0);
    nvgpu::DeviceAsyncCopyOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), tile,
        ValueRange{slot, tileRow, tileColumn}, source,
        ValueRange{arith::SelectOp::create(b, loc, at.second, at.first, none)},
        b.getIndexAttr(8),
        arith::SelectOp::create(b, loc, at.second, m.constant(8), none),
        /*bypassL1=*/b.getUnitAttr());
  };
  // x's rows are 5 chunks apart: 8 lanes (one phase of 16-byte stores)
  // writing the 4 chunks of rows r and r + 4 hit 8 distinct bank groups,
  // where rows r and r + 1 would share one.
  static_assert(kMmaSlice / 8 == 4 && kMmaSlice + kMmaPadding == 40);
  for (int64_t i = 0; i < kXChunks; ++i) {
    Value chunk = m.add(tid, m.constant(kMmaThreads * i));
    Value group = div(chunk, 8), lanePhase = rem(chunk, 8);
    Value xRow = m.add(m.add(mul(div(group, 4), 8), rem(group, 4)),
                       mul(div(lanePhase, 4), 4)),
          xColumn = mul(rem(lanePhase, 4), 8);
    copy(p.xSlice, xRow, xColumn, p.x,
         xAt(m.add(firstRow, xRow), m.add(first, xColumn)));
  }
  for (int64_t i = 0; i < kWChunks; ++i) {
    Value chunk = m.add(tid, m.constant(kMmaThreads * i));
    Value wRow = div(chunk, kMmaColumns / 8),
          wColumn = mul(rem(chunk, kMmaColumns / 8), 8);
    copy(p.wSlice, wRow, wColumn, p.w,
         wAt(m.add(first, wRow), m.add(firstColumn, wColumn)));
  }
  NVVM::CpAsyncCommitGroupOp::create(b, loc);
}

void MmaProjectionBuilder::stageSlice(Value first) {
  // Loops, not unrolled here: unrolled, LLVM kept an address per element
  // live across the reduction loop (234 registers on sm_90).
  Value slot = m.constant(0);
  auto stage = [&](Value tile, Value source, int64_t tileColumns,
                   int64_t elements, auto at) {
    auto loop =
        scf::ForOp::create(b, loc, m.constant(0),
                           m.constant(elements / kMmaThreads), m.constant(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value element = m.add(tid, mul(loop.getInductionVar(), kMmaThreads));
    Value row = div(element, tileColumns), column = rem(element, tileColumns);
    auto [offset, inside] = at(row, column);
    memref::StoreOp::create(
        b, loc, loadOrZero(b, loc, inside, source, offset, zeroElement), tile,
        ValueRange{slot, row, column});
  };
  stage(p.xSlice, p.x, kMmaSlice, kMmaRows * kMmaSlice,
        [&](Value row, Value column) {
          return xAt(m.add(firstRow, row), m.add(first, column));
        });
  stage(p.wSlice, p.w, kMmaColumns, kMmaSlice * kMmaColumns,
        [&](Value row, Value column) {
          return wAt(m.add(first, row), m.add(firstColumn, column));
        });
}

SmallVector<Value> MmaProjectionBuilder::multiplySlice(Value slot,
                                                       ValueRange acc) {
  // A of row block rb from rows kMmaWarpRows warp + 16 rb + [0, 16) of x's,
  // matrices (rows | + 8) x (k | + 8); B by ldmatrix.trans of w's rows as
  // stored, two 8-column fragments per x4 load, each used by both row
  // blocks.
  SmallVector<Value> next(acc);
  for (int64_t ks = 0; ks < kMmaSlice / 16; ++ks) {
    SmallVector<Value, 2> a;
    for (int64_t rb = 0; rb < rowBlocks; ++rb)
      a.push_back(nvgpu::LdMatrixOp::create(
          b, loc, fragA, p.xSlice,
          ValueRange{slot, m.add(aRow, m.constant(16 * rb)),
                     m.add(matrixPair, m.constant(16 * ks))},
          /*transpose=*/false, /*numTiles=*/4));
    for (int64_t n = 0; n < outFrags; n += 2) {
      Value both = nvgpu::LdMatrixOp::create(
          b, loc, fragA, p.wSlice,
          ValueRange{slot, m.add(bRow, m.constant(16 * ks)),
                     m.add(matrixPair, m.constant(8 * n))},
          /*transpose=*/true, /*numTiles=*/4);
      for (int64_t half = 0; half < 2; ++half) {
        Value frag = fragmentPair(b, loc, both, half);
        for (int64_t rb = 0; rb < rowBlocks; ++rb) {
          Value &out = next[rb * outFrags + n + half];
          out = mmaSync(b, loc, a[rb], frag, out);
        }
      }
    }
  }
  return next;
}

SmallVector<Value>
MmaProjectionBuilder::accumulateAsync(ArrayRef<Value> zeros) {
  copySlice(m.constant(0), m.constant(0));
  SmallVector<Value> initial(zeros);
  initial.push_back(m.constant(0));
  auto loop =
      scf::ForOp::create(b, loc, m.constant(0), p.reduction, step, initial);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  ValueRange state = loop.getRegionIterArgs();
  Value slot = state.back(), other = m.sub(m.constant(1), slot);
  // The next slice (zeros past K) goes to the other slot while this one
  // lands and is multiplied.
  copySlice(m.add(loop.getInductionVar(), step), other);
  NVVM::CpAsyncWaitGroupOp::create(b, loc, 1);
  gpu::BarrierOp::create(b, loc);
  SmallVector<Value> next = multiplySlice(slot, state.drop_back());
  gpu::BarrierOp::create(b, loc);
  next.push_back(other);
  scf::YieldOp::create(b, loc, next);
  b.setInsertionPointAfter(loop);
  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
  return SmallVector<Value>(loop.getResults().drop_back());
}

SmallVector<Value>
MmaProjectionBuilder::accumulateByElements(ArrayRef<Value> zeros) {
  auto loop =
      scf::ForOp::create(b, loc, m.constant(0), p.reduction, step, zeros);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  stageSlice(loop.getInductionVar());
  gpu::BarrierOp::create(b, loc);
  SmallVector<Value> next =
      multiplySlice(m.constant(0), loop.getRegionIterArgs());
  gpu::BarrierOp::create(b, loc);
  scf::YieldOp::create(b, loc, next);
  return SmallVector<Value>(loop.getResults());
}

void MmaProjectionBuilder::storeAll(Block &block, bool pairs, ValueRange acc) {
  // Accumulator [rb][n] holds rows 16 rb + g and 16 rb + g + 8 (g = lane /
  // 4) of the warp's rows, columns 8 n + 2 (lane % 4) + [0, 2).
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&block);
  for (int64_t rb = 0; rb < rowBlocks; ++rb)
    for (int64_t n = 0; n < outFrags; ++n)
      for (int64_t r = 0; r < 2; ++r) {
        Value pair =
            vector::ExtractOp::create(b, loc, acc[rb * outFrags + n], r);
        Value row = m.add(rowOfLane, m.constant(16 * rb + 8 * r));
        Value column = m.add(columnOfLane, m.constant(8 * n));
        if (pairs) {
          storeOutputPair(b, loc, pair, row, column, p.bias, p.y, p.rows,
                          p.columns);
          continue;
        }
        for (int64_t c = 0; c < 2; ++c)
          storeOutput(b, loc, vector::ExtractOp::create(b, loc, pair, c), row,
                      m.add(column, m.constant(c)), p.bias, p.y, p.rows,
                      p.columns);
      }
}

void MmaProjectionBuilder::build() {
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  warp = div(tid, 32), lane = rem(tid, 32);
  firstRow = mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x), kMmaRows);
  firstColumn =
      mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::y), kMmaColumns);
  zeroElement = arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0.0));
  fragA = VectorType::get({4, 2}, element);
  Value laneRow = rem(lane, 8), laneMatrix = div(lane, 8);
  Value matrixHalf = mul(rem(laneMatrix, 2), 8);
  matrixPair = mul(div(laneMatrix, 2), 8);
  aRow = m.add(mul(warp, kMmaWarpRows), m.add(matrixHalf, laneRow));
  bRow = m.add(laneRow, matrixHalf);

  // Where K and N are multiples of 8 and x and w are 16-byte aligned, the
  // slices arrive by cp.async, double-buffered; otherwise element by
  // element into one slot. Two loops, so that neither carries the other's
  // addresses.
  fragC = VectorType::get({2, 2}, b.getF32Type());
  SmallVector<Value> zeros(
      accumulators,
      arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(fragC, b.getF32FloatAttr(0.0f))));
  auto multipleOf8 = [&](Value v) { return m.eq(rem(v, 8), m.constant(0)); };
  Value aligned =
      m.both(m.both(multipleOf8(p.reduction), multipleOf8(p.columns)),
             m.both(alignedTo(p.x, 16), alignedTo(p.w, 16)));
  step = m.constant(kMmaSlice);
  auto paths = scf::IfOp::create(b, loc, SmallVector<Type>(accumulators, fragC),
                                 aligned, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&paths.getThenRegion().front());
    scf::YieldOp::create(b, loc, accumulateAsync(zeros));
    b.setInsertionPointToStart(&paths.getElseRegion().front());
    scf::YieldOp::create(b, loc, accumulateByElements(zeros));
  }

  rowOfLane = m.add(m.add(firstRow, mul(warp, kMmaWarpRows)), div(lane, 4));
  columnOfLane = m.add(firstColumn, mul(rem(lane, 4), 2));
  // Where N is even and y aligned to two elements, a lane writes its two
  // columns of a row as one store (NVPTX splits a store of unstated
  // alignment into elements); otherwise element by element.
  Type yElement = getElementTypeOrSelf(p.y.getType());
  Value paired =
      m.both(m.eq(rem(p.columns, 2), m.constant(0)),
             alignedTo(p.y, 2 * yElement.getIntOrFloatBitWidth() / 8));
  auto epilogue = scf::IfOp::create(b, loc, paired, /*withElseRegion=*/true);
  storeAll(epilogue.getThenRegion().front(), /*pairs=*/true,
           paths.getResults());
  storeAll(epilogue.getElseRegion().front(), /*pairs=*/false,
           paths.getResults());
  gpu::ReturnOp::create(b, loc);
}

static void buildMmaProjection(gpu::GPUModuleOp module, StringRef name,
                               Location loc, Type x, Type w, Type bias,
                               Type y) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  // Two slots of each: the cp.async path copies slice s + 1 into one while
  // the tensor cores read slice s from the other.
  SmallVector<Type> workgroup = {
      sharedBuffer(ctx, {2, kMmaRows, kMmaSlice + kMmaPadding}, x),
      sharedBuffer(ctx, {2, kMmaSlice, kMmaColumns + kMmaPadding}, x)};
  ProjectionOperands p = createProjectionKernel(
      b, module, name, loc, x, w, bias, y, workgroup, kMmaThreads);
  MmaProjectionBuilder(b, loc, p, x).build();
}

ProjectionBlock gpu_codegen::buildProjectionKernel(gpu::GPUModuleOp module,
                                                   StringRef name, Location loc,
                                                   Type x, Type w, Type bias,
                                                   Type y, bool tensorCores) {
  if (tensorCores && x && x == w && (x.isF16() || x.isBF16())) {
    buildMmaProjection(module, name, loc, x, w, bias, y);
    return {kMmaThreads, kMmaRows, kMmaColumns};
  }
  buildFmaProjection(module, name, loc, x, w, bias, y);
  return {kFmaThreads, kFmaTile, kFmaTile};
}
