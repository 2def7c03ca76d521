#include "exec/cuda/conv_layout.h"

#include <algorithm>
#include <unordered_map>

namespace braid::exec::cuda {

std::string_view to_string(ConvLayout layout) {
  return layout == ConvLayout::kNhwc ? "NHWC" : "NCHW";
}

namespace {

// Values stored NHWC under `layout`: written by an NHWC site without a residual, read only by
// NHWC sites (as their x), not a graph output.
std::vector<bool> nhwc_values(const ir::Graph& g, std::span<const ConvSite> sites,
                              const std::vector<ConvLayout>& layout) {
  std::unordered_map<size_t, size_t> site_of_conv;
  for (size_t i = 0; i < sites.size(); ++i) site_of_conv[index(sites[i].conv)] = i;
  std::vector<bool> nhwc(g.num_values(), false);
  for (size_t i = 0; i < sites.size(); ++i) {
    const ValueId y = sites[i].y;
    const ir::Value& v = g.value(y);
    if (layout[i] != ConvLayout::kNhwc || sites[i].residual || g.is_output(y) ||
        v.consumers.empty())
      continue;
    nhwc[index(y)] = std::all_of(v.consumers.begin(), v.consumers.end(), [&](NodeId c) {
      const auto it = site_of_conv.find(index(c));
      if (it == site_of_conv.end() || layout[it->second] != ConvLayout::kNhwc) return false;
      const ir::Node& n = g.node(c);
      // Read as x only: never also as weights or bias.
      return sites[it->second].x == y && std::count(n.inputs.begin(), n.inputs.end(), y) == 1;
    });
  }
  return nhwc;
}

}  // namespace

ConvLayouts choose_conv_layouts(const ir::Graph& g, std::span<const ConvSite> sites,
                                ConvLayoutMode mode) {
  ConvLayouts out;
  out.layout.assign(sites.size(), ConvLayout::kNchw);
  for (size_t i = 0; i < sites.size(); ++i) {
    const ConvSite& s = sites[i];
    const bool nhwc = s.nhwc_ok && (mode == ConvLayoutMode::kNhwc ||
                                    (mode == ConvLayoutMode::kMeasure && s.nhwc_us < s.nchw_us));
    if (nhwc) out.layout[i] = ConvLayout::kNhwc;
  }
  out.nhwc_value = nhwc_values(g, sites, out.layout);
  // Measured: a site keeps NHWC only when it still wins with the transforms at its boundaries.
  // Turning sites back only adds transforms to the others, so every site that loses now would
  // lose after the others turned too: all of them turn at once, until none loses.
  for (bool changed = mode == ConvLayoutMode::kMeasure; changed;) {
    changed = false;
    for (size_t i = 0; i < sites.size(); ++i) {
      const ConvSite& s = sites[i];
      if (out.layout[i] != ConvLayout::kNhwc) continue;
      const double cost = s.nhwc_us + (out.stored_nhwc(s.x) ? 0.0 : s.x_transform_us) +
                          (out.stored_nhwc(s.y) ? 0.0 : s.y_transform_us);
      if (cost >= s.nchw_us) {
        out.layout[i] = ConvLayout::kNchw;
        changed = true;
      }
    }
    if (changed) out.nhwc_value = nhwc_values(g, sites, out.layout);
  }
  return out;
}

}  // namespace braid::exec::cuda
