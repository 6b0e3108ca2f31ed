//===- KernelBuilder.cpp - pieces both attention kernels use --------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//
//
// What the FMA and tensor-core kernels share: their arguments, K/V staging
// through shared memory, masks and score modifications per score, the tile
// classification of structured masks and block masks, and the loop over
// key tiles.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "attn/IR/StructuredMasks.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::gpu_codegen;

std::pair<Value, Value> KernelBuilder::broadcastRow(Value operand, Value batch,
                                                    Value head, Value row,
                                                    Value sq, Value sk,
                                                    Value rowValid) {
  auto type = cast<ShapedType>(operand.getType());
  Value batchCount = kernelBatchCount;
  Value safeRow =
      arith::SelectOp::create(b, loc, rowValid, row, m.sub(sq, index(1)));
  // The canonical dims (b, h, i, j): their sizes and this element's index.
  Value sizes[4] = {batchCount, qHeadCount, sq, sk};
  Value indices[4] = {batch, head, safeRow, index(0)};
  int64_t lead = 4 - type.getRank();
  Value offset = index(0), stride = index(1), keyStride = index(0);
  for (int64_t d = 3; d >= lead; --d) {
    if (type.getDimSize(d - lead) == 1)
      continue; // broadcast: stride 0
    if (d == 3)
      keyStride = stride;
    offset = m.add(offset, mul(indices[d], stride));
    stride = mul(stride, sizes[d]);
  }
  return {offset, keyStride};
}

void KernelBuilder::stageTile(Value tile, Value source, Value batch,
                              Value kvHead, Value tileStart, Value end,
                              Value sk, int64_t dim, Value tid) {
  Type element = getElementTypeOrSelf(source.getType());
  Type stored = getElementTypeOrSelf(tile.getType());
  // w elements per copy, consecutive threads on consecutive chunks, as
  // vector loads and stores (K and V aligned to kvAlignment by the
  // launcher, the tile to 16 bytes).
  int64_t w = KernelShape::chunkWidth(dim), chunksPerRow = dim / w;
  int64_t chunks = shape.kvTile * chunksPerRow, threads = shape.threads();
  auto loadType = VectorType::get({w}, element);
  auto storeType = VectorType::get({w}, stored);
  Value zeros = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(storeType, b.getFloatAttr(stored, 0.0)));
  auto copy = [&](Value r, Value c) {
    auto [inside, row] = stagedRow(batch, kvHead, tileStart, r, end, sk, dim);
    Value value = vector::LoadOp::create(
        b, loc, loadType, source, ValueRange{m.add(row, c)},
        /*nontemporal=*/false,
        llvm::MaybeAlign(w * element.getIntOrFloatBitWidth() / 8));
    if (element != stored)
      value = arith::ExtFOp::create(b, loc, storeType, value);
    // Rows past the end store 0.
    value = arith::SelectOp::create(b, loc, inside, value, zeros);
    vector::StoreOp::create(
        b, loc, value, tile, ValueRange{r, c}, /*nontemporal=*/false,
        llvm::MaybeAlign(w * stored.getIntOrFloatBitWidth() / 8));
  };
  // When a pass of the threads covers whole rows, a thread keeps its column
  // and steps its row.
  if (threads % chunksPerRow == 0) {
    Value c = mul(rem(tid, index(chunksPerRow)), index(w));
    scf::ForOp::create(
        b, loc, div(tid, index(chunksPerRow)), index(shape.kvTile),
        index(threads / chunksPerRow), ValueRange{},
        [&](OpBuilder &lb, Location, Value r, ValueRange) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
          copy(r, c);
          scf::YieldOp::create(b, loc);
        });
    return;
  }
  scf::ForOp::create(b, loc, tid, index(chunks), index(threads), ValueRange{},
                     [&](OpBuilder &lb, Location, Value e, ValueRange) {
                       OpBuilder::InsertionGuard guard(b);
                       b.setInsertionPoint(lb.getInsertionBlock(),
                                           lb.getInsertionPoint());
                       copy(div(e, index(chunksPerRow)),
                            mul(rem(e, index(chunksPerRow)), index(w)));
                       scf::YieldOp::create(b, loc);
                     });
}

