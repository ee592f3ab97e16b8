// Hostile input (issue #20): counts a file declares are checked before anything is allocated from
// them (core/input_limits.hpp), and the findings of the fuzz targets (tests/fuzz/) stay fixed.
// Each case names the file it writes or the count it feeds, and the message it expects.
#include <gtest/gtest.h>
#include <stdlib.h>  // mkdtemp

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>

#include "../input_error.hpp"
#include "core/comm.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/input_limits.hpp"
#include "core/memory.hpp"
#include "io/checkpoint.hpp"
#include "io/hdf5_file.hpp"
#include "solvers/md/data_file.hpp"
#include "solvers/model.hpp"

using namespace cumulus;

namespace {

std::string error_of(const std::function<void()>& f) { return cumulus::testing::input_error_of(f); }

class InputLimits : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "cumulus_limits_XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr) << std::strerror(errno);
    dir_ = templ;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string write(const std::string& name, const std::string& text) {
    const std::string p = dir_ + "/" + name;
    std::ofstream(p) << text;
    return p;
  }
  // A data file whose header has `counts` (e.g. "1 atoms\n2 atom types\n"), one atom of type 1.
  std::string data_file(const std::string& counts) {
    return write(
        "in.data",
        "title\n\n" + counts + "\n0 10 xlo xhi\n0 10 ylo yhi\n0 10 zlo zhi\n\nMasses\n\n1 1.0\n\nAtoms\n\n1 1 5 5 5\n");
  }
  std::string dir_;
};

}  // namespace

TEST(CountProblem, AcceptsWhatFitsAndNamesWhatDoesNot) {
  const limits::CountLimit lim{100, 1000, 10, 8};
  EXPECT_EQ(limits::count_problem(100, "atoms", lim), "");
  EXPECT_NE(limits::count_problem(101, "atoms", lim).find("101 atoms is more than cumulus accepts (at most 100"),
            std::string::npos);
  EXPECT_NE(limits::count_problem(2.5, "atoms", lim).find("2.5, is not a whole number"), std::string::npos);
  EXPECT_NE(limits::count_problem(0, "atoms", lim).find("is not positive"), std::string::npos);
  // 1000 bytes hold at most 100 items of 10 bytes: 101 is refused for the file's size.
  EXPECT_NE(limits::count_problem(101, "atoms", {0, 1000, 10, 0}).find("cannot fit in this file of 1000 bytes"),
            std::string::npos);
  // Memory: a count whose bytes pass this node's memory.
  const double node = memory::node_bytes();
  EXPECT_NE(limits::count_problem(node, "atoms", {0, 0, 0, 2}).find("more than this node's"), std::string::npos);
  EXPECT_EQ(limits::count_problem(node / 4, "atoms", {0, 0, 0, 2}), "");
}

// Issue #20's example: "2000000000 atom types" in the header and one atom took 55 s and 15.6 GB
// before it was refused; now the header line itself is refused, with the file and line.
TEST_F(InputLimits, DataFileWithTwoBillionAtomTypesIsRefusedAtItsHeaderLine) {
  const std::string p = data_file("1 atoms\n2000000000 atom types\n");
  const std::string e = error_of([&] { md::read_data_file(p, false); });
  EXPECT_NE(e.find("in.data:4: 2000000000 atom types is more than cumulus accepts (at most 1000"), std::string::npos)
      << e;
}

TEST_F(InputLimits, DataFileClaimingMoreAtomsThanItHoldsIsRefusedAtItsHeaderLine) {
  const std::string p = data_file("1000000 atoms\n1 atom types\n");
  const std::string e = error_of([&] { md::read_data_file(p, true); });
  EXPECT_NE(e.find("in.data:3: 1000000 atoms cannot fit in this file of"), std::string::npos) << e;
}

