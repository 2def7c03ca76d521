#include "cost/stage_key.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "base/error.h"

namespace braid::cost {
namespace {

template <typename Range>
void write_list(std::ostream& out, const Range& values, char separator = ',') {
  bool first = true;
  for (const auto& v : values) {
    if (!first) out << separator;
    out << v;
    first = false;
  }
}

void write_type(std::ostream& out, const ir::TensorType& t) {
  out << ir::to_string(t.dtype) << '[';
  write_list(out, t.shape);
  out << ']';
}

// Every attribute field, so that two ops with the same key run the same kernel.
void write_attrs(std::ostream& out, const ir::OpAttrs& attrs) {
  std::visit(
      [&](const auto& a) {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return;
        } else if constexpr (std::is_same_v<T, ir::ConvAttrs>) {
          out << "{k" << a.kernel[0] << 'x' << a.kernel[1] << " s" << a.stride[0] << 'x'
              << a.stride[1] << " d" << a.dilation[0] << 'x' << a.dilation[1] << " p";
          write_list(out, a.pads);
          out << " g" << a.groups << ' ' << ir::to_string(a.activation) << '}';
        } else if constexpr (std::is_same_v<T, ir::PoolAttrs>) {
          out << "{k" << a.kernel[0] << 'x' << a.kernel[1] << " s" << a.stride[0] << 'x'
              << a.stride[1] << " p";
          write_list(out, a.pads);
          out << " c" << a.ceil_mode << " i" << a.count_include_pad << '}';
        } else if constexpr (std::is_same_v<T, ir::AxisAttrs>) {
          out << "{axis" << a.axis << '}';
        } else if constexpr (std::is_same_v<T, ir::GemmAttrs>) {
          out << "{a" << a.alpha << " b" << a.beta << " t" << a.trans_a << a.trans_b << '}';
        } else if constexpr (std::is_same_v<T, ir::BatchNormAttrs>) {
          out << "{eps" << a.epsilon << '}';
        } else if constexpr (std::is_same_v<T, ir::LayerNormAttrs>) {
          out << "{axis" << a.axis << " eps" << a.epsilon << '}';
        } else if constexpr (std::is_same_v<T, ir::ReshapeAttrs>) {
          out << "{shape ";
          write_list(out, a.shape);
          out << '}';
        } else if constexpr (std::is_same_v<T, ir::TransposeAttrs>) {
          out << "{perm ";
          write_list(out, a.perm);
          out << '}';
        } else if constexpr (std::is_same_v<T, ir::SplitAttrs>) {
          out << "{axis" << a.axis << " sizes ";
          write_list(out, a.sizes);
          out << '}';
        } else if constexpr (std::is_same_v<T, ir::PadAttrs>) {
          out << "{pads ";
          write_list(out, a.pads);
          out << " v" << a.value << '}';
        } else if constexpr (std::is_same_v<T, ir::GeluAttrs>) {
          out << "{tanh" << a.tanh_approximation << '}';
        } else if constexpr (std::is_same_v<T, ir::ClipAttrs>) {
          out << "{min" << a.min << " max" << a.max << '}';
        } else if constexpr (std::is_same_v<T, ir::HardSigmoidAttrs>) {
          out << "{a" << a.alpha << " b" << a.beta << '}';
        } else if constexpr (std::is_same_v<T, ir::ReduceAttrs>) {
          out << "{axes ";
          write_list(out, a.axes);
          out << " k" << a.keepdims << '}';
        } else if constexpr (std::is_same_v<T, ir::LrnAttrs>) {
          out << "{size" << a.size << " a" << a.alpha << " b" << a.beta << " bias" << a.bias << '}';
        } else if constexpr (std::is_same_v<T, ir::ExpandAttrs>) {
          out << "{shape ";
          write_list(out, a.shape);
          out << '}';
        } else if constexpr (std::is_same_v<T, ir::GatherAttrs>) {
          out << "{axis" << a.axis << " indices ";
          write_list(out, a.indices_shape);
          write_list(out, a.indices);
          out << '}';
        } else if constexpr (std::is_same_v<T, ir::CastAttrs>) {
          out << "{to " << ir::to_string(a.to) << '}';
        } else if constexpr (std::is_same_v<T, ir::SliceAttrs>) {
          out << "{starts ";
          write_list(out, a.starts);
          out << " ends ";
          write_list(out, a.ends);
          out << " axes ";
          write_list(out, a.axes);
          out << " steps ";
          write_list(out, a.steps);
          out << '}';
        } else if constexpr (std::is_same_v<T, ir::ConvTransposeAttrs>) {
          out << "{k" << a.kernel[0] << 'x' << a.kernel[1] << " s" << a.stride[0] << 'x'
              << a.stride[1] << " d" << a.dilation[0] << 'x' << a.dilation[1] << " p";
          write_list(out, a.pads);
          out << " op" << a.output_padding[0] << 'x' << a.output_padding[1] << " g" << a.groups
              << '}';
        } else if constexpr (std::is_same_v<T, ir::ResizeAttrs>) {
          out << '{' << ir::to_string(a.mode) << ' ' << ir::to_string(a.coordinates) << ' '
              << ir::to_string(a.nearest) << " a" << a.cubic_coeff_a << " x" << a.exclude_outside
              << " aa" << a.antialias << " e" << a.extrapolation_value << " sizes ";
          write_list(out, a.sizes);
          out << " scales ";
          write_list(out, a.scales);
          out << " roi ";
          write_list(out, a.roi);
          out << '}';
        } else {
          static_assert(sizeof(T) == 0, "write_attrs: an attribute type has no key");
        }
      },
      attrs);
}

}  // namespace

std::string group_key(const ir::UnitGraph& units, std::span<const UnitId> group) {
  const ir::Graph* g = units.graph();
  BRAID_ASSERT(g != nullptr, "stage keys need a unit graph with operators");
  std::ostringstream out;
  out.precision(9);  // attribute floats (epsilon, alpha) round-trip
  // Position of each value produced so far inside the group: "%op.output".
  std::map<ValueId, std::pair<size_t, size_t>> local;
  size_t position = 0;
  for (size_t k = 0; k < group.size(); ++k) {
    if (k > 0) out << " ; ";
    const ir::Unit& unit = units.unit(group[k]);
    for (size_t j = 0; j < unit.ops.size(); ++j) {
      const ir::Node& n = g->node(unit.ops[j]);
      if (j > 0) out << " - ";
      out << ir::to_string(n.kind);
      write_attrs(out, n.attrs);
      out << '(';
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        if (i > 0) out << ',';
        ValueId v = n.inputs[i];
        if (auto it = local.find(v); it != local.end()) {
          out << '%' << it->second.first << '.' << it->second.second;
        } else {
          out << (g->value(v).kind == ir::ValueKind::kParameter ? "p:" : "x:");
          write_type(out, g->value(v).type);
        }
      }
      out << ")->";
      for (size_t i = 0; i < n.outputs.size(); ++i) {
        if (i > 0) out << ',';
        write_type(out, g->value(n.outputs[i]).type);
        local[n.outputs[i]] = {position, i};
      }
      ++position;
    }
  }
  return out.str();
}

std::string stage_key(const ir::UnitGraph& units, std::span<const std::vector<UnitId>> groups) {
  std::vector<std::string> keys;
  for (const auto& group : groups) keys.push_back(group_key(units, group));
  std::sort(keys.begin(), keys.end());
  std::string key;
  for (const std::string& k : keys) key += (key.empty() ? "" : " || ") + k;
  return key;
}

}  // namespace braid::cost
