// The built-in model zoo: the benchmark networks of the papers, built in code with batch size
// and input size as parameters.
//
//   ir::Graph g = models::build_zoo_model("inception_v3", {.batch = 1});
//   for (const ZooEntry& e : models::zoo()) std::cout << e.name << ": " << e.description;
//
// IOS forms (ios.txt benchmarks, as the IOS authors' code defines them; peers.md §2):
//   inception_v3, squeezenet, nasnet, randwire.
// Framework forms (as torchvision defines them, BatchNorm folded into Conv, classifier head):
//   googlenet, resnet50, tv_inception_v3, tv_squeezenet1_0 (and tv_googlenet, tv_resnet50 as
//   aliases), plus bert (a BERT-base encoder).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "ir/graph.h"

namespace braid::models {

struct ZooOptions {
  int64_t batch = 1;
  int64_t image_size = 0;   // 0: the model's default (299 Inception, 331 NASNet, 224 others)
  int64_t layers = 12;      // bert: encoder layers
  int64_t seq_len = 128;    // bert: sequence length
  int64_t hidden = 768;     // bert: hidden size (heads = hidden / 64)
  // randwire: 0 nodes builds IOS's randwire_large from its four graph files (16, 32, 32, 32
  // nodes); n > 0 gives each of the four stages its own Watts-Strogatz graph of n nodes,
  // k neighbours and rewiring probability p, generated from randwire_seed + stage index.
  int64_t randwire_nodes = 0;
  int64_t randwire_k = 4;
  double randwire_p = 0.75;
  uint64_t randwire_seed = 0;
};

struct ZooEntry {
  std::string_view name;
  std::string_view description;
  std::function<ir::Graph(const ZooOptions&)> build;
};

// The zoo, in a fixed order.
std::span<const ZooEntry> zoo();
const ZooEntry* find_zoo_entry(std::string_view name);
// Throws braid::Error(kNotFound) listing the zoo when `name` is unknown.
ir::Graph build_zoo_model(std::string_view name, const ZooOptions& options = {});

// Builders (one file each under models/zoo/).
ir::Graph build_inception_v3_ios(const ZooOptions&);
ir::Graph build_squeezenet_ios(const ZooOptions&);
ir::Graph build_nasnet_ios(const ZooOptions&);
ir::Graph build_randwire_ios(const ZooOptions&);
ir::Graph build_googlenet(const ZooOptions&);
ir::Graph build_resnet50(const ZooOptions&);
ir::Graph build_inception_v3_torchvision(const ZooOptions&);
ir::Graph build_squeezenet1_0_torchvision(const ZooOptions&);
ir::Graph build_bert(const ZooOptions&);

}  // namespace braid::models