// Counts and ids beyond what a 64-bit integer holds were converted from double before any check:
// undefined behaviour, which fuzz_data_file's UBSan reports on the reader before this fix for
// corpus/data_file/regression_count_1e30.data and regression_id_beyond_int64.data. An image flag
// past 32 bits wrapped silently (regression_image_flag_beyond_int32.data).
TEST_F(InputLimits, DataFileHugeOrFractionalCountsAndIdsAreRefused) {
  EXPECT_NE(error_of([&] {
              md::read_data_file(data_file("1e30 atoms\n1 atom types\n"), true);
            }).find("in.data:3: 1e+30 atoms is more than cumulus accepts"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { md::read_data_file(data_file("1.5 atoms\n1 atom types\n"), true); }).find("is not a whole number"),
      std::string::npos);
  const std::string p = write("ids.data",
                              "t\n\n1 atoms\n1 atom types\n0 1 xlo xhi\n0 1 ylo yhi\n0 1 zlo zhi\n\nMasses\n\n1 1\n\n"
                              "Atoms\n\n1e19 1 0 0 0\n");
  EXPECT_NE(error_of([&] { md::read_data_file(p, false); }).find("ids.data:15: the integer '1e19' is out of range"),
            std::string::npos);
  const std::string q = write("image.data",
                              "t\n\n1 atoms\n1 atom types\n0 1 xlo xhi\n0 1 ylo yhi\n0 1 zlo zhi\n\nMasses\n\n1 1\n\n"
                              "Atoms\n\n1 1 0 0 0 0 0 3000000000\n");
  EXPECT_NE(error_of([&] { md::read_data_file(q, false); }).find("image.data:15: an image flag must fit in 32 bits"),
            std::string::npos);
}

TEST_F(InputLimits, DataFileThatIsNotARegularFileIsRefused) {
  EXPECT_NE(error_of([&] { md::read_data_file("/dev/zero", false); }).find("'/dev/zero' is not a regular file"),
            std::string::npos);
}

// The memory estimate's refusal says on how many ranks (one per node like this one) a job fits.
TEST(NodeMemory, RefusalSaysHowManyRanksWouldFit) {
  Config c;
  c.set_file("job.toml");
  c.set("md.cells", Value{std::vector<std::int64_t>{400}}, "job.toml:3");
  const double node = memory::node_bytes();
  const std::string e = error_of([&] { check_node_memory(c, "md.cells", 3.5 * node, 1.0, 1, "atoms", ""); });
  EXPECT_NE(e.find("atoms need"), std::string::npos) << e;
  EXPECT_NE(e.find("it would fit on 4 ranks or more, one per node like this one"), std::string::npos) << e;
}

// A dataset that declares 10^12 cells made `cumulus inspect` size its read buffer from the shape
// alone: 8 TB, std::bad_alloc (this case, before the fix). The structure-level variant
// corpus/checkpoint/heat_checkpoint_huge_unstored.h5 (tests/fuzz/make_checkpoint_seeds.py, serial
// h5py: nothing stored) is refused for its stored bytes; here the file is written through MPI-IO,
// which allocates the storage at once (a sparse file), so the shape passes the stored-bytes test
// and is refused for this node's memory instead.
TEST_F(InputLimits, InspectRefusesAShapeTheFileDoesNotStore) {
  const std::string p = dir_ + "/huge.h5";
  {
    h5::Handle f = h5::create_file(p, Comm::self());
    h5::write_attr(f, "format", std::string("cumulus-checkpoint"));
    h5::Handle g = h5::create_group(f, "arrays");
    h5::Handle d = h5::create_dataset(g, "temperature", H5T_NATIVE_DOUBLE, {1, 1, 1000000, 1000000});
    h5::write_attr(d, "checksum", std::uint64_t{0});
    h5::write_attr(d, "dtype", std::string("f64"));
  }
  const std::string out = inspect_hdf5(p);
  EXPECT_NE(out.find("1 x 1 x 1000000 x 1000000"), std::string::npos) << out;
  EXPECT_NE(out.find("NOT VERIFIED: 8e+03 GB is more than half this node's memory"), std::string::npos) << out;
  EXPECT_NE(out.find("verification: FAILED"), std::string::npos) << out;
}

// Found by tests/fuzz/fuzz_job on its first seed (tests/cli/bad_jobs/nan_diffusivity.toml): the
// message for a non-finite or huge number converted it to an integer first, which is undefined
// behaviour (UBSan: "nan is outside the range of representable values of type 'long long'").
// Under the sanitizer build this case fails on the conversion itself; everywhere it checks the text.
TEST(JobNumbers, NonFiniteAndHugeNumbersAreNamedWithoutConversion) {
  const auto& reg = SolverRegistry::all();
  auto error_for = [&](const std::string& line) {
    return error_of([&] {
      parse_job_text("solver = \"heat\"\n[run]\nend_step = 10\n[heat]\ncells = [8, 8]\n" + line + "\n", "job.toml", {},
                     [&](const std::string& s, Schema& sc) { reg.build_schema(s, sc); });
    });
  };
  EXPECT_NE(error_for("diffusivity = nan").find("expected a finite number, got nan"), std::string::npos);
  EXPECT_NE(error_for("diffusivity = -inf").find("expected a finite number, got -inf"), std::string::npos);
  EXPECT_NE(error_for("diffusivity = -1e300").find("value -1e+300 is out of range"), std::string::npos);
}
