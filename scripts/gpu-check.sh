#!/usr/bin/env bash
# On a machine with an NVIDIA GPU and the CUDA toolkit (no MLIR needed):
# builds every launcher of this directory (made by gpu-artifacts.sh) into a
# shared library and the C test driver, checks every kernel against the
# driver's CPU reference, then (with PyTorch) against a torch reference and
# times it against torch's scaled_dot_product_attention (gpu-check.py), and
# last profiles the floor kernels where ncu and cuobjdump are found.
# Exit status: 0 all agree, 1 some kernel disagrees, 2 cannot run here.
# GPU_CHECK_TORCH=0 skips the torch part (the CUDA emulator's tests run the
# rest on the CPU, with LD_LIBRARY_PATH naming the emulator's libcuda).
# A kernel that hangs (a deadlock would eat a whole GPU session) fails after
# GPU_CHECK_KERNEL_TIMEOUT seconds (default 120), the torch part after
# GPU_CHECK_TORCH_TIMEOUT (default 360), which still reports the variants
# and floors it measured by then. Reports and logs go to out/.
# The whole check keeps within GPU_CHECK_BUDGET seconds (default 450, so
# that 8 minutes of a GPU session hold the copy of its results too): the
# torch part (leaving 60 s for the profiles) and each profile get at most
# what is left of it.
set -uo pipefail
cd "$(dirname "$0")"
budget="${GPU_CHECK_BUDGET:-450}"
# within CAP [KEEP]: the seconds a step may take: what is left of the
# budget but KEEP seconds, CAP at most (0: none left).
within() {
  local left=$((budget - SECONDS - ${2:-0}))
  ((left < 0)) && left=0
  echo $((left < $1 ? left : $1))
}
profiling=0
[[ ${GPU_CHECK_PROFILE:-1} != 0 && -s floors.txt ]] && profiling=1
cuda="${CUDA_HOME:-/usr/local/cuda}"
# CC may carry flags (a sanitized build's tests pass clang -fsanitize=...).
read -ra cc <<< "${CC:-cc}"
# No -Werror: an unknown compiler there must not stop the check.
flags=(-std=c11 -O2 -Wall -I"$cuda/include" -I.)
mkdir -p lib
kernel_timeout="${GPU_CHECK_KERNEL_TIMEOUT:-120}"
# drive NAME SPEC [--hostile]: gpu-driver on one kernel; its exit status (a
# hang is a failure).
drive() {
  timeout "$kernel_timeout" ./gpu-driver ${3:-} "lib/lib$1.so" "$1" "$2"
  local rc=$?
  if [[ $rc == 124 ]]; then
    echo "$1 $2: ${3:+hostile V: }timed out after $kernel_timeout s FAILED"
    rc=1
  fi
  return $rc
}
# Up to GPU_CHECK_JOBS (default: the CPUs) launchers compile and kernels
# run at once: the driver's CPU reference, not the GPU, takes the time.
jobs_max="${GPU_CHECK_JOBS:-$(nproc 2>/dev/null || echo 4)}"
# spread COMMAND...: runs COMMAND in the background once fewer than
# jobs_max are running.
running=0
spread() {
  if ((running >= jobs_max)); then
    wait -n
    running=$((running - 1))
  fi
  "$@" < /dev/null &
  running=$((running + 1))
}
"${cc[@]}" "${flags[@]}" gpu-driver.c -L"$cuda/lib64/stubs" -lcuda -ldl -lm \
  -o gpu-driver || exit 2
mkdir -p out
build() {
  "${cc[@]}" "${flags[@]}" -shared -fPIC "${1}_launch.c" \
    -L"$cuda/lib64/stubs" -lcuda -lpthread -o "lib/lib$1.so" \
    > "out/$1.build.log" 2>&1
  echo $? > "out/$1.build.rc"
}
while read -r name spec; do
  spread build "$name"
done < specs.txt
wait
running=0
while read -r name spec; do
  cat "out/$name.build.log" >&2
  [[ $(cat "out/$name.build.rc") == 0 ]] || exit 2
done < specs.txt