std::pair<Value, Value> KernelBuilder::stagedRow(Value batch, Value kvHead,
                                                 Value tileStart, Value r,
                                                 Value end, Value sk,
                                                 int64_t dim) {
  Value key = m.add(tileStart, r);
  Value inside = m.slt(key, end);
  Value safeKey =
      arith::SelectOp::create(b, loc, inside, key, m.sub(end, index(1)));
  return {inside, rowOffset(batch, kvHead, safeKey, kvHeadCount, sk, dim)};
}

void KernelBuilder::stageTileAsync(Value tile, Value slot, Value source,
                                   Value batch, Value kvHead, Value tileStart,
                                   Value end, Value sk, int64_t dim,
                                   Value tid) {
  // 8 elements of 16 bits per copy. A thread keeps its column and steps its
  // row: a pass of the threads copies `rowsPerPass` whole rows (threads past
  // them idle), so a thread's addresses are one base plus immediate offsets.
  // Chunks dealt out one per thread in turn left an address per pass live
  // across the tile loop where the threads do not cover whole rows: one
  // warp's 24 passes of a D = 96 tile (decoding) spilled 380 bytes on sm_90.
  constexpr int64_t chunk = 8;
  int64_t chunksPerRow = dim / chunk, threads = shape.threads();
  int64_t rowsPerPass = threads / chunksPerRow;
  assert(rowsPerPass > 0 && "a row of at most 32 chunks (D <= 256)");
  Value firstRow = div(tid, index(chunksPerRow));
  Value c = mul(rem(tid, index(chunksPerRow)), index(chunk));
  // With shape.unguardedWholeTiles, a tile whose keys all come before `end`
  // copies them unguarded: its row addresses are then affine in tileStart,
  // cheap to step (most tiles).
  auto copies = [&](bool guarded) {
    OpBuilder::InsertionGuard idle(b);
    if (rowsPerPass * chunksPerRow < threads) {
      auto busy = scf::IfOp::create(
          b, loc, m.slt(tid, index(rowsPerPass * chunksPerRow)),
          /*withElseRegion=*/false);
      b.setInsertionPointToStart(&busy.getThenRegion().front());
    }
    for (int64_t first = 0; first < shape.kvTile; first += rowsPerPass) {
      OpBuilder::InsertionGuard guard(b);
      Value r = m.add(firstRow, index(first));
      if (first + rowsPerPass > shape.kvTile) {
        auto inRange = scf::IfOp::create(b, loc, m.slt(r, index(shape.kvTile)),
                                         /*withElseRegion=*/false);
        b.setInsertionPointToStart(&inRange.getThenRegion().front());
      }
      Value row, count;
      if (guarded) {
        // Rows past the end copy nothing: zeros.
        auto [rowInside, safeRow] =
            stagedRow(batch, kvHead, tileStart, r, end, sk, dim);
        row = safeRow;
        count =
            arith::SelectOp::create(b, loc, rowInside, index(chunk), index(0));
      } else {
        row =
            rowOffset(batch, kvHead, m.add(tileStart, r), kvHeadCount, sk, dim);
      }
      nvgpu::DeviceAsyncCopyOp::create(
          b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), tile,
          tileIndices(slot, r, c), source, ValueRange{m.add(row, c)},
          b.getIndexAttr(chunk), count,
          /*bypassL1=*/b.getUnitAttr());
    }
  };
  if (!shape.unguardedWholeTiles) {
    copies(/*guarded=*/true);
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
    return;
  }
  scf::IfOp::create(
      b, loc, m.sle(m.add(tileStart, index(shape.kvTile)), end),
      [&](OpBuilder &tb, Location) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(tb.getInsertionBlock(), tb.getInsertionPoint());
        copies(/*guarded=*/false);
        scf::YieldOp::create(b, loc);
      },
      [&](OpBuilder &eb, Location) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(eb.getInsertionBlock(), eb.getInsertionPoint());
        copies(/*guarded=*/true);
        scf::YieldOp::create(b, loc);
      });
  NVVM::CpAsyncCommitGroupOp::create(b, loc);
}

