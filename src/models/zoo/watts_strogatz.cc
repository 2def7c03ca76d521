#include "models/zoo/watts_strogatz.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <random>
#include <set>

#include "base/error.h"

namespace braid::models {
namespace {

// Draws from the raw engine output only: std::uniform_*_distribution differ between standard
// libraries, and a seed must give the same graph everywhere.
double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

size_t uniform_index(std::mt19937_64& rng, size_t n) {
  // Rejection keeps the draw unbiased: accept only below the largest multiple of n.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x = rng();
  while (x >= limit) x = rng();
  return static_cast<size_t>(x % n);
}

}  // namespace

WsGraph watts_strogatz(int64_t num_nodes, int64_t k, double p, uint64_t seed) {
  BRAID_CHECK(k > 0 && k < num_nodes && k % 2 == 0, ErrorCode::kInvalidArgument,
              "Watts-Strogatz: k must be even with 0 < k < n, got n = ", num_nodes, ", k = ", k);
  BRAID_CHECK(p >= 0.0 && p <= 1.0, ErrorCode::kInvalidArgument,
              "Watts-Strogatz: rewiring probability must be in [0, 1], got ", p);
  const auto n = static_cast<size_t>(num_nodes);
  const auto half = static_cast<size_t>(k / 2);
  std::vector<std::vector<bool>> adj(n, std::vector<bool>(n, false));
  for (size_t i = 0; i < n; ++i) adj[i][i] = true;  // never a self-loop
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 1; j <= half; ++j) adj[i][(i + j) % n] = adj[(i + j) % n][i] = true;

  std::mt19937_64 rng(seed);
  // ws.py draws every coin first (an n x k/2 matrix), then the rewiring targets.
  std::vector<double> coin(n * half);
  for (double& c : coin) c = uniform01(rng);
  std::vector<size_t> candidates;  // nodes not adjacent to i
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 1; j <= half; ++j) {
      if (coin[i * half + j - 1] >= p) continue;
      candidates.clear();
      for (size_t x = 0; x < n; ++x)
        if (!adj[i][x]) candidates.push_back(x);
      if (candidates.empty()) continue;  // i touches every node: nowhere to move the edge
      // Only node i rewires the lattice edge (i, i+j) (j <= k/2 < n/2), so it is still here;
      // the target is not adjacent, so the edge count stays n*k/2.
      const size_t current = (i + j) % n;
      const size_t target = candidates[uniform_index(rng, candidates.size())];
      adj[i][current] = adj[current][i] = false;
      adj[i][target] = adj[target][i] = true;
    }
  }
  WsGraph g;
  g.num_nodes = num_nodes;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j)
      if (adj[i][j]) g.edges.emplace_back(static_cast<int64_t>(i), static_cast<int64_t>(j));
  return g;
}

WsGraph parse_ws_graph(std::string_view text, std::string_view source) {
  size_t pos = 0;
  size_t token_index = 0;
  // Next whitespace-separated integer; `what` names it in the error.
  auto next = [&](std::string_view what) -> int64_t {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
    BRAID_CHECK(pos < text.size(), ErrorCode::kInvalidModel, "RandWire graph '", source,
                "': the text ends where ", what, " was expected");
    size_t end = pos;
    while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end]))) ++end;
    std::string_view token = text.substr(pos, end - pos);
    int64_t value = 0;
    auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    BRAID_CHECK(ec == std::errc() && ptr == token.data() + token.size(), ErrorCode::kInvalidModel,
                "RandWire graph '", source, "': token ", token_index + 1, " ('", token,
                "') is not an integer (expected ", what, ")");
    pos = end;
    ++token_index;
    return value;
  };

  WsGraph g;
  g.num_nodes = next("the node count");
  BRAID_CHECK(g.num_nodes >= 1, ErrorCode::kInvalidModel, "RandWire graph '", source,
              "': node count must be >= 1, got ", g.num_nodes);
  const int64_t m = next("the edge count");
  BRAID_CHECK(m >= 0, ErrorCode::kInvalidModel, "RandWire graph '", source,
              "': edge count must be >= 0, got ", m);
  std::set<std::pair<int64_t, int64_t>> seen;
  for (int64_t e = 0; e < m; ++e) {
    const std::string edge = "edge " + std::to_string(e + 1) + " of " + std::to_string(m);
    const int64_t u = next(edge);
    const int64_t v = next(edge);
    BRAID_CHECK(u >= 0 && v >= 0 && u < g.num_nodes && v < g.num_nodes, ErrorCode::kInvalidModel,
                "RandWire graph '", source, "': ", edge, " (", u, " ", v,
                ") names a node outside [0, ", g.num_nodes, ")");
    BRAID_CHECK(u < v, ErrorCode::kInvalidModel, "RandWire graph '", source, "': ", edge, " (", u,
                " ", v, ") must go from the lower to the higher index");
    BRAID_CHECK(seen.insert({u, v}).second, ErrorCode::kInvalidModel, "RandWire graph '", source,
                "': ", edge, " (", u, " ", v, ") appears twice");
    g.edges.emplace_back(u, v);
  }
  while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
  BRAID_CHECK(pos == text.size(), ErrorCode::kInvalidModel, "RandWire graph '", source,
              "': text after the ", m, " edges announced on line 2");
  std::sort(g.edges.begin(), g.edges.end());
  return g;
}

std::string to_ws_text(const WsGraph& g) {
  std::string s = std::to_string(g.num_nodes) + "\n" + std::to_string(g.edges.size()) + "\n";
  for (auto [u, v] : g.edges) s += std::to_string(u) + " " + std::to_string(v) + "\n";
  return s;
}

}  // namespace braid::models
