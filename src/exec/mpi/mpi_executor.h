// The multi-process executor (hios.txt's runtime, issue 7): one MPI rank per device of a
// multi-device schedule, `mpirun -np M build/braid run MODEL --schedule multi.json`.
//
// Every rank prepares the whole plan on its CPU executor, so all ranks share one memory plan
// and one set of lanes and events. A rank computes the units of its own device; the lanes of
// other devices run on every rank too, as proxies: their units compute nothing and instead
// receive the outputs this rank needs from the rank that computes them, then record the plan's
// events as the real lane would. A unit whose outputs another device consumes sends them
// (a copy, MPI_Isend) right after it runs; receives poll MPI_Irecv, so transfers overlap the
// compute on both sides. Graph outputs are gathered on rank 0, which reports the result.
//
// Failure: a schedule naming more devices than ranks is refused at prepare on every rank; a
// receive that waits longer than `timeout_s` (a rank died, a peer misbehaves) prints which
// tensor from which rank and aborts the whole job (MPI_Abort): never a hang.
//
//   exec::mpi_init();                                   // once, when launched by mpirun
//   auto mpi = exec::make_mpi_executor({});
//   auto model = mpi->prepare({graph, weights, &units, &plan});
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "exec/cpu/cpu_executor.h"

namespace braid::exec {

struct MpiExecutorOptions {
  CpuExecutorOptions cpu;
  // A receive waiting longer aborts the job; BRAID_MPI_TIMEOUT_S overrides it. (The failure
  // test also sets BRAID_MPI_TEST_EXIT_RANK=r: rank r leaves before its first run, or
  // BRAID_MPI_TEST_STALL_RANK=r: rank r stays alive but never runs.)
  double timeout_s = 60;
};

// Whether this process was started by mpirun (Open MPI's or a PMI environment).
bool launched_by_mpirun();
// Initializes MPI (thread-multiple) once and finalizes it at exit; rank and size of the world.
void mpi_init();
int mpi_rank();
int mpi_size();
// All ranks wait for each other (a no-op without MPI).
void mpi_barrier();

// Times MPI messages between ranks 0 and 1 (ping-pong, 1 KiB to 32 MiB) and fits one-way
// time = latency + bytes / bandwidth; every rank gets the result. Requires 2+ ranks.
struct LinkMeasurement {
  double latency_us = 0, gbps = 0;
  std::vector<std::pair<double, double>> samples;  // (bytes, one-way us)
};
LinkMeasurement measure_link();

// Requires mpi_init(). Without MPI support in the build, throws kNotFound.
std::unique_ptr<Executor> make_mpi_executor(const MpiExecutorOptions& options = {});

}  // namespace braid::exec
