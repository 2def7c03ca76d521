#include "sim/engine.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <queue>

#include "base/error.h"

namespace braid::sim {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr double kDoneEpsilon = 1e-9;

// Blocks of one kernel that started on the SMs of a group at the same instant; `blocks` per SM.
struct Cohort {
  uint32_t kernel = 0;
  int blocks = 0;
  double start_us = 0;
  double done = 0;  // fraction of a block's work done
  double rate = 0;  // fraction per microsecond
};

// SMs in identical states: the same resident cohorts with the same progress.
struct Group {
  int sms = 0;
  int threads = 0, warps = 0, blocks = 0;
  int64_t registers = 0, shared_memory = 0;
  std::vector<Cohort> cohorts;
};

struct KernelState {
  int64_t undispatched = 0;
  int64_t running = 0;
  bool placed_any = false;
  bool finished = false;
  double start_us = 0, end_us = 0;
  uint32_t queue = 0;
};

struct DeviceState {
  const DeviceSpec* spec = nullptr;
  std::vector<Group> groups;
  std::deque<uint32_t> pending;  // kernels in arrival order (block scheduler FIFO)
  int resident_grids = 0;
  bool changed = false;
  double last_occupancy = -1, last_active = -1;
};

// A hardware queue: the ops of the streams that share it, in issue order.
struct Queue {
  int device = 0;
  std::vector<uint32_t> ops;
  size_t head = 0;
  bool busy = false;            // the head op is running (kernel or copy)
  bool launch_delayed = false;  // graph replay: the head kernel has paid graph_launch_us
};

struct Timed {
  double at_us;
  uint32_t queue;
  bool copy_done;  // else: wake the queue (an issue time or a graph launch delay passed)
  bool operator>(const Timed& o) const { return at_us > o.at_us; }
};

class Engine {
 public:
  Engine(const Program& program, std::span<const DeviceSpec> devices, const EngineOptions& options)
      : program_(program), options_(options) {
    for (const DeviceSpec& spec : devices) {
      DeviceState d;
      d.spec = &spec;
      d.groups.push_back({.sms = spec.sms});
      devices_.push_back(std::move(d));
    }
    check_program();
    build_queues();
    compute_issue_times();
  }

  Result run() {
    for (uint32_t q = 0; q < queues_.size(); ++q) worklist_.push_back(q);
    drain_worklist();
    dispatch_all();
    while (true) {
      if (rates_dirty_) compute_rates();
      rates_dirty_ = false;
      double step = kInfinity;
      for (const DeviceState& d : devices_)
        for (const Group& g : d.groups)
          for (const Cohort& c : g.cohorts) step = std::min(step, (1 - c.done) / c.rate);
      const double next_timed = timed_.empty() ? kInfinity : timed_.top().at_us;
      if (step == kInfinity && next_timed == kInfinity) break;
      const double next = std::min(now_ + step, next_timed);
      advance(next - now_);
      now_ = std::max(now_, next);
      ++result_.events;
      complete_cohorts();
      while (!timed_.empty() && timed_.top().at_us <= now_) {
        const Timed t = timed_.top();
        timed_.pop();
        if (t.copy_done) finish_head(t.queue);
        worklist_.push_back(t.queue);
      }
      drain_worklist();
      dispatch_all();
      int64_t groups = 0;
      for (DeviceState& d : devices_) {
        if (d.changed) {
          merge_groups(d);
          rates_dirty_ = true;
        }
        groups += int64_t(d.groups.size());
      }
      result_.max_groups = std::max(result_.max_groups, groups);
      if (options_.record_timeline) sample_occupancy();
    }
    for (const Queue& q : queues_) {
      BRAID_CHECK(q.head == q.ops.size(), ErrorCode::kInternal, "sim: the program deadlocks: op ",
                  q.ops[q.head], " (", describe(program_.ops[q.ops[q.head]]), ") never runs");
    }
    result_.makespan_us = 0;
    for (double t : op_done_) result_.makespan_us = std::max(result_.makespan_us, t);
    if (options_.record_timeline) {
      result_.op_done_us = op_done_;
      result_.kernels.resize(program_.kernels.size());
      for (size_t k = 0; k < program_.kernels.size(); ++k) {
        const Op& op = program_.ops[kernel_op_[k]];
        result_.kernels[k] = {issue_[kernel_op_[k]], kernels_[k].start_us, kernels_[k].end_us,
                              program_.streams[op.stream].device, op.stream};
      }
    }
    return std::move(result_);
  }

