//===- LowerToUKernels.cpp - attn ops -> attn.ukernel.generic -------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnOps.h"
#include "attn/IR/StructuredMasks.h"
#include "attn/Runtime/UKernels.h"
#include "attn/Transforms/Passes.h"
#include "attn/Transforms/Transforms.h"
#include "attn/Transforms/Utils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::attn {
#define GEN_PASS_DEF_LOWERTOUKERNELS
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

/// Rows of a matmul per micro-kernel call (and per parallel task).
static constexpr int64_t kMatmulRowTile = 64;

/// A band no position difference leaves: the micro-kernel's "no mask".
static constexpr int64_t kUnbounded = int64_t(1) << 62;

/// The band [lo, hi] of key - query position differences that `mask` shows
/// (everything without a band mask: a mask the micro-kernel cannot express
/// as a band goes into its i1 tile instead).
static std::pair<int64_t, int64_t>
getVisibleBand(StructuredMaskAttrInterface mask) {
  if (isa_and_nonnull<CausalMaskAttr>(mask))
    return std::make_pair(-kUnbounded, int64_t(0));
  if (auto window = dyn_cast_or_null<SlidingWindowMaskAttr>(mask))
    return std::make_pair(-window.getLeft(), window.getRight());
  return std::make_pair(-kUnbounded, kUnbounded);
}

/// Whether `op` has masks read from run-time tensors per position: kv_lens,
/// spans or a block mask.
static bool hasRunTimeMasks(OnlineAttentionOp op) {
  return op.getKvLens() || op.getSpans() || op.getBlockMask();
}

/// The whole-problem (b, h, i, j) of the current element of a 4-d
/// linalg.generic over a step's [B, Hq, Sq, Sk] tile.
static SmallVector<Value, 4>
getWholeProblemIndices(OpBuilder &b, Location loc,
                       const AttentionPosition &position) {
  SmallVector<Value, 4> indices;
  for (int64_t d = 0; d < 4; ++d)
    indices.push_back(arith::AddIOp::create(
        b, loc, linalg::IndexOp::create(b, loc, d), position.offsets[d]));
  return indices;
}

/// The masks of `op` that the micro-kernel's band does not express (its
/// mask_mod, a sparse structured mask, kv_lens, spans, a block mask, and the
/// band itself under a block mask, whose full blocks override it) evaluated
/// over the step's indices into an i1 tensor [B, Hq, Sq, Sk], of size 1
/// along the batch and head dims nothing reads. They run once per score, as
/// in the linalg step, but the tile products stay in the micro-kernel.
static Value materializePositionMasks(OpBuilder &b, Location loc,
                                      OnlineAttentionOp op,
                                      const AttentionPosition &position) {
  Layout layout = op.getLayout();
  Region &maskMod = op.getMaskMod();
  StructuredMaskAttrInterface mask = op.getStructuredMaskAttr();
  Value blockMask = op.getBlockMask();
  if (isBandMask(mask) && !blockMask)
    mask = {};
  auto dimOrOne = [&](Value tensor, int64_t dim, bool used) -> OpFoldResult {
    if (!used)
      return b.getIndexAttr(1);
    return tensor::getMixedSize(b, loc, tensor, dim);
  };
  auto readsArg = [&](unsigned arg) {
    return hasRunTimeMasks(op) ||
           (!maskMod.empty() && !maskMod.getArgument(arg).use_empty());
  };
  SmallVector<OpFoldResult> sizes = {
      dimOrOne(op.getQuery(), 0, readsArg(0)),
      dimOrOne(op.getQuery(), getHeadDimPos(layout), readsArg(1)),
      dimOrOne(op.getQuery(), getSeqDimPos(layout), true),
      dimOrOne(op.getKey(), getSeqDimPos(layout), true)};
  Value init = tensor::EmptyOp::create(b, loc, sizes, b.getI1Type());
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(4)};
  SmallVector<utils::IteratorType> iterators(4, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{}, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nl, ValueRange) {
        SmallVector<Value, 4> indices =
            getWholeProblemIndices(nb, nl, position);
        Value visible = arith::ConstantIntOp::create(nb, nl, 1, 1);
        if (!maskMod.empty())
          visible = inlineRegion(nb, maskMod, indices);
        if (mask)
          visible = arith::AndIOp::create(
              nb, nl, visible,
              buildMaskVisible(nb, nl, mask, indices[2], indices[3],
                               position.extents[0], position.extents[1]));
        IndexMath m{nb, nl};
        if (Value lens = op.getKvLens()) {
          // kv_lens is sliced with the tile's batch: a local index.
          Value len = tensor::ExtractOp::create(
              nb, nl, lens, ValueRange{linalg::IndexOp::create(nb, nl, 0)});
          visible = m.both(
              visible, m.slt(indices[3], arith::IndexCastOp::create(
                                             nb, nl, nb.getIndexType(), len)));
        }
        if (Value spans = op.getSpans()) {
          Value span =
              tensor::ExtractOp::create(nb, nl, spans, ValueRange{indices[1]});
          visible = m.both(
              visible,
              m.sle(m.sub(indices[2], arith::IndexCastOp::create(
                                          nb, nl, nb.getIndexType(), span)),
                    indices[3]));
        }
        if (blockMask)
          visible = buildBlockMaskVisible(
              nb, nl, blockMask, *op.getBlockSizes(), indices, visible);
        linalg::YieldOp::create(nb, nl, visible);
      });
  return generic.getResult(0);
}

