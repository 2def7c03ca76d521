// The engine's mechanisms, each on a hand-built program whose answer follows from the model
// (engine.h): FIFO streams, events, occupancy, non-preemption, the left-over block scheduler,
// sharing that stretches blocks, launch costs, graph replay and copies between devices.
#include "sim/engine.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace braid::sim {
namespace {

DeviceSpec test_device() {
  DeviceSpec d = load_device("v100");
  return d;
}

// A compute-bound kernel of `blocks` blocks of 4 warps.
Kernel compute_kernel(int64_t blocks, double flops_per_block, int shared_memory = 0) {
  Kernel k{.name = "k"};
  k.blocks = blocks;
  k.threads = 128;
  k.registers = 32;
  k.shared_memory = shared_memory;
  k.efficiency = 1;
  k.flops = flops_per_block;
  return k;
}

Kernel memory_kernel(int64_t blocks, double bytes_per_block) {
  Kernel k{.name = "m"};
  k.blocks = blocks;
  k.threads = 256;
  k.registers = 32;
  k.efficiency = 0.5;
  k.flops = 1;
  k.dram_bytes = k.uncached_bytes = bytes_per_block;
  return k;
}

Program on_streams(std::vector<Kernel> kernels, std::vector<uint32_t> streams) {
  Program p;
  uint32_t n = 0;
  for (uint32_t s : streams) n = std::max(n, s + 1);
  for (uint32_t s = 0; s < n; ++s) p.streams.push_back({.device = 0, .id = int(s)});
  for (uint32_t k = 0; k < kernels.size(); ++k) p.ops.push_back(Op::kernel(streams[k], k));
  p.kernels = std::move(kernels);
  return p;
}

Result run(const Program& p, const DeviceSpec& d, bool graph = false) {
  return simulate(p, std::span(&d, 1), {.graph_replay = graph, .record_timeline = true});
}

TEST(Engine, OneKernelTakesLaunchLatencyAndItsWork) {
  const DeviceSpec d = test_device();
  const Kernel k = compute_kernel(d.sms, 1e6);
  const Result r = run(on_streams({k}, {0}), d);
  const double start = d.host.launch_us + d.host.kernel_latency_us;
  EXPECT_NEAR(r.kernels[0].start_us, start, 1e-9);
  EXPECT_NEAR(r.makespan_us - start, idle_kernel_us(k, d), 1e-6 * r.makespan_us);
}

TEST(Engine, AStreamRunsItsKernelsInOrder) {
  const DeviceSpec d = test_device();
  const Result r = run(on_streams({compute_kernel(4, 1e6), compute_kernel(4, 1e6)}, {0, 0}), d);
  EXPECT_GE(r.kernels[1].start_us, r.kernels[0].end_us + d.host.kernel_latency_us - 1e-9);
}

TEST(Engine, SmallKernelsOnTwoStreamsOverlap) {
  const DeviceSpec d = test_device();
  // Each fills a quarter of the SMs: on two streams they share the device, not the SMs.
  const std::vector<Kernel> ks = {compute_kernel(d.sms / 4, 1e7), compute_kernel(d.sms / 4, 1e7)};
  const Result serial = run(on_streams(ks, {0, 0}), d);
  const Result parallel = run(on_streams(ks, {0, 1}), d);
  EXPECT_LT(parallel.kernels[1].start_us, parallel.kernels[0].end_us);
  EXPECT_LT(parallel.makespan_us, 0.6 * serial.makespan_us);
}

// Ops released on a shared clock (TOP's tasks arriving): the host issues a released op no
// earlier than its release, eagerly or as a new graph launch after an idle host; an instance
// released while another runs overlaps it on another stream.
TEST(Engine, ReleasedOpsIssueNoEarlierThanTheirRelease) {
  const DeviceSpec d = test_device();
  const Kernel k = compute_kernel(d.sms / 4, 1e7);
  const double alone = run(on_streams({k}, {0}), d).makespan_us;
  for (const bool graph : {false, true}) {
    SCOPED_TRACE(graph ? "graph" : "eager");
    Program late = on_streams({k, k}, {0, 1});
    late.ops[1] = late.ops[1].released_at(10 * alone);  // after the first has finished
    const Result r = run(late, d, graph);
    const double latency = graph ? d.host.graph_launch_us : d.host.kernel_latency_us;
    EXPECT_NEAR(r.kernels[1].start_us - r.kernels[1].issue_us, latency, 1e-9);
    EXPECT_GE(r.kernels[1].issue_us, 10 * alone);
    EXPECT_LE(r.kernels[1].issue_us, 10 * alone + d.host.launch_us + d.host.graph_launch_us);
    EXPECT_NEAR(r.kernels[1].end_us - r.kernels[1].start_us,
                r.kernels[0].end_us - r.kernels[0].start_us, 1e-6 * alone);  // ran alone too
    Program overlapping = on_streams({k, k}, {0, 1});
    overlapping.ops[1] = overlapping.ops[1].released_at(r.kernels[0].start_us);
    const Result o = run(overlapping, d, graph);
    EXPECT_LT(o.kernels[1].start_us, o.kernels[0].end_us);
    // Released at 0: the program of today.
    Program zero = on_streams({k, k}, {0, 1});
    zero.ops[1] = zero.ops[1].released_at(0);
    EXPECT_EQ(run(zero, d, graph).makespan_us,
              run(on_streams({k, k}, {0, 1}), d, graph).makespan_us);
  }
}

TEST(Engine, ABlockStartsOnlyWhenItsResourcesFit) {
  const DeviceSpec d = test_device();
  // Kernel 0 takes all shared memory of every SM; kernel 1 needs some: it must wait for
  // kernel 0's blocks to finish (non-preemptive), although both streams are ready.
  const Kernel big = compute_kernel(d.sms, 1e7, d.per_sm.shared_memory_bytes);
  const Kernel small = compute_kernel(1, 1e3, 1024);
  const Result r = run(on_streams({big, small}, {0, 1}), d);
  EXPECT_GE(r.kernels[1].start_us, r.kernels[0].end_us - 1e-9);
}

TEST(Engine, LaterKernelsWaitUntilEveryBlockOfEarlierOnesIsPlaced) {
  const DeviceSpec d = test_device();
  // Kernel 0 has four waves of SM-filling blocks: kernel 1 (another stream, launched after it)
  // starts only once kernel 0's last wave is placed, not in its first wave's gaps.
  const Kernel waves = compute_kernel(4 * d.sms, 1e6, d.per_sm.shared_memory_bytes);
  const Kernel tiny = compute_kernel(1, 1e3);
  const Result r = run(on_streams({waves, tiny}, {0, 1}), d);
  const double wave = (r.kernels[0].end_us - r.kernels[0].start_us) / 4;
  EXPECT_GE(r.kernels[1].start_us, r.kernels[0].start_us + 3 * wave - 1e-6);
}

TEST(Engine, BlocksStretchWhenTheyShareBandwidth) {
  const DeviceSpec d = test_device();
  // Each kernel alone saturates DRAM: side by side, each takes about twice as long.
  const Kernel m = memory_kernel(2 * d.sms, 4e6);
  const Result alone = run(on_streams({m}, {0}), d);
  const Result both = run(on_streams({m, m}, {0, 1}), d);
  const double t_alone = alone.kernels[0].end_us - alone.kernels[0].start_us;
  const double t_both = both.kernels[0].end_us - both.kernels[0].start_us;
  EXPECT_GT(t_both, 1.7 * t_alone);
  // Work-conserving: the pair takes about as long as the two in sequence, not less.
  EXPECT_GT(both.makespan_us, 1.8 * t_alone);
}

TEST(Engine, L2ThrashingMakesConcurrencySlowerThanSequence) {
  const DeviceSpec d = test_device();
  // Two kernels whose working sets each fit the L2 but not together: their tile loads miss.
  Kernel k = memory_kernel(4 * d.sms, 2e4);
  k.flops = 2e5;
  k.efficiency = 1;
  k.uncached_bytes = 2e5;
  k.working_set = 0.75 * d.l2_bytes;
  const Result serial = run(on_streams({k, k}, {0, 0}), d);
  const Result parallel = run(on_streams({k, k}, {0, 1}), d);
  EXPECT_GT(parallel.makespan_us, serial.makespan_us);
}

TEST(Engine, EventsOrderStreams) {
  const DeviceSpec d = test_device();
  Program p = on_streams({compute_kernel(d.sms, 1e7), compute_kernel(1, 1e3)}, {0, 1});
  p.num_events = 1;
  // stream 0: kernel 0, record e0; stream 1: wait e0, kernel 1.
  p.ops = {Op::kernel(0, 0), Op::record(0, 0), Op::wait(1, 0), Op::kernel(1, 1)};
  const Result r = run(p, d);
  EXPECT_GE(r.kernels[1].start_us, r.kernels[0].end_us);
}

TEST(Engine, AWaitForAnEventNeverRecordedIsADeadlockError) {
  const DeviceSpec d = test_device();
  Program p = on_streams({compute_kernel(1, 1e3)}, {0});
  p.num_events = 1;
  p.ops = {Op::wait(0, 0), Op::kernel(0, 0)};
  try {
    run(p, d);
    FAIL() << "expected a deadlock error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
    EXPECT_NE(std::string(e.what()).find("deadlock"), std::string::npos) << e.what();
  }
}

TEST(Engine, BadProgramsAreRejectedWithTheirPlace) {
  const DeviceSpec d = test_device();
  Program p = on_streams({compute_kernel(1, 1e3)}, {0});
  p.ops.push_back(Op::kernel(0, 0));  // launched twice
  EXPECT_THROW(run(p, d), Error);
  Program q = on_streams({compute_kernel(1, 1e3)}, {0});
  q.ops[0].stream = 7;
  EXPECT_THROW(run(q, d), Error);
  Program r = on_streams({compute_kernel(1, 1e3, d.per_sm.shared_memory_bytes + 1)}, {0});
  EXPECT_THROW(run(r, d), Error);  // does not fit an SM
}

TEST(Engine, TheHostSerializesEagerLaunches) {
  const DeviceSpec d = test_device();
  // 50 tiny kernels on 50 streams: eager, the last cannot start before 50 launches are issued.
  std::vector<Kernel> ks;
  std::vector<uint32_t> streams;
  for (uint32_t i = 0; i < 50; ++i) ks.push_back(compute_kernel(1, 1e2)), streams.push_back(i % 8);
  const Result eager = run(on_streams(ks, streams), d);
  EXPECT_GE(eager.makespan_us, 50 * d.host.launch_us);
  // Replayed as a graph: one launch for all, each kernel pays graph_launch_us on its stream.
  const Result graph = run(on_streams(ks, streams), d, true);
  EXPECT_LT(graph.makespan_us, 0.5 * eager.makespan_us);
}

TEST(Engine, CopiesUseTheLinkAndOverlapCompute) {
  DeviceSpec d = test_device();
  const std::vector<DeviceSpec> two = {d, d};
  Program p;
  p.streams = {{.device = 0, .id = 0}, {.device = 1, .id = 0}, {.device = 1, .id = 1}};
  p.kernels = {compute_kernel(d.sms, 1e7), compute_kernel(d.sms, 1e7)};
  const double bytes = 64e6;
  // device 1: stream 1 copies 64 MB from device 0 while stream 2 computes.
  p.ops = {Op::kernel(0, 0), Op::copy(1, bytes, 0), Op::kernel(2, 1)};
  const Result r = simulate(p, two, {.record_timeline = true});
  const Link& link = d.links.front();
  const double copy_us = link.latency_us + bytes / (link.gbps_per_direction * 1e3);
  EXPECT_NEAR(r.op_done_us[1] - d.host.launch_us, copy_us,
              1e-6 * copy_us);                        // device 1's first launch
  EXPECT_LT(r.kernels[1].start_us, r.op_done_us[1]);  // overlapped
}

}  // namespace
}  // namespace braid::sim
