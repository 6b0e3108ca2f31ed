//===- TensorCoreKernel.cpp - the tensor-core attention kernel ------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//
//
// The tensor-core kernel (f16/bf16): a warp per 16 or 32 rows on mma.sync
// m16n8k16, the online softmax on the score fragments. K and V tiles arrive
// by cp.async into rows padded to an odd number of 16-byte chunks (so
// ldmatrix is free of bank conflicts) and the loads overlap the math as in
// FlashAttention-2: V of a tile is copied while Q K^T runs, K of the next
// tile while P V runs; or, double-buffered, K and V of the next tile while
// the whole tile runs. Under a per-row mask it multiplies whole V tiles, so
// a NaN or Inf of V would reach rows that do not see its key (0 x NaN): the
// exact FMA kernel behind it redoes the blocks whose V holds one in a tile
// they see partly (scanPartialValues, returnUnlessRedone).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::gpu_codegen;

Value gpu_codegen::mmaSync(OpBuilder &b, Location loc, Value a, Value bFrag,
                           Value c) {
  Type element = getElementTypeOrSelf(a.getType());
  if (element.isF16())
    return nvgpu::MmaSyncOp::create(b, loc, a, bFrag, c,
                                    ArrayRef<int64_t>{16, 8, 16});
  // Each row of a fragment is one 32-bit register of two bf16.
  auto registers = [&](Value fragment, int64_t count) {
    SmallVector<Value> regs;
    for (int64_t r = 0; r < count; ++r) {
      Value pair =
          vector::ExtractOp::create(b, loc, fragment, ArrayRef<int64_t>{r});
      Value word = vector::BitCastOp::create(
          b, loc, VectorType::get({1}, b.getI32Type()), pair);
      regs.push_back(
          vector::ExtractOp::create(b, loc, word, ArrayRef<int64_t>{0}));
    }
    return regs;
  };
  SmallVector<Value> accumulators;
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t col = 0; col < 2; ++col)
      accumulators.push_back(
          vector::ExtractOp::create(b, loc, c, ArrayRef<int64_t>{r, col}));
  Type f32Type = b.getF32Type();
  auto resultType = LLVM::LLVMStructType::getLiteral(
      b.getContext(), {f32Type, f32Type, f32Type, f32Type});
  auto mma = NVVM::MmaOp::create(
      b, loc, resultType, registers(a, 4), registers(bFrag, 2), accumulators,
      ArrayRef<int64_t>{16, 8, 16}, std::nullopt, std::nullopt,
      std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16, NVVM::MMATypes::bf16},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value> results;
  for (int64_t r = 0; r < 4; ++r)
    results.push_back(LLVM::ExtractValueOp::create(b, loc, mma, r));
  return vector::FromElementsOp::create(b, loc, c.getType(), results);
}

Value KernelBuilder::exp2Ftz(Value x) {
  return LLVM::CallIntrinsicOp::create(
             b, loc, b.getF32Type(),
             b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f32"), ValueRange{x})
      .getResult(0);
}

Value KernelBuilder::ldmatrix(Value tile, Value slot, Value row, Value col,
                              int64_t tiles, bool transpose) {
  Type element = getElementTypeOrSelf(tile.getType());
  return nvgpu::LdMatrixOp::create(b, loc, VectorType::get({tiles, 2}, element),
                                   tile, tileIndices(slot, row, col), transpose,
                                   tiles);
}

Value gpu_codegen::fragmentPair(OpBuilder &b, Location loc, Value fragments,
                                int64_t which) {
  Type element = getElementTypeOrSelf(fragments.getType());
  Value pair = arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(VectorType::get({2, 2}, element),
                             b.getFloatAttr(element, 0.0)));
  for (int64_t row = 0; row < 2; ++row)
    pair = vector::InsertOp::create(
        b, loc,
        vector::ExtractOp::create(b, loc, fragments,
                                  ArrayRef<int64_t>{2 * which + row}),
        pair, ArrayRef<int64_t>{row});
  return pair;
}

Value KernelBuilder::halfStepFragment(Value fragments, int64_t which) {
  auto type = cast<VectorType>(fragments.getType());
  Value pair = arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(VectorType::get({2, 2}, type.getElementType()),
                             b.getFloatAttr(type.getElementType(), 0.0)));
  return vector::InsertOp::create(
      b, loc,
      vector::ExtractOp::create(b, loc, fragments, ArrayRef<int64_t>{which}),
      pair, ArrayRef<int64_t>{0});
}