KernelBuilder::KernelArgs KernelBuilder::unpackArgs(gpu::GPUFuncOp kernel) {
  Block &body = kernel.getBody().front();
  unsigned next = 0;
  auto arg = [&] { return body.getArgument(next++); };
  KernelArgs args;
  args.q = arg();
  args.k = arg();
  args.v = arg();
  args.mask = op.getMask() ? arg() : Value();
  args.bias = op.getBias() ? arg() : Value();
  args.relBias = op.getRelBias() ? arg() : Value();
  args.additiveWeight = op.getAdditiveWeight() ? arg() : Value();
  args.lens = op.getKvLens() ? arg() : Value();
  args.spans = op.getSpans() ? arg() : Value();
  args.blockMask = blockMaskArg = op.getBlockMask() ? arg() : Value();
  args.out = arg();
  // A split's blocks always write their rows' lse: the combine kernel
  // weighs the splits by it.
  args.lse = op.getLseInit() || shape.kvSplits > 1 ? arg() : Value();
  kernelBatchCount = arg();
  args.sq = sqArg = arg();
  args.sk = skArg = arg();
  qHeadCount = headCount(op.getQuery(), arg());
  kvHeadCount = headCount(op.getKey(), arg());
  if (blockMaskArg) {
    ArrayRef<int64_t> sizes = *op.getBlockSizes();
    queryBlocks = arith::CeilDivUIOp::create(b, loc, args.sq, index(sizes[0]));
    keyBlocks = arith::CeilDivUIOp::create(b, loc, args.sk, index(sizes[1]));
  }
  if (kernel.getNumWorkgroupAttributions()) {
    args.keyTile = kernel.getWorkgroupAttributions()[0];
    args.valueTile = kernel.getWorkgroupAttributions()[1];
    if (shape.queryInShared())
      args.queryTile = kernel.getWorkgroupAttributions()[2];
    return args;
  }
  // Tiles beyond static shared memory: views of the dynamic one, V after K,
  // then Q.
  auto workgroup = gpu::AddressSpaceAttr::get(
      b.getContext(), gpu::GPUDialect::getWorkgroupAddressSpace());
  Value bytes = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), workgroup));
  Type element =
      shape.mma ? getElementTypeOrSelf(op.getKey().getType()) : b.getF32Type();
  int64_t offset = 0;
  auto view = [&](ArrayRef<int64_t> tileShape, Type stored) -> Value {
    auto type = MemRefType::get(tileShape, stored, MemRefLayoutAttrInterface(),
                                workgroup);
    Value tile = memref::ViewOp::create(b, loc, type, bytes, index(offset),
                                        ValueRange());
    offset += type.getNumElements() * stored.getIntOrFloatBitWidth() / 8;
    return tile;
  };
  args.keyTile = view(shape.tileShape(shape.headDim), element);
  args.valueTile = view(shape.tileShape(shape.valueDim), element);
  if (shape.queryInShared())
    args.queryTile = view(shape.queryTileShape(), b.getI32Type());
  return args;
}

