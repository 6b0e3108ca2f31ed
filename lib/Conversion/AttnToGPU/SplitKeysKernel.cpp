//===- SplitKeysKernel.cpp - merges the splits of a split-K attention -----===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//
//
// Under a split (KernelShape::kvSplits), the attention kernel's blocks each
// see a run of whole key tiles of their query block and write their rows'
// output, normalized over those keys, and its log-sum-exp into their slice
// of two f32 scratch buffers. The combine kernel merges them exactly: with
// M the rows' largest lse and w_s = exp(lse_s - M), out = sum w_s out_s /
// sum w_s and lse = M + log(sum w_s). A split that saw no key of the row
// has lse -inf, so weight 0, and a split of weight 0 adds nothing; a row no
// split saw writes 0 (lse -inf), and a NaN stays NaN.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::gpu_codegen;

void KernelBuilder::buildCombine(gpu::GPUFuncOp kernel) {
  Block &body = kernel.getBody().front();
  b.setInsertionPointToStart(&body);
  unsigned next = 0;
  auto arg = [&] { return body.getArgument(next++); };
  Value partial = arg(), partialLse = arg(), out = arg();
  Value lse = op.getLseInit() ? arg() : Value();
  kernelBatchCount = arg();
  Value sq = sqArg = arg();
  skArg = arg();
  qHeadCount = headCount(op.getQuery(), arg());
  int64_t dv = shape.valueDim, splits = shape.kvSplits;

  // A warp per row: lane l merges columns l, l + 32, ...
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value row = m.add(mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
                        index(shape.blockRows)),
                    div(tid, index(32)));
  Value lane = rem(tid, index(32));
  Value head = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  auto inside = scf::IfOp::create(b, loc, m.slt(row, sq),
                                  /*withElseRegion=*/false);
  b.setInsertionPointToStart(&inside.getThenRegion().front());

  // The splits' weights, relative to the largest lse (or to 0 when every
  // split's is -inf: then every weight is 0).
  Value rows = mul(mul(kernelBatchCount, qHeadCount), sq);
  Value lseAt = m.add(mul(m.add(mul(batch, qHeadCount), head), sq), row);
  SmallVector<Value> splitLse;
  Value largest = f32(-std::numeric_limits<float>::infinity());
  for (int64_t s = 0; s < splits; ++s) {
    splitLse.push_back(memref::LoadOp::create(
        b, loc, partialLse, m.add(lseAt, mul(index(s), rows))));
    largest = arith::MaximumFOp::create(b, loc, largest, splitLse.back());
  }
  Value base = softmaxBase(largest);
  SmallVector<Value> weights;
  Value total = f32(0.0);
  for (Value splitValue : splitLse) {
    Value shifted = arith::MulFOp::create(
        b, loc, arith::SubFOp::create(b, loc, splitValue, base), f32(M_LOG2E));
    weights.push_back(math::Exp2Op::create(b, loc, shifted));
    total = arith::AddFOp::create(b, loc, total, weights.back());
  }
  Value noKey =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, total, f32(0.0));

  Value outAt = rowOffset(batch, head, row, qHeadCount, sq, dv);
  Type outElement = getElementTypeOrSelf(out.getType());
  scf::ForOp::create(
      b, loc, lane, index(dv), index(32), ValueRange(),
      [&](OpBuilder &cb, Location, Value column, ValueRange) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(cb.getInsertionBlock(), cb.getInsertionPoint());
        Value at = m.add(outAt, column);
        Value sum = f32(0.0);
        for (auto [s, weight] : llvm::enumerate(weights)) {
          Value value = memref::LoadOp::create(
              b, loc, partial, m.add(at, mul(index(s), mul(rows, index(dv)))));
          // A split of weight 0 adds nothing, NaN or Inf of its output
          // neither (as the kernels skip a key of weight 0).
          Value term = arith::SelectOp::create(
              b, loc,
              arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, weight,
                                    f32(0.0)),
              f32(0.0), arith::MulFOp::create(b, loc, weight, value));
          sum = arith::AddFOp::create(b, loc, sum, term);
        }
        Value result = arith::SelectOp::create(
            b, loc, noKey, f32(0.0), arith::DivFOp::create(b, loc, sum, total));
        if (!outElement.isF32())
          result = arith::TruncFOp::create(b, loc, outElement, result);
        memref::StoreOp::create(b, loc, result, out, at);
        scf::YieldOp::create(b, loc);
      });
  if (lse) {
    auto first = scf::IfOp::create(b, loc, m.eq(lane, index(0)),
                                   /*withElseRegion=*/false);
    b.setInsertionPointToStart(&first.getThenRegion().front());
    Value merged = arith::AddFOp::create(
        b, loc, base,
        arith::MulFOp::create(b, loc, math::Log2Op::create(b, loc, total),
                              f32(llvm::numbers::ln2)));
    memref::StoreOp::create(
        b, loc,
        arith::SelectOp::create(b, loc, noKey,
                                f32(-std::numeric_limits<float>::infinity()),
                                merged),
        lse, lseAt);
  }
  b.setInsertionPointToEnd(&body);
  gpu::ReturnOp::create(b, loc);
}
