#!/usr/bin/python3
"""Writes the STL seeds of corpus/stl: a closed tetrahedron (ASCII) and a closed cube (binary).
Usage: make_stl_seeds.py OUT_DIR. Standard library only."""
import os
import struct
import sys

TET = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)]
TET_FACES = [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]  # outward: counter-clockwise from outside
CUBE = [(x, y, z) for z in (0, 1) for y in (0, 1) for x in (0, 1)]
CUBE_FACES = [(0, 2, 1), (1, 2, 3), (4, 5, 6), (5, 7, 6), (0, 1, 4), (1, 5, 4),
              (2, 6, 3), (3, 6, 7), (0, 4, 2), (2, 4, 6), (1, 3, 5), (3, 7, 5)]


def main(out):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "tetrahedron_ascii.stl"), "w") as f:
        f.write("solid tet\n")
        for a, b, c in TET_FACES:
            f.write("  facet normal 0 0 0\n    outer loop\n")
            for v in (a, b, c):
                f.write("      vertex %g %g %g\n" % TET[v])
            f.write("    endloop\n  endfacet\n")
        f.write("endsolid tet\n")
    with open(os.path.join(out, "cube_binary.stl"), "wb") as f:
        f.write(b"solid but binary".ljust(80, b"\0"))
        f.write(struct.pack("<I", len(CUBE_FACES)))
        for face in CUBE_FACES:
            f.write(struct.pack("<3f", 0, 0, 0))
            for v in face:
                f.write(struct.pack("<3f", *CUBE[v]))
            f.write(struct.pack("<H", 0))


if __name__ == "__main__":
    main(sys.argv[1])
