"""Writes a block bitmap file wider than 64 key blocks and taller than 256
query blocks (for wide-block-bitmap.test): blocks of BLOCK, ROWS x COLS, each
query block sees its own key block and a fixed pseudo-random eleventh of
the others; rows may be shorter than COLS (the rest is 0)."""
import sys

block, rows, cols = (int(a) for a in sys.argv[1:4])
print("block %d" % block)
for i in range(rows):
    bits = ["1" if j == i % cols or (i * 7 + j * 13) % 11 == 0
            else "0" for j in range(cols)]
    # Every other row stops early: its missing key blocks are hidden.
    print("".join(bits[:cols if i % 2 else cols - 5]))