# check_all PASS [--hostile]: every kernel's gpu-driver, in parallel, then
# their reports in the order of specs.txt; sets `failed`, exits 2 when a
# kernel cannot run here.
run() {
  drive "$1" "$2" ${4:-} > "out/$1.$3.log" 2> "out/$1.$3.err"
  echo $? > "out/$1.$3.rc"
}
check_all() {
  local name spec
  while read -r name spec; do
    spread run "$name" "$spec" "$@"
  done < specs.txt
  wait
  running=0
  failed=0
  while read -r name spec; do
    cat "out/$name.$1.log"
    cat "out/$name.$1.err" >&2
    case $(cat "out/$name.$1.rc") in
      0) ;;
      2) exit 2 ;;
      *) failed=$((failed + 1)) ;;
    esac
  done < specs.txt
}

check_all reference
failures=$failed
echo "gpu-check: CPU reference: $failures of $(wc -l < specs.txt) failed"

# NaN in V of two keys: only the rows that see them may turn NaN (the
# tensor-core kernels' exact FMA companion redoes the blocks it reaches).
check_all hostile --hostile
echo "gpu-check: hostile V: $failed of $(wc -l < specs.txt) failed"
failures=$((failures + failed))

if [[ ${GPU_CHECK_TORCH:-1} == 0 ]]; then
  torch=2
else
  torch_timeout=$(within "${GPU_CHECK_TORCH_TIMEOUT:-360}" $((profiling * 60)))
  if ((torch_timeout == 0)); then
    echo "gpu-check: no time left of GPU_CHECK_BUDGET ($budget s) for the torch check FAILED"
    torch=1
  else
    timeout "$torch_timeout" python3 gpu-check.py
    torch=$?
    if [[ $torch == 124 ]]; then
      echo "gpu-check: the torch check timed out after $torch_timeout s FAILED"
      torch=1
    fi
  fi
fi
[[ $torch == 2 ]] && echo "gpu-check: skipped the torch check and benchmark"

# Profiles of the floor kernels (floors.txt), for later sessions to read
# without a GPU: one launch under Nsight Compute (out/NAME.ncu.txt: speed of
# light, occupancy, warp stalls, pipes, memory) and the cubin's SASS
# (out/NAME.sass), where ncu and cuobjdump are found (on PATH, in the
# toolkit or in Nsight Compute's directory). A report, not part of the exit
# status. GPU_CHECK_PROFILE=0 skips it; an ncu run stops after
# GPU_CHECK_PROFILE_TIMEOUT seconds (default 90).
find_tool() {
  command -v "$1" 2> /dev/null && return
  local path
  for path in "$cuda/bin/$1" /opt/nvidia/nsight-compute/*/"$1"; do
    [[ -x $path ]] && echo "$path" && return
  done
  return 1
}
headline="Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy"
headline+="|Issue Slots Busy|No Eligible|Registers Per Thread"
if ((profiling)); then
  ncu=$(find_tool ncu) || echo "gpu-check: no ncu here: no profiles"
  cuobjdump=$(find_tool cuobjdump) || echo "gpu-check: no cuobjdump here: no SASS"
  while read -r name _; do
    [[ -z $name || $name == \#* ]] && continue
    [[ -n $cuobjdump ]] && "$cuobjdump" -sass "$name.cubin" > "out/$name.sass" 2>&1
    [[ -n $ncu ]] || continue
    limit=$(within "${GPU_CHECK_PROFILE_TIMEOUT:-90}")
    if ((limit == 0)); then
      echo "gpu-check: no time left of GPU_CHECK_BUDGET ($budget s) to profile $name"
      continue
    fi
    spec=$(awk -v name="$name" '$1 == name { $1 = ""; print substr($0, 2) }' specs.txt)
    timeout "$limit" "$ncu" --clock-control none \
      -k "regex:^$name\$" -c 1 --section SpeedOfLight --section LaunchStats \
      --section Occupancy --section SchedulerStats --section WarpStateStats \
      --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
      --section MemoryWorkloadAnalysis_Tables --section InstructionStats \
      ./gpu-driver "lib/lib$name.so" "$name" "$spec" > "out/$name.ncu.txt" 2>&1
    case $? in
      0)
        echo "gpu-check: profiled $name: out/$name.ncu.txt"
        # The headline rows, for the log.
        grep -E "^ *($headline) " "out/$name.ncu.txt" | sed -E 's/^ +/  /; s/ {2,}/  /g'
        ;;
      124) echo "gpu-check: profiling $name timed out: out/$name.ncu.txt" ;;
      *) echo "gpu-check: profiling $name failed: out/$name.ncu.txt" ;;
    esac
  done < floors.txt
fi
[[ $failures == 0 && $torch != 1 ]] || exit 1