 private:
  static std::string describe(const Op& op) {
    switch (op.type) {
      case OpType::kKernel:
        return "kernel " + std::to_string(op.index);
      case OpType::kRecord:
        return "record event " + std::to_string(op.index);
      case OpType::kWait:
        return "wait event " + std::to_string(op.index);
      case OpType::kCopy:
        return "copy";
    }
    return "?";
  }

  void check_program() {
    const size_t n_dev = devices_.size();
    for (const StreamInfo& s : program_.streams)
      BRAID_CHECK(s.device >= 0 && size_t(s.device) < n_dev, ErrorCode::kInvalidArgument,
                  "sim: a stream is on device ", s.device, " but ", n_dev, " devices are given");
    kernel_op_.assign(program_.kernels.size(), UINT32_MAX);
    std::vector<int> records(program_.num_events, 0);
    for (uint32_t i = 0; i < program_.ops.size(); ++i) {
      const Op& op = program_.ops[i];
      BRAID_CHECK(op.stream < program_.streams.size(), ErrorCode::kInvalidArgument, "sim: op ", i,
                  " names stream ", op.stream, " of ", program_.streams.size());
      switch (op.type) {
        case OpType::kKernel: {
          BRAID_CHECK(op.index < program_.kernels.size() && kernel_op_[op.index] == UINT32_MAX,
                      ErrorCode::kInvalidArgument, "sim: op ", i,
                      " launches a missing or already launched kernel ", op.index);
          kernel_op_[op.index] = i;
          const Kernel& k = program_.kernels[op.index];
          const DeviceSpec& spec = *devices_[program_.streams[op.stream].device].spec;
          BRAID_CHECK(k.blocks > 0 && k.blocks_per_sm(spec) > 0, ErrorCode::kUnsupported,
                      "sim: kernel '", k.name, "' has no blocks or does not fit an SM of ",
                      spec.name);
          break;
        }
        case OpType::kRecord:
        case OpType::kWait:
          BRAID_CHECK(op.index < program_.num_events, ErrorCode::kInvalidArgument, "sim: op ", i,
                      " names event ", op.index, " of ", program_.num_events);
          if (op.type == OpType::kRecord) ++records[op.index];
          break;
        case OpType::kCopy: {
          if (op.src_device == Op::kHost) break;
          BRAID_CHECK(op.src_device >= 0 && size_t(op.src_device) < n_dev,
                      ErrorCode::kInvalidArgument, "sim: op ", i, " copies from device ",
                      op.src_device, " of ", n_dev);
          const int dst = program_.streams[op.stream].device;
          BRAID_CHECK(op.src_device == dst || !devices_[op.src_device].spec->links.empty(),
                      ErrorCode::kInvalidArgument, "sim: device ",
                      devices_[op.src_device].spec->name, " has no link for a copy");
          break;
        }
      }
    }
    for (uint32_t e = 0; e < program_.num_events; ++e)
      BRAID_CHECK(records[e] <= 1, ErrorCode::kInvalidArgument, "sim: event ", e, " is recorded ",
                  records[e], " times");
    for (size_t k = 0; k < program_.kernels.size(); ++k)
      BRAID_CHECK(kernel_op_[k] != UINT32_MAX, ErrorCode::kInvalidArgument, "sim: kernel ", k,
                  " ('", program_.kernels[k].name, "') is never launched");
  }

  void build_queues() {
    std::map<std::pair<int, int>, uint32_t> index;  // (device, hardware queue) -> queue
    stream_queue_.resize(program_.streams.size());
    for (size_t s = 0; s < program_.streams.size(); ++s) {
      const StreamInfo& info = program_.streams[s];
      const int hw = info.id % devices_[info.device].spec->hardware_queues;
      auto [it, inserted] = index.try_emplace({info.device, hw}, uint32_t(queues_.size()));
      if (inserted) queues_.push_back({.device = info.device});
      stream_queue_[s] = it->second;
    }
    for (uint32_t i = 0; i < program_.ops.size(); ++i)
      queues_[stream_queue_[program_.ops[i].stream]].ops.push_back(i);
    kernels_.resize(program_.kernels.size());
    for (size_t k = 0; k < program_.kernels.size(); ++k) {
      kernels_[k].undispatched = program_.kernels[k].blocks;
      kernels_[k].queue = stream_queue_[program_.ops[kernel_op_[k]].stream];
    }
    event_done_.assign(program_.num_events, -1);
    waiters_.resize(program_.num_events);
    op_done_.assign(program_.ops.size(), 0);
  }

