//===- PTXFuzzer.cpp - libFuzzer target: PTX for the CUDA emulator --------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
// An input is PTX text, as cuModuleLoadData gives the CUDA emulator. The
// parser refuses what it does not know with a message; each kernel it takes
// then runs one block of 64 threads, its pointer parameters aimed at a
// zeroed 4 KiB buffer and its other parameters 64, with a budget of 20000
// instructions per thread between barriers and 10^6 in all (a loop around a
// barrier). Refusals and faults are expected; a crash, a hang or a
// sanitizer report is a finding.
//
//===----------------------------------------------------------------------===//

#include "attn/Emulator/PTX.h"

#include <cstring>
#include <vector>

using namespace attn::emulator;

namespace {

DeviceMemory memory;
std::vector<std::vector<uint8_t>> globals;

uint64_t allocateGlobal(const std::vector<uint8_t> &bytes, uint32_t) {
  if (bytes.empty() || bytes.size() > (1 << 20))
    return 0;
  globals.push_back(bytes);
  uint64_t address = reinterpret_cast<uint64_t>(globals.back().data());
  memory.add(address, bytes.size());
  return address;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  std::string error;
  std::unique_ptr<Module> module = parsePTX(text, allocateGlobal, error);
  if (module) {
    std::vector<uint8_t> buffer(4096);
    uint64_t address = reinterpret_cast<uint64_t>(buffer.data());
    memory.add(address, buffer.size());
    for (const auto &[name, kernel] : module->kernels) {
      std::vector<uint8_t> parameters(kernel.parameterBytes);
      for (const Parameter &parameter : kernel.parameters) {
        uint64_t value = parameter.size == 8 ? address : 64;
        std::memcpy(parameters.data() + parameter.offset, &value,
                    std::min<size_t>(parameter.size, 8));
      }
      LaunchShape shape;
      shape.block[0] = 64;
      shape.maxSteps = 20000;
      shape.maxBlockSteps = 1000000;
      (void)runKernel(kernel, shape, parameters, memory);
    }
    memory.remove(address);
  }
  for (const std::vector<uint8_t> &global : globals)
    memory.remove(reinterpret_cast<uint64_t>(global.data()));
  globals.clear();
  return 0;
}
