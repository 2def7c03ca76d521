// Watts–Strogatz random graphs as RandWire uses them (Xie et al. 2019; IOS's
// randwire_graphs/ws.py): a ring lattice of n nodes, each joined to its k nearest neighbours,
// whose edges are rewired with probability p, then oriented from the lower to the higher index
// so that the result is a DAG. Also the IOS text format of such graphs, and the four graphs of
// IOS's randwire_large, embedded (randwire_graphs.cc) so the zoo never reads files.
//
//   WsGraph g = watts_strogatz(32, 4, 0.75, /*seed=*/3);   // 32 nodes, 64 edges
//   WsGraph f = parse_ws_graph(randwire_large_graphs()[0].text, "ws-16-4-0.75-2.txt");
//   std::string text = to_ws_text(g);                      // "32\n64\n0 1\n..."
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace braid::models {

struct WsGraph {
  int64_t num_nodes = 0;
  std::vector<std::pair<int64_t, int64_t>> edges;  // (u, v) with u < v, sorted, no duplicates
  bool operator==(const WsGraph&) const = default;
};

// The ws.py algorithm: lattice edges (i, i+1..i+k/2 mod n); for every node i and every j in
// 1..k/2, with probability p the edge (i, i+j mod n) moves to (i, r), r drawn uniformly from the
// nodes not yet adjacent to i (kept when there is none). Always n*k/2 edges. The random stream is
// our own (mt19937_64 from `seed`), so the IOS files are not reproduced draw for draw.
// Throws braid::Error(kInvalidArgument) unless k is even, 0 < k < n, and 0 <= p <= 1.
WsGraph watts_strogatz(int64_t num_nodes, int64_t k, double p, uint64_t seed);

// Parses IOS's format: n, then m, then m pairs "u v" (whitespace-separated, 0-based, u < v).
// Throws braid::Error(kInvalidModel) naming `source` and the offending edge or token.
WsGraph parse_ws_graph(std::string_view text, std::string_view source = "<text>");
std::string to_ws_text(const WsGraph& g);

// One of IOS's generated graph files, byte for byte.
struct EmbeddedWsGraph {
  std::string_view file_name;  // e.g. "ws-16-4-0.75-2.txt"
  std::string_view text;
};
// The graphs of randwire_large's four stages, in stage order (C = 154, 308, 616, 1232).
std::span<const EmbeddedWsGraph> randwire_large_graphs();

}  // namespace braid::models
