#include "sim/engine.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <queue>

#include "base/error.h"

namespace braid::sim {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr double kDoneEpsilon = 1e-9;
// (1 - done) * inverse_rate is within 4 ulps of (1 - done) / rate; candidates beyond the minimum
// so far by more than this cannot be the next completion, so they need no division.
constexpr double kScreenSlack = 1e-12;

// Blocks of one kernel that started on the SMs of a group at the same instant; `blocks` per SM.
struct Cohort {
  uint32_t kernel = 0;
  int blocks = 0;
  double start_us = 0;
  double done = 0;          // fraction of a block's work done
  double rate = 0;          // fraction per microsecond
  double inverse_rate = 0;  // 1 / rate: screens the next completion without dividing
  // The group's share of the SM, cached until its cohorts or the L2 miss ratio change.
  double compute_rate = 0;  // compute-bound rate, before the bandwidth limits
  double bandwidth = 0;     // bytes per us one block may move within the SM's cap
  double bytes = 0;         // DRAM bytes per block at the miss ratio
};

// SMs in identical states: the same resident cohorts with the same progress.
struct Group {
  int sms = 0;
  int threads = 0, warps = 0, blocks = 0;
  int64_t registers = 0, shared_memory = 0;
  std::vector<Cohort> cohorts;
  bool completing = false;  // advance() brought a cohort to its end
  // The least (1 - done) * inverse_rate of its cohorts, from advance(); 0 (scan the group)
  // once its cohorts or rates change.
  double soonest = 0;
  // What the cohorts' rates were computed with (compute_rates): while `shares_valid` and the
  // device's miss ratio and bandwidth scale are the same, the rates are still right.
  bool shares_valid = false;
  double flow = 0;  // DRAM bytes per us each of its SMs draws
  double miss = -1, global = -1;
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
  bool rates_dirty = true;
  // The pending head found no room (or no grid slot): until a block ends on the device, none.
  bool stalled = false;
  int64_t roomless_kernel = -1;  // the pending head, when no group had room for its blocks
  std::vector<uint32_t> freed;   // groups whose blocks ended this event, in index order
  // Sum of the running kernels' L2 working sets, kept as kernels start and stop when every
  // such sum is exact (see exact_working_sets_), so that its order does not matter.
  double working_set = 0;
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
    exact_working_sets_ = working_sets_sum_exactly();
  }