  void compute_issue_times() {
    issue_.resize(program_.ops.size());
    std::vector<double> host(devices_.size(), 0);
    for (size_t i = 0; i < program_.ops.size(); ++i) {
      const Op& op = program_.ops[i];
      const int dev = program_.streams[op.stream].device;
      const HostCosts& c = devices_[dev].spec->host;
      if (options_.graph_replay) {
        // One launch of the whole graph; the device's front end then submits the graph's
        // kernels one after another in capture (launch) order. An op released after the host
        // went idle is the first of another graph, launched then.
        if (host[dev] == 0 || op.release_us > host[dev])
          host[dev] = std::max(host[dev], op.release_us) + c.launch_us;
        if (op.type == OpType::kKernel) host[dev] += c.graph_launch_us;
        issue_[i] = host[dev];
        continue;
      }
      host[dev] = std::max(host[dev], op.release_us);
      switch (op.type) {
        case OpType::kKernel: {
          const Kernel& k = program_.kernels[op.index];
          const double library = devices_[dev].spec->kernel_model.library_call_us;
          host[dev] += k.library_call && library > 0 ? library : c.launch_us;
          break;
        }
        case OpType::kCopy:
          host[dev] += c.launch_us;
          break;
        case OpType::kRecord:
          host[dev] += c.event_record_us;
          break;
        case OpType::kWait:
          host[dev] += c.event_wait_us;
          break;
      }
      issue_[i] = host[dev];
    }
  }

  // Runs the head ops of the queues in the worklist as far as they can go now.
  void drain_worklist() {
    while (!worklist_.empty()) {
      const uint32_t q = worklist_.back();
      worklist_.pop_back();
      advance_queue(q);
    }
  }

  void advance_queue(uint32_t qi) {
    Queue& q = queues_[qi];
    while (!q.busy && q.head < q.ops.size()) {
      const uint32_t i = q.ops[q.head];
      const Op& op = program_.ops[i];
      if (issue_[i] > now_) {
        timed_.push({issue_[i], qi, false});
        return;
      }
      switch (op.type) {
        case OpType::kRecord:
          event_done_[op.index] = now_;
          for (uint32_t w : waiters_[op.index]) worklist_.push_back(w);
          waiters_[op.index].clear();
          finish_head(qi);
          break;
        case OpType::kWait: {
          if (event_done_[op.index] < 0) {
            waiters_[op.index].push_back(qi);
            return;
          }
          // Resolving the dependency delays the stream (KernelModel::wait_latency_us).
          const double latency = devices_[q.device].spec->kernel_model.wait_latency_us;
          if (!q.launch_delayed && latency > 0) {
            q.launch_delayed = true;
            timed_.push({now_ + latency, qi, false});
            return;
          }
          finish_head(qi);
          break;
        }
        case OpType::kKernel: {
          DeviceState& d = devices_[q.device];
          const double latency =
              options_.graph_replay ? d.spec->host.graph_launch_us : d.spec->host.kernel_latency_us;
          if (!q.launch_delayed && latency > 0) {
            q.launch_delayed = true;
            timed_.push({now_ + latency, qi, false});
            return;
          }
          q.busy = true;
          d.pending.push_back(op.index);
          d.changed = true;
          return;
        }
        case OpType::kCopy: {
          const int dst = q.device;
          q.busy = true;
          if (op.src_device == Op::kHost) {
            // Eager or replayed, `braid run` times run() on the host clock, which issues the
            // input copies first and the output copies last (tune/measure.cc): both count.
            const DeviceSpec& spec = *devices_[dst].spec;
            const Link* pcie = nullptr;
            for (const Link& l : spec.links)
              if (l.kind.starts_with("pcie")) pcie = &l;
            BRAID_CHECK(pcie != nullptr, ErrorCode::kInvalidArgument, "sim: device ", spec.name,
                        " has no PCIe link for a host copy");
            const double us = pcie->latency_us + op.bytes / (pcie->gbps_per_direction * 1e3);
            timed_.push({now_ + us, qi, true});
            return;
          }
          if (op.src_device == dst) {
            timed_.push({now_, qi, true});
            return;
          }
          const Link& link = devices_[op.src_device].spec->links.front();
          double& free = link_free_[{op.src_device, dst}];
          const double start = std::max(now_, free);
          free = start + op.bytes / (link.gbps_per_direction * 1e3);  // GB/s = 1e3 bytes/us
          timed_.push({free + link.latency_us, qi, true});
          return;
        }
      }
    }
  }

