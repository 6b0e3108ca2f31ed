//===- Nesting.h - refusing inputs that nest too deeply ---------*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SUPPORT_NESTING_H
#define ATTN_SUPPORT_NESTING_H

#include "llvm/ADT/StringRef.h"

namespace mlir::attn {

/// How deeply an input may nest brackets. MLIR's parser recurses once per
/// level and overflows its stack somewhere past 2000 nested regions; real
/// kernels nest a few dozen levels.
constexpr unsigned kMaxNesting = 1000;

/// The line (from 1) where `text` first nests (), [], {} and <> more than
/// `limit` deep, or 0 when it never does. String literals and `//` comments
/// do not count, nor the `>` of `->`, `>=` and `<=`.
inline unsigned findDeepNesting(llvm::StringRef text,
                                unsigned limit = kMaxNesting) {
  unsigned depth = 0, line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i], next = i + 1 < text.size() ? text[i + 1] : '\0';
    if (c == '\n') {
      ++line;
    } else if (c == '"') {
      for (++i; i < text.size() && text[i] != '"' && text[i] != '\n'; ++i)
        i += text[i] == '\\';
    } else if (c == '/' && next == '/') {
      while (i + 1 < text.size() && text[i + 1] != '\n')
        ++i;
    } else if ((c == '<' || c == '>') && next == '=') {
      ++i;
    } else if (c == '(' || c == '[' || c == '{' || c == '<') {
      if (++depth > limit)
        return line;
    } else if ((c == ')' || c == ']' || c == '}' ||
                (c == '>' && (i == 0 || text[i - 1] != '-'))) &&
               depth > 0) {
      --depth;
    }
  }
  return 0;
}

} // namespace mlir::attn

#endif // ATTN_SUPPORT_NESTING_H
