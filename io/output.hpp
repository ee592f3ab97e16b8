#pragma once
// Output that ParaView opens as a time series with one click, written in parallel.
//  vtk:  one .vti piece per rank (appended raw binary), a .pvti per step, and one .pvd per run
//        holding real times, rewritten (atomically) after every output step.
//  xdmf: one HDF5 file per output step for all ranks (collective writes) and one .xmf temporal
//        collection, for runs with many ranks.
// A restarted run continues the same series: entries after the restart time are dropped.
#include <memory>
#include <string>
#include <vector>

#include "core/comm.hpp"
#include "io/state.hpp"

namespace cumulus {

class OutputWriter {
 public:
  virtual ~OutputWriter() = default;
  // Collective. `arrays` are the fields to write (each rank's part).
  virtual void write(long step, double time, const GridGeometry& geometry, const std::vector<GridArray>& arrays) = 0;
  // The file to open in ParaView.
  virtual std::string series_path() const = 0;
};

// `format` is "vtk" or "xdmf". Files go to run_dir/output/, the series file to run_dir/<base>.pvd|.xmf.
// `resume_time` >= 0 continues an existing series from a restart at that time.
std::unique_ptr<OutputWriter> make_output_writer(const std::string& format, const std::string& run_dir,
                                                 const std::string& base, const Comm& comm, double resume_time);

}  // namespace cumulus
