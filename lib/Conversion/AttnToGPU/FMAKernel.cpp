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

/// What the steps of the FMA kernel share: its arguments, this thread's
/// row and lane, and its slices of the query (and additive weight).
struct KernelBuilder::FmaKernel {
  KernelArgs args;
  Value tid, head, kvHead, batch, lane, qFirst;
  // This thread's query row i of query head rowHead, whether it is one of
  // Sq, and where it reads the mask and bias tensors.
  Value row, rowHead, rowValid;
  RowOperands rowMasks;
  // This lane's slices: of the query row (as read, and scaled), of the
  // additive weight (scaled; null unless additive), and of -scale / 2
  // (Gaussian; else null).
  Value qLoaded, qSlice, weightSlice, halfScale;
  BlockKeys keys;
  VectorType accType;
  Value zero;
};

void KernelBuilder::buildFma(gpu::GPUFuncOp kernel) {
  Block &body = kernel.getBody().front();
  b.setInsertionPointToStart(&body);
  FmaKernel k;
  k.args = unpackArgs(kernel);
  placeFmaRow(k);
  loadFmaQuery(k);
  k.keys = blockKeys(k.args, k.batch, k.head, k.qFirst);
  // Behind the tensor cores, the block is redone only if they got it wrong.
  if (shape.redoTile)
    redoCheck =
        scanPartialValues(k.args, k.keys, k.batch, k.head, k.kvHead, k.tid);

  k.accType = VectorType::get({shape.valueSlice()}, b.getF32Type());
  Value negInf = f32(-std::numeric_limits<float>::infinity());
  k.zero = f32(0.0);
  SmallVector<Value> initial = {
      negInf, k.zero,
      arith::ConstantOp::create(b, loc,
                                DenseElementsAttr::get(k.accType, 0.0f))};
  auto tiles = tileLoop(
      k.keys, shape.kvTile, initial, k.batch, k.head,
      [&](Value tileStart, ValueRange state, bool whole) -> SmallVector<Value> {
        Value end = k.keys.end;
        gpu::BarrierOp::create(b, loc);
        stageTile(k.args.keyTile, k.args.k, k.batch, k.kvHead, tileStart, end,
                  k.args.sk, shape.headDim, k.tid);
        stageTile(k.args.valueTile, k.args.v, k.batch, k.kvHead, tileStart, end,
                  k.args.sk, shape.valueDim, k.tid);
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
              scf::YieldOp::create(
                  b, loc, fmaKeyGroup(k, tileStart, first, carried, whole));
            });
        return SmallVector<Value>(keys.getResults());
      });
  storeFmaOutput(k, tiles);
  b.setInsertionPointToEnd(&body);
  gpu::ReturnOp::create(b, loc);
}

void KernelBuilder::placeFmaRow(FmaKernel &k) {
  int64_t t = shape.threadsPerRow;
  k.tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value queryBlock = queryBlockIndex();
  std::tie(k.head, k.kvHead) = blockHeads();
  k.batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  k.lane = rem(k.tid, index(t));
  k.qFirst = mul(queryBlock, index(shape.queryRows()));
  std::tie(k.row, k.rowHead) = blockRow(k.head, k.qFirst, div(k.tid, index(t)));
  k.rowValid = m.slt(k.row, k.args.sq);
  // Mask and bias rows of this row (clamped like its query, so rows past Sq
  // read in bounds), indexed by key below.
  k.rowMasks = rowOperands(k.args, k.batch, k.rowHead, k.row, k.rowValid);
}

void KernelBuilder::loadFmaQuery(FmaKernel &k) {
  // This lane's slice of its query row, scaled. Rows past Sq read the last
  // row (their results are never stored) so every lane takes part in the
  // shuffles and barriers.
  Value safeRow = arith::SelectOp::create(b, loc, k.rowValid, k.row,
                                          m.sub(k.args.sq, index(1)));
  Value qAt = rowOffset(k.batch, k.rowHead, safeRow, qHeadCount, k.args.sq,
                        shape.headDim);
  // The Gaussian and additive scores are linear in it too.
  Value scale = logitScale(k.args);
  auto qVecType = VectorType::get({shape.headSlice()}, b.getF32Type());
  k.qLoaded = loadRowSlice(k.args.q, qAt, k.lane, shape.headDim);
  k.qSlice = arith::MulFOp::create(
      b, loc, k.qLoaded, vector::BroadcastOp::create(b, loc, qVecType, scale));
  // Additive: this lane's slice of w[h], scaled; a score is then
  // sum w tanh(q + k) over the row's lanes.
  if (k.args.additiveWeight)
    k.weightSlice = arith::MulFOp::create(
        b, loc,
        loadRowSlice(k.args.additiveWeight,
                     mul(k.rowHead, index(shape.headDim)), k.lane,
                     shape.headDim),
        vector::BroadcastOp::create(b, loc, qVecType, scale));
  if (op.getSimilarity() == Similarity::Gaussian)
    k.halfScale = vector::BroadcastOp::create(
        b, loc, qVecType,
        arith::MulFOp::create(b, loc, scale, f32(-0.5)).getResult());
}

