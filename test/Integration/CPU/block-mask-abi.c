// The block_mask of a kernel at the DLPack ABI: an int8 tensor [B, Hq,
// ceil(Sq / BQ), ceil(Sk / BK)], whose block counts follow the bound
// sequence lengths (checked, never bound). With q = k = 0 and v[j] = j, an
// output row is the mean of the keys it sees, so each class shows in it.

// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-compile --spec "b=1,hq=1,sq=4,sk=4,d=2,mask=causal,block_mask=random:2:2,dynamic=s" --name k_blk -o %t
// RUN: FileCheck %s --check-prefix=HEADER < %t/k_blk.h
// RUN: %cc -O1 -Wall -Werror -I%t %s %t/k_blk.o %kernel_link_flags -lm -o %t.exe
// RUN: %t.exe | FileCheck %s

// HEADER: block_mask [1, 1, ceil(Sq/2), ceil(Sk/2)] i8
// HEADER: `block_mask` holds one class per (query block, key block)

// CHECK: valid call: 0 ok
// CHECK-NEXT: row 0 (block full: keys 0 and 1 past causal) 0.5 ok
// CHECK-NEXT: row 2 (blocks partial, empty: keys 0..1 of 0..2) 0.5 ok
// CHECK-NEXT: row 3 (blocks partial, empty) 0.5 ok
// CHECK-NEXT: row 1 (full block) 0.5 ok
// CHECK-NEXT: classes 7 and -1 (full and empty): 0 ok
// CHECK-NEXT: row 0 (class 7 is full) 0.5 ok
// CHECK-NEXT: row 3 (class -1 is empty) 0.5 ok
// CHECK-NEXT: 3 key blocks for Sk = 4: 6 ok
// CHECK-NEXT: 1 query block for Sq = 4: 6 ok
// CHECK-NEXT: int32 classes: 3 ok
// CHECK-NEXT: rank 3: 2 ok
// CHECK-NEXT: all ok

#include "k_blk.h"

#include "Inputs/cpu-tensor.h"
#include "Inputs/expect.h"

#include <math.h>
#include <stdio.h>

enum { S = 4, D = 2, N = S * D };

static float q[N], k[N], v[N], o[N];
static int8_t blocks[2 * 3];

static void expect_row(const char *label, int row, double want) {
  int ok = fabs(o[row * D] - want) < 1e-6;
  printf("%s %g %s\n", label, o[row * D], ok ? "ok" : "FAILED");
  all_ok &= ok;
}

int main(void) {
  int64_t shape[4] = {1, 1, S, D}, maskShape[4] = {1, 1, 2, 2};
  int64_t wide[4] = {1, 1, 2, 3}, tall[4] = {1, 1, 1, 2}, flat[3] = {1, 2, 2};
  for (int i = 0; i < N; ++i)
    v[i] = (float)(i / D);
  /* Query block 0 (rows 0, 1): key block 0 full. Query block 1 (rows 2,
   * 3): key block 0 partial, key block 1 empty. */
  blocks[0] = 2;
  blocks[1] = 0;
  blocks[2] = 1;
  blocks[3] = 0;
  DLTensor tq = cpu_tensor(q, 4, shape), tk = cpu_tensor(k, 4, shape),
           tv = cpu_tensor(v, 4, shape), to = cpu_tensor(o, 4, shape);
  DLTensor tb = cpu_tensor((float *)blocks, 4, maskShape);
  tb.dtype.code = kDLInt;
  tb.dtype.bits = 8;
  expect("valid call", k_blk(&tq, &tk, &tv, &tb, &to), 0);
  expect_row("row 0 (block full: keys 0 and 1 past causal)", 0, 0.5);
  expect_row("row 2 (blocks partial, empty: keys 0..1 of 0..2)", 2, 0.5);
  expect_row("row 3 (blocks partial, empty)", 3, 0.5);
  expect_row("row 1 (full block)", 1, 0.5);
  blocks[0] = 7;
  blocks[1] = blocks[3] = -1;
  expect("classes 7 and -1 (full and empty)", k_blk(&tq, &tk, &tv, &tb, &to),
         0);
  expect_row("row 0 (class 7 is full)", 0, 0.5);
  expect_row("row 3 (class -1 is empty)", 3, 0.5);

  DLTensor bad = tb;
  bad.shape = wide;
  expect("3 key blocks for Sk = 4", k_blk(&tq, &tk, &tv, &bad, &to), 6);
  bad.shape = tall;
  expect("1 query block for Sq = 4", k_blk(&tq, &tk, &tv, &bad, &to), 6);
  bad = tb;
  bad.dtype.bits = 32;
  expect("int32 classes", k_blk(&tq, &tk, &tv, &bad, &to), 3);
  bad = tb;
  bad.ndim = 3;
  bad.shape = flat;
  expect("rank 3", k_blk(&tq, &tk, &tv, &bad, &to), 2);

  printf("%s\n", all_ok ? "all ok" : "SOME FAILED");
  return !all_ok;
}