void KernelBuilder::multiplyValueTile(Value tile, Value slot,
                                      ArrayRef<Value> probFrags, int64_t ks,
                                      MutableArrayRef<Value> acc) {
  int64_t blocks = probFrags.size(), end = acc.size() / blocks;
  Value keyHalf = mul(rem(laneMatrix, index(2)), index(8));
  Value key = m.add(m.add(laneRow, keyHalf), index(ks * 16));
  for (int64_t nv = 0; nv < end; nv += 2) {
    if (nv + 1 < end) {
      Value col =
          m.add(mul(div(laneMatrix, index(2)), index(8)), index(nv * 8));
      Value both = ldmatrix(tile, slot, key, col, 4, /*transpose=*/true);
      Value first = fragmentPair(both, 0), second = fragmentPair(both, 1);
      for (int64_t rb = 0; rb < blocks; ++rb) {
        Value *out = &acc[rb * end + nv];
        out[0] = mmaSync(probFrags[rb], first, out[0]);
        out[1] = mmaSync(probFrags[rb], second, out[1]);
      }
      continue;
    }
    Value frag = ldmatrix(tile, slot, key, index(nv * 8), 2, true);
    for (int64_t rb = 0; rb < blocks; ++rb)
      acc[rb * end + nv] = mmaSync(probFrags[rb], frag, acc[rb * end + nv]);
  }
}

/// A value of `element` (f16 or bf16) is not finite when its exponent bits
/// are all set.
static int64_t exponentBits(Type element) {
  return element.isF16() ? 0x7C00 : 0x7F80;
}

Value KernelBuilder::scanPartialValues(const KernelArgs &args,
                                       const BlockKeys &keys, Value batch,
                                       Value head, Value kvHead, Value tid) {
  Type element = getElementTypeOrSelf(args.v.getType());
  Type i32 = b.getI32Type();
  int64_t dv = shape.valueDim, tile = shape.redoTile;
  int64_t chunks = tile * dv / 8, threads = shape.threads();
  // Two values a 32-bit word, tested at once: a value is not finite when its
  // field of ~word & E (E its exponent bits in both halves) is 0, and a
  // field under 0x8000 turns negative by the subtraction of 1 only when 0
  // (a nonzero one is at least 0x80, so a borrow from the low field leaves
  // it positive): 3 operations a word, where a compare of each 16-bit value
  // took about 45 PTX instructions a chunk.
  auto wordsType = VectorType::get({4}, i32);
  auto splat = [&](uint32_t value) -> Value {
    return arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(
            wordsType, b.getI32IntegerAttr(static_cast<int32_t>(value))));
  };
  uint32_t exponent = exponentBits(element);
  Value allOnes = splat(~0u), exponents = splat(exponent | exponent << 16),
        lowOnes = splat(0x00010001), signs = splat(0x80008000);
  // This thread's share of each partial tile: chunks of 8 values of a key.
  auto partial = [&](Value tileStart, ValueRange state,
                     bool whole) -> SmallVector<Value> {
    if (whole)
      return SmallVector<Value>(state);
    auto scan = scf::ForOp::create(
        b, loc, tid, index(chunks), index(threads), state,
        [&](OpBuilder &lb, Location, Value e, ValueRange found) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
          Value key = m.add(tileStart, div(e, index(dv / 8)));
          auto seen =
              scf::IfOp::create(b, loc, TypeRange{i32}, m.slt(key, keys.end),
                                /*withElseRegion=*/true);
          b.setInsertionPointToStart(&seen.getThenRegion().front());
          Value at =
              m.add(rowOffset(batch, kvHead, key, kvHeadCount, args.sk, dv),
                    mul(rem(e, index(dv / 8)), index(8)));
          Value chunk = vector::LoadOp::create(
              b, loc, VectorType::get({8}, element), args.v, at,
              /*nontemporal=*/false, llvm::MaybeAlign(16));
          Value words = vector::BitCastOp::create(b, loc, wordsType, chunk);
          Value clear = arith::AndIOp::create(
              b, loc, arith::XOrIOp::create(b, loc, words, allOnes), exponents);
          Value special = arith::AndIOp::create(
              b, loc, arith::SubIOp::create(b, loc, clear, lowOnes), signs);
          scf::YieldOp::create(
              b, loc,
              ValueRange{arith::OrIOp::create(
                  b, loc, found.front(),
                  vector::ReductionOp::create(b, loc, vector::CombiningKind::OR,
                                              special))});
          b.setInsertionPointToStart(&seen.getElseRegion().front());
          scf::YieldOp::create(b, loc, found);
          b.setInsertionPointAfter(seen);
          scf::YieldOp::create(b, loc, seen.getResults());
        });
    return SmallVector<Value>(scan.getResults());
  };
  Value zero = arith::ConstantIntOp::create(b, loc, i32, 0);
  scf::ForOp tiles =
      tileLoop(keys, tile, ValueRange{zero}, batch, head, partial);
  Value nonFinite = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                          tiles.getResult(0), zero);
  Value votes =
      NVVM::BarrierOp::create(b, loc, i32, Value(), Value(),
                              NVVM::BarrierReductionAttr::get(
                                  b.getContext(), NVVM::BarrierReduction::OR),
                              arith::ExtUIOp::create(b, loc, i32, nonFinite))
          .getRes();
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, votes,
                               arith::ConstantIntOp::create(b, loc, i32, 0));
}

void KernelBuilder::returnUnlessRedone(gpu::GPUFuncOp kernel) {
  Operation *check = redoCheck.getDefiningOp();
  Block *entry = check->getBlock();
  Block *compute = entry->splitBlock(std::next(Block::iterator(check)));
  Block *done = b.createBlock(&kernel.getBody());
  gpu::ReturnOp::create(b, loc);
  b.setInsertionPointToEnd(entry);
  cf::CondBranchOp::create(b, loc, redoCheck, compute, ValueRange(), done,
                           ValueRange());
}