  void finish_head(uint32_t qi) {
    Queue& q = queues_[qi];
    op_done_[q.ops[q.head]] = now_;
    ++q.head;
    q.busy = false;
    q.launch_delayed = false;
  }

  static bool fits(const Group& g, const Kernel& k, const SmLimits& sm) {
    return g.blocks + 1 <= sm.max_blocks && g.threads + k.threads <= sm.max_threads &&
           g.warps + k.warps() <= sm.max_warps &&
           g.registers + int64_t(k.threads) * k.registers <= sm.registers &&
           g.shared_memory + k.shared_memory <= sm.shared_memory_bytes;
  }

  void add_block(Group& g, uint32_t kernel) {
    const Kernel& k = program_.kernels[kernel];
    g.blocks += 1;
    g.threads += k.threads;
    g.warps += k.warps();
    g.registers += int64_t(k.threads) * k.registers;
    g.shared_memory += k.shared_memory;
    for (Cohort& c : g.cohorts)
      if (c.kernel == kernel && c.start_us == now_) {
        ++c.blocks;
        return;
      }
    g.cohorts.push_back({.kernel = kernel, .blocks = 1, .start_us = now_});
  }

  // Places blocks of `kernel` breadth-first: each round gives one block to every SM that still
  // fits one, least-loaded groups first, splitting a group when the blocks run out inside it.
  void place(DeviceState& d, uint32_t kernel) {
    KernelState& ks = kernels_[kernel];
    const Kernel& k = program_.kernels[kernel];
    const SmLimits& sm = d.spec->per_sm;
    std::vector<uint32_t> candidates;
    while (ks.undispatched > 0) {
      candidates.clear();
      for (uint32_t gi = 0; gi < d.groups.size(); ++gi)
        if (fits(d.groups[gi], k, sm)) candidates.push_back(gi);
      if (candidates.empty()) break;
      std::stable_sort(candidates.begin(), candidates.end(), [&](uint32_t a, uint32_t b) {
        return d.groups[a].warps < d.groups[b].warps;
      });
      for (uint32_t gi : candidates) {
        if (ks.undispatched == 0) break;
        if (ks.undispatched < d.groups[gi].sms) {
          Group rest = d.groups[gi];
          rest.sms -= int(ks.undispatched);
          d.groups[gi].sms = int(ks.undispatched);
          d.groups.push_back(std::move(rest));
        }
        Group& g = d.groups[gi];
        add_block(g, kernel);
        ks.undispatched -= g.sms;
        ks.running += g.sms;
        if (!ks.placed_any) {
          ks.placed_any = true;
          ks.start_us = now_;
          ++d.resident_grids;
        }
      }
    }
  }

  void dispatch_all() {
    for (DeviceState& d : devices_) {
      if (!d.changed) continue;
      while (!d.pending.empty()) {
        const uint32_t k = d.pending.front();
        if (!kernels_[k].placed_any && d.resident_grids >= d.spec->max_resident_grids) break;
        place(d, k);
        if (kernels_[k].undispatched > 0) break;  // left-over policy: later kernels wait
        d.pending.pop_front();
      }
    }
  }

  void complete_cohorts() {
    for (DeviceState& d : devices_) {
      for (Group& g : d.groups) {
        for (size_t ci = 0; ci < g.cohorts.size();) {
          Cohort& c = g.cohorts[ci];
          if (c.done < 1 - kDoneEpsilon) {
            ++ci;
            continue;
          }
          const Kernel& k = program_.kernels[c.kernel];
          g.blocks -= c.blocks;
          g.threads -= c.blocks * k.threads;
          g.warps -= c.blocks * k.warps();
          g.registers -= int64_t(c.blocks) * k.threads * k.registers;
          g.shared_memory -= int64_t(c.blocks) * k.shared_memory;
          KernelState& ks = kernels_[c.kernel];
          ks.running -= int64_t(c.blocks) * g.sms;
          if (ks.running == 0 && ks.undispatched == 0) {
            ks.finished = true;
            ks.end_us = now_;
            --d.resident_grids;
            finish_head(ks.queue);
            worklist_.push_back(ks.queue);
          }
          g.cohorts.erase(g.cohorts.begin() + ci);
          d.changed = true;
        }
      }
    }
  }

