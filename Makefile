# attn: the two commands a new user runs are `make demo` and `make check`.
# Everything else here is a thin wrapper around CMake + Ninja.

LLVM_PREFIX ?= /usr/lib/llvm-22
BUILD_DIR   ?= build
BUILD_TYPE  ?= Release
JOBS        ?= $(shell nproc)

# Debian 12 packages: MLIR/LLVM 22, the clang that builds us (and its
# sanitizer runtimes, for check-sanitize), lit/FileCheck, and PyTorch (CPU)
# for torch.test, which runs a GPU session's gpu-check.py on the emulator.
PACKAGES := cmake ninja-build clang-22 clang-format-22 llvm-22-dev \
            llvm-22-tools libmlir-22-dev mlir-22-tools libomp-22-dev \
            libclang-rt-22-dev libdlpack-dev libopenblas-dev python3-torch

ATTN_OPT := $(BUILD_DIR)/bin/attn-opt

.PHONY: all deps configure build check check-sanitize fuzz demo bench \
        fuzz-specs gpu-artifacts docs format clean

all: build

# Installs only what is missing, so a second run is quiet and quick.
deps:
	@missing=""; \
	for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" \
	    || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	  echo "deps: installing$$missing"; \
	  $$sudo apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq \
	    --no-install-recommends $$missing >/dev/null; \
	fi

$(BUILD_DIR)/build.ninja: | deps
	cmake -G Ninja -S . -B $(BUILD_DIR) \
	  -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  -DMLIR_DIR=$(LLVM_PREFIX)/lib/cmake/mlir \
	  -DLLVM_EXTERNAL_LIT=$(LLVM_PREFIX)/bin/lit \
	  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
	  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	ninja -C $(BUILD_DIR) -j $(JOBS)

check: build
	ninja -C $(BUILD_DIR) -j $(JOBS) check-attn

# ASan + UBSan: a second build of everything attn compiles (libMLIR stays as
# installed), its test suite, and the libFuzzer targets of fuzz/.
SANITIZE_DIR ?= build-sanitize
FUZZ_SECONDS ?= 60
$(SANITIZE_DIR)/build.ninja: | deps
	cmake -G Ninja -S . -B $(SANITIZE_DIR) \
	  -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DATTN_SANITIZE=ON \
	  -DATTN_BUILD_BENCH=OFF \
	  -DMLIR_DIR=$(LLVM_PREFIX)/lib/cmake/mlir \
	  -DLLVM_EXTERNAL_LIT=$(LLVM_PREFIX)/bin/lit \
	  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22

check-sanitize: $(SANITIZE_DIR)/build.ninja
	ninja -C $(SANITIZE_DIR) -j $(JOBS) check-attn

fuzz: $(SANITIZE_DIR)/build.ninja
	ninja -C $(SANITIZE_DIR) -j $(JOBS) attn-fuzzers
	fuzz/run.sh $(SANITIZE_DIR) $(FUZZ_SECONDS)

# Differential fuzzing of whole kernels: FUZZ_SPECS random specs through
# attn-run --check on the CPU and, on the CUDA emulator (built with the CUDA
# toolkit), the tensor-core and FMA kernels, then attn-compile's C launchers
# and gpu-driver; and FUZZ_REGIONS kernels in MLIR with random score_mod and
# mask_mod regions; exit 1 on a wrong answer or a crash (fuzz/spec-diff.py;
# findings in $(BUILD_DIR)/spec-diff/).
FUZZ_SPECS   ?= 200
FUZZ_REGIONS ?= 50
FUZZ_SEED    ?= 1
EMULATOR_DIR := $(BUILD_DIR)/lib/cuda-emulator
fuzz-specs: build
	fuzz/spec-diff.py --bin $(BUILD_DIR)/bin --count $(FUZZ_SPECS) \
	  --regions $(FUZZ_REGIONS) --seed $(FUZZ_SEED) --jobs $(JOBS) \
	  --out $(BUILD_DIR)/spec-diff \
	  $(if $(wildcard $(EMULATOR_DIR)/libcuda.so.1),--emulator $(EMULATOR_DIR))

