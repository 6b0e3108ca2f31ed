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
/// The fewest columns of Dv a block takes where more blocks are wanted.
static constexpr int64_t kMinSliceColumns = 16;

/// Query rows a linear attention block writes at once: 16 at D <= 64, fewer
/// above, so that their phi(q) [rows, D] leaves the state its room.
static int64_t linearRows(int64_t d) {
  return std::clamp<int64_t>(1024 / d, 1, 16);
}

namespace {
/// One block per (query head, batch entry, slice of `width` columns of Dv)
/// keeps the state S = sum_j phi(k_j) v_j^T [D, width] and z = sum_j
/// phi(k_j) [D] in shared memory, each thread owning entries of it, and
/// writes the rows `rows` at a time as phi(q_i) S / phi(q_i) z, their phi(q)
/// staged in shared memory. Keys fold into the state `rows` at a time, their
/// phi(k) and V's slice staged in shared memory first. Without a mask it
/// folds every key first. Causal, a group of rows is written from the state
/// of the keys its first row sees plus, for the keys the later rows see
/// beyond those (fewer than `rows`), the group's own scores phi(q_i) .
/// phi(k_j) (in shared memory), and those keys are folded before the next
/// group: linear in Sq + Sk.
class LinearKernelBuilder {
public:
  LinearKernelBuilder(OpBuilder &b, Location loc, LinearAttentionOp op,
                      int64_t width, int64_t rows)
      : b(b), loc(loc), m{b, loc}, op(op), width(width), rows(rows) {}

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
    forEach(tid, to, kLinearThreads, body);
  }
  /// A loop over [from, to) in steps of `step`.
  void forEach(Value from, Value to, int64_t step,
               function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, from, to, m.constant(step));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
  }

  OpBuilder &b;
  Location loc;
  IndexMath m;
  LinearAttentionOp op;
  /// Columns of Dv a block computes (its slice of the state).
  int64_t width;
  /// Query rows written at once.
  int64_t rows;
};
} // namespace

