//===- FMAKernel.cpp - the FMA attention kernel ---------------------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//
//
// The FMA kernel (any float type): T consecutive lanes share a query row,
// each holding about D/T (at most 32) of its query and Dv/T of its
// accumulator in registers; K and V tiles go through shared memory as f32; the
// online softmax runs in registers with exp2 (log2(e) folded in), in steps of a
// few keys.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::gpu_codegen;

void KernelBuilder::buildFma(gpu::GPUFuncOp kernel) {
  Block &body = kernel.getBody().front();
  b.setInsertionPointToStart(&body);
  KernelArgs args = unpackArgs(kernel);
  Value q = args.q, k = args.k, v = args.v, out = args.out;
  Value sq = args.sq, sk = args.sk;
  Value keyTile = args.keyTile, valueTile = args.valueTile;

  Value heads = qHeadCount;
  int64_t t = shape.threadsPerRow;

  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value queryBlock = queryBlockIndex();
  // Plain values, not structured bindings: lambdas below capture them.
  Value head, kvHead;
  std::tie(head, kvHead) = blockHeads();
  Value batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  Value lane = rem(tid, index(t));
  Value qFirst = mul(queryBlock, index(shape.queryRows()));
  // This thread's query row i of query head rowHead.
  Value i, rowHead;
  std::tie(i, rowHead) = blockRow(head, qFirst, div(tid, index(t)));
  Value rowValid = m.slt(i, sq);
  // Mask and bias rows of this row (clamped like its query, so rows past Sq
  // read in bounds), indexed by key below.
  RowOperands rowMasks = rowOperands(args, batch, rowHead, i, rowValid);

  // This lane's slice of its query row, scaled. Rows past Sq read the last
  // row (their results are never stored) so every lane takes part in the
  // shuffles and barriers.
  Value safeRow =
      arith::SelectOp::create(b, loc, rowValid, i, m.sub(sq, index(1)));
  Value qAt = rowOffset(batch, rowHead, safeRow, heads, sq, shape.headDim);
  // The Gaussian and additive scores are linear in it too.
  Value scale = logitScale(args);
  auto qVecType = VectorType::get({shape.headSlice()}, b.getF32Type());
  Value qLoaded = loadRowSlice(q, qAt, lane, shape.headDim);
  Value qSlice = arith::MulFOp::create(
      b, loc, qLoaded, vector::BroadcastOp::create(b, loc, qVecType, scale));
  // Additive: this lane's slice of w[h], scaled; a score is then
  // sum w tanh(q + k) over the row's lanes.
  Value weightSlice;
  if (args.additiveWeight)
    weightSlice = arith::MulFOp::create(
        b, loc,
        loadRowSlice(args.additiveWeight, mul(rowHead, index(shape.headDim)),
                     lane, shape.headDim),
        vector::BroadcastOp::create(b, loc, qVecType, scale));
  Value halfScale;
  if (op.getSimilarity() == Similarity::Gaussian)
    halfScale = vector::BroadcastOp::create(
        b, loc, qVecType,
        arith::MulFOp::create(b, loc, scale, f32(-0.5)).getResult());

  BlockKeys keys = blockKeys(args, batch, head, qFirst);
  // Behind the tensor cores, the block is redone only if they got it wrong.
  if (shape.redoTile)
    redoCheck = scanPartialValues(args, keys, batch, head, kvHead, tid);
  Value end = keys.end;

  auto accType = VectorType::get({shape.valueSlice()}, b.getF32Type());
  Value negInf = f32(-std::numeric_limits<float>::infinity());
  Value zero = f32(0.0);
  // Row i's score of key row jj of the K tile: this lane's part, summed
  // over the row's lanes.
  auto scoreOf = [&](Value jj) {
    Value keySlice = loadTileSlice(keyTile, jj, lane, shape.headDim);
    Value score;
    if (weightSlice) {
      score = chunkedDot(
          weightSlice,
          math::TanhOp::create(
              b, loc, arith::AddFOp::create(b, loc, qLoaded, keySlice)));
    } else {
      // A Gaussian similarity scores k (q - k / 2) (both scaled).
      Value querySide =
          halfScale ? vector::FMAOp::create(b, loc, keySlice, halfScale, qSlice)
                          .getResult()
                    : qSlice;
      score = chunkedDot(querySide, keySlice);
    }
    return combineLanes(score, t, /*max=*/false);
  };
  SmallVector<Value> initial = {
      negInf, zero,
      arith::ConstantOp::create(b, loc, DenseElementsAttr::get(accType, 0.0f))};
  auto tiles = tileLoop(
      keys, shape.kvTile, initial, batch, head,
      [&](Value tileStart, ValueRange state, bool whole) -> SmallVector<Value> {
        gpu::BarrierOp::create(b, loc);
        stageTile(keyTile, k, batch, kvHead, tileStart, end, sk, shape.headDim,
                  tid);
        stageTile(valueTile, v, batch, kvHead, tileStart, end, sk,
                  shape.valueDim, tid);
        gpu::BarrierOp::create(b, loc);
        // Keys in steps of `group`: one rescale of acc and one exp2 of the
        // old max per step, not per key. A partial tile's keys past `end`
        // (zeros in shared memory) are hidden.
        int64_t group = shape.keyGroup;
        Value count =
            whole ? index(shape.kvTile)
                  : mul(arith::CeilDivUIOp::create(
                            b, loc,
                            min(index(shape.kvTile), m.sub(end, tileStart)),
                            index(group)),
                        index(group));
        auto keys = scf::ForOp::create(
            b, loc, index(0), count, index(group), state,
            [&](OpBuilder &kb, Location, Value first, ValueRange carried) {
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPoint(kb.getInsertionBlock(),
                                  kb.getInsertionPoint());
              Value rowMax = carried[0], rowSum = carried[1], acc = carried[2];
              SmallVector<Value> logits;
              Value newMax = rowMax;
              for (int64_t g = 0; g < group; ++g) {
                Value jj = m.add(first, index(g)), j = m.add(tileStart, jj);
                Value visible =
                    whole ? Value() : m.both(rowValid, m.slt(j, end));
                logits.push_back(maskedLogit(args, rowMasks, scoreOf(jj), batch,
                                             rowHead, i, j, visible));
                newMax =
                    arith::MaximumFOp::create(b, loc, newMax, logits.back());
              }
              // Online softmax in base 2.
              Value base = softmaxBase(newMax);
              Value alpha = math::Exp2Op::create(
                  b, loc, arith::SubFOp::create(b, loc, rowMax, base));
              Value newSum = arith::MulFOp::create(b, loc, rowSum, alpha);
              Value newAcc = rescaleUnless(isOne(alpha), acc, [&] {
                return SmallVector<Value>{arith::MulFOp::create(
                    b, loc, acc,
                    vector::BroadcastOp::create(b, loc, accType, alpha))};
              })[0];
              for (int64_t g = 0; g < group; ++g) {
                Value p = math::Exp2Op::create(
                    b, loc, arith::SubFOp::create(b, loc, logits[g], base));
                newSum = arith::AddFOp::create(b, loc, newSum, p);
                Value valueSlice = loadTileSlice(
                    valueTile, m.add(first, index(g)), lane, shape.valueDim);
                // A key the row does not see (p = 0) adds nothing, even a
                // NaN or Inf value. A branch, not a select per element: the
                // rows of a warp mostly agree.
                auto add = scf::IfOp::create(
                    b, loc, TypeRange{accType},
                    arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ONE, p,
                                          zero),
                    /*withElseRegion=*/true);
                {
                  OpBuilder::InsertionGuard branch(b);
                  b.setInsertionPointToStart(&add.getThenRegion().front());
                  scf::YieldOp::create(
                      b, loc,
                      ValueRange{vector::FMAOp::create(
                          b, loc,
                          vector::BroadcastOp::create(b, loc, accType, p),
                          valueSlice, newAcc)});
                  b.setInsertionPointToStart(&add.getElseRegion().front());
                  scf::YieldOp::create(b, loc, ValueRange{newAcc});
                }
                newAcc = add.getResult(0);
              }
              scf::YieldOp::create(b, loc, ValueRange{newMax, newSum, newAcc});
            });
        return SmallVector<Value>(keys.getResults());
      });

  // out = acc / sum, 0 for a row that saw no key (NaN stays NaN).
  Value rowSum = tiles.getResult(1), acc = tiles.getResult(2);
  Value noKey =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, rowSum, zero);
  Value normalized = arith::DivFOp::create(
      b, loc, acc, vector::BroadcastOp::create(b, loc, accType, rowSum));
  Value result = arith::SelectOp::create(
      b, loc, noKey,
      arith::ConstantOp::create(b, loc, DenseElementsAttr::get(accType, 0.0f)),
      normalized);
  Type outElement = getElementTypeOrSelf(out.getType());
  if (!outElement.isF32())
    result = arith::TruncFOp::create(
        b, loc, VectorType::get({shape.valueSlice()}, outElement), result);
  // The row's lanes hold the same max and sum: the first one stores.
  storeLse(args, batch, rowHead, i, tiles.getResult(0), rowSum,
           m.both(rowValid, m.eq(lane, index(0))));
  auto store = scf::IfOp::create(b, loc, rowValid, /*withElseRegion=*/false);
  b.setInsertionPointToStart(&store.getThenRegion().front());
  Value outAt = atSplit(rowOffset(batch, rowHead, i, heads, sq, shape.valueDim),
                        shape.valueDim);
  // Chunks of outChunk() elements, an alignment the launcher checks.
  int64_t chunkBytes =
      shape.outChunk() * outElement.getIntOrFloatBitWidth() / 8;
  scatterSlice(lane, shape.valueDim, result, [&](Value chunk, Value column) {
    vector::StoreOp::create(b, loc, chunk, out, m.add(outAt, column),
                            /*nontemporal=*/false,
                            llvm::MaybeAlign(chunkBytes));
  });
  b.setInsertionPointToEnd(&body);
  gpu::ReturnOp::create(b, loc);
}
