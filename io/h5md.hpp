#pragma once
// H5MD trajectories (de Buyl, Colberg & Hoefling, Comput. Phys. Commun. 185, 1546 (2014); H5MD 1.1)
// of a particle state: one file, run_dir/trajectory.h5md, one frame appended per write.
//
//   /h5md                       version = [1, 1]; author/name, creator/name and creator/version
//   /particles/all/box          dimension = 3, boundary = periodic x 3; edges [3] (fixed box)
//   /particles/all/position     value [frames, N, 3], step [frames], time [frames]
//   /particles/all/velocity     likewise
//   /particles/all/image        likewise (int32: box crossings, so position + image * edges unwraps)
//   /particles/all/species      [N] (int32 atom types, 1-based; fixed)
//   /particles/all/id           [N] (int32 atom ids, 0-based; fixed)
//   /connectivity/bonds         [M, 2] (int64 particle indices, in the frames' order; attribute
//                               particles_group: a reference to /particles/all), when the state
//                               has bonds (StateDescription::connectivity)
//
// Beside it, trajectory.xmf: an XDMF description of the same datasets, rewritten after every frame
// (under a temporary name renamed into place), so that ParaView, which has no H5MD reader, opens
// the trajectory: per frame the atoms as vertices (species, velocity) and, with bonds, the bonds as
// two-point lines. Positions are the wrapped ones: a bond across the boundary is drawn across the
// box.
//
// Particles are in ascending id order in every frame, whatever rank owns them: rank 0 gathers the
// frame and writes it (the whole frame passes through its memory) and flushes the file. A restart
// drops the frames after its time; a frame at a time already in the file replaces those at or after
// it. A file a killed run left unreadable is renamed *.damaged and a new one started (logged).
#include <cstdint>
#include <memory>
#include <string>

#include "core/comm.hpp"
#include "io/state.hpp"

namespace cumulus {

class H5mdWriter {
 public:
  // `resume_time` >= 0: a restart at that time continues the existing file.
  H5mdWriter(const std::string& run_dir, const Comm& comm, double resume_time);
  ~H5mdWriter();
  // Collective. `state` must describe particles: arrays "id", "position", "velocity" and "image"
  // (and "type" when there are several species), one run of particles per rank; geometry.spacing
  // holds the box's edge lengths.
  void write(long step, double time, const StateDescription& state);
  std::string path() const { return path_; }

 private:
  struct File;
  void write_xdmf(std::int64_t file, unsigned long long natoms);  // hid_t, hsize_t
  std::string path_;
  Comm comm_;
  double resume_time_;
  std::unique_ptr<File> file_;  // rank 0's open file
};

}  // namespace cumulus