void LinearKernelBuilder::build(gpu::GPUFuncOp kernel) {
  Block &body = kernel.getBody().front();
  b.setInsertionPointToStart(&body);
  Value q = body.getArgument(0), k = body.getArgument(1),
        v = body.getArgument(2), out = body.getArgument(3);
  Value sq = body.getArgument(5), sk = body.getArgument(6),
        hq = body.getArgument(7), hkv = body.getArgument(8);
  ValueRange shared = kernel.getWorkgroupAttributions();
  // `phis` holds phi(k) of the keys a fold stages, then phi(q) of the rows
  // a group writes; `values` V's slice of the keys staged, folded or beyond
  // the state; `beyond` (causal, rows > 1) phi(k) of the keys beyond it, in
  // rows of D + 1 (the scores read them a key a lane: no bank conflicts).
  Value state = shared[0], norm = shared[1], phis = shared[2],
        scores = shared[3], values = shared[4];
  Value beyond = shared.size() > 5 ? shared[5] : Value();
  int64_t d = cast<ShapedType>(op.getQuery().getType()).getDimSize(3);
  int64_t dv = cast<ShapedType>(op.getValue().getType()).getDimSize(3);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value base =
      mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x), m.constant(width));
  Value head = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  Value kvHead = arith::DivUIOp::create(
      b, loc, head, arith::DivUIOp::create(b, loc, hq, hkv));
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  Value stateSize = m.constant(d * width), normSize = m.constant(d);
  auto barrier = [&] { gpu::BarrierOp::create(b, loc); };
  auto ult = [&](Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  };
  // Runs `body` where `condition` holds (none: always).
  auto guarded = [&](Value condition, function_ref<void()> body) {
    if (!condition)
      return body();
    auto ifOp = scf::IfOp::create(b, loc, condition, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    body();
  };
  // A loop over [from, to) carrying sums from `init`, `step` giving the
  // next ones from the index and the current ones; its results.
  auto sum = [&](Value from, Value to, ValueRange init,
                 function_ref<SmallVector<Value>(Value, ValueRange)> step) {
    return scf::ForOp::create(
               b, loc, from, to, m.constant(1), init,
               [&](OpBuilder &lb, Location, Value x, ValueRange acc) {
                 OpBuilder::InsertionGuard guard(b);
                 b.setInsertionPoint(lb.getInsertionBlock(),
                                     lb.getInsertionPoint());
                 scf::YieldOp::create(b, loc, step(x, acc));
               })
        .getResults();
  };
  auto add = [&](Value x, Value y) {
    return arith::AddFOp::create(b, loc, x, y);
  };
  auto fmul = [&](Value x, Value y) {
    return arith::MulFOp::create(b, loc, x, y);
  };
  auto load = [&](Value memref, Value at) -> Value {
    return memref::LoadOp::create(b, loc, memref, at);
  };
  auto key = [&](Value j, Value f, int64_t feature, Value memref) {
    return loadF32(memref, offset(batch, kvHead, j, f, hkv, sk, feature));
  };
  Type outElement = getElementTypeOrSelf(out.getType());
  CausalMaskAttr causal = op.getStructuredMaskAttr();
  // Row i sees keys j < seen(i) (causal: i + shift + 1, shift = Sk - Sq
  // bottom-right, within [0, Sk]).
  Value shift = causal && causal.getAlignment() == Alignment::BottomRight
                    ? m.sub(sk, sq)
                    : m.constant(0);
  auto seen = [&](Value i) -> Value {
    if (!causal)
      return sk;
    return arith::MinSIOp::create(
        b, loc,
        arith::MaxSIOp::create(b, loc, m.add(m.add(i, shift), m.constant(1)),
                               m.constant(0)),
        sk);
  };

  // Column `column` of the slice is column base + column of Dv, which the
  // last slice may not have.
  auto insideDv = [&](Value e) -> Value {
    return dv % width ? ult(e, m.constant(dv)).getResult() : Value();
  };
  forEachOwned(tid, stateSize, [&](Value x) {
    memref::StoreOp::create(b, loc, zero, state, x);
  });
  forEachOwned(tid, normSize, [&](Value x) {
    memref::StoreOp::create(b, loc, zero, norm, x);
  });
  barrier();

  // phi(k) of keys [first, first + count) (count <= capacity) into
  // `buffer` in rows of `stride`, and V's slice of them into values in rows
  // of `width`.
  auto stageKeys = [&](Value first, Value count, Value buffer, int64_t capacity,
                       int64_t stride) {
    forEachOwned(tid, m.constant(capacity * d), [&](Value x) {
      Value c = arith::DivUIOp::create(b, loc, x, m.constant(d));
      Value f = arith::RemUIOp::create(b, loc, x, m.constant(d));
      guarded(ult(c, count), [&] {
        memref::StoreOp::create(b, loc, phi(key(m.add(first, c), f, d, k)),
                                buffer, m.add(mul(c, m.constant(stride)), f));
      });
    });
    forEachOwned(tid, m.constant(capacity * width), [&](Value x) {
      Value c = arith::DivUIOp::create(b, loc, x, m.constant(width));
      Value e =
          m.add(base, arith::RemUIOp::create(b, loc, x, m.constant(width)));
      Value inside = ult(c, count);
      if (Value dvInside = insideDv(e))
        inside = m.both(inside, dvInside);
      guarded(inside, [&] {
        memref::StoreOp::create(b, loc, key(m.add(first, c), e, dv, v), values,
                                x);
      });
    });
  };
  // Folds keys [from, to) into the state, `rows` at a time: their phi(k)
  // [rows, D] and V's slice [rows, width] staged, a barrier, each thread
  // adding them to the entries it owns, a barrier.
  auto foldKeys = [&](Value from, Value to) {
    forEach(from, to, rows, [&](Value first) {
      Value count =
          arith::MinSIOp::create(b, loc, m.constant(rows), m.sub(to, first));
      stageKeys(first, count, phis, rows, d);
      barrier();
      // buffer[x] += the sum over the staged keys c of term(c).
      auto accumulate = [&](Value buffer, Value x,
                            function_ref<Value(Value)> term) {
        Value total = sum(m.constant(0), count, load(buffer, x),
                          [&](Value c, ValueRange acc) {
                            return SmallVector<Value>{add(acc[0], term(c))};
                          })[0];
        memref::StoreOp::create(b, loc, total, buffer, x);
      };
      auto stagedKey = [&](Value c, Value f) {
        return load(phis, m.add(mul(c, m.constant(d)), f));
      };
      forEachOwned(tid, stateSize, [&](Value x) {
        Value f = arith::DivUIOp::create(b, loc, x, m.constant(width));
        Value column = arith::RemUIOp::create(b, loc, x, m.constant(width));
        guarded(insideDv(m.add(base, column)), [&] {
          accumulate(state, x, [&](Value c) -> Value {
            Value value =
                load(values, m.add(mul(c, m.constant(width)), column));
            return fmul(stagedKey(c, f), value);
          });
        });
      });
      forEachOwned(tid, normSize, [&](Value f) {
        accumulate(norm, f, [&](Value c) { return stagedKey(c, f); });
      });
      barrier();
    });
  };
  // phi(q) of rows [first, first + rows) into phis [rows, D].
  auto stageQueries = [&](Value first) {
    forEachOwned(tid, m.constant(rows * d), [&](Value x) {
      Value i = m.add(first, arith::DivUIOp::create(b, loc, x, m.constant(d)));
      Value f = arith::RemUIOp::create(b, loc, x, m.constant(d));
      guarded(ult(i, sq), [&] {
        memref::StoreOp::create(
            b, loc, phi(loadF32(q, offset(batch, head, i, f, hq, sq, d))), phis,
            x);
      });
    });
  };
  // phi(q)[f] of the group's row a.
  auto stagedQuery = [&](Value a, Value f) {
    return load(phis, m.add(mul(a, m.constant(d)), f));
  };
  // The keys [from, seen(i)) row i sees beyond the state (none unless
  // causal): their count.
  auto beyondState = [&](Value i, Value from) {
    return arith::MaxSIOp::create(b, loc, m.sub(seen(i), from), m.constant(0));
  };
  // phi(k) and V's slice of the keys [from, from + count) beyond the state
  // that rows [first, first + rows) see (count < rows) into beyond and
  // values.
  auto stageBeyond = [&](Value first, Value from) {
    Value last = arith::MinSIOp::create(
        b, loc, m.add(first, m.constant(rows - 1)), m.sub(sq, m.constant(1)));
    Value count = beyondState(last, from);
    stageKeys(from, count, beyond, rows - 1, d + 1);
  };
  // scores [rows, rows]: phi(q_i) . phi(k_j) for row i = first + a and
  // key j = from + c, where row i sees key j beyond the state.
  auto scoreGroup = [&](Value first, Value from) {
    forEachOwned(tid, m.constant(rows * rows), [&](Value x) {
      Value a = arith::DivUIOp::create(b, loc, x, m.constant(rows));
      Value c = arith::RemUIOp::create(b, loc, x, m.constant(rows));
      Value i = m.add(first, a);
      guarded(m.both(ult(i, sq), m.slt(c, beyondState(i, from))), [&] {
        Value dot = sum(
            m.constant(0), m.constant(d), zero, [&](Value f, ValueRange acc) {
              Value phiK = load(beyond, m.add(mul(c, m.constant(d + 1)), f));
              Value phiq = stagedQuery(a, f);
              return SmallVector<Value>{add(acc[0], fmul(phiq, phiK))};
            })[0];
        memref::StoreOp::create(b, loc, dot, scores, x);
      });
    });
  };
  // Writes rows [first, first + rows): (row, column) pairs over threads,
  // each from the state and (with `from`) the group's scores of keys from
  // `from` on.
  auto writeRows = [&](Value first, Value from) {
    forEachOwned(tid, m.constant(rows * width), [&](Value p) {
      Value a = arith::DivUIOp::create(b, loc, p, m.constant(width));
      Value column = arith::RemUIOp::create(b, loc, p, m.constant(width));
      Value i = m.add(first, a);
      Value e = m.add(base, column);
      Value inside = ult(i, sq);
      if (Value dvInside = insideDv(e))
        inside = m.both(inside, dvInside);
      guarded(inside, [&] {
        ValueRange sums = sum(
            m.constant(0), m.constant(d), ValueRange{zero, zero},
            [&](Value f, ValueRange acc) {
              Value phiq = stagedQuery(a, f);
              Value s = load(state, m.add(mul(f, m.constant(width)), column));
              return SmallVector<Value>{add(acc[0], fmul(phiq, s)),
                                        add(acc[1], fmul(phiq, load(norm, f)))};
            });
        if (from)
          sums =
              sum(m.constant(0), beyondState(i, from), sums,
                  [&](Value c, ValueRange acc) {
                    Value score =
                        load(scores, m.add(mul(a, m.constant(rows)), c));
                    Value value =
                        load(values, m.add(mul(c, m.constant(width)), column));
                    return SmallVector<Value>{add(acc[0], fmul(score, value)),
                                              add(acc[1], score)};
                  });
        // phi > 0, so the denominator is 0 only for a row without keys.
        Value num = sums[0], den = sums[1];
        Value any =
            arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, den, zero);
        Value result = arith::SelectOp::create(
            b, loc, any, arith::DivFOp::create(b, loc, num, den), zero);
        memref::StoreOp::create(b, loc,
                                convertFloat(b, loc, result, outElement), out,
                                offset(batch, head, i, e, hq, sq, dv));
      });
    });
  };

  if (!causal)
    foldKeys(m.constant(0), sk);
  // Each group: [fold the keys its first row sees,] stage its phi(q) [and
  // the keys its later rows see beyond the state], a barrier[, its scores,
  // a barrier], write it, a barrier (before the next group's fold and
  // staging overwrite what it read).
  scf::ForOp::create(
      b, loc, m.constant(0), sq, m.constant(rows), ValueRange{m.constant(0)},
      [&](OpBuilder &lb, Location, Value first, ValueRange folded) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
        Value next = folded[0];
        if (causal) {
          next = arith::MaxSIOp::create(b, loc, folded[0], seen(first));
          foldKeys(folded[0], next);
        }
        stageQueries(first);
        if (beyond)
          stageBeyond(first, next);
        barrier();
        if (beyond) {
          scoreGroup(first, next);
          barrier();
        }
        writeRows(first, beyond ? next : Value());
        barrier();
        scf::YieldOp::create(b, loc, ValueRange{next});
      });

  gpu::ReturnOp::create(b, loc);
}

