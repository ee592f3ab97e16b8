// libFuzzer target: the checkpoint reader and verifier on HDF5 files mutated at the byte level
// (the corpus holds real checkpoints and structure-level variants made by make_corpus.py: wrong
// shapes, attributes of other types and sizes, missing and extra datasets). What a restart reads
// first (read_checkpoint_meta) and `cumulus inspect` (every dataset's shape, read and checksum)
// must either succeed or throw the project's Error; the HDF5 library's own faults are reported as
// such (the stack names libhdf5).
#include <hdf5.h>
#include <mpi.h>

#include <cstddef>
#include <cstdint>

#include "core/comm.hpp"
#include "core/error.hpp"
#include "io/checkpoint.hpp"
#include "tests/fuzz/fuzz_file.hpp"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  MPI_Init(argc, argv);  // parallel HDF5 opens files through MPI-IO; never finalised (fuzz_job_common.hpp)
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // HDF5's error stack print-out: noise for every bad input
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = cumulus::fuzz::scratch_path(".h5");
  cumulus::fuzz::write_file(path, data, size);
  try {
    (void)cumulus::read_checkpoint_meta(path, cumulus::Comm::self());
  } catch (const cumulus::Error&) {
  }
  try {
    (void)cumulus::inspect_hdf5(path);
  } catch (const cumulus::Error&) {
  }
  return 0;
}
