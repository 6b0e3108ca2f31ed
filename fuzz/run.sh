#!/usr/bin/env bash
# Runs the libFuzzer targets of a sanitized build (make fuzz):
#   fuzz/run.sh BUILD_DIR SECONDS
# SECONDS in all: 50 % to attn-opt-fuzzer, 15 % each to attn-spec-fuzzer and
# attn-abi-fuzzer, 20 % to attn-ptx-fuzzer. Corpora grow in
# BUILD_DIR/fuzz-corpus (seeded from the tests and the build's attn-compile;
# the MLIR fuzzer also splices the tokens of fuzz/mlir.dict), a
# finding's input lands in BUILD_DIR/fuzz-findings. Exit status 0
# when no fuzzer found anything, 1 otherwise.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:?usage: run.sh BUILD_DIR SECONDS}"
seconds="${2:?usage: run.sh BUILD_DIR SECONDS}"
corpus="$build/fuzz-corpus" findings="$build/fuzz-findings"
mkdir -p "$findings"
"$here/seed-corpora.sh" "$build/fuzz-seeds" "$build/bin/attn-compile" || exit 1
status=0
for entry in opt:50 spec:15 abi:15 ptx:20; do
  name=${entry%%:*} share=${entry##*:}
  time=$(( seconds * share / 100 ))
  (( time > 0 )) || time=1
  mkdir -p "$corpus/$name"
  echo "fuzz: attn-$name-fuzzer for ${time}s"
  # A timeout or an out-of-memory input is a finding too. LLVM's allocators
  # poison their slabs when the code around them is instrumented, libMLIR's
  # uninstrumented copies do not unpoison them: user poisoning is off.
  if ! ASAN_OPTIONS=detect_leaks=0:allow_user_poisoning=0 \
      "$build/bin/attn-$name-fuzzer" \
      -max_total_time="$time" -timeout=60 -rss_limit_mb=4096 \
      -print_final_stats=1 -artifact_prefix="$findings/$name-" \
      $( [[ $name == opt ]] && echo "-dict=$here/mlir.dict" ) \
      "$corpus/$name" "$build/fuzz-seeds/$name" \
      > "$build/fuzz-$name.log" 2>&1; then
    echo "fuzz: attn-$name-fuzzer FOUND a problem (see $build/fuzz-$name.log):"
    grep -E "^==[0-9]+==|SUMMARY|attn-.*-fuzzer:|Test unit written" \
      "$build/fuzz-$name.log" | head -20
    status=1
  else
    grep -E "^stat::number_of_executed_units|^Done" "$build/fuzz-$name.log"
  fi
done
exit $status