void KernelBuilder::storeLse(const KernelArgs &args, Value batch, Value head,
                             Value i, Value max, Value sum, Value store) {
  if (!args.lse)
    return;
  OpBuilder::InsertionGuard guard(b);
  auto ifStore = scf::IfOp::create(b, loc, store, /*withElseRegion=*/false);
  b.setInsertionPointToStart(&ifStore.getThenRegion().front());
  Value sawKey =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, sum, f32(0.0));
  Value log2 =
      arith::AddFOp::create(b, loc, max, math::Log2Op::create(b, loc, sum));
  Value lse = arith::SelectOp::create(
      b, loc, sawKey,
      arith::MulFOp::create(b, loc, log2, f32(llvm::numbers::ln2)),
      f32(-std::numeric_limits<float>::infinity()));
  // [B, Hq, Sq] in every layout.
  Value at = m.add(mul(m.add(mul(batch, qHeadCount), head), args.sq), i);
  memref::StoreOp::create(b, loc, lse, args.lse, atSplit(at, 1));
}

KernelBuilder::RowOperands KernelBuilder::rowOperands(const KernelArgs &args,
                                                      Value batch, Value head,
                                                      Value i, Value rowValid) {
  RowOperands row;
  if (args.mask)
    std::tie(row.maskRow, maskKeyStride) =
        broadcastRow(op.getMask(), batch, head, i, args.sq, args.sk, rowValid);
  if (args.bias)
    std::tie(row.biasRow, biasKeyStride) =
        broadcastRow(op.getBias(), batch, head, i, args.sq, args.sk, rowValid);
  return row;
}

Value KernelBuilder::maskedLogit(const KernelArgs &args, const RowOperands &row,
                                 Value score, Value batch, Value head, Value i,
                                 Value j, Value visible) {
  Region &scoreMod = op.getScoreMod(), &maskMod = op.getMaskMod();
  if (!scoreMod.empty())
    score = inlineRegion(b, scoreMod, {score, batch, head, i, j});
  // A block mask's class decides before the other masks, within `visible`
  // (rows and keys in range).
  Value inRange = visible;
  // Tensor-core fragments hold keys past Sk too: their mask and bias reads
  // stay in bounds (rowOperands clamps the rows), their scores are hidden.
  Value safeKey =
      args.mask || args.bias ? min(j, m.sub(args.sk, index(1))) : Value();
  if (args.bias) {
    Value bias = memref::LoadOp::create(
        b, loc, args.bias,
        ValueRange{m.add(row.biasRow, mul(safeKey, biasKeyStride))});
    if (!bias.getType().isF32())
      bias = arith::ExtFOp::create(b, loc, b.getF32Type(), bias);
    score = arith::AddFOp::create(b, loc, score, bias);
  }
  if (args.relBias) {
    // rel_bias[h, bucket(j - i)], flattened.
    RelPosAttr relpos = op.getRelposAttr();
    Value at = m.add(mul(head, index(relpos.getBuckets())),
                     buildRelPosBucket(b, loc, relpos, i, j));
    score = arith::AddFOp::create(
        b, loc, score, memref::LoadOp::create(b, loc, args.relBias, at));
  }
  Value logit = logitIsScaledScore(args)
                    ? score
                    : arith::MulFOp::create(b, loc, score, f32(M_LOG2E));
  if (!visible)
    return logit;
  if (StructuredMaskAttrInterface mask = op.getStructuredMaskAttr())
    visible =
        m.both(visible, buildMaskVisible(b, loc, mask, i, j, args.sq, args.sk));
  if (args.mask)
    visible = m.both(
        visible,
        memref::LoadOp::create(
            b, loc, args.mask,
            ValueRange{m.add(row.maskRow, mul(safeKey, maskKeyStride))}));
  if (args.spans) {
    // Adaptive span: j >= i - spans[h].
    Value span = arith::IndexCastOp::create(
        b, loc, b.getIndexType(),
        memref::LoadOp::create(b, loc, args.spans, ValueRange{head}));
    visible = m.both(visible, m.sle(m.sub(i, span), j));
  }
  if (!maskMod.empty())
    visible = m.both(visible, inlineRegion(b, maskMod, {batch, head, i, j}));
  if (args.blockMask) {
    // kv_lens ends the key loop (blockKeys) except under a block mask, whose
    // full blocks show keys past it: its partial blocks test it here.
    if (args.lens)
      visible = m.both(
          visible,
          m.slt(j, arith::IndexCastOp::create(
                       b, loc, b.getIndexType(),
                       memref::LoadOp::create(b, loc, args.lens, batch))));
    Value c = blockClass(batch, head, i, j);
    Value partial = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, c,
        arith::ConstantIntOp::create(b, loc, b.getI8Type(), 1));
    visible = m.both(inRange, arith::OrIOp::create(b, loc, classAtLeast(c, 2),
                                                   m.both(partial, visible)));
  }
  return arith::SelectOp::create(b, loc, visible, logit,
                                 f32(-std::numeric_limits<float>::infinity()));
}

