// Tiles the attn.online_attention marked `tile` with upstream's
// tile_using_for through its TilingInterface: 2 query heads (one GQA group),
// 16 queries and 64 keys (the reduction) per tile. Splits the keys of the one
// marked `split` into 4 parallel ranges with tile_reduction_using_forall
// through its PartialReductionOpInterface (3 fills, the step, 3 merges and
// the forall: 8 handles).
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.online_attention"]}
        attributes {tile} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %loops:3 = transform.structured.tile_using_for %op
        tile_sizes [0, 2, 16, 64]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op,
                                  !transform.any_op, !transform.any_op)
    %split = transform.structured.match ops{["attn.online_attention"]}
        attributes {split} in %root : (!transform.any_op) -> !transform.any_op
    %handles:8 = transform.structured.tile_reduction_using_forall %split
        by num_threads = [0, 0, 0, 4]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op,
                                  !transform.any_op, !transform.any_op,
                                  !transform.any_op, !transform.any_op,
                                  !transform.any_op, !transform.any_op)
    transform.yield
  }
}