Value KernelBuilder::fmaScore(const FmaKernel &k, Value jj) {
  Value keySlice = loadTileSlice(k.args.keyTile, jj, k.lane, shape.headDim);
  Value score;
  if (k.weightSlice) {
    score = chunkedDot(
        k.weightSlice,
        math::TanhOp::create(
            b, loc, arith::AddFOp::create(b, loc, k.qLoaded, keySlice)));
  } else {
    // A Gaussian similarity scores k (q - k / 2) (both scaled).
    Value querySide = k.halfScale ? vector::FMAOp::create(b, loc, keySlice,
                                                          k.halfScale, k.qSlice)
                                        .getResult()
                                  : k.qSlice;
    score = chunkedDot(querySide, keySlice);
  }
  return combineLanes(score, shape.threadsPerRow, /*max=*/false);
}

SmallVector<Value> KernelBuilder::fmaKeyGroup(const FmaKernel &k,
                                              Value tileStart, Value first,
                                              ValueRange carried, bool whole) {
  int64_t group = shape.keyGroup;
  Value end = k.keys.end;
  Value rowMax = carried[0], rowSum = carried[1], acc = carried[2];
  SmallVector<Value> logits;
  Value newMax = rowMax;
  for (int64_t g = 0; g < group; ++g) {
    Value jj = m.add(first, index(g)), j = m.add(tileStart, jj);
    Value visible = whole ? Value() : m.both(k.rowValid, m.slt(j, end));
    logits.push_back(maskedLogit(k.args, k.rowMasks, fmaScore(k, jj), k.batch,
                                 k.rowHead, k.row, j, visible));
    newMax = arith::MaximumFOp::create(b, loc, newMax, logits.back());
  }
  // Online softmax in base 2.
  Value base = softmaxBase(newMax);
  Value alpha =
      math::Exp2Op::create(b, loc, arith::SubFOp::create(b, loc, rowMax, base));
  Value newSum = arith::MulFOp::create(b, loc, rowSum, alpha);
  Value newAcc = rescaleUnless(isOne(alpha), acc, [&] {
    return SmallVector<Value>{arith::MulFOp::create(
        b, loc, acc, vector::BroadcastOp::create(b, loc, k.accType, alpha))};
  })[0];
  for (int64_t g = 0; g < group; ++g) {
    Value p = math::Exp2Op::create(
        b, loc, arith::SubFOp::create(b, loc, logits[g], base));
    newSum = arith::AddFOp::create(b, loc, newSum, p);
    Value valueSlice = loadTileSlice(k.args.valueTile, m.add(first, index(g)),
                                     k.lane, shape.valueDim);
    // A key the row does not see (p = 0) adds nothing, even a NaN or Inf
    // value. A branch, not a select per element: the rows of a warp mostly
    // agree.
    auto add = scf::IfOp::create(
        b, loc, TypeRange{k.accType},
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ONE, p, k.zero),
        /*withElseRegion=*/true);
    OpBuilder::InsertionGuard branch(b);
    b.setInsertionPointToStart(&add.getThenRegion().front());
    scf::YieldOp::create(
        b, loc,
        ValueRange{vector::FMAOp::create(
            b, loc, vector::BroadcastOp::create(b, loc, k.accType, p),
            valueSlice, newAcc)});
    b.setInsertionPointToStart(&add.getElseRegion().front());
    scf::YieldOp::create(b, loc, ValueRange{newAcc});
    newAcc = add.getResult(0);
  }
  return {newMax, newSum, newAcc};
}

void KernelBuilder::storeFmaOutput(const FmaKernel &k, scf::ForOp tiles) {
  // out = acc / sum, 0 for a row that saw no key (NaN stays NaN).
  Value rowSum = tiles.getResult(1), acc = tiles.getResult(2);
  Value noKey =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, rowSum, k.zero);
  Value normalized = arith::DivFOp::create(
      b, loc, acc, vector::BroadcastOp::create(b, loc, k.accType, rowSum));
  Value result = arith::SelectOp::create(
      b, loc, noKey,
      arith::ConstantOp::create(b, loc,
                                DenseElementsAttr::get(k.accType, 0.0f)),
      normalized);
  Type outElement = getElementTypeOrSelf(k.args.out.getType());
  if (!outElement.isF32())
    result = arith::TruncFOp::create(
        b, loc, VectorType::get({shape.valueSlice()}, outElement), result);
  // The row's lanes hold the same max and sum: the first one stores.
  storeLse(k.args, k.batch, k.rowHead, k.row, tiles.getResult(0), rowSum,
           m.both(k.rowValid, m.eq(k.lane, index(0))));
  auto store = scf::IfOp::create(b, loc, k.rowValid, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&store.getThenRegion().front());
  Value outAt = atSplit(rowOffset(k.batch, k.rowHead, k.row, qHeadCount,
                                  k.args.sq, shape.valueDim),
                        shape.valueDim);
  // Chunks of outChunk() elements, an alignment the launcher checks.
  int64_t chunkBytes =
      shape.outChunk() * outElement.getIntOrFloatBitWidth() / 8;
  scatterSlice(k.lane, shape.valueDim, result, [&](Value chunk, Value column) {
    vector::StoreOp::create(b, loc, chunk, k.args.out, m.add(outAt, column),
                            /*nontemporal=*/false,
                            llvm::MaybeAlign(chunkBytes));
  });
}