/// The linear-attention kernel of `func` ((q, k, v, out) returning one
/// attn.linear_attention): one block per (slice of Dv, query head, batch
/// entry).
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
  // In f32: the state [D, width], the normalizer [D], phi(k) or phi(q)
  // [rows, D], a group's scores [rows, rows], V's slice of the staged keys
  // [rows, width] and [beyond], each buffer on a 16-byte boundary.
  auto floats = [](int64_t n) { return int64_t(llvm::alignTo(n, 4)); };
  int64_t rows = linearRows(d);
  // Causal with rows > 1: phi(k) of the keys beyond the state too, [rows -
  // 1, D + 1].
  bool beyond = op.getStructuredMaskAttr() && rows > 1;
  int64_t beyondSize = beyond ? (rows - 1) * (d + 1) : 0;
  int64_t budget = kStaticSharedBytes / 4 - floats(d) - floats(rows * d) -
                   floats(rows * rows) - floats(beyondSize);
  int64_t maxWidth = budget / (d + rows);
  while (maxWidth > 0 &&
         floats(d * maxWidth) + floats(rows * maxWidth) > budget)
    --maxWidth;
  if (maxWidth < 1)
    return fail("D = " + Twine(d) +
                " leaves no room in 48 KiB of shared memory for a column of "
                "the f32 state besides its normalizer and a row of phi(q)");
  // Slices of Dv, a block each: as few as fit, more (of at least
  // kMinSliceColumns) while the heads and batch entries, where static, are
  // too few blocks to fill a GPU.
  int64_t slices = llvm::divideCeil(dv, maxWidth);
  auto q = cast<ShapedType>(op.getQuery().getType());
  int64_t batch = q.getDimSize(0),
          heads = q.getDimSize(getHeadDimPos(op.getLayout()));
  if (!ShapedType::isDynamic(batch) && !ShapedType::isDynamic(heads) &&
      batch * heads > 0)
    slices = std::max(
        slices,
        std::min<int64_t>(llvm::divideCeil(kBlocksToFill, batch * heads),
                          std::max<int64_t>(dv / kMinSliceColumns, 1)));
  int64_t width = llvm::divideCeil(dv, slices);
  slices = llvm::divideCeil(dv, width);
  MLIRContext *ctx = func.getContext();
  auto shared = [&](int64_t size) {
    return MemRefType::get(
        {size}, Float32Type::get(ctx), MemRefLayoutAttrInterface(),
        gpu::AddressSpaceAttr::get(
            ctx, gpu::GPUDialect::getWorkgroupAddressSpace()));
  };
  SmallVector<Type> buffers = {shared(d * width), shared(d), shared(rows * d),
                               shared(rows * rows), shared(rows * width)};
  if (beyond)
    buffers.push_back(shared(beyondSize));
  gpu::GPUFuncOp kernel = createKernel(
      func, func.getSymName(), gpu::GPUModuleOp(), buffers, kLinearThreads);
  if (failed(boundBlocksPerSM(op, kernel, kLinearThreads, minBlocksPerSM)))
    return failure();
  OpBuilder b(ctx);
  LinearKernelBuilder(b, func.getLoc(), op, width, rows).build(kernel);
  // A block per (slice, head, batch entry): block rows past any sequence.
  KernelLaunch launch{kernel, kLinearThreads};
  launch.columnBlocks = slices;
  replaceWithKernelLaunches(func, {launch}, op.getLayout(),
                            /*blockRows=*/int64_t(1) << 40);
  return success();
}
