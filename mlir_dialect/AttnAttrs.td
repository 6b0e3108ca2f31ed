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

def Attn_SimilarityDot : I32EnumAttrCase<"Dot", 0, "dot">;
def Attn_SimilarityGaussian : I32EnumAttrCase<"Gaussian", 1, "gaussian">;
def Attn_SimilarityAdditive : I32EnumAttrCase<"Additive", 2, "additive">;
def Attn_Similarity : I32EnumAttr<"Similarity",
    "how a query and a key make a raw score: a dot product, a Gaussian "
    "kernel of their distance, or additive (Bahdanau) attention",
    [Attn_SimilarityDot, Attn_SimilarityGaussian,
     Attn_SimilarityAdditive]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}
def Attn_SimilarityAttr : EnumAttr<Attn_Dialect, Attn_Similarity,
                                   "similarity"> {
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
    structured mask answers the same questions, so passes treat bands,
    sparse patterns, unions and intersections alike: the constant answers
    below, and the same questions as IR (buildMaskVisible, buildMaskKeyHull
    and buildMaskTile in attn/IR/StructuredMasks.h), all written once per
    mask in StructuredMasks.cpp.
  }];
  let methods = [
    InterfaceMethod<[{
        Returns true when key `kvIdx` is visible to query `qIdx` in a problem
        with `qLen` queries and `kvLen` keys.
      }], "bool", "isVisible",
      (ins "int64_t":$qIdx, "int64_t":$kvIdx, "int64_t":$qLen,
           "int64_t":$kvLen), [{}], [{
        return ::mlir::attn::isMaskVisible($_attr, qIdx, kvIdx, qLen, kvLen);
      }]>,
    InterfaceMethod<[{
        Returns true when every key is visible to every query for these
        sequence lengths, i.e. the mask hides nothing.
      }], "bool", "isAllVisible", (ins "int64_t":$qLen, "int64_t":$kvLen),
      [{}], [{
        return ::mlir::attn::isMaskAllVisible($_attr, qLen, kvLen);
      }]>,
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
    [Attn_StructuredMaskAttrInterface]> {
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
    "sliding_window", [Attn_StructuredMaskAttrInterface]> {
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

// The sparse patterns below are top-left aligned: query i and key j at the
// same position coincide.

def Attn_ChunkedMaskAttr : Attn_Attr<"ChunkedMask", "chunked",
    [Attn_StructuredMaskAttrInterface]> {
  let summary = "block-diagonal chunks: a query sees the keys of its chunk";
  let description = [{
    Key `j` is visible to query `i` iff `i / size == j / size` (chunks of
    `size` positions). Intersect with causal for chunked causal attention
    (Llama 4): `#attn.intersection<[#attn.chunked<size = 8192>,
    #attn.causal<top_left>]>`.
  }];
  let parameters = (ins "int64_t":$size);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Attn_PrefixMaskAttr : Attn_Attr<"PrefixMask", "prefix",
    [Attn_StructuredMaskAttrInterface]> {
  let summary = "prefix-LM: the first `size` keys are visible to all";
  let description = [{
    Key `j` is visible to query `i` iff `j < size` or `j <= i`: a
    bidirectional prefix, causal after it.
  }];
  let parameters = (ins "int64_t":$size);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Attn_StridedMaskAttr : Attn_Attr<"StridedMask", "strided",
    [Attn_StructuredMaskAttrInterface]> {
  let summary = "Sparse Transformer strided pattern";
  let description = [{
    Key `j` is visible to query `i` iff `j <= i` and (`i - j < stride` or
    `(i - j) mod stride == 0`): the local window and every stride-th key
    before it (Child et al., 2019).
  }];
  let parameters = (ins "int64_t":$stride);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Attn_FixedMaskAttr : Attn_Attr<"FixedMask", "fixed",
    [Attn_StructuredMaskAttrInterface]> {
  let summary = "Sparse Transformer fixed pattern";
  let description = [{
    Key `j` is visible to query `i` iff `j <= i` and (`j / stride ==
    i / stride` or `j mod stride >= stride - summary`): the query's own block
    of `stride` positions and the last `summary` positions of every block
    (Child et al., 2019).
  }];
  let parameters = (ins "int64_t":$stride, "int64_t":$summary);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Attn_DilatedMaskAttr : Attn_Attr<"DilatedMask", "dilated",
    [Attn_StructuredMaskAttrInterface]> {
  let summary = "dilated causal window";
  let description = [{
    Key `j` is visible to query `i` iff `j <= i`, `i - j < window * dilation`
    and `(i - j) mod dilation == 0`: `window` keys, `dilation` apart.
  }];
  let parameters = (ins "int64_t":$window, "int64_t":$dilation);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Attn_GlobalMaskAttr : Attn_Attr<"GlobalMask", "global",
    [Attn_StructuredMaskAttrInterface]> {
  let summary = "global tokens: the first `tokens` see and are seen by all";
  let description = [{
    Key `j` is visible to query `i` iff `i < tokens` or `j < tokens`. Alone it
    shows little; unite it with a window for Longformer:
    `#attn.union<[#attn.sliding_window<left = 128, right = 128>,
    #attn.global<tokens = 16>]>`.
  }];
  let parameters = (ins "int64_t":$tokens);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Attn_BigBirdMaskAttr : Attn_Attr<"BigBirdMask", "bigbird",
    [Attn_StructuredMaskAttrInterface]> {
  let summary = "BigBird: window, global and random blocks";
  let description = [{
    Positions fall in blocks of `block`; query block `bi = i / block` sees key
    block `bj = j / block` iff `|bi - bj| <= window / 2` (`window` blocks
    around the diagonal), `bi < global` or `bj < global` (global blocks), or
    `bj` is one of the `random` blocks of `bi`: for `r < random`,
    `hash(seed, bi, r) mod ceil(Sk / block)`, where on 64-bit unsigned
    integers (wrapping)

    ```
    x = seed * 0x9E3779B97F4A7C15 + bi * 0xBF58476D1CE4E5B9
        + r * 0x94D049BB133111EB
    x = x ^ (x >> 31);  x = x * 0xD6E8FEB86659FD93;  x = x ^ (x >> 32)
    ```

    (Zaheer et al., 2020; the random blocks follow from the seed alone, so
    every backend and the reference draw the same ones.)

    ```mlir
    #attn.bigbird<block = 64, window = 3, global = 2, random = 3, seed = 7>
    ```
  }];
  let parameters = (ins "int64_t":$block, "int64_t":$window, "int64_t":$global,
                        "int64_t":$random, "int64_t":$seed);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Attn_BlockBitmapMaskAttr : Attn_Attr<"BlockBitmapMask", "block_bitmap",
    [Attn_StructuredMaskAttrInterface]> {
  let summary = "a static bitmap of (query block, key block) pairs";
  let description = [{
    Positions fall in blocks of `block`. Each query block has a row of
    `key_blocks` bits (default 64), stored as ceil(key_blocks / 64) words of
    `rows`, least significant bit first: key block `bj = j / block` is
    visible to query block `bi = i / block` iff bit `bj % 64` of word
    `bi * words + bj / 64` is set. Query blocks past the rows and key blocks
    past `key_blocks` show nothing. The SPEC term `blocks:FILE` reads it from
    a file (see the README). Lowerings read the words from a constant table.

    ```mlir
    // Blocks of 64: block 0 sees itself, block 1 sees blocks 0 and 1, ...
    #attn.block_bitmap<block = 64, rows = [1, 3, 6, 12]>
    // 100 key blocks: two words per row.
    #attn.block_bitmap<block = 64, rows = [1, 0, 0, 16], key_blocks = 100>
    ```
  }];
  let parameters = (ins "int64_t":$block,
                        DefaultValuedParameter<"int64_t", "64">:$key_blocks,
                        ArrayRefParameter<"uint64_t", "bit rows">:$rows);
  let assemblyFormat = [{
    `<` `block` `=` $block `,` `rows` `=` `[` $rows `]`
      (`,` `key_blocks` `=` $key_blocks^)? `>`
  }];
  let extraClassDeclaration = [{
    /// The words of each row.
    int64_t getWordsPerRow() const { return (getKeyBlocks() + 63) / 64; }
    /// The query blocks the rows describe.
    int64_t getNumRows() const {
      return static_cast<int64_t>(getRows().size()) / getWordsPerRow();
    }
    /// Whether key block `bj` is visible to query block `bi`.
    bool shows(int64_t bi, int64_t bj) const {
      if (bi < 0 || bi >= getNumRows() || bj < 0 || bj >= getKeyBlocks())
        return false;
      return getRows()[bi * getWordsPerRow() + bj / 64] >> (bj % 64) & 1;
    }
  }];
  let genVerifyDecl = 1;
}

def Attn_UnionMaskAttr : Attn_Attr<"UnionMask", "union",
    [Attn_StructuredMaskAttrInterface]> {
  let summary = "a key is visible when any of the masks shows it";
  let description = [{
    ```mlir
    #attn.union<[#attn.sliding_window<left = 128, right = 0>,
                 #attn.global<tokens = 16>]>
    ```
  }];
  let parameters = (ins
      ArrayRefParameter<"::mlir::attn::StructuredMaskAttrInterface">:$masks);
  let assemblyFormat = "`<` `[` $masks `]` `>`";
  let genVerifyDecl = 1;
}

def Attn_IntersectionMaskAttr : Attn_Attr<"IntersectionMask", "intersection",
    [Attn_StructuredMaskAttrInterface]> {
  let summary = "a key is visible when every one of the masks shows it";
  let description = [{
    ```mlir
    #attn.intersection<[#attn.causal<top_left>,
                        #attn.sliding_window<left = 100, right = 0>]>
    ```
  }];
  let parameters = (ins
      ArrayRefParameter<"::mlir::attn::StructuredMaskAttrInterface">:$masks);
  let assemblyFormat = "`<` `[` $masks `]` `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Relative-position bias
//===----------------------------------------------------------------------===//

def Attn_RelPosAttr : Attn_Attr<"RelPos", "relpos"> {
  let summary = "T5's bucketed relative positions";
  let description = [{
    How a `rel_bias` table [Hq, buckets] is indexed: the score of query `i`
    and key `j` gains `rel_bias[h, bucket(j - i)]`, where `bucket` is T5's
    `relative_position_bucket` (as in Hugging Face transformers, in f32):
    with `bidirectional`, half the buckets take `j > i` and the offset is
    `|j - i|`, else the offset is `max(i - j, 0)`; offsets below half of the
    (remaining) buckets get their own bucket, larger ones share
    logarithmically sized buckets up to `max_distance`, and the rest fall in
    the last bucket.

    ```mlir
    #attn.relpos<buckets = 32, max_distance = 128, bidirectional = true>
    ```
  }];
  let parameters = (ins "int64_t":$buckets, "int64_t":$max_distance,
                        "bool":$bidirectional);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The buckets of one direction and the last offset with a bucket of
    /// its own.
    int64_t getDirectionBuckets() const {
      return getBidirectional() ? getBuckets() / 2 : getBuckets();
    }
    int64_t getMaxExact() const { return getDirectionBuckets() / 2; }
    /// For each logarithmic bucket past the first (max_exact + 1, ...,
    /// direction buckets - 1), the smallest offset that falls in it or
    /// beyond: an offset n >= max_exact takes bucket max_exact plus the
    /// number of thresholds <= n.
    ::llvm::SmallVector<int64_t> getThresholds() const;
  }];
}

#endif // ATTN_ATTRS_TD