/// T5's relative-position bias depends on j - i alone, so a step's Tq x Tk
/// scores take at most Tq + Tk - 1 distinct biases per head: this gathers
/// them once, as f32 [Hq, Tq + Tk] where entry t is the bias at
/// j - i = (j0 - i0) + t - Tq, so that the scores read entry
/// j_local - i_local + Tq, a contiguous row per query. The bucket compares
/// and the table gather then run Tq + Tk times per head, not Tq * Tk.
static Value gatherRelPosDiagonals(OpBuilder &b, Location loc,
                                   OnlineAttentionOp op,
                                   const AttentionPosition &position,
                                   ArrayRef<OpFoldResult> scoreSizes) {
  IndexMath m{b, loc};
  Value queries = getValueOrCreateConstantIndexOp(b, loc, scoreSizes[2]);
  Value keys = getValueOrCreateConstantIndexOp(b, loc, scoreSizes[3]);
  SmallVector<OpFoldResult> sizes = {scoreSizes[1],
                                     OpFoldResult(m.add(queries, keys))};
  Value init = tensor::EmptyOp::create(b, loc, sizes, b.getF32Type());
  Value lastQuery = m.add(position.offsets[2], queries);
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(2)};
  SmallVector<utils::IteratorType> iterators(2, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{}, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nl, ValueRange) {
        IndexMath nm{nb, nl};
        Value head =
            nm.add(linalg::IndexOp::create(nb, nl, 0), position.offsets[1]);
        Value key =
            nm.add(linalg::IndexOp::create(nb, nl, 1), position.offsets[3]);
        Value bucket =
            buildRelPosBucket(nb, nl, op.getRelposAttr(), lastQuery, key);
        linalg::YieldOp::create(
            nb, nl,
            tensor::ExtractOp::create(nb, nl, op.getRelBias(),
                                      ValueRange{head, bucket})
                .getResult());
      });
  return generic.getResult(0);
}

