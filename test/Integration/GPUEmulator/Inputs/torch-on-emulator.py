"""Runs scripts/gpu-check.py, its torch reference and benchmark included, on
the CUDA emulator (lib/Emulator) with torch's CPU tensors, so that the code a
GPU session runs once has run before: its "cuda" tensors are CPU ones,
registered with the emulator's cuMemHostRegister (the kernels reach them at
their own addresses), events time by the wall clock, the stream is the null
one. Run it in a directory gpu-artifacts.sh made, after gpu-check.sh built
the launchers, with LD_LIBRARY_PATH naming the emulator's libcuda:

    python3 torch-on-emulator.py PATH/TO/gpu-check.py
"""
import ctypes
import os
import signal
import sys
import time

import torch

cuda = ctypes.CDLL("libcuda.so.1")
if cuda.cuInit(0) != 0:
    sys.exit("torch-on-emulator: cuInit failed")


class Stream:
    cuda_stream = 0


class Event:
    def __init__(self, enable_timing=False):
        self.time = None

    def record(self, stream=None):
        self.time = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return (end.time - self.time) * 1e3


torch.cuda.is_available = lambda: True
torch.cuda.get_device_name = lambda *args: "the CUDA emulator"
torch.cuda.synchronize = lambda *args: None
torch.cuda.current_stream = lambda *args: Stream()
torch.cuda.Event = Event

if not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
    # torch < 2.0 (Debian's): a stand-in with 2.0's signature (no
    # enable_gqa, as before 2.5), in f32.
    def scaled_dot_product_attention(q, k, v, is_causal=False):
        scores = q.float() @ k.float().transpose(-2, -1) / q.shape[-1] ** 0.5
        if is_causal:
            scores = scores.masked_fill(
                torch.ones_like(scores, dtype=torch.bool).triu(1),
                float("-inf"))
        return (torch.softmax(scores, -1) @ v.float()).to(q.dtype)

    torch.nn.functional.scaled_dot_product_attention = \
        scaled_dot_product_attention


# The tensors of the spec being checked: mapped until the next spec, whose
# tensors torch's allocator may place over theirs.
mapped = []


def register(t):
    """Maps t's bytes for the emulated device."""
    pointer = ctypes.c_void_p(t.data_ptr())
    size = ctypes.c_size_t(max(1, t.numel() * t.element_size()))
    if cuda.cuMemHostRegister_v2(pointer, size, 0) != 0:
        raise RuntimeError("cuMemHostRegister failed")
    mapped.append(pointer)


def unregister_all():
    while mapped:
        cuda.cuMemHostUnregister(mapped.pop())


path = sys.argv[1]
source = open(path).read()
for cuda_text, cpu_text in (('device="cuda"', 'device="cpu"'),
                            (".cuda()", ""), ("t.is_cuda and ", "")):
    if cuda_text not in source:
        sys.exit("torch-on-emulator: no %r in %s" % (cuda_text, path))
    source = source.replace(cuda_text, cpu_text)
script = {"__name__": "gpu_check", "__file__": path}
exec(compile(source, path, "exec"), script)
to_dltensor = script["dltensor"]


def dltensor(t):
    register(t)
    return to_dltensor(t)


script["dltensor"] = dltensor
check = script["check"]


# TORCH_ON_EMULATOR_TERM_AFTER=N: a SIGTERM (as from gpu-check.sh's timeout)
# once N kernels are checked.
term_after = int(os.environ.get("TORCH_ON_EMULATOR_TERM_AFTER", "-1"))
checks = 0


def check_alone(name, spec):
    global checks
    if checks == term_after:
        os.kill(os.getpid(), signal.SIGTERM)
    checks += 1
    unregister_all()
    return check(name, spec)


script["check"] = check_alone
# One timed run a kernel, no warm-up: the emulator's times mean nothing, and
# each run of a B * S = 16k kernel takes it seconds.
script.update(WARMUPS=0, MIN_RUNS=1, BUDGET_S=0)
sys.exit(script["main"]())
