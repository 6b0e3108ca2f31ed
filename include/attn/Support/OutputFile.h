//===- OutputFile.h - closing output files with their errors ----*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SUPPORT_OUTPUTFILE_H
#define ATTN_SUPPORT_OUTPUTFILE_H

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::attn {

/// Closes `os`, written to `path`, and returns a write error (a full disk,
/// /dev/full) as an llvm::Error: a raw_fd_ostream destroyed with a pending
/// error would end the process with LLVM's "IO failure on output stream".
inline llvm::Error closeOutput(llvm::raw_fd_ostream &os, llvm::StringRef path) {
  os.close();
  if (!os.has_error())
    return llvm::Error::success();
  std::error_code ec = os.error();
  os.clear_error();
  return llvm::createStringError(ec, "cannot write '" + path +
                                         "': " + ec.message());
}

} // namespace mlir::attn

#endif // ATTN_SUPPORT_OUTPUTFILE_H
