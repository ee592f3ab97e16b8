#!/usr/bin/python3
"""Structure-level mutations of cumulus checkpoints, for the seed corpus of fuzz_checkpoint.

Usage: make_checkpoint_seeds.py CHECKPOINT.h5 [...] OUT_DIR
Each checkpoint is copied as it is and in variants that a byte-level fuzzer rarely reaches:
shapes changed (a longer axis, three dimensions, a huge declared shape with nothing stored),
attributes missing or of another type, datasets missing or extra, and the arrays group replaced.
Needs h5py (Debian: python3-h5py); run it with /usr/bin/python3.
"""
import os
import shutil
import sys

import h5py
import numpy as np


def variants(src):
    """(name, function of an h5py.File opened r+) pairs; each variant starts from a fresh copy."""
    with h5py.File(src, "r") as f:
        first = sorted(f["arrays"].keys())[0]

    def reshape(f):  # one axis longer: a checkpoint of another grid
        d = f["arrays"][first]
        data, attrs = d[()], dict(d.attrs)
        del f["arrays"][first]
        n = f["arrays"].create_dataset(first, data=np.concatenate([data, data[..., :1]], axis=-1))
        n.attrs.update(attrs)

    def huge_unstored(f):  # a shape of 10^12 cells with no data written: the file does not hold it
        d = f["arrays"][first]
        attrs = dict(d.attrs)
        del f["arrays"][first]
        n = f["arrays"].create_dataset(first, shape=(1, 1, 1000000, 1000000), dtype=d.dtype)
        n.attrs.update(attrs)

    def three_dims(f):
        d = f["arrays"][first]
        data, attrs = d[()], dict(d.attrs)
        del f["arrays"][first]
        n = f["arrays"].create_dataset(first, data=data.reshape(data.shape[1:]))
        n.attrs.update(attrs)

    def drop_dataset(f):
        del f["arrays"][first]

    def extra_dataset(f):
        f["arrays"].create_dataset("extra", data=np.zeros((1, 1, 2, 2)))

    def attr_types(f):  # strings where numbers are expected and back
        f.attrs["step"] = "two"
        f.attrs["solver"] = np.int64(7)
        f.attrs["decomposition"] = np.arange(1000, dtype=np.int64)  # 1000 ranks where the file says otherwise

    def drop_format(f):
        del f.attrs["format"]

    def arrays_not_group(f):
        del f["arrays"]
        f.create_dataset("arrays", data=np.zeros(4))

    def checksum_string(f):
        f["arrays"][first].attrs["checksum"] = "not a number"
        f["arrays"][first].attrs["dtype"] = "f128"

    return [("reshape", reshape), ("huge_unstored", huge_unstored), ("three_dims", three_dims),
            ("drop_dataset", drop_dataset), ("extra_dataset", extra_dataset), ("attr_types", attr_types),
            ("drop_format", drop_format), ("arrays_not_group", arrays_not_group),
            ("checksum_string", checksum_string)]


def main(args):
    out = args[-1]
    os.makedirs(out, exist_ok=True)
    for src in args[:-1]:
        stem = os.path.splitext(os.path.basename(src))[0]
        shutil.copy(src, os.path.join(out, stem + ".h5"))
        for name, change in variants(src):
            dst = os.path.join(out, "%s_%s.h5" % (stem, name))
            shutil.copy(src, dst)
            with h5py.File(dst, "r+") as f:
                change(f)


if __name__ == "__main__":
    main(sys.argv[1:])
