#pragma once
// The MPI communicator, wrapped: errors become exceptions, and nothing above mesh/ calls MPI itself.
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cumulus {

// MPI_Init/MPI_Finalize for the lifetime of main(). Errors on MPI_COMM_WORLD return codes
// (MPI_ERRORS_RETURN) so that they become exceptions with a message.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
};

void mpi_check(int rc, const char* what);

class Comm {
 public:
  Comm() : comm_(MPI_COMM_WORLD) {}
  explicit Comm(MPI_Comm c) : comm_(c) {}
  static Comm world() { return Comm(MPI_COMM_WORLD); }
  static Comm self() { return Comm(MPI_COMM_SELF); }

  MPI_Comm raw() const { return comm_; }
  int rank() const;
  int size() const;
  bool is_root() const { return rank() == 0; }
  // This rank's index among the ranks on its node (for one rank per GPU).
  int local_rank() const;
  void barrier() const;
  // Ends every rank of the communicator (MPI_Abort) with exit status `code`: for an error raised
  // on some ranks only, when the others may be waiting in a collective.
  [[noreturn]] void abort(int code) const;

  double sum(double v) const;
  double max(double v) const;
  double min(double v) const;
  std::int64_t sum(std::int64_t v) const;
  void sum_in_place(std::int64_t* v, int n) const;  // element-wise over ranks (exact)
  // Element-wise over ranks; exact only where the values are (whole numbers below 2^53, say).
  void sum_in_place(double* v, int n) const;
  // The sum of v over the ranks below this one (0 on rank 0).
  std::int64_t exclusive_sum(std::int64_t v) const;
  std::int64_t min(std::int64_t v) const;
  int bitwise_or(int v) const;
  // Every rank's `mine` into `all` on every rank: rank r's values land at all[displs[r]] onwards,
  // counts[r] of them (counts[rank()] == mine.size()). For sums that must not depend on the rank
  // count: gather the per-tile partials, then add them in tile order on each rank.
  void all_gather_v(const std::vector<double>& mine, std::vector<double>& all, const std::vector<int>& counts,
                    const std::vector<int>& displs) const;
  void broadcast(std::string& s, int root = 0) const;
  int broadcast(int v, int root = 0) const;
  void broadcast(double* v, int n, int root = 0) const;

  // Runs `f` on rank 0 alone (file-system work: create, rename, prune); an exception there is
  // raised as an Error on every rank, so that nobody waits forever in the next collective.
  template <class F>
  void on_root(F f) const {
    std::string err;
    if (is_root()) {
      try {
        f();
      } catch (const std::exception& e) {
        err = e.what();
        if (err.empty()) err = "unknown error";
      }
    }
    broadcast(err);
    if (!err.empty()) throw_error(err);
  }

  // Whether MPI can read and write device memory directly (CUDA-aware).
  static bool cuda_aware();
  static std::string library_version();

 private:
  [[noreturn]] static void throw_error(const std::string& message);
  MPI_Comm comm_;
};

}  // namespace cumulus
