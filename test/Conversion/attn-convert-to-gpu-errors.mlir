// RUN: attn-opt %s --attn-convert-to-gpu --split-input-file --verify-diagnostics

func.func @tile(%q: tensor<1x1x8x8xf32>, %o: tensor<1x1x8x8xf32>,
                %c0: index) -> tensor<1x1x8x8xf32> {
  // expected-error @+1 {{attn-convert-to-gpu: takes whole attentions, not tiles (offsets/extents)}}
  %0 = attn.attention ins(%q, %q, %q : tensor<1x1x8x8xf32>,
                          tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>)
      offsets(%c0, %c0, %c0, %c0 : index, index, index, index)
      extents(%c0, %c0 : index, index)
      outs(%o : tensor<1x1x8x8xf32>) -> tensor<1x1x8x8xf32>
  return %0 : tensor<1x1x8x8xf32>
}

// -----

// expected-error @+1 {{attn-convert-to-gpu: 'two' must hold exactly one attn.attention}}
func.func @two(%q: tensor<1x1x8x8xf32>, %o: tensor<1x1x8x8xf32>)
    -> tensor<1x1x8x8xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x1x8x8xf32>,
                          tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>)
      outs(%o : tensor<1x1x8x8xf32>) -> tensor<1x1x8x8xf32>
  %1 = attn.attention ins(%0, %q, %q : tensor<1x1x8x8xf32>,
                          tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>)
      outs(%o : tensor<1x1x8x8xf32>) -> tensor<1x1x8x8xf32>
  return %1 : tensor<1x1x8x8xf32>
}

// -----

func.func @shared_operand(%q: tensor<1x1x8x8xf32>, %o: tensor<1x1x8x8xf32>)
    -> tensor<1x1x8x8xf32> {
  // expected-error @+1 {{attn-convert-to-gpu: the kernel function must take (q, k, v, [mask], [bias], [rel_bias], [additive_weight], [kv_lens], [spans], [block_mask], out, [lse]) and return the attention's results}}
  %0 = attn.attention ins(%q, %q, %q : tensor<1x1x8x8xf32>,
                          tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>)
      outs(%o : tensor<1x1x8x8xf32>) -> tensor<1x1x8x8xf32>
  return %0 : tensor<1x1x8x8xf32>
}

// -----

func.func @linear_state(%q: tensor<1x2x8x8192xf32>, %k: tensor<1x2x8x8192xf32>,
                        %v: tensor<1x2x8x8xf32>, %o: tensor<1x2x8x8xf32>)
    -> tensor<1x2x8x8xf32> {
  // expected-error @+1 {{attn-convert-to-gpu: D = 8192 leaves no room in 48 KiB of shared memory for a column of the f32 state besides its normalizer and a row of phi(q)}}
  %0 = attn.linear_attention ins(%q, %k, %v : tensor<1x2x8x8192xf32>,
                                 tensor<1x2x8x8192xf32>, tensor<1x2x8x8xf32>)
      outs(%o : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return %0 : tensor<1x2x8x8xf32>
}

// -----

func.func @multi_head(%x: tensor<1x8x16xf32>, %w: tensor<16x16xf32>,
                      %o: tensor<1x8x16xf32>) -> tensor<1x8x16xf32> {
  // expected-error @+1 {{attn-convert-to-gpu: the kernel function must take the operands of attn.multi_head_attention in order and return its result}}
  %0 = attn.multi_head_attention
      ins(%x, %x, %x : tensor<1x8x16xf32>, tensor<1x8x16xf32>,
                       tensor<1x8x16xf32>)
      weights(%w, %w, %w, %w : tensor<16x16xf32>, tensor<16x16xf32>,
                               tensor<16x16xf32>, tensor<16x16xf32>)
      outs(%o : tensor<1x8x16xf32>) {num_heads = 2 : i64}
      -> tensor<1x8x16xf32>
  return %0 : tensor<1x8x16xf32>
}

// -----

func.func @additive(%q: tensor<1x2x8x8xf32>, %w: tensor<8x4xf32>,
                    %s: tensor<4xf32>, %o: tensor<1x2x8x8xf32>)
    -> tensor<1x2x8x8xf32> {
  // expected-error @+1 {{attn-convert-to-gpu: the kernel function must take the operands of attn.additive_attention in order and return its result}}
  %0 = attn.additive_attention
      ins(%q, %q, %q : tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>,
                       tensor<1x2x8x8xf32>)
      weights(%w, %w, %s : tensor<8x4xf32>, tensor<8x4xf32>, tensor<4xf32>)
      outs(%o : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return %0 : tensor<1x2x8x8xf32>
}

// -----

func.func @dynamic_weights(%q: tensor<1x2x8x8xf32>, %k: tensor<1x2x8x8xf32>,
                           %v: tensor<1x2x8x8xf32>, %wq: tensor<8x?xf32>,
                           %wk: tensor<8x?xf32>, %s: tensor<?xf32>,
                           %o: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
  // expected-error @+1 {{attn-convert-to-gpu: projection weights must be static}}
  %0 = attn.additive_attention
      ins(%q, %k, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>,
                       tensor<1x2x8x8xf32>)
      weights(%wq, %wk, %s : tensor<8x?xf32>, tensor<8x?xf32>, tensor<?xf32>)
      outs(%o : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return %0 : tensor<1x2x8x8xf32>
}

// -----

func.func @linear_shared_operand(%q: tensor<1x2x8x8xf32>, %o: tensor<1x2x8x8xf32>)
    -> tensor<1x2x8x8xf32> {
  // expected-error @+1 {{attn-convert-to-gpu: the kernel function must take (q, k, v, out) and return the linear attention's result}}
  %0 = attn.linear_attention ins(%q, %q, %q : tensor<1x2x8x8xf32>,
                                 tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>)
      outs(%o : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return %0 : tensor<1x2x8x8xf32>
}