Value KernelBuilder::combineLanes(Value value, int64_t lanes, bool max) {
  Value width = arith::ConstantIntOp::create(b, loc, 32, 32);
  for (int64_t offset = 1; offset < lanes; offset *= 2) {
    Value mask = arith::ConstantIntOp::create(b, loc, offset, 32);
    Value other = gpu::ShuffleOp::create(b, loc, value, mask, width,
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    value = max ? arith::MaximumFOp::create(b, loc, value, other).getResult()
                : arith::AddFOp::create(b, loc, value, other).getResult();
  }
  return value;
}

Value KernelBuilder::tileHidden(Value batch, Value head, Value qFirst,
                                Value qEnd, Value keyFirst, Value keyEnd) {
  Value qLast = m.sub(qEnd, index(1)), keyLast = m.sub(keyEnd, index(1));
  Value hidden;
  auto either = [&](Value x, Value y) -> Value {
    return x ? arith::OrIOp::create(b, loc, x, y).getResult() : y;
  };
  StructuredMaskAttrInterface mask = op.getStructuredMaskAttr();
  if (mask && (!isBandMask(mask) || blockMaskArg))
    hidden = buildMaskTile(b, loc, mask, qFirst, qLast, keyFirst, keyLast,
                           sqArg, skArg)
                 .hidesAll;
  Region &maskMod = op.getMaskMod();
  std::pair<Value, Value> ranges[] = {
      {batch, batch}, {head, head}, {qFirst, qLast}, {keyFirst, keyLast}};
  if (!maskMod.empty())
    if (FailureOr<MaskModBounds> bounds = boundMaskMod(b, loc, maskMod, ranges);
        succeeded(bounds))
      hidden = either(hidden, bounds->hidesAll);
  if (!blockMaskArg)
    return hidden;
  // Every block empty, or none full while the rules hide the tile.
  Value greatest =
      blockClassRange(batch, head, qFirst, qEnd, keyFirst, keyEnd).second;
  Value noneFull = m.constantBool(true);
  noneFull = arith::XOrIOp::create(b, loc, classAtLeast(greatest, 2), noneFull);
  Value empty = arith::XOrIOp::create(b, loc, classAtLeast(greatest, 1),
                                      m.constantBool(true));
  return hidden ? either(empty, m.both(noneFull, hidden)) : empty;
}

Value KernelBuilder::blockClass(Value batch, Value head, Value i, Value j) {
  auto type = cast<RankedTensorType>(op.getBlockMask().getType());
  ArrayRef<int64_t> sizes = *op.getBlockSizes();
  Value one = index(1);
  // [B or 1, Hq or 1, query blocks, key blocks], flattened.
  bool batches = type.getDimSize(0) != 1, heads = type.getDimSize(1) != 1;
  Value at = batches ? batch : index(0);
  at = m.add(mul(at, heads ? qHeadCount : one), heads ? head : index(0));
  at = m.add(mul(at, queryBlocks),
             min(div(i, index(sizes[0])), m.sub(queryBlocks, one)));
  at = m.add(mul(at, keyBlocks),
             min(div(j, index(sizes[1])), m.sub(keyBlocks, one)));
  return memref::LoadOp::create(b, loc, blockMaskArg, at);
}

std::pair<Value, Value> KernelBuilder::blockClassRange(Value batch, Value head,
                                                       Value qFirst, Value qEnd,
                                                       Value keyFirst,
                                                       Value keyEnd) {
  ArrayRef<int64_t> sizes = *op.getBlockSizes();
  Type i8 = b.getI8Type();
  auto classes = [&](int64_t c) -> Value {
    return arith::ConstantIntOp::create(b, loc, i8, c);
  };
  // One class per block: step from each block's first index.
  auto blocks = [&](Value first, Value end, int64_t size) {
    Value from = mul(div(first, index(size)), index(size));
    return std::make_tuple(from, end, index(size));
  };
  // Plain values, not structured bindings: the loops' lambdas capture them.
  Value qFrom, qTo, qStep, kFrom, kTo, kStep;
  std::tie(qFrom, qTo, qStep) = blocks(qFirst, qEnd, sizes[0]);
  std::tie(kFrom, kTo, kStep) = blocks(keyFirst, keyEnd, sizes[1]);
  auto rows = scf::ForOp::create(
      b, loc, qFrom, qTo, qStep, ValueRange{classes(2), classes(0)},
      [&](OpBuilder &rb, Location, Value i, ValueRange outer) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(rb.getInsertionBlock(), rb.getInsertionPoint());
        auto cols = scf::ForOp::create(
            b, loc, kFrom, kTo, kStep, outer,
            [&](OpBuilder &cb, Location, Value j, ValueRange inner) {
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPoint(cb.getInsertionBlock(),
                                  cb.getInsertionPoint());
              Value c = blockClass(batch, head, i, j);
              scf::YieldOp::create(
                  b, loc,
                  ValueRange{arith::MinSIOp::create(b, loc, inner[0], c),
                             arith::MaxSIOp::create(b, loc, inner[1], c)});
            });
        scf::YieldOp::create(b, loc, cols.getResults());
      });
  return {rows.getResult(0), rows.getResult(1)};
}

