//===- LinearAttentionKernel.cpp - linear attention on the GPU ------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "Launches.h"

#include "attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::gpu_codegen;

/// Threads of a linear attention block.
static constexpr int64_t kLinearThreads = 128;

namespace {
/// One block per (query head, batch entry) keeps the state S = sum_j
/// phi(k_j) v_j^T [D, Dv] and z = sum_j phi(k_j) [D] in shared memory, each
/// thread owning entries of it. Without a mask it folds every key, then
/// writes every row as phi(q_i) S / phi(q_i) z. Causal: row by row, it first
/// folds the keys the row newly sees, then writes the row (a barrier
/// between): linear in Sq + Sk. Where S does not fit in shared memory, the
/// block does all this once per chunk of `width` columns of Dv (z again each
/// time), keeping S [D, width].
class LinearKernelBuilder {
public:
  LinearKernelBuilder(OpBuilder &b, Location loc, LinearAttentionOp op,
                      int64_t width)
      : b(b), loc(loc), m{b, loc}, op(op), width(width) {}

  void build(gpu::GPUFuncOp kernel);

private:
  /// The offset of element (batch, head, s, f) of a [B, H, S, F] tensor in
  /// the op's layout.
  Value offset(Value batch, Value head, Value s, Value f, Value heads,
               Value seq, int64_t feature) {
    bool bhsd = op.getLayout() == Layout::BHSD;
    Value outer =
        bhsd ? m.add(mul(batch, heads), head) : m.add(mul(batch, seq), s);
    Value inner = bhsd ? s : head;
    Value rows = m.add(mul(outer, bhsd ? seq : heads), inner);
    return m.add(mul(rows, m.constant(feature)), f);
  }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  /// memref[at] as f32.
  Value loadF32(Value memref, Value at) {
    return convertFloat(b, loc, memref::LoadOp::create(b, loc, memref, at),
                        b.getF32Type());
  }
  Value phi(Value x) { return createLinearFeatureMap(b, loc, x); }
  /// A loop over [from, to) in steps of the block's threads, from `tid` on.
  void forEachOwned(Value tid, Value to, function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, tid, to, m.constant(kLinearThreads));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
  }

  OpBuilder &b;
  Location loc;
  IndexMath m;
  LinearAttentionOp op;
  /// Columns of Dv a chunk of the state holds.
  int64_t width;
};
} // namespace

