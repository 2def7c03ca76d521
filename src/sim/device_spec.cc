#include "sim/device_spec.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/json_value.h"
#include "base/parse.h"

namespace braid::sim {
namespace {

using nlohmann::json;

// Reads `key` of `object` as T, or throws naming the file and the field.
template <typename T>
T field(const json& object, const std::string& key, const std::string& where) {
  BRAID_CHECK(object.is_object() && object.contains(key), ErrorCode::kInvalidArgument, where,
              ": missing field '", key, "'");
  return json_value<T>(object.at(key), where, key);
}

void check_positive(double value, const std::string& key, const std::string& where) {
  BRAID_CHECK(value > 0, ErrorCode::kInvalidArgument, where, ": '", key, "' must be > 0, got ",
              value);
}

KernelModel read_kernel_model(const json& k, const std::string& file) {
  const std::string where = file + " kernel_model";
  KernelModel m;
  BRAID_CHECK(k.is_object(), ErrorCode::kInvalidArgument, where, ": expected an object");
  auto number = [&](const char* key, double fallback) {
    return k.contains(key) ? field<double>(k, key, where) : fallback;
  };
  m.per_op_kernels = k.contains("per_op_kernels") && field<bool>(k, "per_op_kernels", where);
  m.fork_join = k.contains("fork_join") && field<bool>(k, "fork_join", where);
  if (k.contains("merged_convolution"))
    m.merged_convolution = field<bool>(k, "merged_convolution", where);
  m.elements_per_thread = int(number("elements_per_thread", m.elements_per_thread));
  m.block_latency_us = number("block_latency_us", m.block_latency_us);
  m.library_call_us = number("library_call_us", m.library_call_us);
  m.wait_latency_us = number("wait_latency_us", m.wait_latency_us);
  m.co_resident_gemm = number("co_resident_gemm", m.co_resident_gemm);
  BRAID_CHECK(m.co_resident_gemm > 0 && m.co_resident_gemm <= 1, ErrorCode::kInvalidArgument, where,
              ": co_resident_gemm must be in (0, 1], got ", m.co_resident_gemm);
  if (k.contains("split_k")) m.split_k = field<std::vector<int>>(k, "split_k", where);
  if (k.contains("gemm_tiles")) {
    for (const json& t : field<json>(k, "gemm_tiles", where)) {
      const std::string tw = where + " gemm_tiles";
      GemmTileSpec tile{field<int>(t, "m", tw),
                        field<int>(t, "n", tw),
                        field<int>(t, "threads", tw),
                        field<int>(t, "registers", tw),
                        field<int>(t, "shared_memory", tw),
                        field<double>(t, "efficiency", tw)};
      BRAID_CHECK(tile.m > 0 && tile.n > 0 && tile.threads > 0 && tile.registers > 0 &&
                      tile.shared_memory >= 0 && tile.efficiency > 0 && tile.efficiency <= 1,
                  ErrorCode::kInvalidArgument, tw,
                  ": m, n, threads, registers must be > 0 and efficiency in (0, 1]");
      m.gemm_tiles.push_back(tile);
    }
  }
  if (k.contains("tensor_cores")) {
    const std::string tw = where + " tensor_cores";
    const json& t = field<json>(k, "tensor_cores", where);
    BRAID_CHECK(t.is_object(), ErrorCode::kInvalidArgument, tw, ": expected an object");
    if (t.contains("efficiency")) m.tensor_cores.efficiency = field<double>(t, "efficiency", tw);
    BRAID_CHECK(m.tensor_cores.efficiency >= 0 && m.tensor_cores.efficiency <= 1,
                ErrorCode::kInvalidArgument, tw, ": efficiency must be in [0, 1]");
    if (t.contains("layout_conversions")) {
      for (const std::string& c : field<std::vector<std::string>>(t, "layout_conversions", tw)) {
        if (c == "input") {
          m.tensor_cores.convert_input = true;
        } else if (c == "filter") {
          m.tensor_cores.convert_filter = true;
        } else if (c == "output") {
          m.tensor_cores.convert_output = true;
        } else {
          BRAID_THROW(ErrorCode::kInvalidArgument, tw,
                      ": layout_conversions lists 'input', 'filter' or 'output', not '", c, "'");
        }
      }
    }
  }
  for (int s : m.split_k)
    BRAID_CHECK(s >= 1, ErrorCode::kInvalidArgument, where, ": split_k factors must be >= 1");
  BRAID_CHECK(m.elements_per_thread >= 1 && m.block_latency_us >= 0 && m.library_call_us >= 0 &&
                  m.wait_latency_us >= 0,
              ErrorCode::kInvalidArgument, where,
              ": elements_per_thread must be >= 1 and the latencies >= 0");
  return m;
}

}  // namespace

std::filesystem::path devices_dir() {
  if (const char* d = std::getenv("BRAID_DEVICES_DIR"); d && *d) return d;
  return BRAID_DEFAULT_DEVICES_DIR;
}

std::vector<std::string> device_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(devices_dir(), ec))
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::pair<std::string, int> parse_device_set(const std::string& spec) {
  // A device's own name wins: "rtx3080" is one RTX 3080, not 3080 "rt"s.
  if (std::filesystem::exists(devices_dir() / (spec + ".json"))) return {spec, 1};
  const size_t x = spec.rfind('x');
  if (x == std::string::npos || x == 0 || x + 1 >= spec.size() ||
      spec.find_first_not_of("0123456789", x + 1) != std::string::npos ||
      std::filesystem::path(spec).extension() == ".json")
    return {spec, 1};
  // A device each: the count is bounded like braid's --devices.
  const auto count =
      static_cast<int>(parse_int(std::string_view(spec).substr(x + 1), 1, kMaxDeviceSetCount,
                                 "the number of devices", "device set '" + spec + "'"));
  return {spec.substr(0, x), count};
}

