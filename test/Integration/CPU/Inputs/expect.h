/* The checks of the C tests of the ABI: each prints its label, the value and
 * ok or FAILED, and clears all_ok on a failure. */
#ifndef ATTN_TEST_EXPECT_H
#define ATTN_TEST_EXPECT_H

#include <stdio.h>

static int all_ok = 1;

static void expect(const char *label, int got, int want) {
  int ok = got == want;
  printf("%s: %d %s\n", label, got, ok ? "ok" : "FAILED");
  all_ok &= ok;
}

#endif /* ATTN_TEST_EXPECT_H */
