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
/// The fewest query rows (and keys) of a chunk where more blocks are wanted;
/// and a chunk's rows when Sq is dynamic.
static constexpr int64_t kMinChunkRows = 64, kDynamicChunkRows = 256;

/// Query rows a linear attention block writes at once: 16 at D <= 64, fewer
/// above, so that their phi(q) [rows, D] leaves the state its room.
static int64_t linearRows(int64_t d) {
  return std::clamp<int64_t>(1024 / d, 1, 16);
}

namespace {
/// The kernels of a linear attention, each a block per (query head (KV head
/// in the chunk kernels), batch entry, slice of `width` columns of Dv[, chunk
/// of `chunkRows` rows]).
enum class LinearKernel {
  /// The state of each whole chunk of `chunkRows` keys, alone, into the
  /// scratch buffer `states`.
  ChunkStates,
  /// Each chunk's state in `states` plus those before it (a prefix sum over
  /// the chunks, each block taking a share of the entries).
  ChunkPrefixes,
  /// The output rows (of the block's chunk).
  Rows,
};

/// A block keeps the state S = sum_j phi(k_j) v_j^T [D, width] and z =
/// sum_j phi(k_j) [D] in shared memory, each thread owning entries of it,
/// and writes the rows `rows` at a time as phi(q_i) S / phi(q_i) z, their
/// phi(q) staged in shared memory. Keys fold into the state `rows` at a
/// time, their phi(k) and V's slice staged in shared memory first. In
/// chunks, a block starts from the prefix sum (in `states`) of the key
/// chunks its chunk's first row sees (all, without a mask). Without a
/// mask it then folds every other key. Causal, a group of rows is written
/// from the state of the keys its first row sees plus, for the keys the
/// later rows see beyond those (fewer than `rows`), the group's own scores
/// phi(q_i) . phi(k_j) (in shared memory), and those keys are folded before
/// the next group: linear in Sq + Sk.
class LinearKernelBuilder {
public:
  LinearKernelBuilder(OpBuilder &b, Location loc, LinearAttentionOp op,
                      int64_t width, int64_t rows, int64_t slices,
                      int64_t chunkRows)
      : b(b), loc(loc), m{b, loc}, op(op), width(width), rows(rows),
        slices(slices), chunkRows(chunkRows) {}

  void build(gpu::GPUFuncOp kernel, LinearKernel kind);

private:
  /// Reads the kernel's arguments and buffers, and this block's place.
  void placeBlock(gpu::GPUFuncOp kernel, LinearKernel kind);
  /// The chunk kernels' body (see LinearKernel).
  void buildChunks(LinearKernel kind);
  /// The rows kernel's body.
  void buildRows();

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
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value ult(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  }
  Value load(Value memref, Value at) {
    return memref::LoadOp::create(b, loc, memref, at);
  }
  /// memref[at] as f32.
  Value loadF32(Value memref, Value at) {
    return convertFloat(b, loc, load(memref, at), b.getF32Type());
  }
  /// Element f of key row j of `memref` (K, or V with `feature` Dv), as
  /// f32.
  Value key(Value j, Value f, int64_t feature, Value memref) {
    return loadF32(memref, offset(batch, kvHead, j, f, hkv, sk, feature));
  }
  Value phi(Value x) { return createLinearFeatureMap(b, loc, x); }
  void barrier() { gpu::BarrierOp::create(b, loc); }
  /// Runs `body` where `condition` holds (none: always).
  void guarded(Value condition, function_ref<void()> body) {
    if (!condition)
      return body();
    auto ifOp = scf::IfOp::create(b, loc, condition, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    body();
  }
  /// A loop over [from, to) in steps of the block's threads (from this
  /// thread's `tid`, the entries it owns).
  void forEachOwned(Value from, Value to, function_ref<void(Value)> body) {
    forEach(from, to, m.constant(kLinearThreads), body);
  }
  /// A loop over [from, to) in steps of `step`.
  void forEach(Value from, Value to, Value step,
               function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, from, to, step);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
  }
  /// A loop over [from, to) carrying sums from `init`, `step` giving the
  /// next ones from the index and the current ones; its results.
  ValueRange sum(Value from, Value to, ValueRange init,
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
  }