KernelBuilder::BlockKeys KernelBuilder::blockKeys(const KernelArgs &args,
                                                  Value batch, Value head,
                                                  Value qFirst) {
  BlockKeys keys;
  keys.qFirst = qFirst;
  keys.qEnd = min(m.add(qFirst, index(shape.queryRows())), args.sq);
  keys.begin = index(0);
  keys.end = args.sk;
  // A block mask's full blocks show keys the other masks hide.
  if (!args.blockMask) {
    if (StructuredMaskAttrInterface mask = op.getStructuredMaskAttr())
      std::tie(keys.begin, keys.end) = buildMaskKeyHull(
          b, loc, mask, qFirst, m.sub(keys.qEnd, index(1)), args.sq, args.sk);
    if (args.lens) {
      Value len = memref::LoadOp::create(b, loc, args.lens, batch);
      keys.end = min(keys.end,
                     arith::IndexCastOp::create(b, loc, b.getIndexType(), len));
    }
    if (args.spans) {
      // The block's first row sees keys from qFirst - spans[head] on.
      Value span = memref::LoadOp::create(b, loc, args.spans, head);
      keys.begin =
          max(keys.begin, m.sub(qFirst, arith::IndexCastOp::create(
                                            b, loc, b.getIndexType(), span)));
    }
    keys.begin = min(max(keys.begin, index(0)), args.sk);
    keys.end = min(max(keys.end, keys.begin), args.sk);
  }
  if (!splitIndex)
    return keys;
  // This split's run of whole tiles: the tiles stay those of one block (the
  // tensor cores' tiles under an exact kernel, whose scan reads them), so a
  // tile is whole or partial alike in both.
  int64_t tile = shape.redoTile ? shape.redoTile : shape.kvTile;
  Value perSplit = arith::CeilDivUIOp::create(
      b, loc, m.sub(keys.end, keys.begin), index(shape.kvSplits));
  Value run = mul(arith::CeilDivUIOp::create(b, loc, perSplit, index(tile)),
                  index(tile));
  Value end = keys.end;
  keys.begin = min(m.add(keys.begin, mul(splitIndex, run)), end);
  keys.end = min(m.add(keys.begin, run), end);
  return keys;
}