/// What the phases of the tensor-core kernel share: its arguments, this
/// lane's place and rows, Q's fragments, and the layout of the state the
/// tile loop carries.
struct KernelBuilder::MmaKernel {
  KernelArgs args;
  Type element;
  int64_t d = 0, dv = 0, bc = 0;
  // Row blocks of a warp; this lane's rows (g and g + 8 of each); 8-key
  // blocks of a tile; output fragments of a row block; 16-wide steps of D.
  int64_t rowBlocks = 0, laneRows = 0, keyBlocks = 0, outFragCount = 0,
          kSteps = 0;
  VectorType fragA, fragC;
  Value negInf, zero;
  Value tid, head, kvHead, batch, warp, lane, group, pairCol, qFirst;
  // This lane's rows: r = 2 rb + h is row g + 8 h of row block rb (and
  // their heads, under packing); `safe` is the row Q is read from.
  SmallVector<Value, 4> rows, rowHeads, valid, safe;
  SmallVector<RowOperands, 4> rowMasks;
  // Q's A fragments [rb][ks] when they stay in registers.
  bool queryInShared = false;
  SmallVector<Value> queryFrags;
  Value scale;
  bool foldScale = false;
  BlockKeys keys;
  // Keys past a partial tile's end hidden by an MMA (see
  // prepareKeyPadding): A's column of ones and B's two values.
  bool padByMma = false;
  Value firstColumn, onesColumn, elementZero, elementNegInf;
  bool doubleBuffered = false, sumsByMma = false;
  Value zeroFrag, onesFrag;
  // The state: row maxima of this lane's rows, their row sums from sumAt,
  // the output fragments of each row block from outAt; double-buffered,
  // then the buffer (0 or 1) the next fetched tile lands in.
  int64_t sumAt = 0, outAt = 0;

  /// A tile's logits are [rb][nb][h][c] flattened: the one of this lane's
  /// row r (row 2 rb + h), key block nb and column c.
  int64_t logitAt(int64_t r, int64_t nb, int64_t c) const {
    return ((r / 2 * keyBlocks + nb) * 2 + r % 2) * 2 + c;
  }
};

void KernelBuilder::buildMma(gpu::GPUFuncOp kernel) {
  // Warp w of the block computes query rows [W w, W w + W) of its block (W =
  // warpRows: one or two row blocks of 16) with mma.sync m16n8k16 (f16 in,
  // f32 accumulators). In every fragment, lane l holds rows g = l / 4 and
  // g + 8 of a row block, and columns 2 (l % 4) + {0, 1} (+ 8 for the A
  // operand's second half): PTX's m16n8k16 layout.
  Block &body = kernel.getBody().front();
  b.setInsertionPointToStart(&body);
  MmaKernel k;
  k.args = unpackArgs(kernel);
  k.element = getElementTypeOrSelf(k.args.q.getType());
  k.d = shape.headDim, k.dv = shape.valueDim, k.bc = shape.kvTile;
  k.rowBlocks = shape.rowBlocks(), k.laneRows = 2 * k.rowBlocks;
  k.keyBlocks = k.bc / 8, k.outFragCount = k.dv / 8;
  k.kSteps = shape.queryKSteps();
  k.fragA = VectorType::get({4, 2}, k.element);
  k.fragC = VectorType::get({2, 2}, b.getF32Type());
  k.negInf = f32(-std::numeric_limits<float>::infinity());
  k.zero = f32(0.0);
  placeMmaRows(k);
  loadQuery(k);
  k.scale = logitScale(k.args);
  // Where the logit is the scaled score, scores stay unscaled until the
  // softmax: the scale is positive (the verifier's word), so max(s) scale =
  // max(s scale) (rounding is monotonic), and each p = exp2(fma(s, scale,
  // -base)) is one FMA rather than a multiply and a subtract.
  k.foldScale = logitIsScaledScore(k.args);
  k.keys = blockKeys(k.args, k.batch, k.head, k.qFirst);
  prepareKeyPadding(k);

  // The sums are the lane's partial ones (its 2 columns of each 8 keys), or
  // with rowSumsByMma a C fragment per row block: P times a B fragment of
  // ones, whose every column is the row's whole sum (no adds, no shuffles;
  // one mma per row block and 16 keys; P's rounding in both O and its sum).
  k.doubleBuffered = shape.kvStages == 2, k.sumsByMma = shape.rowSumsByMma;
  k.zeroFrag =
      arith::ConstantOp::create(b, loc, DenseElementsAttr::get(k.fragC, 0.0f));
  SmallVector<Value> initial(k.laneRows, k.negInf);
  int64_t sumCount = k.sumsByMma ? k.rowBlocks : k.laneRows;
  k.sumAt = k.laneRows;
  initial.append(sumCount, k.sumsByMma ? k.zeroFrag : k.zero);
  k.outAt = k.sumAt + sumCount;
  initial.append(k.rowBlocks * k.outFragCount, k.zeroFrag);
  if (k.doubleBuffered)
    initial.push_back(index(0));
  k.onesFrag =
      k.sumsByMma
          ? arith::ConstantOp::create(
                b, loc,
                DenseElementsAttr::get(VectorType::get({2, 2}, k.element),
                                       b.getFloatAttr(k.element, 1.0)))
          : Value();

  // ldmatrix addresses: lane l names row l % 8 of matrix l / 8.
  laneRow = rem(k.lane, index(8));
  laneMatrix = div(k.lane, index(8));

  fetchMmaTile(k, k.keys.begin, k.doubleBuffered ? index(0) : Value());
  auto tiles = tileLoop(
      k.keys, k.bc, initial, k.batch, k.head,
      [&](Value tileStart, ValueRange state, bool whole) -> SmallVector<Value> {
        // This tile's buffers (double-buffered: slot 0 or 1) and the others.
        Value slot = k.doubleBuffered ? state.back() : Value();
        Value otherSlot = k.doubleBuffered ? m.sub(index(1), slot) : Value();
        landMmaTile();
        if (k.doubleBuffered)
          fetchMmaTile(k, m.add(tileStart, index(k.bc)), otherSlot);
        else
          stageTileAsync(k.args.valueTile, slot, k.args.v, k.batch, k.kvHead,
                         tileStart, k.keys.end, k.args.sk, k.dv, k.tid);
        SmallVector<Value> logits = mmaLogits(k, tileStart, slot, whole);
        SmallVector<Value> next(state.begin(), state.end());
        SmallVector<Value, 4> alpha;
        SmallVector<Value> probFrags;
        mmaSoftmax(k, state, logits, next, alpha, probFrags);
        // One buffer each: V has landed and every warp is done with K, so
        // the next K may come.
        if (!k.doubleBuffered) {
          landMmaTile();
          fetchMmaTile(k, m.add(tileStart, index(k.bc)), slot);
        }
        accumulateValues(k, state, alpha, probFrags, slot, next);
        if (k.doubleBuffered)
          next.back() = otherSlot;
        return next;
      },
      [&](Value tileStart, ValueRange state) {
        fetchMmaTile(k, m.add(tileStart, index(k.bc)),
                     k.doubleBuffered ? state.back() : Value());
      });
  storeMmaOutput(k, tiles);
  gpu::ReturnOp::create(b, loc);
}