/// The scores of `op`'s step with its score_mod and relative-position bias
/// applied, as f32 [B, Hq, Sq, Sk]: the `scoresUKernel` micro-kernel writes
/// the scaled products, then one linalg.generic modifies them in place. The
/// region runs once per score, as in the linalg step, but the products and
/// the softmax stay in the micro-kernels.
static Value materializeModifiedScores(OpBuilder &b, Location loc,
                                       OnlineAttentionOp op,
                                       const AttentionPosition &position,
                                       StringRef scoresUKernel,
                                       ValueRange scalars) {
  Layout layout = op.getLayout();
  Value q = op.getQuery();
  SmallVector<OpFoldResult> sizes = {
      tensor::getMixedSize(b, loc, q, 0),
      tensor::getMixedSize(b, loc, q, getHeadDimPos(layout)),
      tensor::getMixedSize(b, loc, q, getSeqDimPos(layout)),
      tensor::getMixedSize(b, loc, op.getKey(), getSeqDimPos(layout))};
  Value init = tensor::EmptyOp::create(b, loc, sizes, b.getF32Type());
  Value products = UKernelGenericOp::create(
                       b, loc, init.getType(), b.getStringAttr(scoresUKernel),
                       ValueRange{q, op.getKey()}, ValueRange{init}, scalars)
                       .getResult(0);
  Region &scoreMod = op.getScoreMod();
  Value diagonals = op.getRelBias()
                        ? gatherRelPosDiagonals(b, loc, op, position, sizes)
                        : Value();
  Value queries = getValueOrCreateConstantIndexOp(b, loc, sizes[2]);
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(4)};
  SmallVector<utils::IteratorType> iterators(4, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{}, ValueRange{products}, maps,
      iterators, [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value score = args[0];
        if (!scoreMod.empty()) {
          SmallVector<Value, 5> regionArgs = {score};
          llvm::append_range(regionArgs,
                             getWholeProblemIndices(nb, nl, position));
          score = inlineRegion(nb, scoreMod, regionArgs);
        }
        if (diagonals) {
          IndexMath nm{nb, nl};
          Value entry = nm.add(nm.sub(linalg::IndexOp::create(nb, nl, 3),
                                      linalg::IndexOp::create(nb, nl, 2)),
                               queries);
          score = arith::AddFOp::create(
              nb, nl, score,
              tensor::ExtractOp::create(
                  nb, nl, diagonals,
                  ValueRange{linalg::IndexOp::create(nb, nl, 1), entry}));
        }
        linalg::YieldOp::create(nb, nl, score);
      });
  return generic.getResult(0);
}

namespace {
/// The micro-kernels of one element type of their inputs.
struct UKernelNames {
  StringRef step, scores, matmul;
};
} // namespace

static std::optional<UKernelNames> getUKernelNames(Type elementType) {
  if (elementType.isF32())
    return UKernelNames{ATTN_UK_ONLINE_STEP_F32, ATTN_UK_SCORES_F32,
                        ATTN_UK_MATMUL_F32};
  if (elementType.isF16())
    return UKernelNames{ATTN_UK_ONLINE_STEP_F16, ATTN_UK_SCORES_F16,
                        ATTN_UK_MATMUL_F16};
  if (elementType.isBF16())
    return UKernelNames{ATTN_UK_ONLINE_STEP_BF16, ATTN_UK_SCORES_BF16,
                        ATTN_UK_MATMUL_BF16};
  return std::nullopt;
}

static Alignment getAlignment(StructuredMaskAttrInterface mask) {
  if (auto causal = dyn_cast_or_null<CausalMaskAttr>(mask))
    return causal.getAlignment();
  if (auto window = dyn_cast_or_null<SlidingWindowMaskAttr>(mask))
    return window.getAlignment();
  return Alignment::TopLeft;
}

