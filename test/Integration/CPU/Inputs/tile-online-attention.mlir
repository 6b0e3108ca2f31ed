// Tiles the attn.online_attention marked `tile` with upstream's
// tile_using_for through its TilingInterface: 2 query heads (one GQA group),
// 16 queries and 64 keys (the reduction) per tile.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.online_attention"]}
        attributes {tile} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %loops:3 = transform.structured.tile_using_for %op
        tile_sizes [0, 2, 16, 64]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op,
                                  !transform.any_op, !transform.any_op)
    transform.yield
  }
}