void KernelBuilder::placeMmaRows(MmaKernel &k) {
  k.tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value queryBlock = queryBlockIndex();
  std::tie(k.head, k.kvHead) = blockHeads();
  k.batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  k.warp = div(k.tid, index(32)), k.lane = rem(k.tid, index(32));
  k.group = div(k.lane, index(4));
  k.pairCol = mul(rem(k.lane, index(4)), index(2));
  k.qFirst = mul(queryBlock, index(shape.queryRows()));
  // Rows past Sq read row Sq - 1 (never stored) so every lane takes part in
  // the shuffles.
  k.rows.resize(k.laneRows), k.rowHeads.resize(k.laneRows);
  k.valid.resize(k.laneRows), k.safe.resize(k.laneRows);
  k.rowMasks.resize(k.laneRows);
  for (int64_t r = 0; r < k.laneRows; ++r) {
    std::tie(k.rows[r], k.rowHeads[r]) =
        blockRow(k.head, k.qFirst,
                 m.add(mul(k.warp, index(shape.warpRows)),
                       m.add(k.group, index(8 * r))));
    k.valid[r] = m.slt(k.rows[r], k.args.sq);
    k.safe[r] = arith::SelectOp::create(b, loc, k.valid[r], k.rows[r],
                                        m.sub(k.args.sq, index(1)));
    k.rowMasks[r] =
        rowOperands(k.args, k.batch, k.rowHeads[r], k.rows[r], k.valid[r]);
  }
}

SmallVector<Value> KernelBuilder::queryFragmentIndices(const MmaKernel &k,
                                                       int64_t rb, int64_t ks) {
  Value frag = m.add(mul(k.warp, index(k.rowBlocks * k.kSteps)),
                     index(rb * k.kSteps + ks));
  return {frag, k.lane, index(0)};
}

