"""Prints the assembly of a gpu.binary (gpu-module-to-binary{format=isa}):
the PTX text the attribute holds, its escapes (\\0A, \\22, ...) undone."""

import re
import sys

text = open(sys.argv[1]).read()
found = re.search(r'assembly = "((?:[^"\\]|\\.)*)"', text)
if not found:
    sys.exit("assembly-of: no gpu.object with an assembly in " + sys.argv[1])
sys.stdout.write(
    re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)),
           found.group(1).replace("\\\\", "\\5C")))
