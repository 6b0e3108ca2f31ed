//===- AttnAttrs.td - attn attributes and enums ------------*- tablegen -*-===//
//
// Structured masks are attributes, not tensors, so that passes can reason
// about them (skip tiles, drop masks that hide nothing) without reading data.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_ATTRS_TD
#define ATTN_ATTRS_TD

include "AttnDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Attn_LayoutBHSD : I32EnumAttrCase<"BHSD", 0, "bhsd">;
def Attn_LayoutBSHD : I32EnumAttrCase<"BSHD", 1, "bshd">;
def Attn_Layout : I32EnumAttr<"Layout",
    "dimension order of the query, key, value and output tensors",
    [Attn_LayoutBHSD, Attn_LayoutBSHD]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}
def Attn_LayoutAttr : EnumAttr<Attn_Dialect, Attn_Layout, "layout"> {
  let assemblyFormat = "`<` $value `>`";
}

def Attn_AlignTopLeft : I32EnumAttrCase<"TopLeft", 0, "top_left">;
def Attn_AlignBottomRight : I32EnumAttrCase<"BottomRight", 1, "bottom_right">;
def Attn_Alignment : I32EnumAttr<"Alignment",
    "where query 0 sits against the keys when Sq != Sk",
    [Attn_AlignTopLeft, Attn_AlignBottomRight]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}

//===----------------------------------------------------------------------===//
// Structured mask interface
//===----------------------------------------------------------------------===//

def Attn_StructuredMaskAttrInterface
    : AttrInterface<"StructuredMaskAttrInterface"> {
  let cppNamespace = "::mlir::attn";
  let description = [{
    A mask whose visible (query, key) pairs follow from positions alone. Every
    structured mask answers the same questions, so passes treat causal,
    sliding-window and (later) sparse patterns, unions and intersections
    alike.
  }];
  let methods = [
    InterfaceMethod<[{
        Returns true when key `kvIdx` is visible to query `qIdx` in a problem
        with `qLen` queries and `kvLen` keys.
      }], "bool", "isVisible",
      (ins "int64_t":$qIdx, "int64_t":$kvIdx, "int64_t":$qLen,
           "int64_t":$kvLen)>,
    InterfaceMethod<[{
        Returns true when every key is visible to every query for these
        sequence lengths, i.e. the mask hides nothing.
      }], "bool", "isAllVisible", (ins "int64_t":$qLen, "int64_t":$kvLen)>,
  ];
}

//===----------------------------------------------------------------------===//
// Structured masks
//===----------------------------------------------------------------------===//

class Attn_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Attn_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Attn_CausalMaskAttr : Attn_Attr<"CausalMask", "causal",
    [DeclareAttrInterfaceMethods<Attn_StructuredMaskAttrInterface>]> {
  let summary = "causal mask: a query sees the keys at or before its position";
  let description = [{
    With `top_left` alignment key `j` is visible to query `i` iff `j <= i`.
    With `bottom_right` alignment the last query is aligned with the last key,
    as in decoding with a KV cache: `j <= i + Sk - Sq`.

    ```mlir
    #attn.causal<top_left>
    #attn.causal<bottom_right>
    ```
  }];
  let parameters = (ins EnumParameter<Attn_Alignment>:$alignment);
  let assemblyFormat = "`<` $alignment `>`";
}

def Attn_SlidingWindowMaskAttr : Attn_Attr<"SlidingWindowMask",
    "sliding_window",
    [DeclareAttrInterfaceMethods<Attn_StructuredMaskAttrInterface>]> {
  let summary = "sliding-window (local) mask";
  let description = [{
    Key `j` is visible to query `i` iff `i - left <= j <= i + right`, where
    `i` is shifted by `Sk - Sq` under `bottom_right` alignment (the default is
    `top_left`). `left = N, right = 0` is causal attention over the last `N+1`
    keys, as in Mistral.

    ```mlir
    #attn.sliding_window<left = 256, right = 0>
    #attn.sliding_window<left = 4, right = 4, alignment = bottom_right>
    ```
  }];
  let parameters = (ins
    "int64_t":$left,
    "int64_t":$right,
    DefaultValuedParameter<"::mlir::attn::Alignment",
                           "::mlir::attn::Alignment::TopLeft">:$alignment);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // ATTN_ATTRS_TD