  /// The keys row i sees are j < seen(i) (causal: i + shift + 1, shift = Sk
  /// - Sq bottom-right, within [0, Sk]).
  Value seen(Value i);
  /// Whether column `e` of Dv exists (the last slice may pass Dv), or null
  /// where every slice's columns do.
  Value insideDv(Value e) {
    return dv % width ? ult(e, m.constant(dv)) : Value();
  }
  /// Entry x of the state (x < D width) or the normalizer (D width + f) of
  /// the block's slice of whole key chunk c in `states`: [B, Hkv, whole
  /// chunks, slices, D width + D] (a state depends on the KV head only).
  Value chunkEntry(Value c, Value x);
  /// The whole key chunks the chunk of rows from `firstRow` starts from:
  /// those its first row sees (all, without a mask).
  Value chunksSeen(Value firstRow);
  /// `body` on each entry of the state and normalizer the thread owns
  /// (those a fold adds to): its entry in a chunk's state (D width + f for
  /// the normalizer's f), its buffer and its index there.
  void forEachOwnedEntry(function_ref<void(Value, Value, Value)> body);
  void zeroOwned();
  /// phi(k) of keys [first, first + count) (count <= capacity) into
  /// `buffer` in rows of `stride`, and V's slice of them into `values` in
  /// rows of `width`.
  void stageKeys(Value first, Value count, Value buffer, int64_t capacity,
                 int64_t stride);
  /// Folds keys [from, to) into the state, `rows` at a time: their phi(k)
  /// [rows, D] and V's slice [rows, width] staged, a barrier, each thread
  /// adding them to the entries it owns, a barrier.
  void foldKeys(Value from, Value to);
  /// phi(q) of rows [first, first + rows) into phis [rows, D].
  void stageQueries(Value first);
  /// phi(q)[f] of the group's row a.
  Value stagedQuery(Value a, Value f) {
    return load(phis, m.add(mul(a, m.constant(d)), f));
  }
  /// The count of keys [from, seen(i)) row i sees beyond the state (none
  /// unless causal).
  Value beyondState(Value i, Value from) {
    return arith::MaxSIOp::create(b, loc, m.sub(seen(i), from), m.constant(0));
  }
  /// phi(k) and V's slice of the keys [from, from + count) beyond the
  /// state that rows [first, first + rows) see (count < rows) into `beyond`
  /// and `values`.
  void stageBeyond(Value first, Value from);
  /// scores [rows, rows]: phi(q_i) . phi(k_j) for row i = first + a and key
  /// j = from + c, where row i sees key j beyond the state.
  void scoreGroup(Value first, Value from);
  /// Writes rows [first, first + rows): (row, column) pairs over threads,
  /// each from the state and (with `from`) the group's scores of keys from
  /// `from` on.
  void writeRows(Value first, Value from);

  OpBuilder &b;
  Location loc;
  IndexMath m;
  LinearAttentionOp op;
  /// Columns of Dv a block computes (its slice of the state).
  int64_t width;
  /// Query rows written at once.
  int64_t rows;
  /// Slices of Dv, and rows (and keys) of a chunk (0: no chunks).
  int64_t slices, chunkRows;

  // Set by placeBlock. The kernel's arguments: q, k, v, out, in chunks the
  // scratch buffer `states`, then B, Sq, Sk, Hq and Hkv.
  Value q, k, v, out, states, sq, sk, hq, hkv;
  // Its shared buffers: the state and normalizer; `phis` holds phi(k) of
  // the keys a fold stages, then phi(q) of the rows a group writes;
  // `values` V's slice of the keys staged, folded or beyond the state;
  // `scores` and `beyond` (causal, rows > 1) the group's scores and phi(k)
  // of the keys beyond the state, in rows of D + 1 (the scores read them a
  // key a lane: no bank conflicts). The chunk states' kernel has the first
  // four alone, the prefix sums' none.
  Value state, norm, phis, values, scores, beyond;
  int64_t d = 0, dv = 0;
  // This thread and block: the block's slice of Dv (from column `base`),
  // chunk (in chunks), heads and batch entry.
  Value tid, slice, chunk, base, head, batch, kvHead;
  Value zero, stateSize, normSize;
  Type outElement;
  CausalMaskAttr causal;
  Value shift;       // see seen
  Value wholeChunks; // in chunks: the whole chunks of Sk
};
} // namespace

