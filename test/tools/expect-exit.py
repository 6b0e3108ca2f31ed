"""Runs a command and fails unless it exits with the given code.

Usage: expect-exit.py CODE COMMAND [ARGS...]

Its output passes through (stderr onto stdout, for FileCheck). A death by a
signal never matches, so a crash cannot pass for an error exit.
"""

import subprocess
import sys

expected = int(sys.argv[1])
result = subprocess.run(sys.argv[2:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
sys.stdout.buffer.write(result.stdout)
if result.returncode != expected:
    sys.stderr.write(
        "expect-exit: expected exit code %d, got %d\n" % (expected, result.returncode)
    )
    sys.exit(1)