void KernelBuilder::loadQuery(MmaKernel &k) {
  // The query as A fragments, one per row block and 16 of D: [row g | g +
  // 8][col | + 8]. In registers, or (queryInShared) their 4 32-bit
  // registers stored where this lane reads them back, one 16-byte load
  // each: only this lane reads its entries, so they need no barrier.
  // Q is read in pairs (queryChunk), aligned as the launcher checks.
  k.queryInShared = shape.queryInShared();
  auto pair = VectorType::get({2}, k.element);
  int64_t pairBytes = 2 * k.element.getIntOrFloatBitWidth() / 8;
  Type i32 = b.getI32Type();
  auto words = VectorType::get({4}, i32), word = VectorType::get({1}, i32);
  auto qAt = [&](int64_t r, int64_t col) {
    return m.add(rowOffset(k.batch, k.rowHeads[r], k.safe[r], qHeadCount,
                           k.args.sq, k.d),
                 m.add(k.pairCol, index(col)));
  };
  for (int64_t rb = 0; rb < k.rowBlocks; ++rb)
    for (int64_t ks = 0; ks < k.kSteps; ++ks) {
      Value frag = arith::ConstantOp::create(
          b, loc,
          DenseElementsAttr::get(k.fragA, b.getFloatAttr(k.element, 0.0)));
      for (int64_t part = 0; part < 4; ++part) {
        // A half step's columns 8-15 (parts 2 and 3) stay zeros.
        if (ks * 16 + 8 * (part / 2) >= k.d)
          continue;
        Value two = vector::LoadOp::create(
            b, loc, pair, k.args.q,
            qAt(2 * rb + part % 2, ks * 16 + 8 * (part / 2)),
            /*nontemporal=*/false, llvm::MaybeAlign(pairBytes));
        frag = vector::InsertOp::create(b, loc, two, frag, part);
      }
      if (!k.queryInShared) {
        k.queryFrags.push_back(frag);
        continue;
      }
      SmallVector<Value, 4> parts;
      for (int64_t part = 0; part < 4; ++part)
        parts.push_back(vector::ExtractOp::create(
            b, loc,
            vector::BitCastOp::create(
                b, loc, word,
                vector::ExtractOp::create(b, loc, frag,
                                          ArrayRef<int64_t>{part})),
            ArrayRef<int64_t>{0}));
      vector::StoreOp::create(
          b, loc, vector::FromElementsOp::create(b, loc, words, parts),
          k.args.queryTile, queryFragmentIndices(k, rb, ks),
          /*nontemporal=*/false, llvm::MaybeAlign(16));
    }
}

Value KernelBuilder::loadQueryFragment(const MmaKernel &k, int64_t rb,
                                       int64_t ks) {
  Type i32 = b.getI32Type();
  auto words = VectorType::get({4}, i32), word = VectorType::get({1}, i32);
  auto pair = VectorType::get({2}, k.element);
  Value loaded = vector::LoadOp::create(
      b, loc, words, k.args.queryTile, queryFragmentIndices(k, rb, ks),
      /*nontemporal=*/false, llvm::MaybeAlign(16));
  Value frag = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(k.fragA, b.getFloatAttr(k.element, 0.0)));
  for (int64_t part = 0; part < 4; ++part) {
    Value bits = vector::FromElementsOp::create(
        b, loc, word,
        vector::ExtractOp::create(b, loc, loaded, ArrayRef<int64_t>{part})
            .getResult());
    frag = vector::InsertOp::create(
        b, loc, vector::BitCastOp::create(b, loc, pair, bits), frag, part);
  }
  return frag;
}

void KernelBuilder::prepareKeyPadding(MmaKernel &k) {
  // In 32-row warps with Q in shared memory, keys past the end of a
  // partial tile (zero-filled rows of K) are hidden by one more MMA per key
  // block: A's column 0 all ones times B's row 0, 0 or -inf per key, adds
  // -inf to their scores and 0 to the others (A's zeros never meet the
  // -inf). That replaces a compare and a select per score, which pushed
  // those kernels past 255 registers (sm_90, D = 128, 32-key tiles: 56
  // bytes spilled, none now). The 16-row kernels gained nothing by it (Q in
  // registers: 2 to 52 more registers; in shared memory: 0 to 6), so they
  // keep the test, as does a score_mod, which could map -inf back to a
  // finite logit (softcap's tanh).
  k.padByMma = op.getScoreMod().empty() && shape.queryInShared() &&
               shape.rowBlocks() > 1;
  if (!k.padByMma)
    return;
  auto elementConstant = [&](double value) -> Value {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(k.element, value));
  };
  k.firstColumn = m.eq(k.pairCol, index(0));
  k.elementZero = elementConstant(0.0);
  k.elementNegInf = elementConstant(-std::numeric_limits<double>::infinity());
  // Lane l holds A's columns 2 (l % 4) + {0, 1} of rows l / 4 and + 8.
  Value one = arith::SelectOp::create(b, loc, k.firstColumn,
                                      elementConstant(1.0), k.elementZero);
  SmallVector<Value, 8> column(8, k.elementZero);
  column[0] = column[2] = one;
  k.onesColumn = vector::FromElementsOp::create(b, loc, k.fragA, column);
}

// K and V tiles arrive by cp.async, one group in flight at a time. With one
// buffer each, K of a tile is in flight when its iteration starts, V is
// fetched while Q K^T runs and the next K while P V runs
// (FlashAttention-2's schedule). Double-buffered, K and V of the next tile
// are fetched into the other buffers while the whole tile runs. A skipped
// tile is never asked for: the next one takes its buffer.
void KernelBuilder::fetchMmaTile(const MmaKernel &k, Value tileStart,
                                 Value slot) {
  Value end = k.keys.end;
  Value wanted = m.slt(tileStart, end);
  if (Value hidden =
          tileHidden(k.batch, k.head, k.qFirst, k.keys.qEnd, tileStart,
                     min(end, m.add(tileStart, index(k.bc)))))
    wanted = m.both(
        wanted, arith::XOrIOp::create(b, loc, hidden, m.constantBool(true)));
  auto fetch = scf::IfOp::create(b, loc, wanted, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&fetch.getThenRegion().front());
  stageTileAsync(k.args.keyTile, slot, k.args.k, k.batch, k.kvHead, tileStart,
                 end, k.args.sk, k.d, k.tid);
  if (k.doubleBuffered)
    stageTileAsync(k.args.valueTile, slot, k.args.v, k.batch, k.kvHead,
                   tileStart, end, k.args.sk, k.dv, k.tid);
}