std::filesystem::path device_path(const std::string& name_or_path) {
  std::filesystem::path path = parse_device_set(name_or_path).first;
  if (path.extension() != ".json") {
    path = devices_dir() / (path.string() + ".json");
    if (!std::filesystem::exists(path)) {
      std::string known;
      for (const std::string& n : device_names()) known += (known.empty() ? "" : ", ") + n;
      BRAID_THROW(ErrorCode::kNotFound, "unknown device '", name_or_path, "' (known: ", known,
                  "; or give a .json file)");
    }
  }
  return path;
}

namespace {

// The dense tensor-core peak for `p` in TFLOP/s and the device file's field that gives it.
std::pair<double, const char*> tensor_peak(const DeviceSpec& d, Precision p) {
  switch (p) {
    case Precision::kTf32:
      return {d.peak_tensor_tf32_tflops, "peak_tensor_tf32_tflops"};
    case Precision::kFp16:
      return {d.peak_tensor_fp16_tflops, "peak_tensor_fp16_tflops"};
    case Precision::kBf16:
      return {d.peak_tensor_bf16_tflops, "peak_tensor_bf16_tflops"};
    case Precision::kFp32:
      break;
  }
  return {d.peak_fp32_tflops * d.sustained_fp32_fraction, "peak_fp32_tflops"};
}

}  // namespace

double DeviceSpec::gemm_flop_scale() const {
  if (precision == Precision::kFp32) return 1;
  return sustained_fp32_flops() / (tensor_peak(*this, precision).first * 1e12);
}

DeviceSpec with_precision(DeviceSpec spec, Precision p) {
  const auto [peak, field_name] = tensor_peak(spec, p);
  BRAID_CHECK(peak > 0, ErrorCode::kUnsupported, "sim: ", spec.name, " has no ", to_string(p),
              " tensor-core peak (", field_name, " in its device file)");
  spec.precision = p;
  return spec;
}

DeviceSpec load_device(const std::string& name_or_path) {
  const std::filesystem::path path = device_path(name_or_path);
  std::ifstream in(path);
  BRAID_CHECK(in.good(), ErrorCode::kNotFound, "cannot open device file ", path.string());
  return parse_device(std::string(std::istreambuf_iterator<char>(in), {}), path.string());
}

