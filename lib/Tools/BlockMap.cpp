//===- BlockMap.cpp - pictures of the tiles a mask leaves -----------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/Tools/BlockMap.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::attn;

/// `text` with XML's special characters escaped.
static std::string escapeXML(StringRef text) {
  std::string escaped;
  for (char c : text)
    escaped += c == '&'   ? "&amp;"
               : c == '<' ? "&lt;"
               : c == '>' ? "&gt;"
                          : std::string(1, c);
  return escaped;
}

BlockMapCounts mlir::attn::writeBlockMapSVG(llvm::raw_ostream &os,
                                            StructuredMaskAttrInterface mask,
                                            int64_t qLen, int64_t kvLen,
                                            int64_t queryTile, int64_t keyTile,
                                            StringRef title) {
  int64_t rows = llvm::divideCeil(qLen, queryTile);
  int64_t cols = llvm::divideCeil(kvLen, keyTile);
  // Cells of 2 to 24 pixels, the map at most 640 wide or high.
  int64_t cell = std::clamp<int64_t>(640 / std::max(rows, cols), 2, 24);
  int64_t width = cols * cell, height = rows * cell, legend = 44;
  os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "width=\"{0}\" height=\"{1}\" font-family=\"sans-serif\" "
                      "font-size=\"12\">\n",
                      std::max<int64_t>(width, 420) + 2, height + legend + 2);
  BlockMapCounts counts;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      int64_t q0 = r * queryTile, q1 = std::min(q0 + queryTile, qLen) - 1;
      int64_t k0 = c * keyTile, k1 = std::min(k0 + keyTile, kvLen) - 1;
      MaskTileBits tile =
          mask ? classifyMaskTile(mask, q0, q1, k0, k1, qLen, kvLen)
               : MaskTileBits{false, true};
      const char *fill;
      if (tile.hidesAll) {
        fill = "#eeeeee";
        ++counts.skipped;
      } else if (tile.showsAll) {
        fill = "#1f4e9a";
        ++counts.full;
      } else {
        fill = "#8fb3e6";
        ++counts.partial;
      }
      os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" "
                          "height=\"{2}\" fill=\"{3}\" stroke=\"white\" "
                          "stroke-width=\"{4}\"/>\n",
                          1 + c * cell, 1 + r * cell, cell, fill,
                          cell > 4 ? 0.5 : 0.0);
    }
  }
  os << llvm::formatv(
      "<text x=\"1\" y=\"{0}\">{1}</text>\n<text x=\"1\" y=\"{2}\">{3} x {4} "
      "tiles of {5} x {6}: {7} skipped (light), {8} full (dark), {9} "
      "partial</text>\n</svg>\n",
      height + 18, escapeXML(title), height + 36, rows, cols, queryTile,
      keyTile, counts.skipped, counts.full, counts.partial);
  return counts;
}
