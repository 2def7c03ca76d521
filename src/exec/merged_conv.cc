#include "exec/merged_conv.h"

#include <algorithm>

#include "base/error.h"

namespace braid::exec {

MergedConvParams merge_conv_params(std::span<const MergePart> parts) {
  BRAID_ASSERT(!parts.empty(), "merge_conv_params: no convs");
  MergedConvParams m;
  const int64_t ic = parts[0].shape[1];
  int64_t oc_total = 0, kh_max = 0, kw_max = 0;
  for (const MergePart& p : parts) {
    BRAID_ASSERT(p.shape[1] == ic, "merge_conv_params: convs of different input channels");
    BRAID_ASSERT(int64_t(p.weights.size()) == p.shape[0] * p.shape[1] * p.shape[2] * p.shape[3] &&
                     int64_t(p.bias.size()) == p.shape[0],
                 "merge_conv_params: weights or bias of the wrong size");
    oc_total += p.shape[0];
    kh_max = std::max(kh_max, p.shape[2]);
    kw_max = std::max(kw_max, p.shape[3]);
  }
  m.shape = {oc_total, ic, kh_max, kw_max};
  m.weights.assign(size_t(oc_total * ic * kh_max * kw_max), 0.0f);
  m.bias.reserve(size_t(oc_total));
  int64_t oc_at = 0;
  for (const MergePart& p : parts) {
    const int64_t oc = p.shape[0], kh = p.shape[2], kw = p.shape[3];
    BRAID_ASSERT((kh_max - kh) % 2 == 0 && (kw_max - kw) % 2 == 0,
                 "merge_conv_params: a kernel that cannot be centred");
    const int64_t top = (kh_max - kh) / 2, left = (kw_max - kw) / 2;
    for (int64_t o = 0; o < oc; ++o)
      for (int64_t i = 0; i < ic; ++i)
        for (int64_t y = 0; y < kh; ++y)
          std::copy_n(
              p.weights.begin() + ((o * ic + i) * kh + y) * kw, kw,
              m.weights.begin() + (((oc_at + o) * ic + i) * kh_max + y + top) * kw_max + left);
    m.bias.insert(m.bias.end(), p.bias.begin(), p.bias.end());
    oc_at += oc;
  }
  return m;
}

}  // namespace braid::exec