void KernelBuilder::landMmaTile() {
  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
  gpu::BarrierOp::create(b, loc);
}

SmallVector<Value> KernelBuilder::mmaLogits(const MmaKernel &k, Value tileStart,
                                            Value slot, bool whole) {
  // S = Q K^T, 8 keys per fragment: B[k][n] = K[key n][d k], K's rows as
  // stored, each B fragment used by every row block. Q in registers: one x4
  // ldmatrix takes two 16-wide steps of D.
  int64_t d = k.d, keyBlocks = k.keyBlocks, rowBlocks = k.rowBlocks;
  Value end = k.keys.end;
  SmallVector<Value> scores(rowBlocks * keyBlocks, k.zeroFrag); // [rb][nb]
  // The logits of key block nb as soon as its scores are done.
  SmallVector<Value> logits(rowBlocks * keyBlocks * 4);
  auto maskKeyBlock = [&](int64_t nb) {
    if (!whole && k.padByMma) {
      // Lane l holds B's rows 2 (l % 4) + {0, 1} of key l / 4.
      Value key = m.add(tileStart, m.add(k.group, index(nb * 8)));
      Value bias = arith::SelectOp::create(
          b, loc, m.both(k.firstColumn, m.sle(end, key)), k.elementNegInf,
          k.elementZero);
      Value biasRow = vector::FromElementsOp::create(
          b, loc, VectorType::get({2, 2}, k.element),
          ValueRange{bias, k.elementZero, k.elementZero, k.elementZero});
      for (int64_t rb = 0; rb < rowBlocks; ++rb) {
        Value &acc = scores[rb * keyBlocks + nb];
        acc = mmaSync(k.onesColumn, biasRow, acc);
      }
    }
    for (int64_t r = 0; r < k.laneRows; ++r)
      for (int64_t c = 0; c < 2; ++c) {
        Value score =
            vector::ExtractOp::create(b, loc, scores[r / 2 * keyBlocks + nb],
                                      ArrayRef<int64_t>{r % 2, c});
        if (!k.foldScale)
          score = arith::MulFOp::create(b, loc, score, k.scale);
        Value j = m.add(tileStart, m.add(k.pairCol, index(nb * 8 + c)));
        // Keys past the tile's end are padding.
        Value inside = whole        ? Value()
                       : k.padByMma ? k.valid[r]
                                    : m.both(k.valid[r], m.slt(j, end));
        logits[k.logitAt(r, nb, c)] =
            maskedLogit(k.args, k.rowMasks[r], score, k.batch, k.rowHeads[r],
                        k.rows[r], j, inside);
      }
  };
  auto query = [&](int64_t rb, int64_t ks) {
    return k.queryFrags[rb * k.kSteps + ks];
  };
  if (!k.queryInShared) {
    for (int64_t nb = 0; nb < keyBlocks; ++nb) {
      Value key = m.add(laneRow, index(nb * 8));
      for (int64_t ks = 0; ks < d / 16; ks += 2) {
        if (ks + 1 < d / 16) {
          Value both =
              ldmatrix(k.args.keyTile, slot, key,
                       m.add(mul(laneMatrix, index(8)), index(ks * 16)), 4,
                       /*transpose=*/false);
          Value first = fragmentPair(both, 0), second = fragmentPair(both, 1);
          for (int64_t rb = 0; rb < rowBlocks; ++rb) {
            Value &acc = scores[rb * keyBlocks + nb];
            acc = mmaSync(query(rb, ks), first, acc);
            acc = mmaSync(query(rb, ks + 1), second, acc);
          }
          continue;
        }
        Value col =
            m.add(mul(rem(laneMatrix, index(2)), index(8)), index(ks * 16));
        Value frag = ldmatrix(k.args.keyTile, slot, key, col, 2, false);
        for (int64_t rb = 0; rb < rowBlocks; ++rb) {
          Value &acc = scores[rb * keyBlocks + nb];
          acc = mmaSync(query(rb, ks), frag, acc);
        }
      }
      if (d % 16) {
        // The half step: one x1 ldmatrix of its 8 columns.
        Value frag = halfStepFragment(ldmatrix(k.args.keyTile, slot, key,
                                               index(d / 16 * 16), 1,
                                               /*transpose=*/false),
                                      0);
        for (int64_t rb = 0; rb < rowBlocks; ++rb) {
          Value &acc = scores[rb * keyBlocks + nb];
          acc = mmaSync(query(rb, d / 16), frag, acc);
        }
      }
      maskKeyBlock(nb);
    }
    return logits;
  }
  // Q in shared memory: D outermost, one 16-wide step at a time, so each Q
  // fragment is read once a tile and only one step's are live. One x4
  // ldmatrix takes two 8-key blocks (keys 16 n + 8 (l / 16) + l % 8, D
  // 16 ks + 8 (l / 8 % 2)); a half step's x2 ldmatrix takes 8 columns of
  // both key blocks.
  Value key = m.add(laneRow, mul(div(laneMatrix, index(2)), index(8)));
  Value halfKey = d % 16
                      ? m.add(laneRow, mul(rem(laneMatrix, index(2)), index(8)))
                      : Value();
  Value col = mul(rem(laneMatrix, index(2)), index(8));
  for (int64_t ks = 0; ks < k.kSteps; ++ks) {
    SmallVector<Value, 2> stepQuery;
    for (int64_t rb = 0; rb < rowBlocks; ++rb)
      stepQuery.push_back(loadQueryFragment(k, rb, ks));
    bool half = ks * 16 + 16 > d;
    for (int64_t nb = 0; nb < keyBlocks; nb += 2) {
      Value both =
          half ? ldmatrix(k.args.keyTile, slot, m.add(halfKey, index(nb * 8)),
                          index(ks * 16), 2, /*transpose=*/false)
               : ldmatrix(k.args.keyTile, slot, m.add(key, index(nb * 8)),
                          m.add(col, index(ks * 16)), 4,
                          /*transpose=*/false);
      Value first = half ? halfStepFragment(both, 0) : fragmentPair(both, 0),
            second = half ? halfStepFragment(both, 1) : fragmentPair(both, 1);
      for (int64_t rb = 0; rb < rowBlocks; ++rb) {
        Value *acc = &scores[rb * keyBlocks + nb];
        acc[0] = mmaSync(stepQuery[rb], first, acc[0]);
        acc[1] = mmaSync(stepQuery[rb], second, acc[1]);
      }
    }
  }
  for (int64_t nb = 0; nb < keyBlocks; ++nb)
    maskKeyBlock(nb);
  return logits;
}