void LinearKernelBuilder::build(gpu::GPUFuncOp kernel) {
  Block &body = kernel.getBody().front();
  b.setInsertionPointToStart(&body);
  Value q = body.getArgument(0), k = body.getArgument(1),
        v = body.getArgument(2), out = body.getArgument(3);
  Value sq = body.getArgument(5), sk = body.getArgument(6),
        hq = body.getArgument(7), hkv = body.getArgument(8);
  Value state = kernel.getWorkgroupAttributions()[0],
        norm = kernel.getWorkgroupAttributions()[1];
  int64_t d = cast<ShapedType>(op.getQuery().getType()).getDimSize(3);
  int64_t dv = cast<ShapedType>(op.getValue().getType()).getDimSize(3);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value head = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  Value kvHead = arith::DivUIOp::create(
      b, loc, head, arith::DivUIOp::create(b, loc, hq, hkv));
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  Value stateSize = m.constant(d * width), normSize = m.constant(d);
  auto barrier = [&] { gpu::BarrierOp::create(b, loc); };
  // Whether the last chunk holds fewer than `width` columns, so that a
  // column of the chunk must be checked against Dv.
  bool ragged = dv % width != 0;
  // Runs `body` unless column `column` of Dv lies past its end.
  auto ifColumn = [&](Value column, function_ref<void()> body) {
    if (!ragged)
      return body();
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                         column, m.constant(dv));
    auto guarded = scf::IfOp::create(b, loc, inside, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(guarded.thenBlock());
    body();
  };
  Type outElement = getElementTypeOrSelf(out.getType());

  // The whole computation for the columns [base, base + width) of Dv.
  auto computeColumns = [&](Value base) {
    forEachOwned(tid, stateSize, [&](Value x) {
      memref::StoreOp::create(b, loc, zero, state, x);
    });
    forEachOwned(tid, normSize, [&](Value x) {
      memref::StoreOp::create(b, loc, zero, norm, x);
    });
    barrier();

    // Folds keys [from, to) into the entries this thread owns.
    auto foldKeys = [&](Value from, Value to) {
      auto key = [&](Value j, Value f, int64_t feature, Value memref) {
        return loadF32(memref, offset(batch, kvHead, j, f, hkv, sk, feature));
      };
      // buffer[x] += sum over the keys of term(j).
      auto accumulate = [&](Value buffer, Value x,
                            function_ref<Value(Value)> term) {
        Value init = memref::LoadOp::create(b, loc, buffer, x);
        auto keys = scf::ForOp::create(
            b, loc, from, to, m.constant(1), ValueRange{init},
            [&](OpBuilder &lb, Location, Value j, ValueRange acc) {
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPoint(lb.getInsertionBlock(),
                                  lb.getInsertionPoint());
              scf::YieldOp::create(
                  b, loc,
                  ValueRange{arith::AddFOp::create(b, loc, acc[0], term(j))});
            });
        memref::StoreOp::create(b, loc, keys.getResult(0), buffer, x);
      };
      forEachOwned(tid, stateSize, [&](Value x) {
        Value f = arith::DivUIOp::create(b, loc, x, m.constant(width));
        Value e =
            m.add(base, arith::RemUIOp::create(b, loc, x, m.constant(width)));
        ifColumn(e, [&] {
          accumulate(state, x, [&](Value j) -> Value {
            return arith::MulFOp::create(b, loc, phi(key(j, f, d, k)),
                                         key(j, e, dv, v));
          });
        });
      });
      forEachOwned(tid, normSize, [&](Value f) {
        accumulate(norm, f, [&](Value j) { return phi(key(j, f, d, k)); });
      });
    };
    // Writes rows [first, first + count): (row, column) pairs over threads.
    auto writeRows = [&](Value first, Value count) {
      forEachOwned(tid, mul(count, m.constant(width)), [&](Value p) {
        Value i =
            m.add(first, arith::DivUIOp::create(b, loc, p, m.constant(width)));
        Value column = arith::RemUIOp::create(b, loc, p, m.constant(width));
        Value e = m.add(base, column);
        ifColumn(e, [&] {
          auto sums = scf::ForOp::create(
              b, loc, m.constant(0), m.constant(d), m.constant(1),
              ValueRange{zero, zero},
              [&](OpBuilder &lb, Location, Value f, ValueRange acc) {
                OpBuilder::InsertionGuard guard(b);
                b.setInsertionPoint(lb.getInsertionBlock(),
                                    lb.getInsertionPoint());
                Value feature =
                    phi(loadF32(q, offset(batch, head, i, f, hq, sq, d)));
                Value s = memref::LoadOp::create(
                    b, loc, state, m.add(mul(f, m.constant(width)), column));
                Value z = memref::LoadOp::create(b, loc, norm, f);
                scf::YieldOp::create(
                    b, loc,
                    ValueRange{arith::AddFOp::create(
                                   b, loc, acc[0],
                                   arith::MulFOp::create(b, loc, feature, s)),
                               arith::AddFOp::create(
                                   b, loc, acc[1],
                                   arith::MulFOp::create(b, loc, feature, z))});
              });
          // phi > 0, so the denominator is 0 only for a row without keys.
          Value num = sums.getResult(0), den = sums.getResult(1);
          Value seen = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                             den, zero);
          Value result = arith::SelectOp::create(
              b, loc, seen, arith::DivFOp::create(b, loc, num, den), zero);
          memref::StoreOp::create(b, loc,
                                  convertFloat(b, loc, result, outElement), out,
                                  offset(batch, head, i, e, hq, sq, dv));
        });
      });
    };

    CausalMaskAttr causal = op.getStructuredMaskAttr();
    if (!causal) {
      foldKeys(m.constant(0), sk);
      barrier();
      writeRows(m.constant(0), sq);
      // The next chunk's zeroing must wait for every row's reads.
      if (width != dv)
        barrier();
      return;
    }
    // Row i sees keys j < i + shift + 1 (shift = Sk - Sq bottom-right).
    Value shift = causal.getAlignment() == Alignment::BottomRight
                      ? m.sub(sk, sq)
                      : m.constant(0);
    scf::ForOp::create(
        b, loc, m.constant(0), sq, m.constant(1), ValueRange{m.constant(0)},
        [&](OpBuilder &lb, Location, Value i, ValueRange folded) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
          Value seen = arith::MinSIOp::create(
              b, loc,
              arith::MaxSIOp::create(
                  b, loc, m.add(m.add(i, shift), m.constant(1)), m.constant(0)),
              sk);
          Value next = arith::MaxSIOp::create(b, loc, folded[0], seen);
          foldKeys(folded[0], next);
          barrier();
          writeRows(i, m.constant(1));
          barrier();
          scf::YieldOp::create(b, loc, ValueRange{next});
        });
  };

  if (width == dv) {
    computeColumns(m.constant(0));
  } else {
    scf::ForOp::create(
        b, loc, m.constant(0), m.constant(dv), m.constant(width), ValueRange{},
        [&](OpBuilder &lb, Location, Value base, ValueRange) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
          computeColumns(base);
          scf::YieldOp::create(b, loc);
        });
  }
  gpu::ReturnOp::create(b, loc);
}