void LinearKernelBuilder::placeBlock(gpu::GPUFuncOp kernel, LinearKernel kind) {
  Block &body = kernel.getBody().front();
  b.setInsertionPointToStart(&body);
  q = body.getArgument(0), k = body.getArgument(1), v = body.getArgument(2),
  out = body.getArgument(3);
  unsigned scalars = chunkRows ? 5 : 4;
  states = chunkRows ? body.getArgument(4) : Value();
  sq = body.getArgument(scalars + 1), sk = body.getArgument(scalars + 2),
  hq = body.getArgument(scalars + 3), hkv = body.getArgument(scalars + 4);
  ValueRange shared = kernel.getWorkgroupAttributions();
  auto sharedAt = [&](size_t i) {
    return i < shared.size() ? shared[i] : Value();
  };
  state = sharedAt(0), norm = sharedAt(1), phis = sharedAt(2),
  values = sharedAt(3), scores = sharedAt(4), beyond = sharedAt(5);
  d = cast<ShapedType>(op.getQuery().getType()).getDimSize(3);
  dv = cast<ShapedType>(op.getValue().getType()).getDimSize(3);
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  // Block x is (chunk, slice) in chunks, else the slice.
  Value blockX = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  slice = chunkRows ? arith::RemUIOp::create(b, loc, blockX, m.constant(slices))
                    : blockX;
  chunk = chunkRows ? arith::DivUIOp::create(b, loc, blockX, m.constant(slices))
                          .getResult()
                    : Value();
  base = mul(slice, m.constant(width));
  // Block y is the query head, or the KV head in the chunk kernels (a
  // chunk's state depends on the KV head only).
  head = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  kvHead = kind == LinearKernel::Rows
               ? arith::DivUIOp::create(b, loc, head,
                                        arith::DivUIOp::create(b, loc, hq, hkv))
                     .getResult()
               : head;
  zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  stateSize = m.constant(d * width), normSize = m.constant(d);
  outElement = getElementTypeOrSelf(out.getType());
  causal = op.getStructuredMaskAttr();
  shift = causal && causal.getAlignment() == Alignment::BottomRight
              ? m.sub(sk, sq)
              : m.constant(0);
  wholeChunks = chunkRows
                    ? arith::DivUIOp::create(b, loc, sk, m.constant(chunkRows))
                          .getResult()
                    : Value();
}

Value LinearKernelBuilder::seen(Value i) {
  if (!causal)
    return sk;
  return arith::MinSIOp::create(
      b, loc,
      arith::MaxSIOp::create(b, loc, m.add(m.add(i, shift), m.constant(1)),
                             m.constant(0)),
      sk);
}

Value LinearKernelBuilder::chunkEntry(Value c, Value x) {
  int64_t sliceSize = d * width + d;
  Value at = m.add(mul(m.add(mul(batch, hkv), kvHead), wholeChunks), c);
  return m.add(m.add(mul(at, m.constant(slices * sliceSize)),
                     mul(slice, m.constant(sliceSize))),
               x);
}

Value LinearKernelBuilder::chunksSeen(Value firstRow) {
  if (!causal)
    return wholeChunks;
  return arith::DivUIOp::create(b, loc, seen(firstRow), m.constant(chunkRows));
}

void LinearKernelBuilder::forEachOwnedEntry(
    function_ref<void(Value, Value, Value)> body) {
  forEachOwned(tid, stateSize, [&](Value x) { body(x, state, x); });
  forEachOwned(tid, normSize,
               [&](Value f) { body(m.add(stateSize, f), norm, f); });
}