void KernelBuilder::mmaSoftmax(const MmaKernel &k, ValueRange state,
                               ArrayRef<Value> logits,
                               MutableArrayRef<Value> next,
                               SmallVectorImpl<Value> &alpha,
                               SmallVectorImpl<Value> &probFrags) {
  // Online softmax per row, its max over the row's 4 lanes. P is packed as
  // soon as a row block's two rows are done: 16-bit pairs, half the
  // registers of its f32 weights, across the other row block's softmax and
  // the rescale's branch. P's fragments ([rb][ks]) are the score fragments
  // of 2 adjacent key blocks.
  alpha.resize(k.laneRows);
  SmallVector<Value> probs(logits.size());
  for (int64_t r = 0; r < k.laneRows; ++r) {
    Value rowMax = k.foldScale ? k.negInf : state[r];
    for (int64_t nb = 0; nb < k.keyBlocks; ++nb)
      for (int64_t c = 0; c < 2; ++c)
        rowMax = arith::MaximumFOp::create(b, loc, rowMax,
                                           logits[k.logitAt(r, nb, c)]);
    Value newMax = combineLanes(rowMax, 4, /*max=*/true);
    if (k.foldScale)
      newMax = arith::MaximumFOp::create(
          b, loc, state[r], arith::MulFOp::create(b, loc, newMax, k.scale));
    Value base = softmaxBase(newMax);
    Value negBase = k.foldScale ? arith::NegFOp::create(b, loc, base) : Value();
    alpha[r] = exp2Ftz(arith::SubFOp::create(b, loc, state[r], base));
    Value sum = k.sumsByMma ? Value()
                            : arith::MulFOp::create(b, loc, state[k.sumAt + r],
                                                    alpha[r]);
    for (int64_t nb = 0; nb < k.keyBlocks; ++nb)
      for (int64_t c = 0; c < 2; ++c) {
        int64_t at = k.logitAt(r, nb, c);
        Value shifted =
            k.foldScale
                ? math::FmaOp::create(b, loc, logits[at], k.scale, negBase)
                      .getResult()
                : arith::SubFOp::create(b, loc, logits[at], base).getResult();
        probs[at] = exp2Ftz(shifted);
        if (sum)
          sum = arith::AddFOp::create(b, loc, sum, probs[at]);
      }
    next[r] = newMax;
    if (sum)
      next[k.sumAt + r] = sum;
    if (r % 2 == 0)
      continue;
    for (int64_t ks = 0; ks < k.bc / 16; ++ks) {
      SmallVector<Value> parts;
      for (int64_t half = 0; half < 2; ++half)
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t c = 0; c < 2; ++c)
            parts.push_back(arith::TruncFOp::create(
                b, loc, k.element,
                probs[k.logitAt(r - 1 + h, 2 * ks + half, c)]));
      probFrags.push_back(
          vector::FromElementsOp::create(b, loc, k.fragA, parts));
    }
  }
}