FailureOr<UKernelGenericOp>
mlir::attn::lowerOnlineAttentionToUKernel(RewriterBase &rewriter,
                                          OnlineAttentionOp op) {
  // One micro-kernel per element type of q, k and v.
  Type elementType = getElementTypeOrSelf(op.getQuery());
  if (getElementTypeOrSelf(op.getKey()) != elementType ||
      getElementTypeOrSelf(op.getValue()) != elementType)
    return rewriter.notifyMatchFailure(op, "q, k and v differ in type");
  std::optional<UKernelNames> names = getUKernelNames(elementType);
  if (!names)
    return rewriter.notifyMatchFailure(op, "no micro-kernel for this type");
  if (op.getSimilarity() == Similarity::Additive)
    return rewriter.notifyMatchFailure(
        op, "the micro-kernel takes no additive similarity");
  // A score_mod or rel_bias runs between the products and the softmax: the
  // step then reads scores computed beforehand.
  bool modifiedScores = !op.getScoreMod().empty() || op.getRelBias();
  StructuredMaskAttrInterface mask = op.getStructuredMaskAttr();
  bool positionMasks = !op.getMaskMod().empty() ||
                       (mask && !isBandMask(mask)) || hasRunTimeMasks(op);
  if (positionMasks && op.getMask())
    return rewriter.notifyMatchFailure(
        op, "the micro-kernel takes one i1 mask: a mask tensor, or the "
            "mask_mod and sparse structured mask");
  // Under a block mask the band goes into the i1 tile (full blocks override
  // it).
  StructuredMaskAttrInterface bandMask = op.getBlockMask() ? nullptr : mask;
  std::pair<int64_t, int64_t> band = getVisibleBand(bandMask);

  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  auto i64 = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(rewriter, loc, v, 64);
  };
  auto toI64 = [&](Value index) -> Value {
    return arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(),
                                      index);
  };
  // Whole-problem positions; bottom-right masks align the last query with
  // the last key, i.e. shift every query by Sk - Sq.
  AttentionPosition position = getAttentionPosition(rewriter, loc, op);
  Value qPos = position.offsets[2];
  if (isBandMask(bandMask) && getAlignment(bandMask) == Alignment::BottomRight)
    qPos = arith::AddIOp::create(rewriter, loc, qPos,
                                 arith::SubIOp::create(rewriter, loc,
                                                       position.extents[1],
                                                       position.extents[0]));
  Value scale =
      createScale(rewriter, loc, op.getScale(),
                  tensor::getMixedSize(rewriter, loc, op.getQuery(), 3));
  // Mask and bias as [B, Hq, Sq, Sk] with leading unit dims, or a dummy the
  // micro-kernel does not read.
  auto asRank4 = [&](Value value, Type elementType) -> Value {
    if (!value)
      return tensor::EmptyOp::create(rewriter, loc, SmallVector<int64_t>(4, 1),
                                     elementType);
    auto type = cast<RankedTensorType>(value.getType());
    int64_t lead = 4 - type.getRank();
    if (lead == 0)
      return value;
    SmallVector<int64_t> shape(lead, 1);
    llvm::append_range(shape, type.getShape());
    SmallVector<ReassociationIndices> groups;
    for (int64_t d = 0; d < type.getRank(); ++d)
      groups.push_back(d == 0 ? ReassociationIndices(llvm::to_vector(
                                    llvm::seq<int64_t>(0, lead + 1)))
                              : ReassociationIndices{lead + d});
    SmallVector<OpFoldResult> outputShape(lead, rewriter.getIndexAttr(1));
    llvm::append_range(outputShape,
                       tensor::getMixedSizes(rewriter, loc, value));
    return tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get(shape, type.getElementType()),
        value, groups, outputShape);
  };
  Value maskTensor = positionMasks
                         ? materializePositionMasks(rewriter, loc, op, position)
                         : asRank4(op.getMask(), rewriter.getI1Type());
  Value biasTensor = asRank4(op.getBias(), elementType);
  int64_t similarityFlags =
      op.getSimilarity() == Similarity::Gaussian ? ATTN_UK_GAUSSIAN : 0;
  Value layout =
      i64(op.getLayout() == Layout::BSHD ? ATTN_UK_BSHD : ATTN_UK_BHSD);
  Value scoresTensor = modifiedScores
                           ? materializeModifiedScores(
                                 rewriter, loc, op, position, names->scores,
                                 {scale, layout, i64(similarityFlags)})
                           : asRank4(Value(), rewriter.getF32Type());
  int64_t flags = (op.getMask() || positionMasks ? ATTN_UK_HAS_MASK : 0) |
                  (op.getBias() ? ATTN_UK_HAS_BIAS : 0) |
                  (modifiedScores ? ATTN_UK_GIVEN_SCORES : similarityFlags);
  SmallVector<Value> scalars = {scale,           layout,
                                toI64(qPos),     toI64(position.offsets[3]),
                                i64(band.first), i64(band.second),
                                i64(flags)};
  auto ukernel = UKernelGenericOp::create(
      rewriter, loc, op.getResultTypes(), rewriter.getStringAttr(names->step),
      ValueRange{op.getQuery(), op.getKey(), op.getValue(), maskTensor,
                 biasTensor, scoresTensor},
      ValueRange{op.getAcc(), op.getMax(), op.getSum()}, scalars);
  rewriter.replaceOp(op, ukernel.getResults());
  return ukernel;
}