void LinearKernelBuilder::zeroOwned() {
  forEachOwnedEntry([&](Value, Value buffer, Value at) {
    memref::StoreOp::create(b, loc, zero, buffer, at);
  });
}

void LinearKernelBuilder::stageKeys(Value first, Value count, Value buffer,
                                    int64_t capacity, int64_t stride) {
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
    Value e = m.add(base, arith::RemUIOp::create(b, loc, x, m.constant(width)));
    Value inside = ult(c, count);
    if (Value dvInside = insideDv(e))
      inside = m.both(inside, dvInside);
    guarded(inside, [&] {
      memref::StoreOp::create(b, loc, key(m.add(first, c), e, dv, v), values,
                              x);
    });
  });
}

void LinearKernelBuilder::foldKeys(Value from, Value to) {
  forEach(from, to, m.constant(rows), [&](Value first) {
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
          Value value = load(values, m.add(mul(c, m.constant(width)), column));
          return fmul(stagedKey(c, f), value);
        });
      });
    });
    forEachOwned(tid, normSize, [&](Value f) {
      accumulate(norm, f, [&](Value c) { return stagedKey(c, f); });
    });
    barrier();
  });
}

void LinearKernelBuilder::stageQueries(Value first) {
  forEachOwned(tid, m.constant(rows * d), [&](Value x) {
    Value i = m.add(first, arith::DivUIOp::create(b, loc, x, m.constant(d)));
    Value f = arith::RemUIOp::create(b, loc, x, m.constant(d));
    guarded(ult(i, sq), [&] {
      memref::StoreOp::create(
          b, loc, phi(loadF32(q, offset(batch, head, i, f, hq, sq, d))), phis,
          x);
    });
  });
}

void LinearKernelBuilder::stageBeyond(Value first, Value from) {
  Value last = arith::MinSIOp::create(
      b, loc, m.add(first, m.constant(rows - 1)), m.sub(sq, m.constant(1)));
  Value count = beyondState(last, from);
  stageKeys(from, count, beyond, rows - 1, d + 1);
}

void LinearKernelBuilder::scoreGroup(Value first, Value from) {
  forEachOwned(tid, m.constant(rows * rows), [&](Value x) {
    Value a = arith::DivUIOp::create(b, loc, x, m.constant(rows));
    Value c = arith::RemUIOp::create(b, loc, x, m.constant(rows));
    Value i = m.add(first, a);
    guarded(m.both(ult(i, sq), m.slt(c, beyondState(i, from))), [&] {
      Value dot =
          sum(m.constant(0), m.constant(d), zero, [&](Value f, ValueRange acc) {
            Value phiK = load(beyond, m.add(mul(c, m.constant(d + 1)), f));
            Value phiq = stagedQuery(a, f);
            return SmallVector<Value>{add(acc[0], fmul(phiq, phiK))};
          })[0];
      memref::StoreOp::create(b, loc, dot, scores, x);
    });
  });
}

void LinearKernelBuilder::writeRows(Value first, Value from) {
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
        sums = sum(m.constant(0), beyondState(i, from), sums,
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
      memref::StoreOp::create(b, loc, convertFloat(b, loc, result, outElement),
                              out, offset(batch, head, i, e, hq, sq, dv));
    });
  });
}

void LinearKernelBuilder::build(gpu::GPUFuncOp kernel, LinearKernel kind) {
  placeBlock(kernel, kind);
  if (kind == LinearKernel::Rows)
    buildRows();
  else
    buildChunks(kind);
  gpu::ReturnOp::create(b, loc);
}

