# Run by pvpython: opens a series the way a user would (OpenDataFile), and prints as JSON the
# time steps, the cell arrays at every step, and the full cell array NAME at the last step.
import json
import sys

from paraview import servermanager
from paraview.simple import OpenDataFile, UpdatePipeline
from vtkmodules.numpy_interface import dataset_adapter as dsa

path, name = sys.argv[1], sys.argv[2]
reader = OpenDataFile(path)
assert reader is not None, "ParaView has no reader for " + path
times = list(reader.TimestepValues) if reader.TimestepValues else []
arrays = []
# ParaView 5.11's Xdmf3 readers hand back a first execution without arrays when it is at the
# series' first time (a cached update from when the file was opened); one update elsewhere first
# makes every time step honest. The VTK readers do not need it; it does no harm there.
if len(times) > 1:
    UpdatePipeline(time=times[-1], proxy=reader)
for t in times:
    UpdatePipeline(time=t, proxy=reader)
    arrays.append(sorted(reader.CellData.keys()))


def first_leaf(obj):
    # A reader may hand back a composite dataset; the grid is its first leaf.
    while obj.IsA("vtkCompositeDataSet"):
        it = obj.NewIterator()
        it.InitTraversal()
        obj = it.GetCurrentDataObject()
    return obj


UpdatePipeline(time=times[-1] if times else None, proxy=reader)
data = first_leaf(servermanager.Fetch(reader))
values = dsa.WrapDataObject(data).CellData[name]
dims = [0, 0, 0]
if hasattr(data, "GetDimensions"):  # image data; a surface of quads has cells and points instead
    data.GetDimensions(dims)
else:
    dims = [data.GetNumberOfCells(), data.GetNumberOfPoints(), 0]
print("PROBE " + json.dumps({"times": times, "arrays": arrays, "dims": dims,
                             "values": [float(v) for v in values.ravel()]}))