void KernelBuilder::accumulateValues(const MmaKernel &k, ValueRange state,
                                     ArrayRef<Value> alpha,
                                     ArrayRef<Value> probFrags, Value slot,
                                     MutableArrayRef<Value> next) {
  // Rescale the output rows, then O += P V: B[k][n] = V[key k][n],
  // transposed out of V's rows by ldmatrix.trans.
  int64_t rowBlocks = k.rowBlocks, outFragCount = k.outFragCount;
  MutableArrayRef<Value> outFrags =
      next.slice(k.outAt, rowBlocks * outFragCount);
  ValueRange oldFrags = state.slice(k.outAt, rowBlocks * outFragCount);
  // With sumsByMma the sums' fragments are rescaled with O's, each row
  // block's after its output fragments.
  Value unchanged = isOne(alpha[0]);
  for (int64_t r = 1; r < k.laneRows; ++r)
    unchanged = m.both(unchanged, isOne(alpha[r]));
  int64_t scaledCount = k.sumsByMma ? outFragCount + 1 : outFragCount;
  SmallVector<Value> toScale;
  for (int64_t rb = 0; rb < rowBlocks; ++rb) {
    llvm::append_range(toScale,
                       oldFrags.slice(rb * outFragCount, outFragCount));
    if (k.sumsByMma)
      toScale.push_back(state[k.sumAt + rb]);
  }
  SmallVector<Value> rescaled = rescaleUnless(unchanged, toScale, [&] {
    SmallVector<Value> scaled;
    for (int64_t rb = 0; rb < rowBlocks; ++rb) {
      Value alphas = vector::FromElementsOp::create(
          b, loc, k.fragC,
          ValueRange{alpha[2 * rb], alpha[2 * rb], alpha[2 * rb + 1],
                     alpha[2 * rb + 1]});
      for (Value frag :
           ArrayRef<Value>(toScale).slice(rb * scaledCount, scaledCount))
        scaled.push_back(arith::MulFOp::create(b, loc, frag, alphas));
    }
    return scaled;
  });
  for (int64_t rb = 0; rb < rowBlocks; ++rb) {
    ArrayRef<Value> block =
        ArrayRef<Value>(rescaled).slice(rb * scaledCount, scaledCount);
    llvm::copy(block.take_front(outFragCount),
               outFrags.begin() + rb * outFragCount);
    if (k.sumsByMma)
      next[k.sumAt + rb] = block.back();
  }
  for (int64_t ks = 0; ks < k.bc / 16; ++ks) {
    SmallVector<Value, 2> stepFrags;
    for (int64_t rb = 0; rb < rowBlocks; ++rb) {
      stepFrags.push_back(probFrags[rb * (k.bc / 16) + ks]);
      if (k.sumsByMma)
        next[k.sumAt + rb] =
            mmaSync(stepFrags.back(), k.onesFrag, next[k.sumAt + rb]);
    }
    multiplyValueTile(k.args.valueTile, slot, stepFrags, ks, outFrags);
  }
}

void KernelBuilder::storeMmaOutput(const MmaKernel &k, scf::ForOp tiles) {
  // out = O / sum (the row's 4 lanes' partial sums), 0 for a row that saw
  // no key (NaN stays NaN). Out is written in pairs (outChunk), aligned as
  // the launcher checks.
  Type outElement = getElementTypeOrSelf(k.args.out.getType());
  auto pairF32 = VectorType::get({2}, b.getF32Type());
  for (int64_t r = 0; r < k.laneRows; ++r) {
    Value sum =
        k.sumsByMma
            ? vector::ExtractOp::create(b, loc,
                                        tiles.getResult(k.sumAt + r / 2),
                                        ArrayRef<int64_t>{r % 2, 0})
                  .getResult()
            : combineLanes(tiles.getResult(k.sumAt + r), 4, /*max=*/false);
    // The row's quad holds the same max and sum: its first lane stores.
    storeLse(k.args, k.batch, k.rowHeads[r], k.rows[r], tiles.getResult(r), sum,
             m.both(k.valid[r], m.eq(rem(k.lane, index(4)), index(0))));
    Value noKey =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, sum, k.zero);
    auto store =
        scf::IfOp::create(b, loc, k.valid[r], /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&store.getThenRegion().front());
    for (int64_t nv = 0; nv < k.outFragCount; ++nv) {
      Value rowPair = vector::ExtractOp::create(
          b, loc, tiles.getResult(k.outAt + r / 2 * k.outFragCount + nv),
          ArrayRef<int64_t>{r % 2});
      Value result = arith::SelectOp::create(
          b, loc, noKey,
          arith::ConstantOp::create(b, loc,
                                    DenseElementsAttr::get(pairF32, 0.0f)),
          arith::DivFOp::create(
              b, loc, rowPair,
              vector::BroadcastOp::create(b, loc, pairF32, sum)));
      if (!outElement.isF32())
        result = arith::TruncFOp::create(
            b, loc, VectorType::get({2}, outElement), result);
      Value at = atSplit(m.add(rowOffset(k.batch, k.rowHeads[r], k.rows[r],
                                         qHeadCount, k.args.sq, k.dv),
                               m.add(k.pairCol, index(nv * 8))),
                         k.dv);
      vector::StoreOp::create(
          b, loc, result, k.args.out, at, /*nontemporal=*/false,
          llvm::MaybeAlign(2 * outElement.getIntOrFloatBitWidth() / 8));
    }
  }
}
