#include "core/comm.hpp"

#include <cstdlib>

#include "core/error.hpp"
#include "core/strings.hpp"

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

namespace cumulus {

MpiSession::MpiSession(int* argc, char*** argv) {
  int provided = 0;
  mpi_check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void mpi_check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw Error(strprintf("MPI error in %s: %s", what, msg));
}

int Comm::rank() const {
  int r = 0;
  mpi_check(MPI_Comm_rank(comm_, &r), "MPI_Comm_rank");
  return r;
}

int Comm::size() const {
  int s = 1;
  mpi_check(MPI_Comm_size(comm_, &s), "MPI_Comm_size");
  return s;
}

int Comm::local_rank() const {
  MPI_Comm node;
  mpi_check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank(), MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  int r = 0;
  MPI_Comm_rank(node, &r);
  MPI_Comm_free(&node);
  return r;
}

void Comm::barrier() const { mpi_check(MPI_Barrier(comm_), "MPI_Barrier"); }

namespace {
template <class T>
T allreduce(MPI_Comm c, T v, MPI_Datatype t, MPI_Op op) {
  T out{};
  mpi_check(MPI_Allreduce(&v, &out, 1, t, op, c), "MPI_Allreduce");
  return out;
}
}  // namespace

double Comm::sum(double v) const { return allreduce(comm_, v, MPI_DOUBLE, MPI_SUM); }
double Comm::max(double v) const { return allreduce(comm_, v, MPI_DOUBLE, MPI_MAX); }
double Comm::min(double v) const { return allreduce(comm_, v, MPI_DOUBLE, MPI_MIN); }
std::int64_t Comm::sum(std::int64_t v) const { return allreduce(comm_, v, MPI_INT64_T, MPI_SUM); }
void Comm::sum_in_place(std::int64_t* v, int n) const {
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_INT64_T, MPI_SUM, comm_), "MPI_Allreduce");
}
void Comm::abort(int code) const {
  MPI_Abort(comm_, code);
  std::abort();  // MPI_Abort does not return; this tells the compiler so
}
void Comm::sum_in_place(double* v, int n) const {
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, comm_), "MPI_Allreduce");
}
std::int64_t Comm::exclusive_sum(std::int64_t v) const {
  std::int64_t out = 0;
  mpi_check(MPI_Exscan(&v, &out, 1, MPI_INT64_T, MPI_SUM, comm_), "MPI_Exscan");
  return rank() == 0 ? 0 : out;  // MPI leaves rank 0's result undefined
}
void Comm::broadcast(double* v, int n, int root) const {
  mpi_check(MPI_Bcast(v, n, MPI_DOUBLE, root, comm_), "MPI_Bcast");
}
std::int64_t Comm::min(std::int64_t v) const { return allreduce(comm_, v, MPI_INT64_T, MPI_MIN); }
int Comm::bitwise_or(int v) const { return allreduce(comm_, v, MPI_INT, MPI_BOR); }

void Comm::all_gather_v(const std::vector<double>& mine, std::vector<double>& all, const std::vector<int>& counts,
                        const std::vector<int>& displs) const {
  if (static_cast<int>(counts.size()) != size() || static_cast<int>(displs.size()) != size())
    throw Error(strprintf("Comm::all_gather_v: %zu counts and %zu displacements for %d ranks", counts.size(),
                          displs.size(), size()));
  for (std::size_t r = 0; r < counts.size(); ++r)
    if (displs[r] < 0 || counts[r] < 0 || static_cast<std::size_t>(displs[r]) + counts[r] > all.size())
      throw Error(strprintf("Comm::all_gather_v: rank %zu's %d values at %d do not fit the %zu of the result", r,
                            counts[r], displs[r], all.size()));
  mpi_check(MPI_Allgatherv(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(), counts.data(),
                           displs.data(), MPI_DOUBLE, comm_),
            "MPI_Allgatherv");
}

void Comm::broadcast(std::string& s, int root) const {
  long n = static_cast<long>(s.size());
  mpi_check(MPI_Bcast(&n, 1, MPI_LONG, root, comm_), "MPI_Bcast");
  s.resize(static_cast<std::size_t>(n));
  if (n > 0) mpi_check(MPI_Bcast(s.data(), static_cast<int>(n), MPI_CHAR, root, comm_), "MPI_Bcast");
}

void Comm::throw_error(const std::string& message) { throw Error(message); }

int Comm::broadcast(int v, int root) const {
  mpi_check(MPI_Bcast(&v, 1, MPI_INT, root, comm_), "MPI_Bcast");
  return v;
}

bool Comm::cuda_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

std::string Comm::library_version() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(v, &len);
  std::string s(v, static_cast<std::size_t>(len));
  if (auto nl = s.find_first_of(",\n"); nl != std::string::npos) s.resize(nl);
  return s;
}

}  // namespace cumulus