scf::ForOp KernelBuilder::tileLoop(
    const BlockKeys &keys, int64_t tile, ValueRange initial, Value batch,
    Value head, function_ref<SmallVector<Value>(Value, ValueRange, bool)> body,
    function_ref<void(Value, ValueRange)> skipped) {
  // Ends the region at `bb` with a yield of what `fill` builds there.
  auto yieldFrom = [&](OpBuilder &bb, function_ref<SmallVector<Value>()> fill) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(bb.getInsertionBlock(), bb.getInsertionPoint());
    scf::YieldOp::create(b, loc, fill());
  };
  return scf::ForOp::create(
      b, loc, keys.begin, keys.end, index(tile), initial,
      [&](OpBuilder &lb, Location, Value tileStart, ValueRange state) {
        // A tile the block sees whole runs without masks.
        auto compute = [&]() -> SmallVector<Value> {
          bool blocks = op.getBlockMask() != nullptr;
          if (!blocks &&
              (op.getMask() || op.getSpans() || !op.getMaskMod().empty()))
            return body(tileStart, state, /*whole=*/false);
          Value tileLast = m.add(tileStart, index(tile - 1));
          Value whole = m.slt(tileLast, keys.end);
          // Under a block mask only full blocks drop every mask.
          if (blocks)
            whole = m.both(
                whole, classAtLeast(blockClassRange(batch, head, keys.qFirst,
                                                    keys.qEnd, tileStart,
                                                    m.add(tileLast, index(1)))
                                        .first,
                                    2));
          else if (StructuredMaskAttrInterface mask =
                       op.getStructuredMaskAttr())
            whole =
                m.both(whole, buildMaskTile(b, loc, mask, keys.qFirst,
                                            m.sub(keys.qEnd, index(1)),
                                            tileStart, tileLast, sqArg, skArg)
                                  .showsAll);
          auto branch = scf::IfOp::create(
              b, loc, whole,
              [&](OpBuilder &tb, Location) {
                yieldFrom(tb, [&] { return body(tileStart, state, true); });
              },
              [&](OpBuilder &eb, Location) {
                yieldFrom(eb, [&] { return body(tileStart, state, false); });
              });
          return SmallVector<Value>(branch.getResults());
        };
        yieldFrom(lb, [&]() -> SmallVector<Value> {
          Value tileEnd = min(keys.end, m.add(tileStart, index(tile)));
          Value hidden = tileHidden(batch, head, keys.qFirst, keys.qEnd,
                                    tileStart, tileEnd);
          if (!hidden)
            return compute();
          auto branch = scf::IfOp::create(
              b, loc, hidden,
              [&](OpBuilder &tb, Location) {
                yieldFrom(tb, [&]() -> SmallVector<Value> {
                  if (skipped)
                    skipped(tileStart, state);
                  return SmallVector<Value>(state);
                });
              },
              [&](OpBuilder &eb, Location) { yieldFrom(eb, compute); });
          return SmallVector<Value>(branch.getResults());
        });
      });
}

SmallVector<Value>
KernelBuilder::rescaleUnless(Value unchanged, ValueRange values,
                             function_ref<SmallVector<Value>()> scaled) {
  auto branch = scf::IfOp::create(b, loc, values.getTypes(), unchanged,
                                  /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&branch.getThenRegion().front());
  scf::YieldOp::create(b, loc, values);
  b.setInsertionPointToStart(&branch.getElseRegion().front());
  scf::YieldOp::create(b, loc, scaled());
  return branch.getResults();
}
