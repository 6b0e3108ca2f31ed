# -*- Python -*- lit configuration for the attn regression tests.

import os
import re
import shutil
import subprocess
import sys

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "ATTN"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".c"]
config.excludes = [
    "Inputs",
    "CMakeLists.txt",
    "lit.cfg.py",
    "lit.site.cfg.py",
    "expect-exit.py",
]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.attn_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%attn_src_root", config.attn_src_root))
config.substitutions.append(("%attn_obj_root", config.attn_obj_root))

# Strict FileCheck: variables do not leak across labels, and every
# --check-prefixes entry must be used.
config.environment["FILECHECK_OPTS"] = (
    "-enable-var-scope --allow-unused-prefixes=false"
)

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.attn_tools_dir, config.llvm_tools_dir]
tools = [
    ToolSubst("attn-opt", unresolved="fatal"),
    ToolSubst("attn-compile", unresolved="fatal"),
    ToolSubst("attn-run", unresolved="fatal"),
    ToolSubst("attn-bench", unresolved="ignore"),
]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# Compiling and linking C programs against generated kernels, the way a user
# would: the C compiler that built attn, and the kernels' link flags (the
# same as manifest.json's link_flags).
# In a sanitized build (make check-sanitize) the C test programs are
# sanitized too, and ASan ignores the slab poisoning of LLVM's allocators,
# which libMLIR's uninstrumented code would trip over. Freed memory waits in
# a 32 MiB quarantine, not the default 256: a use after free is still caught
# within the last 32 MiB freed, and attn-compile takes 1.8 s, not 3.0 (the
# rest was page faults on fresh memory).
cc = os.path.join(config.llvm_tools_dir, "clang")
if config.attn_sanitize:
    cc += " -fsanitize=address,undefined -fno-sanitize-recover=all"
    config.environment["ASAN_OPTIONS"] = (
        "allow_user_poisoning=0:detect_leaks=0:quarantine_size_mb=32"
    )
    config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1"
    config.available_features.add("sanitize")
config.substitutions.append(("%cc", cc))

# attn-bench is built (ATTN_BUILD_BENCH, with OpenBLAS): its peers are
# cross-checked against attn in test/bench.
if config.attn_have_bench:
    config.available_features.add("attn-bench")

# AVX-512 on the host: tests that run code built for it (the micro-kernels'
# 16-lane form) need it; the 8-lane AVX2 form runs everywhere.
# AVX512-BF16 too: the micro-kernels' bf16 pairs (vdpbf16ps).
try:
    with open("/proc/cpuinfo") as cpuinfo:
        flags = cpuinfo.read()
        if " avx512f" in flags:
            config.available_features.add("avx512f")
        if " avx512_bf16" in flags:
            config.available_features.add("avx512bf16")
except OSError:
    pass
config.substitutions.append(
    (
        "%kernel_link_flags",
        "-lm -L{0} -lomp -Wl,-rpath,{0}".format(config.attn_libomp_dir),
    )
)

# mlir-runner's runtime libraries for executed IR tests (and libomp for
# lowered OpenMP loops).
config.substitutions.append(
    (
        "%mlir_runner_libs",
        "-shared-libs={0}/libmlir_c_runner_utils.so,{1}/libomp.so".format(
            os.path.join(os.path.dirname(config.llvm_tools_dir), "lib"),
            config.attn_libomp_dir,
        ),
    )
)

# `%expect_exit N cmd...` fails unless cmd exits with exactly N.
config.substitutions.append(
    (
        "%expect_exit",
        "%s %s" % (sys.executable, os.path.join(config.attn_src_root, "test", "tools", "expect-exit.py")),
    )
)

# The CUDA toolkit found at configure time: `ptxas` gates the static GPU
# checks (PTX assembled for sm_80/sm_90, spills counted).
if config.attn_ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", config.attn_ptxas))
    config.substitutions.append(("%cuda_toolkit", config.attn_cuda_toolkit))
    # `ptxas-sm_N` for each chip this ptxas assembles (its --help lists
    # them): sm_100 and sm_120 need CUDA 12.8.
    usage = subprocess.run([config.attn_ptxas, "--help"], capture_output=True,
                           text=True).stdout
    for chip in sorted(set(re.findall(r"'(sm_[0-9]+[af]?)'", usage))):
        config.available_features.add("ptxas-" + chip)
    # The chips ptxas-variants.test assembles each variant for: sanitized,
    # sm_90 alone (sm_80 runs the same compiler code, at 2 s a variant).
    config.substitutions.append(
        ("%assemble_chips", "sm_90" if config.attn_sanitize else "sm_80 sm_90"))

    # The CUDA emulator (lib/Emulator), built with the toolkit: libcuda.so.1
    # running PTX on the CPU, for the launchers' end-to-end tests here.
    config.available_features.add("cuda-emulator")
    config.substitutions.append(
        ("%cuda_emulator_dir", os.path.join(config.attn_obj_root, "lib", "cuda-emulator"))
    )

# A Python with PyTorch (`torch`): scripts/gpu-check.py's torch reference and
# benchmark then run on the CUDA emulator too (GPUEmulator/torch.test).
# Debian packages PyTorch as python3-torch for /usr/bin/python3.
for python in (shutil.which("python3"), "/usr/bin/python3"):
    if python and subprocess.run([python, "-c", "import torch"],
                                 stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL).returncode == 0:
        config.available_features.add("torch")
        config.substitutions.append(("%torch_python", python))
        break

# A GPU found at configure time: `cuda` runs kernels on it (Integration/GPU).
if config.attn_ptxas and config.attn_cuda_chip:
    config.available_features.add("cuda")
    config.substitutions.append(("%cuda_chip", config.attn_cuda_chip))
