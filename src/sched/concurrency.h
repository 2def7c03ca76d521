// The most threads that units of a plan can ask for at once: the heaviest antichain of its
// happens-before order (a set of units no two of which are ordered, so an executor may run them
// all at the same time), with each unit weighted by its threads. The validator checks a plan's
// allotment with it (validate.h rule 9); a plan made to fit `cores` keeps this at or below it.
//
//   // before(a, b): a happens before b (a transitive relation over units 0..n-1)
//   ConcurrentSet c = heaviest_concurrent_set(threads, before);
//   c.threads;   c.units;   // e.g. 3 threads: units {2, 5} at 1 and 2 threads
//
// Weighted Dilworth (Fulkerson's reduction): with a vertex u' fed weight(u) by the source and a
// vertex u'' draining weight(u) to the sink, and u' -> v'' unbounded for every u before v, the
// heaviest antichain weighs Σ weight - max flow, and is the set of units whose u' is on the
// source side of the minimum cut and u'' is not.
#pragma once

#include <functional>
#include <span>
#include <vector>

namespace braid::sched {

struct ConcurrentSet {
  long threads = 0;           // their summed weight
  std::vector<size_t> units;  // pairwise unordered, ascending
};

ConcurrentSet heaviest_concurrent_set(std::span<const int> weight,
                                      const std::function<bool(size_t, size_t)>& before);

}  // namespace braid::sched