  static bool same_state(const Group& a, const Group& b) {
    if (a.blocks != b.blocks || a.warps != b.warps || a.threads != b.threads ||
        a.registers != b.registers || a.shared_memory != b.shared_memory ||
        a.cohorts.size() != b.cohorts.size())
      return false;
    for (size_t i = 0; i < a.cohorts.size(); ++i) {
      const Cohort &x = a.cohorts[i], &y = b.cohorts[i];
      if (x.kernel != y.kernel || x.blocks != y.blocks || std::abs(x.done - y.done) > 1e-12)
        return false;
    }
    return true;
  }

  // Groups in the same state become one: sorted by their state, equal neighbours merge.
  void merge_groups(DeviceState& d) {
    d.changed = false;
    auto& groups = d.groups;
    if (groups.size() < 2) return;
    auto less = [](const Group& a, const Group& b) {
      if (a.cohorts.size() != b.cohorts.size()) return a.cohorts.size() < b.cohorts.size();
      if (a.warps != b.warps) return a.warps < b.warps;
      if (a.blocks != b.blocks) return a.blocks < b.blocks;
      for (size_t i = 0; i < a.cohorts.size(); ++i) {
        const Cohort &x = a.cohorts[i], &y = b.cohorts[i];
        if (x.kernel != y.kernel) return x.kernel < y.kernel;
        if (x.blocks != y.blocks) return x.blocks < y.blocks;
        if (x.done != y.done) return x.done < y.done;
      }
      return false;
    };
    std::sort(groups.begin(), groups.end(), less);
    size_t out = 0;
    for (size_t i = 1; i < groups.size(); ++i) {
      if (same_state(groups[out], groups[i])) {
        groups[out].sms += groups[i].sms;
      } else if (++out != i) {
        groups[out] = std::move(groups[i]);
      }
    }
    groups.resize(out + 1);
  }

  void compute_rates() {
    for (DeviceState& d : devices_) {
      const DeviceSpec& spec = *d.spec;
      // L2: the running kernels' working sets share it; beyond it, tile loads miss.
      double working_set = 0;
      ++stamp_;
      if (kernel_stamp_.size() < program_.kernels.size())
        kernel_stamp_.resize(program_.kernels.size(), 0);
      for (const Group& g : d.groups)
        for (const Cohort& c : g.cohorts)
          if (kernel_stamp_[c.kernel] != stamp_) {
            kernel_stamp_[c.kernel] = stamp_;
            // A kernel alone keeps its reuse (its tiles are sized for it): only other kernels'
            // data competing for the L2 makes its loads miss.
            working_set += std::min(program_.kernels[c.kernel].working_set, double(spec.l2_bytes));
          }
      const double miss = working_set > spec.l2_bytes ? 1 - double(spec.l2_bytes) / working_set : 0;
      const double sm_flops = spec.sustained_fp32_flops() / spec.sms * 1e-6;   // per us
      const double sm_bandwidth = spec.dram_bytes_per_s() / spec.sms * 1e-6 *  // per us
                                  SmModel::kSmBandwidthShare;
      double device_bandwidth = 0;
      for (Group& g : d.groups) {
        if (g.cohorts.empty()) continue;
        const double warps = g.warps;
        double issue = sm_flops * std::min(1.0, warps / SmModel::kWarpsForPeakCompute);
        int gemm_kernels = 0;
        for (size_t ci = 0; ci < g.cohorts.size(); ++ci) {
          const uint32_t k = g.cohorts[ci].kernel;
          if (!program_.kernels[k].gemm) continue;
          bool seen = false;
          for (size_t cj = 0; cj < ci; ++cj) seen |= g.cohorts[cj].kernel == k;
          gemm_kernels += !seen;
        }
        if (gemm_kernels >= 2) issue *= SmModel::kCoResidentGemm;
        const double cap = sm_bandwidth * std::min(1.0, warps / SmModel::kWarpsForPeakMemory);
        double demand = 0;
        for (Cohort& c : g.cohorts) {
          const Kernel& k = program_.kernels[c.kernel];
          const double flops_rate = issue * k.efficiency * k.warps() / warps;  // per block
          const double bytes = k.dram_bytes + miss * (k.uncached_bytes - k.dram_bytes);
          double want = 0;  // bytes per us one block would move at its compute rate
          if (bytes > 0) want = k.flops > 0 ? std::min(cap, flops_rate * bytes / k.flops) : cap;
          // The compute-bound rate for now; the bandwidth pass below may lower it.
          c.rate = k.flops > 0 ? flops_rate / k.flops : kInfinity;
          bandwidth_.push_back(want);
          demand += want * c.blocks;
        }
        const double scale = demand > cap ? cap / demand : 1;
        for (size_t ci = 0; ci < g.cohorts.size(); ++ci)
          bandwidth_[bandwidth_.size() - g.cohorts.size() + ci] *= scale;
        device_bandwidth += g.sms * std::min(demand, cap);
      }
      const double device_cap = spec.dram_bytes_per_s() * 1e-6;
      const double global = device_bandwidth > device_cap ? device_cap / device_bandwidth : 1;
      size_t b = 0;
      for (Group& g : d.groups)
        for (Cohort& c : g.cohorts) {
          const Kernel& k = program_.kernels[c.kernel];
          const double bytes = k.dram_bytes + miss * (k.uncached_bytes - k.dram_bytes);
          if (bytes > 0) c.rate = std::min(c.rate, bandwidth_[b] * global / bytes);
          // The block's fixed latency (prologue, epilogue, drain) overlaps other blocks' work.
          // A block without work has none (it ends as it starts; its kernel's cost is the
          // launch latency): the H100's replayed chain of empty kernels took 0.956 us per
          // kernel, launch included, under the 2.2 us latency of a working block.
          const double latency = spec.kernel_model.block_latency_us;
          if (c.rate < kInfinity) c.rate = 1 / (latency + 1 / c.rate);
          ++b;
        }
      bandwidth_.clear();
    }
  }