/// The linear-attention kernel of `func` ((q, k, v, out) returning one
/// attn.linear_attention): one block per (query head, batch entry).
LogicalResult gpu_codegen::convertLinearAttentionToGPU(func::FuncOp func,
                                                       LinearAttentionOp op,
                                                       int64_t minBlocksPerSM) {
  auto fail = [&](const Twine &why) {
    return op.emitError() << "attn-convert-to-gpu: " << why;
  };
  auto ret = dyn_cast<func::ReturnOp>(func.getBody().front().getTerminator());
  SmallVector<Value> expected = {op.getQuery(), op.getKey(), op.getValue(),
                                 op.getInit()};
  if (!llvm::equal(expected, func.getArguments()) || !ret ||
      ret.getOperands() != op->getResults())
    return fail("the kernel function must take (q, k, v, out) and return the "
                "linear attention's result");
  int64_t d = cast<ShapedType>(op.getQuery().getType()).getDimSize(3);
  int64_t dv = cast<ShapedType>(op.getValue().getType()).getDimSize(3);
  if (ShapedType::isDynamic(d) || ShapedType::isDynamic(dv))
    return fail("head dims must be static");
  // The state [D, width] and the normalizer [D] in f32: all of Dv in one
  // chunk where it fits, else the fewest chunks of equal width that do.
  int64_t maxWidth = (kStaticSharedBytes / 4 - d) / d;
  if (maxWidth < 1)
    return fail("D = " + Twine(d) +
                " leaves no room in 48 KiB of shared memory for a column of "
                "the f32 state besides its normalizer");
  int64_t chunks = llvm::divideCeil(dv, maxWidth);
  int64_t width = llvm::divideCeil(dv, chunks);
  MLIRContext *ctx = func.getContext();
  auto shared = [&](int64_t size) {
    return MemRefType::get(
        {size}, Float32Type::get(ctx), MemRefLayoutAttrInterface(),
        gpu::AddressSpaceAttr::get(
            ctx, gpu::GPUDialect::getWorkgroupAddressSpace()));
  };
  gpu::GPUFuncOp kernel =
      createKernel(func, func.getSymName(), gpu::GPUModuleOp(),
                   TypeRange{shared(d * width), shared(d)}, kLinearThreads);
  if (failed(boundBlocksPerSM(op, kernel, kLinearThreads, minBlocksPerSM)))
    return failure();
  OpBuilder b(ctx);
  LinearKernelBuilder(b, func.getLoc(), op, width).build(kernel);
  // One block per (head, batch entry): block rows past any sequence.
  replaceWithKernelLaunches(func, {{kernel, kLinearThreads}}, op.getLayout(),
                            /*blockRows=*/int64_t(1) << 40);
  return success();
}