# The main job: compile a GQA + causal kernel ahead of time (object, C header,
# manifest), then compile, run and check it against the naive reference, and
# time it.
DEMO_SPEC ?= b=2,hq=16,hkv=4,sq=256,d=64,mask=causal
DEMO_DIR  ?= $(BUILD_DIR)/demo
demo: build
	@echo "== attn-compile --spec $(DEMO_SPEC) --target cpu -o $(DEMO_DIR)"
	@$(BUILD_DIR)/bin/attn-compile --spec "$(DEMO_SPEC)" --target cpu -o $(DEMO_DIR)
	@ls -l $(DEMO_DIR)
	@sed -n '/Computes attention/,/error_string/p' $(DEMO_DIR)/attn_kernel.h
	@echo
	@echo "== attn-run --spec $(DEMO_SPEC) --check --bench"
	@$(BUILD_DIR)/bin/attn-run --spec "$(DEMO_SPEC)" --check --bench --threads $(JOBS)
	@echo
	@echo "== the graph level: attn-opt examples/gqa_causal_mha.mlir --attn-expand-mha"
	@$(ATTN_OPT) examples/gqa_causal_mha.mlir --attn-expand-mha --canonicalize \
	  | grep -E "attn\.|linalg\.generic|expand_shape|collapse_shape" | cut -c1-110

# attn against a naive loop nest, OpenBLAS and ONNX Runtime
# (bench/attn-bench.cpp), e.g. `make bench BENCH_ARGS=--quick`,
# BENCH_ARGS="--configs 8x512x64 --json", or BENCH_ARGS=--fused=false for the
# naive reference kernel. Debian's OpenBLAS misdetects these CPUs and falls back to SSE3
# kernels unless told the core type. ONNX Runtime comes from npm
# (onnxruntime-node, its CPU binary only: --ignore-scripts) into build/ort;
# without node/npm the bench runs without that peer.
BENCH_ARGS ?=
ORT_DIR    := $(BUILD_DIR)/ort
ORT_VERSION := 1.30.0
$(ORT_DIR)/node_modules/onnxruntime-node/package.json:
	@mkdir -p $(ORT_DIR)
	-cd $(ORT_DIR) && npm install --silent --no-save --ignore-scripts \
	  onnxruntime-node@$(ORT_VERSION)

bench: build
	@if command -v npm >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory $(ORT_DIR)/node_modules/onnxruntime-node/package.json; fi
	@ort=""; [ -f $(ORT_DIR)/node_modules/onnxruntime-node/package.json ] && \
	  ort="--ort $(CURDIR)/bench/ort-peer.mjs"; \
	NODE_PATH=$(CURDIR)/$(ORT_DIR)/node_modules OPENBLAS_CORETYPE=SkylakeX \
	  $(BUILD_DIR)/bin/attn-bench $$ort $(BENCH_ARGS)

# Kernels, launchers and the check script for a GPU machine without MLIR:
# copy $(BUILD_DIR)/gpu-artifacts there and run `bash gpu-check.sh`.
GPU_CHIP ?= sm_90
gpu-artifacts: build
	scripts/gpu-artifacts.sh $(BUILD_DIR)/gpu-artifacts scripts/gpu-specs.txt \
	  $(GPU_CHIP) scripts/gpu-floors.txt

# Regenerates the op and pass reference under docs/ from the TableGen sources.
docs: configure
	ninja -C $(BUILD_DIR) mlir-doc
	cp $(BUILD_DIR)/docs/Dialects/AttnDialect.md docs/AttnDialect.md
	cp $(BUILD_DIR)/docs/Passes/AttnPasses.md docs/AttnPasses.md

format: deps
	git ls-files '*.cpp' '*.h' '*.c' | xargs clang-format-22 -i

clean:
	rm -rf $(BUILD_DIR)