  void advance(double dt) {
    dt = std::max(dt, 0.0);
    for (DeviceState& d : devices_)
      for (Group& g : d.groups)
        for (Cohort& c : g.cohorts)  // cohorts without work (an infinite rate) end at once
          c.done = c.rate == kInfinity ? 1.0 : std::min(1.0, c.done + c.rate * dt);
  }

  void sample_occupancy() {
    for (size_t di = 0; di < devices_.size(); ++di) {
      DeviceState& d = devices_[di];
      double warps = 0, active = 0;
      for (const Group& g : d.groups) {
        warps += double(g.sms) * g.warps;
        if (g.blocks > 0) active += g.sms;
      }
      const double occupancy = warps / (double(d.spec->sms) * d.spec->per_sm.max_warps);
      const double active_sms = active / d.spec->sms;
      if (occupancy == d.last_occupancy && active_sms == d.last_active) continue;
      d.last_occupancy = occupancy;
      d.last_active = active_sms;
      result_.occupancy.push_back({now_, int(di), occupancy, active_sms});
    }
  }

  const Program& program_;
  EngineOptions options_;
  std::vector<DeviceState> devices_;
  std::vector<Queue> queues_;
  std::vector<uint32_t> stream_queue_, kernel_op_;
  std::vector<KernelState> kernels_;
  std::vector<double> issue_, event_done_, op_done_;
  std::vector<std::vector<uint32_t>> waiters_;
  std::vector<uint32_t> worklist_;
  std::priority_queue<Timed, std::vector<Timed>, std::greater<>> timed_;
  std::map<std::pair<int, int>, double> link_free_;
  std::vector<double> bandwidth_;
  std::vector<uint64_t> kernel_stamp_;
  uint64_t stamp_ = 0;
  double now_ = 0;
  bool rates_dirty_ = true;
  Result result_;
};

}  // namespace

Result simulate(const Program& program, std::span<const DeviceSpec> devices,
                const EngineOptions& options) {
  BRAID_CHECK(!devices.empty(), ErrorCode::kInvalidArgument, "sim: no device given");
  return Engine(program, devices, options).run();
}

double mean_occupancy(const Result& result, int device) {
  double area = 0, last_t = 0, last_v = 0;
  for (const OccupancySample& o : result.occupancy) {
    if (o.device != device) continue;
    area += last_v * (o.at_us - last_t);
    last_t = o.at_us;
    last_v = o.occupancy;
  }
  area += last_v * std::max(0.0, result.makespan_us - last_t);
  return result.makespan_us > 0 ? area / result.makespan_us : 0;
}

}  // namespace braid::sim