/// The matmul micro-kernel of `op` (f32 accumulator, both inputs f32, f16
/// or bf16 alike), or nothing.
static StringRef getMatmulUKernel(linalg::MatmulOp op) {
  if (!op.hasPureTensorSemantics() ||
      getElementTypeOrSelf(op.getDpsInits()[0]) !=
          Float32Type::get(op.getContext()))
    return {};
  Type a = getElementTypeOrSelf(op.getDpsInputs()[0]);
  Type b = getElementTypeOrSelf(op.getDpsInputs()[1]);
  std::optional<UKernelNames> names = getUKernelNames(a);
  if (a != b || op.hasUserDefinedMaps() || !names)
    return {};
  return names->matmul;
}

FailureOr<scf::ForallOp>
mlir::attn::lowerMatmulToUKernel(RewriterBase &rewriter, linalg::MatmulOp op,
                                 int64_t rowTile) {
  StringRef name = getMatmulUKernel(op);
  if (name.empty())
    return rewriter.notifyMatchFailure(op, "no micro-kernel for this matmul");
  // A matmul into zeros (the projections' fill) overwrites the fill's
  // destination instead: the micro-kernel does not read it, nor does it
  // need zeroing.
  int64_t flags = 0;
  OpOperand &init = op.getDpsInitsMutable()[0];
  Value zeros = init.get();
  auto fill = zeros.getDefiningOp<linalg::FillOp>();
  if (fill && matchPattern(fill.getDpsInputs()[0], m_AnyZeroFloat())) {
    rewriter.modifyOpInPlace(op, [&] { init.set(fill.getDpsInits()[0]); });
    flags = ATTN_UK_MATMUL_OVERWRITE;
  }
  scf::SCFTilingOptions options;
  options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  options.setTileSizes({rewriter.getIndexAttr(rowTile),
                        rewriter.getIndexAttr(0), rewriter.getIndexAttr(0)});
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled)) {
    rewriter.modifyOpInPlace(op, [&] { init.set(zeros); });
    return failure();
  }
  rewriter.replaceOp(op, tiled->replacements);
  auto tile = cast<linalg::MatmulOp>(tiled->tiledOps.front());
  rewriter.setInsertionPoint(tile);
  Value flags64 = arith::ConstantIntOp::create(rewriter, tile.getLoc(), flags,
                                               /*width=*/64);
  rewriter.replaceOp(tile,
                     UKernelGenericOp::create(
                         rewriter, tile.getLoc(), tile->getResultTypes(),
                         rewriter.getStringAttr(name), tile.getDpsInputs(),
                         tile.getDpsInits(), ValueRange{flags64}));
  return cast<scf::ForallOp>(tiled->loops.front().getOperation());
}

namespace {
struct LowerToUKernelsPass
    : attn::impl::LowerToUKernelsBase<LowerToUKernelsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    // Steps the micro-kernel does not implement stay for attn-decompose.
    getOperation()->walk([&](OnlineAttentionOp op) {
      (void)lowerOnlineAttentionToUKernel(rewriter, op);
    });
    // Projections: row tiles in parallel, each a matmul micro-kernel call.
    SmallVector<linalg::MatmulOp> matmuls;
    getOperation()->walk([&](linalg::MatmulOp op) { matmuls.push_back(op); });
    for (linalg::MatmulOp op : matmuls)
      (void)lowerMatmulToUKernel(rewriter, op, kMatmulRowTile);
    materializeBlockBitmapTables(getOperation());
  }
};
} // namespace
