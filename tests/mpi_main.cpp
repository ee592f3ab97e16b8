// GoogleTest main for cumulus: MPI initialised around the tests; only rank 0 prints.
#include <gtest/gtest.h>

#include "core/comm.hpp"
#include "core/log.hpp"

int main(int argc, char** argv) {
  cumulus::MpiSession mpi(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int rank = cumulus::Comm::world().rank();
  cumulus::Log::instance().set_rank(rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int rc = RUN_ALL_TESTS();
  // Every rank must agree: a failure seen on any rank fails the run.
  return cumulus::Comm::world().bitwise_or(rc != 0 ? 1 : 0);
}
