// sim::simulate — the discrete-event GPU model (issue 5). A Program is what a host thread per
// device issues, in order: kernel launches, event records and waits, and copies between
// devices, each on a stream. The engine replays it on simulated devices:
//
//  - Host: eager, each device's host thread pays launch_us per launch and the event costs per
//    record/wait, one after another (a launch cannot start before it is issued), and a kernel
//    at its stream's head waits kernel_latency_us more (device-side launch latency). Under
//    graph replay (opara.txt §3.4) the host pays one launch for the whole graph, the device's
//    front end submits the kernels in capture order at graph_launch_us each, and a kernel at
//    its stream's head waits graph_launch_us.
//  - Streams are FIFO; stream s uses hardware queue s mod hardware_queues (Hyper-Q), and ops of
//    streams sharing a queue keep their issue order. A kernel at a stream head goes to the
//    device's block scheduler, which serves kernels in arrival order and, as GPUs do, lets a
//    later kernel's blocks start only when every block of the earlier ones has been placed
//    (the "left-over" policy): launch order decides who gets the SMs first.
//  - Blocks start on an SM only when its threads, warps, registers, shared memory and block
//    slots fit (occupancy) and, once started, run to completion (non-preemptive). Blocks are
//    placed breadth-first, one per SM per round, least-loaded SMs first.
//  - Resident blocks share their SM's issue rate in proportion to their warps (with fewer than
//    SmModel::kWarpsForPeakCompute warps the SM does not reach its peak), an SM's share of DRAM
//    bandwidth, and the device's DRAM bandwidth. A kernel alone keeps its own reuse in the L2
//    (its compulsory traffic); running kernels' working sets (each at most the L2) compete,
//    and the overflow fraction of their tile loads misses. A block's duration is
//    therefore not fixed: it stretches when others run beside it. This is why concurrency
//    helps small kernels (idle SMs get work) and can hurt large ones (L2 thrashing), and why
//    launch order matters.
//  - Copies between devices use the link between them (the first of the source's links), one
//    copy at a time per direction, overlapping compute.
//
// SMs in identical states are simulated as one group and blocks of one kernel started together
// on a group as one cohort, so an event costs O(groups x cohorts), not O(blocks).
//
//   sim::Program p;  p.streams = {{.device = 0}};
//   p.kernels = sim::unit_kernels(units, u, v100);
//   for (uint32_t k = 0; k < p.kernels.size(); ++k) p.ops.push_back(sim::Op::kernel(0, k));
//   sim::Result r = sim::simulate(p, {&v100, 1});   // r.makespan_us
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/device_spec.h"
#include "sim/kernels.h"

namespace braid::sim {

enum class OpType : uint8_t { kKernel, kRecord, kWait, kCopy };

struct Op {
  OpType type = OpType::kKernel;
  uint32_t stream = 0;
  uint32_t index = 0;  // kernel: into Program::kernels; record/wait: the event
  // Copy: `bytes` from `src_device` to the stream's device; kHost: between the host and the
  // stream's device over its PCIe link.
  double bytes = 0;
  int src_device = 0;
  // The host issues this op no earlier than this (a task's arrival on the clock that several
  // programs share: TOP's instances, each released when its task arrives). Under graph replay
  // an op released after the host went idle starts a new graph launch (launch_us again).
  double release_us = 0;
  static constexpr int kHost = -1;

  static Op kernel(uint32_t stream, uint32_t kernel) { return {OpType::kKernel, stream, kernel}; }
  static Op record(uint32_t stream, uint32_t event) { return {OpType::kRecord, stream, event}; }
  static Op wait(uint32_t stream, uint32_t event) { return {OpType::kWait, stream, event}; }
  static Op copy(uint32_t stream, double bytes, int src_device) {
    return {OpType::kCopy, stream, 0, bytes, src_device};
  }
  static Op host_copy(uint32_t stream, double bytes) {
    return {OpType::kCopy, stream, 0, bytes, kHost};
  }
  Op released_at(double us) const {
    Op o = *this;
    o.release_us = us;
    return o;
  }
};

struct StreamInfo {
  int device = 0;
  int id = 0;  // the stream's number on its device (decides its hardware queue)
};

struct Program {
  std::vector<Kernel> kernels;
  std::vector<StreamInfo> streams;
  std::vector<Op> ops;  // issue order; each device's host thread issues its own ops in this order
  uint32_t num_events = 0;
};

struct EngineOptions {
  bool graph_replay = false;
  bool record_timeline = false;  // fill Result::kernels and Result::occupancy
};

struct KernelTiming {
  double issue_us = 0;  // the host finished launching it
  double start_us = 0;  // its first block started
  double end_us = 0;    // its last block finished
  int device = 0;
  uint32_t stream = 0;
};

// Piecewise-constant device state from `at_us` on (IOS Figure 8's metric).
struct OccupancySample {
  double at_us = 0;
  int device = 0;
  double occupancy = 0;   // resident warps / (SMs x max warps per SM)
  double active_sms = 0;  // fraction of SMs with at least one resident block
};

struct Result {
  double makespan_us = 0;             // from the first issue to the last op done
  int64_t events = 0;                 // engine iterations, for the speed benchmark
  int64_t max_groups = 0;             // most SM groups at once (all devices): what one event costs
  std::vector<KernelTiming> kernels;  // when record_timeline
  std::vector<OccupancySample> occupancy;  // when record_timeline
  std::vector<double> op_done_us;          // when record_timeline: every op's completion
};

// Throws braid::Error(kInvalidArgument) for a program that names a missing device, event or
// kernel, and kInternal when it deadlocks (a wait whose event is never recorded).
Result simulate(const Program& program, std::span<const DeviceSpec> devices,
                const EngineOptions& options = {});

// Achieved occupancy of `device` time-weighted over [0, makespan] (IOS Fig. 8's active-warp
// metric), from a result simulated with record_timeline; 0 for an empty run.
double mean_occupancy(const Result& result, int device = 0);

}  // namespace braid::sim
