//===- AttnDialect.td - attn dialect definition ------------*- tablegen -*-===//
//
// The attn dialect: graph-level IR for attention variants.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECT_TD
#define ATTN_DIALECT_TD

include "mlir/IR/OpBase.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let cppNamespace = "::mlir::attn";
  let summary = "Attention as a first-class compiler IR.";
  let description = [{
    The `attn` dialect describes attention at the level a kernel engineer
    thinks about it: multi-head attention with projections, scaled dot-product
    attention with structured masks, explicit mask and bias tensors, key
    padding, and user-defined score and mask modifications. Passes tile it,
    fuse the softmax into an online loop, and lower it to LLVM for CPUs and to
    NVVM for NVIDIA GPUs.

    Tensors follow the BHSD convention unless a `layout` attribute says BSHD:
    Q [B, Hq, Sq, D], K [B, Hkv, Sk, D], V [B, Hkv, Sk, Dv], O [B, Hq, Sq, Dv].
    Explicit mask and bias tensors are always indexed [B, Hq, Sq, Sk].
  }];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    /// Registers the attributes; lives beside their storage classes.
    void registerAttributes();
  }];
  // memref: the constant tables of block bitmaps, which any lowering of a
  // structured mask may emit.
  let dependentDialects = ["::mlir::tensor::TensorDialect",
                           "::mlir::memref::MemRefDialect"];
}

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

#endif // ATTN_DIALECT_TD