  Result run() {
    for (uint32_t q = 0; q < queues_.size(); ++q) worklist_.push_back(q);
    drain_worklist();
    dispatch_all();
    while (true) {
      for (DeviceState& d : devices_)
        if (d.rates_dirty) compute_rates(d);
      const double step = next_completion();
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
          d.rates_dirty = true;
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
    g.shares_valid = false;
    g.soonest = 0;
    for (Cohort& c : g.cohorts)
      if (c.kernel == kernel && c.start_us == now_) {
        ++c.blocks;
        return;
      }
    g.cohorts.push_back({.kernel = kernel, .blocks = 1, .start_us = now_});
  }

  // Places blocks of `kernel` breadth-first: each round gives one block to every SM that still
  // fits one, least-loaded groups first, splitting a group when the blocks run out inside it.
  // A group without room keeps none until its own blocks end, so each round checks only the
  // groups that had room, and the first only the freed ones when the others were checked.
  void place(DeviceState& d, uint32_t kernel, bool only_freed) {
    KernelState& ks = kernels_[kernel];
    const Kernel& k = program_.kernels[kernel];
    const SmLimits& sm = d.spec->per_sm;
    fit_.clear();
    if (only_freed) {
      for (uint32_t gi : d.freed)
        if (fits(d.groups[gi], k, sm)) fit_.push_back(gi);
    } else {
      for (uint32_t gi = 0; gi < d.groups.size(); ++gi)
        if (fits(d.groups[gi], k, sm)) fit_.push_back(gi);
    }
    while (ks.undispatched > 0 && !fit_.empty()) {
      candidates_ = fit_;
      sort_by_warps(d.groups, candidates_);
      const auto before = uint32_t(d.groups.size());
      for (uint32_t gi : candidates_) {
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
        if (ks.running == 0) set_running(kernel, true);
        ks.running += g.sms;
        if (!ks.placed_any) {
          ks.placed_any = true;
          ks.start_us = now_;
          ++d.resident_grids;
        }
      }
      // In index order, as a scan of every group: the split-off parts come last.
      next_fit_.clear();
      for (uint32_t gi : fit_)
        if (fits(d.groups[gi], k, sm)) next_fit_.push_back(gi);
      for (uint32_t gi = before; gi < d.groups.size(); ++gi)
        if (fits(d.groups[gi], k, sm)) next_fit_.push_back(gi);
      fit_.swap(next_fit_);
    }
  }

  // A stable sort by resident warps, least first, without std::stable_sort's buffer allocation.
  static void sort_by_warps(const std::vector<Group>& groups, std::vector<uint32_t>& indices) {
    for (size_t i = 1; i < indices.size(); ++i) {
      const uint32_t gi = indices[i];
      size_t j = i;
      for (; j > 0 && groups[gi].warps < groups[indices[j - 1]].warps; --j)
        indices[j] = indices[j - 1];
      indices[j] = gi;
    }
  }

  void dispatch_all() {
    for (DeviceState& d : devices_) {
      if (!d.changed || d.stalled) continue;
      while (!d.pending.empty()) {
        const uint32_t k = d.pending.front();
        d.stalled = true;
        if (!kernels_[k].placed_any && d.resident_grids >= d.spec->max_resident_grids) break;
        place(d, k, d.roomless_kernel == k);
        if (kernels_[k].undispatched > 0) {  // left-over policy: later kernels wait
          d.roomless_kernel = k;
          break;
        }
        d.pending.pop_front();
        d.stalled = false;
      }
    }
  }

  void complete_cohorts() {
    for (DeviceState& d : devices_) {
      d.freed.clear();
      for (uint32_t gi = 0; gi < d.groups.size(); ++gi) {
        Group& g = d.groups[gi];
        if (!g.completing) continue;
        g.completing = false;
        d.stalled = false;
        d.freed.push_back(gi);
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
          if (ks.running == 0) set_running(c.kernel, false);
          if (ks.running == 0 && ks.undispatched == 0) {
            ks.finished = true;
            ks.end_us = now_;
            --d.resident_grids;
            finish_head(ks.queue);
            worklist_.push_back(ks.queue);
          }
          g.cohorts.erase(g.cohorts.begin() + ci);
          g.shares_valid = false;
          g.soonest = 0;
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
    // Insertion sort: between two events few groups change, so the rest is nearly in order.
    // Groups it may order differently from std::sort compare equal, so they merge below.
    for (size_t i = 1; i < groups.size(); ++i) {
      if (!less(groups[i], groups[i - 1])) continue;
      Group g = std::move(groups[i]);
      size_t j = i;
      for (; j > 0 && less(g, groups[j - 1]); --j) groups[j] = std::move(groups[j - 1]);
      groups[j] = std::move(g);
    }
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

  // Rates of every cohort on `d`. A cohort's rate depends on its group's cohorts, the L2 miss
  // ratio and the device's bandwidth scale, so only groups where one of them changed are redone;
  // each value is computed by the same expression as from scratch, hence identical.
  void compute_rates(DeviceState& d) {
    d.rates_dirty = false;
    const DeviceSpec& spec = *d.spec;
    // L2: the running kernels' working sets share it; beyond it, tile loads miss.
    const double working_set = exact_working_sets_ ? d.working_set : summed_working_set(d);
    const double miss = working_set > spec.l2_bytes ? 1 - double(spec.l2_bytes) / working_set : 0;
    double device_bandwidth = 0;
    for (Group& g : d.groups) {
      if (g.cohorts.empty()) continue;
      if (!g.shares_valid || g.miss != miss) share_sm(g, spec, miss);
      device_bandwidth += g.sms * g.flow;
    }
    const double device_cap = spec.dram_bytes_per_s() * 1e-6;
    const double global = device_bandwidth > device_cap ? device_cap / device_bandwidth : 1;
    for (Group& g : d.groups)
      if (g.global != global) limit_rates(g, global, spec.kernel_model.block_latency_us);
  }

  // The running kernels' working sets (each at most the L2), summed in group order.
  double summed_working_set(const DeviceState& d) {
    double working_set = 0;
    ++stamp_;
    if (kernel_stamp_.size() < program_.kernels.size())
      kernel_stamp_.resize(program_.kernels.size(), 0);
    for (const Group& g : d.groups)
      for (const Cohort& c : g.cohorts)
        if (kernel_stamp_[c.kernel] != stamp_) {
          kernel_stamp_[c.kernel] = stamp_;
          working_set += l2_share(c.kernel, *d.spec);
        }
    return working_set;
  }

  // A kernel alone keeps its reuse (its tiles are sized for it): only other kernels' data
  // competing for the L2 makes its loads miss.
  double l2_share(uint32_t kernel, const DeviceSpec& spec) const {
    return std::min(program_.kernels[kernel].working_set, double(spec.l2_bytes));
  }

  // Running sums of working sets are exact, so equal to the group-order sum, when every share is
  // a multiple of one power of two 2^-p and the device's total fits the significand at 2^-p.
  bool working_sets_sum_exactly() const {
    std::vector<double> total(devices_.size(), 0);
    std::vector<int> p(devices_.size(), 0);
    for (uint32_t k = 0; k < program_.kernels.size(); ++k) {
      const int dev = queues_[kernels_[k].queue].device;
      const double share = l2_share(k, *devices_[dev].spec);
      if (!(share >= 0 && share < kInfinity)) return false;
      while (std::ldexp(share, p[dev]) != std::floor(std::ldexp(share, p[dev])))
        if (++p[dev] > 60) return false;
      total[dev] += share;
    }
    for (size_t dev = 0; dev < devices_.size(); ++dev)
      if (std::ldexp(total[dev], p[dev]) >= 0x1p52) return false;
    return true;
  }

  // Kernel `k` gains its first running block or loses its last: its working set joins or
  // leaves the L2's.
  void set_running(uint32_t k, bool running) {
    if (!exact_working_sets_) return;
    DeviceState& d = devices_[queues_[kernels_[k].queue].device];
    const double share = l2_share(k, *d.spec);
    d.working_set += running ? share : -share;
  }

  // The group's SM shared by its cohorts: issue slots in proportion to warps, then the SM's
  // bandwidth cap split in proportion to what each block would draw at its compute rate.
  void share_sm(Group& g, const DeviceSpec& spec, double miss) {
    const double sm_flops = spec.sustained_fp32_flops() / spec.sms * 1e-6;   // per us
    const double sm_bandwidth = spec.dram_bytes_per_s() / spec.sms * 1e-6 *  // per us
                                SmModel::kSmBandwidthShare;
    const double warps = g.warps;
    double issue = sm_flops * std::min(1.0, warps / SmModel::kWarpsForPeakCompute);
    if (distinct_gemm_kernels(g) >= 2) issue *= spec.kernel_model.co_resident_gemm;
    const double cap = sm_bandwidth * std::min(1.0, warps / SmModel::kWarpsForPeakMemory);
    double demand = 0;
    for (Cohort& c : g.cohorts) {
      const Kernel& k = program_.kernels[c.kernel];
      const double flops_rate = issue * k.efficiency * k.warps() / warps;  // per block
      c.bytes = k.dram_bytes + miss * (k.uncached_bytes - k.dram_bytes);
      double want = 0;  // bytes per us one block would move at its compute rate
      if (c.bytes > 0) want = k.flops > 0 ? std::min(cap, flops_rate * c.bytes / k.flops) : cap;
      // The compute-bound rate for now; limit_rates may lower it for bandwidth.
      c.compute_rate = k.flops > 0 ? flops_rate / k.flops : kInfinity;
      c.bandwidth = want;
      demand += want * c.blocks;
    }
    const double scale = demand > cap ? cap / demand : 1;
    for (Cohort& c : g.cohorts) c.bandwidth *= scale;
    g.flow = std::min(demand, cap);
    g.shares_valid = true;
    g.miss = miss;
    g.global = -1;  // limit_rates must run
  }

  int distinct_gemm_kernels(const Group& g) const {
    int gemm_kernels = 0;
    for (size_t ci = 0; ci < g.cohorts.size(); ++ci) {
      const uint32_t k = g.cohorts[ci].kernel;
      if (!program_.kernels[k].gemm) continue;
      bool seen = false;
      for (size_t cj = 0; cj < ci; ++cj) seen |= g.cohorts[cj].kernel == k;
      gemm_kernels += !seen;
    }
    return gemm_kernels;
  }

  // The device's DRAM bandwidth scaled by `global` when oversubscribed, then the block latency.
  static void limit_rates(Group& g, double global, double latency) {
    for (Cohort& c : g.cohorts) {
      double rate = c.compute_rate;
      if (c.bytes > 0) rate = std::min(rate, c.bandwidth * global / c.bytes);
      // The block's fixed latency (prologue, epilogue, drain) overlaps other blocks' work.
      // A block without work has none (it ends as it starts; its kernel's cost is the
      // launch latency): the H100's replayed chain of empty kernels took 0.956 us per
      // kernel, launch included, under the 2.2 us latency of a working block.
      if (rate < kInfinity) rate = 1 / (latency + 1 / rate);
      c.rate = rate;
      const double inverse = 1 / rate;
      c.inverse_rate = std::isnormal(inverse) ? inverse : 0;  // 0: always divide
    }
    g.global = global;
    g.soonest = 0;
  }

  // The time to the next cohort completion, min of (1 - done) / rate. The quotient is taken
  // only where its screen (1 - done) * inverse_rate could beat the minimum so far; a group
  // whose least screen cannot is skipped whole.
  double next_completion() const {
    double step = kInfinity, bound = kInfinity;
    for (const DeviceState& d : devices_)
      for (const Group& g : d.groups) {
        if (g.soonest > bound) continue;
        for (const Cohort& c : g.cohorts) {
          const double left = 1 - c.done;
          if (left * c.inverse_rate > bound) continue;
          step = std::min(step, left / c.rate);
          bound = step * (1 + kScreenSlack);
        }
      }
    return step;
  }

  void advance(double dt) {
    dt = std::max(dt, 0.0);
    for (DeviceState& d : devices_)
      for (Group& g : d.groups) {
        double soonest = kInfinity;
        for (Cohort& c : g.cohorts) {  // cohorts without work (an infinite rate) end at once
          c.done = c.rate == kInfinity ? 1.0 : std::min(1.0, c.done + c.rate * dt);
          g.completing |= !(c.done < 1 - kDoneEpsilon);
          soonest = std::min(soonest, (1 - c.done) * c.inverse_rate);
        }
        g.soonest = soonest;
      }
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
  std::vector<uint32_t> fit_, next_fit_, candidates_;  // place(): groups with room, by index
  std::vector<uint64_t> kernel_stamp_;
  uint64_t stamp_ = 0;
  bool exact_working_sets_ = false;
  double now_ = 0;
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