DeviceSpec parse_device(std::string_view text, const std::string& where) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    BRAID_THROW(ErrorCode::kInvalidArgument, where, ": not valid JSON (", e.what(), ")");
  }
  BRAID_CHECK(j.is_object() && j.contains("format") && j.at("format") == "braid.device/1",
              ErrorCode::kInvalidArgument, where, ": expected \"format\": \"braid.device/1\"");
  DeviceSpec d;
  d.name = field<std::string>(j, "name", where);
  d.title = field<std::string>(j, "title", where);
  d.architecture = field<std::string>(j, "architecture", where);
  d.source = field<std::string>(j, "source", where);
  d.sms = field<int>(j, "sms", where);
  d.clock_mhz = field<double>(j, "clock_mhz", where);
  d.peak_fp32_tflops = field<double>(j, "peak_fp32_tflops", where);
  d.peak_tensor_fp16_tflops = field<double>(j, "peak_tensor_fp16_tflops", where);
  if (j.contains("peak_tensor_tf32_tflops"))
    d.peak_tensor_tf32_tflops = field<double>(j, "peak_tensor_tf32_tflops", where);
  if (j.contains("peak_tensor_bf16_tflops"))
    d.peak_tensor_bf16_tflops = field<double>(j, "peak_tensor_bf16_tflops", where);
  d.dram_gbps = field<double>(j, "dram_gbps", where);
  if (j.contains("sustained_fp32_fraction"))
    d.sustained_fp32_fraction = field<double>(j, "sustained_fp32_fraction", where);
  BRAID_CHECK(d.sustained_fp32_fraction > 0 && d.sustained_fp32_fraction <= 1,
              ErrorCode::kInvalidArgument, where, ": sustained_fp32_fraction must be in (0, 1]");
  d.l2_bytes = field<long long>(j, "l2_bytes", where);
  const json per_sm = field<json>(j, "per_sm", where);
  const std::string sm_where = where + " per_sm";
  d.per_sm = {field<int>(per_sm, "max_threads", sm_where),
              field<int>(per_sm, "max_warps", sm_where), field<int>(per_sm, "registers", sm_where),
              field<int>(per_sm, "shared_memory_bytes", sm_where),
              field<int>(per_sm, "max_blocks", sm_where)};
  const json host = field<json>(j, "host", where);
  const std::string host_where = where + " host";
  d.host = {field<double>(host, "launch_us", host_where),
            field<double>(host, "graph_launch_us", host_where),
            field<double>(host, "event_record_us", host_where),
            field<double>(host, "event_wait_us", host_where)};
  if (host.contains("kernel_latency_us"))
    d.host.kernel_latency_us = field<double>(host, "kernel_latency_us", host_where);
  d.max_resident_grids = field<int>(j, "max_resident_grids", where);
  d.hardware_queues = field<int>(j, "hardware_queues", where);
  for (const json& link : field<json>(j, "links", where)) {
    Link l{field<std::string>(link, "kind", where + " links"),
           field<double>(link, "gbps_per_direction", where + " links")};
    l.latency_us = link.contains("latency_us") ? field<double>(link, "latency_us", where + " links")
                                               : (l.kind.starts_with("nvlink") ? 2.0 : 5.0);
    d.links.push_back(std::move(l));
  }

  if (j.contains("kernel_model")) d.kernel_model = read_kernel_model(j["kernel_model"], where);

  for (auto [value, key] : {std::pair{double(d.sms), "sms"},
                            {d.clock_mhz, "clock_mhz"},
                            {d.peak_fp32_tflops, "peak_fp32_tflops"},
                            {d.dram_gbps, "dram_gbps"},
                            {double(d.l2_bytes), "l2_bytes"},
                            {double(d.per_sm.max_threads), "per_sm.max_threads"},
                            {double(d.per_sm.registers), "per_sm.registers"},
                            {double(d.per_sm.shared_memory_bytes), "per_sm.shared_memory_bytes"},
                            {double(d.per_sm.max_blocks), "per_sm.max_blocks"},
                            {double(d.max_resident_grids), "max_resident_grids"},
                            {double(d.hardware_queues), "hardware_queues"}})
    check_positive(value, key, where);
  BRAID_CHECK(int64_t{d.per_sm.max_warps} * 32 == d.per_sm.max_threads, ErrorCode::kInvalidArgument,
              where, ": per_sm.max_warps (", d.per_sm.max_warps, ") x 32 != per_sm.max_threads (",
              d.per_sm.max_threads, ")");
  BRAID_CHECK(d.peak_tensor_fp16_tflops >= 0 && d.peak_tensor_tf32_tflops >= 0 &&
                  d.peak_tensor_bf16_tflops >= 0 && d.host.launch_us >= 0 &&
                  d.host.graph_launch_us >= 0 && d.host.event_record_us >= 0 &&
                  d.host.event_wait_us >= 0 && d.host.kernel_latency_us >= 0,
              ErrorCode::kInvalidArgument, where, ": tensor peak and host costs must be >= 0");
  for (const Link& link : d.links) {
    check_positive(link.gbps_per_direction, "links", where);
    BRAID_CHECK(link.latency_us >= 0, ErrorCode::kInvalidArgument, where,
                ": links latency_us must be >= 0");
  }
  return d;
}

}  // namespace braid::sim
