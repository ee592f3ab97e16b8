# Run by pvpython: opens an md trajectory's XDMF description (trajectory.xmf beside the H5MD file)
# with ParaView's XDMF reader, and prints as JSON its time steps and, at the last one, each block's
# point and cell counts, point arrays, and the points' coordinates. (The XDMF reader, not the Xdmf3
# ones, which ParaView 5.11 offers first: they read no hyperslab, and every frame's positions are
# a hyperslab of the H5MD file's [frames, N, 3] dataset.)
import json
import sys

from paraview import servermanager
from paraview.simple import UpdatePipeline, XDMFReader
from vtkmodules.numpy_interface import dataset_adapter as dsa

reader = XDMFReader(FileNames=[sys.argv[1]])
assert reader is not None, "ParaView has no reader for " + sys.argv[1]
times = list(reader.TimestepValues) if reader.TimestepValues else []
# As pv_probe.py: one update away from the first time before the one that counts.
if len(times) > 1:
    UpdatePipeline(time=times[0], proxy=reader)
UpdatePipeline(time=times[-1] if times else None, proxy=reader)
data = servermanager.Fetch(reader)


def leaves(obj):
    if not obj.IsA("vtkCompositeDataSet"):
        yield obj
        return
    it = obj.NewIterator()
    it.InitTraversal()
    while not it.IsDoneWithTraversal():
        yield it.GetCurrentDataObject()
        it.GoToNextItem()


blocks = []
for leaf in leaves(data):
    w = dsa.WrapDataObject(leaf)
    blocks.append({"points": leaf.GetNumberOfPoints(), "cells": leaf.GetNumberOfCells(),
                   "arrays": sorted(w.PointData.keys()), "xyz": [float(v) for v in w.Points.ravel()]})
print("PROBE " + json.dumps({"times": times, "blocks": blocks}))