void LinearKernelBuilder::buildChunks(LinearKernel kind) {
  // The key chunks the grid's last chunk of rows starts from.
  Value gridChunks =
      arith::CeilDivUIOp::create(b, loc, sq, m.constant(chunkRows));
  Value needed =
      chunksSeen(mul(m.sub(gridChunks, m.constant(1)), m.constant(chunkRows)));
  if (kind == LinearKernel::ChunkStates) {
    // The grid's chunks of rows take them in turn.
    forEach(chunk, needed, gridChunks, [&](Value c) {
      // Each thread folds into and reads the entries it owns alone: the
      // fold's barriers keep the staging buffers.
      zeroOwned();
      Value from = mul(c, m.constant(chunkRows));
      foldKeys(from, m.add(from, m.constant(chunkRows)));
      forEachOwnedEntry([&](Value x, Value buffer, Value at) {
        memref::StoreOp::create(b, loc, load(buffer, at), states,
                                chunkEntry(c, x));
      });
    });
    return;
  }
  // The prefix sums: each block a share of the entries, each thread one
  // entry at a time through every chunk.
  int64_t entries = d * width + d;
  Value share =
      arith::CeilDivUIOp::create(b, loc, m.constant(entries), gridChunks);
  Value from = mul(chunk, share);
  Value to =
      arith::MinSIOp::create(b, loc, m.add(from, share), m.constant(entries));
  forEachOwned(m.add(from, tid), to, [&](Value x) {
    sum(m.constant(0), needed, zero, [&](Value c, ValueRange acc) {
      Value at = chunkEntry(c, x);
      Value total = add(acc[0], load(states, at));
      memref::StoreOp::create(b, loc, total, states, at);
      return SmallVector<Value>{total};
    });
  });
}

void LinearKernelBuilder::buildRows() {
  // The block's rows [firstRow, endRow), from the state of the keys before
  // `folded`: in chunks, the prefix sum of the whole key chunks its first
  // row sees (all, without a mask), else none.
  Value firstRow = m.constant(0), endRow = sq, folded = m.constant(0);
  if (chunkRows) {
    firstRow = mul(chunk, m.constant(chunkRows));
    endRow = arith::MinSIOp::create(b, loc,
                                    m.add(firstRow, m.constant(chunkRows)), sq);
    Value seenChunks = chunksSeen(firstRow);
    // That of chunk seenChunks - 1, if any.
    Value last =
        m.sub(arith::MaxSIOp::create(b, loc, seenChunks, m.constant(1)),
              m.constant(1));
    forEachOwnedEntry([&](Value x, Value buffer, Value at) {
      Value total = sum(last, seenChunks, zero, [&](Value c, ValueRange acc) {
        return SmallVector<Value>{add(acc[0], load(states, chunkEntry(c, x)))};
      })[0];
      memref::StoreOp::create(b, loc, total, buffer, at);
    });
    folded = mul(seenChunks, m.constant(chunkRows));
  } else {
    zeroOwned();
  }
  // No barrier: each thread sets the entries a fold adds to, and a barrier
  // follows every staging before another thread reads them.
  if (!causal)
    foldKeys(folded, sk);
  // Each group: [fold the keys its first row sees,] stage its phi(q) [and
  // the keys its later rows see beyond the state], a barrier[, its scores,
  // a barrier], write it, a barrier (before the next group's fold and
  // staging overwrite what it read).
  scf::ForOp::create(
      b, loc, firstRow, endRow, m.constant(rows), ValueRange{folded},
      [&](OpBuilder &lb, Location, Value first, ValueRange carried) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
        Value next = carried[0];
        if (causal) {
          next = arith::MaxSIOp::create(b, loc, carried[0], seen(first));
          foldKeys(carried[0], next);
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
}

/// The rows (and keys) of a chunk of a linear attention whose slices, heads
/// and batch entries make `blocks` blocks, for `seq` query rows written
/// `rows` at a time: chunks while a GPU wants more blocks, each a whole
/// number of groups and at least kMinChunkRows rows; 0 for none.
static int64_t linearChunkRows(int64_t blocks, int64_t seq, int64_t rows) {
  if (ShapedType::isDynamic(blocks) || blocks >= kBlocksToFill)
    return 0;
  int64_t chunkRows =
      ShapedType::isDynamic(seq)
          ? kDynamicChunkRows
          : std::max<int64_t>(
                llvm::divideCeil(seq, llvm::divideCeil(kBlocksToFill, blocks)),
                kMinChunkRows);
  chunkRows = int64_t(llvm::alignTo(chunkRows, rows));
  return ShapedType::isDynamic(seq) || chunkRows < seq ? chunkRows : 0;
}

/// The linear-attention kernel of `func` ((q, k, v, out) returning one
/// attn.linear_attention): one block per (slice of Dv, query head, batch
/// entry[, chunk of rows]).
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
  // [rows, D], V's slice of the staged keys [rows, width], a group's scores
  // [rows, rows] and [beyond], each buffer on a 16-byte boundary.
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
  bool staticBlocks = !ShapedType::isDynamic(batch) &&
                      !ShapedType::isDynamic(heads) && batch * heads > 0;
  if (staticBlocks)
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
                               shared(rows * width), shared(rows * rows)};
  if (beyond)
    buffers.push_back(shared(beyondSize));
  // Chunks of rows while the slices, heads and batch entries are too few
  // blocks to fill a GPU: each chunk's keys fold into a state of their own,
  // in parallel, that the later chunks start from. The chunk kernels take a
  // KV head a block, so its count must be static too.
  int64_t kvHeads = cast<ShapedType>(op.getKey().getType())
                        .getDimSize(getHeadDimPos(op.getLayout()));
  int64_t chunkRows = linearChunkRows(
      staticBlocks && !ShapedType::isDynamic(kvHeads) && kvHeads > 0
          ? batch * heads * slices
          : ShapedType::kDynamic,
      q.getDimSize(getSeqDimPos(op.getLayout())), rows);
  SmallVector<Type> elements;
  if (chunkRows) {
    elements =
        llvm::to_vector(llvm::map_range(func.getArgumentTypes(), [](Type t) {
          return getElementTypeOrSelf(t);
        }));
    elements.push_back(Float32Type::get(ctx));
  }
  OpBuilder b(ctx);
  SmallVector<KernelLaunch> launches;
  auto addKernel = [&](StringRef name, LinearKernel kind) -> LogicalResult {
    gpu::GPUFuncOp kernel = createKernel(
        func, name,
        launches.empty()
            ? gpu::GPUModuleOp()
            : launches.front().kernel->getParentOfType<gpu::GPUModuleOp>(),
        kind == LinearKernel::Rows          ? ArrayRef(buffers)
        : kind == LinearKernel::ChunkStates ? ArrayRef(buffers).take_front(4)
                                            : ArrayRef<Type>(),
        kLinearThreads, elements);
    if (failed(boundBlocksPerSM(op, kernel, kLinearThreads, minBlocksPerSM)))
      return failure();
    LinearKernelBuilder(b, func.getLoc(), op, width, rows, slices, chunkRows)
        .build(kernel, kind);
    KernelLaunch &launch =
        launches.emplace_back(KernelLaunch{kernel, kLinearThreads});
    launch.columnBlocks = slices;
    if (kind != LinearKernel::Rows)
      launch.packedHeads = heads / kvHeads;
    return success();
  };
  std::string name = func.getSymName().str();
  if ((chunkRows &&
       (failed(addKernel(name + "_chunk_states", LinearKernel::ChunkStates)) ||
        failed(addKernel(name + "_chunk_prefixes",
                         LinearKernel::ChunkPrefixes)))) ||
      failed(addKernel(name, LinearKernel::Rows)))
    return failure();
  if (!chunkRows) {
    // A block per (slice, head, batch entry): block rows past any sequence.
    replaceWithKernelLaunches(func, launches, op.getLayout(),
                              /*blockRows=*/int64_t(1) << 40);
    return success();
  }
  // The states of B Hkv floor(Sk / chunkRows) chunks, each slices (D width
  // + D) floats: a width per row of k (B Sk Hkv) holds them.
  LaunchScratch states{
      1, int64_t(llvm::divideCeil(slices * (d * width + d), chunkRows))};
  replaceWithKernelLaunches(func, launches, op.getLayout(), chunkRows,
                            /*packedHeads=*/1, /*split=*/nullptr, &states);
  return success();
}
