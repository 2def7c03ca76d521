// oneDNN op-class microbenchmark on braid's zoo shapes (issue 28, "Kernels"). Standalone: uses
// only oneDNN's public C++ API (dnnl.hpp) and builds against oneDNN 2.x (Debian's 2.6) and 3.x
// (PyPI's onednn / onednn-cpu-gomp) alike; bench/onednn/compare.sh builds it once per library
// and runs the builds interleaved. Primitives are made the way src/exec/cpu/cpu_kernels_nn.cc
// makes them: activations in braid's arena layout (nhwc, layout.h), fixed weights in the layout
// the primitive picks (format_tag::any, reordered once), user scratchpad, eltwise post-ops.
//
//   onednn_ops --threads N [--filter SUBSTR] [--min-ms MS]
//
// prints one CSV line per case: lib,threads,class,case,median_us,impl,min_us
// (`lib` is oneDNN's version; `impl` is pd.impl_info_str()).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>
#if DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_OMP
#include <omp.h>
#endif

namespace {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using dt = memory::data_type;
using tag = memory::format_tag;
using Dims = memory::dims;
using Args = std::unordered_map<int, memory>;

#if DNNL_VERSION_MAJOR >= 3
constexpr bool kV3 = true;
#else
constexpr bool kV3 = false;
#endif

dnnl::engine& eng() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}
dnnl::stream& strm() {
  static dnnl::stream s(eng());
  return s;
}

std::mt19937& rng() {
  static std::mt19937 g(42);
  return g;
}

memory filled(const memory::desc& md, float scale = 1.0f) {
  memory m(md, eng());
  auto* p = static_cast<float*>(m.get_data_handle());
  std::uniform_real_distribution<float> u(-scale, scale);
  const size_t n = md.get_size() / sizeof(float);
  for (size_t i = 0; i < n; ++i) p[i] = u(rng());
  return m;
}

dnnl::primitive_attr make_attr(const dnnl::post_ops& po) {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // as braid (cpu_kernels_dnnl.cc make_attr)
  a.set_post_ops(po);
  return a;
}

void append_relu(dnnl::post_ops& po) {
#if DNNL_VERSION_MAJOR >= 3
  po.append_eltwise(algorithm::eltwise_relu, 0.0f, 0.0f);
#else
  po.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
#endif
}

// One or more primitives run back to back as one measured step.
struct Step {
  std::vector<std::pair<dnnl::primitive, Args>> calls;
  std::string impl;
  std::vector<memory> keep;  // buffers the calls use
  void add(const dnnl::primitive& p, Args args, const dnnl::primitive_desc_base& pd) {
    const memory::desc sp = pd.scratchpad_desc();
    if (sp.get_size() > 0) {
      memory s(sp, eng());
      args[DNNL_ARG_SCRATCHPAD] = s;
      keep.push_back(s);
    }
    calls.emplace_back(p, std::move(args));
    if (!impl.empty()) impl += "+";
    impl += pd.impl_info_str();
  }
  void run() {
    for (auto& [p, a] : calls) p.execute(strm(), a);
    strm().wait();
  }
};

memory weights_for(const memory::desc& user_md, const memory::desc& wanted, float scale) {
  memory user = filled(user_md, scale);
  if (user_md == wanted) return user;
  memory w(wanted, eng());
  dnnl::reorder(user, w).execute(strm(), user, w);
  strm().wait();
  return w;
}

struct ConvSpec {
  int64_t n, ic, ih, iw, oc, kh, kw, sh, sw, ph, pw, groups = 1;
};

enum class Post { kNone, kRelu, kSumRelu, kBinaryRelu };

dnnl::convolution_forward::primitive_desc conv_pd(const memory::desc& src, const memory::desc& w,
                                                  const memory::desc& b, const memory::desc& dst,
                                                  const Dims& strides, const Dims& pad_l,
                                                  const Dims& pad_r, const dnnl::post_ops& po) {
  const Dims dil{0, 0};
#if DNNL_VERSION_MAJOR >= 3
  dnnl::convolution_forward::primitive_desc pd(eng(), prop_kind::forward_inference,
                                               algorithm::convolution_direct, src, w, b, dst,
                                               strides, dil, pad_l, pad_r, make_attr(po));
  // ONEDNN_SKIP=brdgmm_dw,brgconv_1x1: step past implementations whose names hold one of these
  // (as braid's executor does, cpu_kernels_nn.cc prefer_jit).
  if (const char* skip = std::getenv("ONEDNN_SKIP")) {
    auto skipped = [&] {
      std::string list = std::string(skip) + ",";
      for (size_t at = 0, comma; (comma = list.find(',', at)) != std::string::npos; at = comma + 1)
        if (comma > at && std::string(pd.impl_info_str()).find(list.substr(at, comma - at)) !=
                              std::string::npos)
          return true;
      return false;
    };
    while (skipped() && pd.next_impl()) {
    }
  }
  return pd;
#else
  dnnl::convolution_forward::desc d(prop_kind::forward_inference, algorithm::convolution_direct,
                                    src, w, b, dst, strides, dil, pad_l, pad_r);
  return {d, make_attr(po), eng()};
#endif
}

int64_t out_dim(int64_t i, int64_t k, int64_t s, int64_t p) { return (i + 2 * p - k) / s + 1; }

// Conv + bias in nhwc, weights `any`, with the given post-ops. kSumRelu: the residual is read
// from dst (conv += residual, then relu); kBinaryRelu: a binary_add post-op from its own buffer.
Step make_conv(const ConvSpec& c, Post post) {
  const int64_t oh = out_dim(c.ih, c.kh, c.sh, c.ph), ow = out_dim(c.iw, c.kw, c.sw, c.pw);
  const memory::desc src({c.n, c.ic, c.ih, c.iw}, dt::f32, tag::nhwc);
  const memory::desc dst({c.n, c.oc, oh, ow}, dt::f32, tag::nhwc);
  const Dims w_dims = c.groups > 1 ? Dims{c.groups, c.oc / c.groups, c.ic / c.groups, c.kh, c.kw}
                                   : Dims{c.oc, c.ic, c.kh, c.kw};
  const memory::desc w_any(w_dims, dt::f32, tag::any);
  const memory::desc w_user(w_dims, dt::f32, c.groups > 1 ? tag::goihw : tag::oihw);
  const memory::desc b({c.oc}, dt::f32, tag::x);
  dnnl::post_ops po;
  if (post == Post::kSumRelu) po.append_sum(1.0f);
  if (post == Post::kBinaryRelu) po.append_binary(algorithm::binary_add, dst);
  if (post != Post::kNone) append_relu(po);
  auto pd = conv_pd(src, w_any, b, dst, {c.sh, c.sw}, {c.ph, c.pw}, {c.ph, c.pw}, po);
  Step s;
  const float wscale = 1.0f / static_cast<float>(c.ic / c.groups * c.kh * c.kw);
  memory ms = filled(src), md = filled(dst, 0.1f), mb = filled(b, 0.1f);
  memory mw = weights_for(w_user, pd.weights_desc(), wscale);
  Args a{{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_BIAS, mb}, {DNNL_ARG_DST, md}};
  if (post == Post::kBinaryRelu) {
    memory r = filled(dst, 0.1f);
    a[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] = r;
    s.keep.push_back(r);
  }
  s.keep.insert(s.keep.end(), {ms, md, mb, mw});
  s.add(dnnl::convolution_forward(pd), std::move(a), pd);
  return s;
}

// braid today: the residual Add-Relu is a unit of its own after the conv (ir::fuse; a binary
// add with a relu post-op over the flat tensor, cpu_kernels_eltwise.cc build_binary).
Step make_conv_then_add(const ConvSpec& c) {
  Step s = make_conv(c, Post::kNone);
  const memory conv_dst = s.calls[0].second.at(DNNL_ARG_DST);
  const int64_t elems = static_cast<int64_t>(conv_dst.get_desc().get_size() / sizeof(float));
  const memory::desc flat({elems}, dt::f32, tag::x);
  dnnl::post_ops po;
  append_relu(po);
#if DNNL_VERSION_MAJOR >= 3
  dnnl::binary::primitive_desc pd(eng(), algorithm::binary_add, flat, flat, flat, make_attr(po));
#else
  dnnl::binary::primitive_desc pd({algorithm::binary_add, flat, flat, flat}, make_attr(po), eng());
#endif
  memory y(flat, eng(), conv_dst.get_data_handle());
  memory r = filled(flat, 0.1f), out(flat, eng());
  s.keep.insert(s.keep.end(), {y, r, out});
  s.add(dnnl::binary(pd), {{DNNL_ARG_SRC_0, y}, {DNNL_ARG_SRC_1, r}, {DNNL_ARG_DST, out}}, pd);
  return s;
}

Step make_pool(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t st, int64_t p,
               bool max) {
  const int64_t oh = out_dim(h, k, st, p), ow = out_dim(w, k, st, p);
  const memory::desc src({n, c, h, w}, dt::f32, tag::nhwc);
  const memory::desc dst({n, c, oh, ow}, dt::f32, tag::nhwc);
  const algorithm alg = max ? algorithm::pooling_max : algorithm::pooling_avg_include_padding;
  const dnnl::post_ops none;
#if DNNL_VERSION_MAJOR >= 3
  dnnl::pooling_forward::primitive_desc pd(eng(), prop_kind::forward_inference, alg, src, dst,
                                           {st, st}, {k, k}, {0, 0}, {p, p}, {p, p},
                                           make_attr(none));
#else
  dnnl::pooling_forward::desc d(prop_kind::forward_inference, alg, src, dst, {st, st}, {k, k},
                                {p, p}, {p, p});
  dnnl::pooling_forward::primitive_desc pd(d, make_attr(none), eng());
#endif
  Step s;
  memory ms = filled(src), md(dst, eng());
  s.keep.insert(s.keep.end(), {ms, md});
  s.add(dnnl::pooling_forward(pd), {{DNNL_ARG_SRC, ms}, {DNNL_ARG_DST, md}}, pd);
  return s;
}

// Gemm as braid runs it (cpu_kernels_nn.cc build_gemm): inner product, plain src, weights `any`.
Step make_fc(int64_t n, int64_t k, int64_t m) {
  const memory::desc src({n, k}, dt::f32, tag::nc), dst({n, m}, dt::f32, tag::nc);
  const memory::desc w_any({m, k}, dt::f32, tag::any), w_user({m, k}, dt::f32, tag::oi);
  const memory::desc b({m}, dt::f32, tag::x);
  const dnnl::post_ops none;
#if DNNL_VERSION_MAJOR >= 3
  dnnl::inner_product_forward::primitive_desc pd(eng(), prop_kind::forward_inference, src, w_any,
                                                 b, dst, make_attr(none));
#else
  dnnl::inner_product_forward::desc d(prop_kind::forward_inference, src, w_any, b, dst);
  dnnl::inner_product_forward::primitive_desc pd(d, make_attr(none), eng());
#endif
  Step s;
  memory ms = filled(src), md(dst, eng()), mb = filled(b, 0.1f);
  memory mw = weights_for(w_user, pd.weights_desc(), 1.0f / static_cast<float>(k));
  s.keep.insert(s.keep.end(), {ms, md, mb, mw});
  s.add(dnnl::inner_product_forward(pd),
        {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_BIAS, mb}, {DNNL_ARG_DST, md}}, pd);
  return s;
}

struct Case {
  std::string cls, name;
  std::function<Step()> make;
};

std::string conv_name(const ConvSpec& c) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "n%ld_%ldx%ldx%ld_o%ld_k%ldx%ld_s%ld%s", static_cast<long>(c.n),
                static_cast<long>(c.ic), static_cast<long>(c.ih), static_cast<long>(c.iw),
                static_cast<long>(c.oc), static_cast<long>(c.kh), static_cast<long>(c.kw),
                static_cast<long>(c.sh), c.groups > 1 ? "_dw" : "");
  return buf;
}

std::vector<Case> cases() {
  std::vector<Case> v;
  auto conv = [&](const std::string& cls, ConvSpec c, Post p = Post::kRelu) {
    v.push_back({cls, conv_name(c), [c, p] { return make_conv(c, p); }});
  };
  // 1x1 convolutions (resnet50, inception_v3, googlenet, squeezenet).
  for (ConvSpec c : std::vector<ConvSpec>{{1, 256, 56, 56, 64, 1, 1, 1, 1, 0, 0},
                                          {1, 64, 56, 56, 256, 1, 1, 1, 1, 0, 0},
                                          {1, 512, 28, 28, 128, 1, 1, 1, 1, 0, 0},
                                          {1, 1024, 14, 14, 256, 1, 1, 1, 1, 0, 0},
                                          {1, 2048, 7, 7, 512, 1, 1, 1, 1, 0, 0},
                                          {1, 768, 17, 17, 192, 1, 1, 1, 1, 0, 0},
                                          {1, 2048, 8, 8, 448, 1, 1, 1, 1, 0, 0},
                                          {1, 480, 14, 14, 96, 1, 1, 1, 1, 0, 0},
                                          {1, 128, 55, 55, 16, 1, 1, 1, 1, 0, 0},
                                          {8, 256, 56, 56, 64, 1, 1, 1, 1, 0, 0}})
    conv("conv1x1", c);
  // 3x3 convolutions.
  for (ConvSpec c : std::vector<ConvSpec>{{1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1},
                                          {1, 128, 28, 28, 128, 3, 3, 1, 1, 1, 1},
                                          {1, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1},
                                          {1, 512, 7, 7, 512, 3, 3, 1, 1, 1, 1},
                                          {1, 128, 56, 56, 128, 3, 3, 2, 2, 1, 1},
                                          {1, 64, 35, 35, 96, 3, 3, 1, 1, 1, 1},
                                          {1, 32, 147, 147, 64, 3, 3, 1, 1, 1, 1},
                                          {1, 16, 55, 55, 64, 3, 3, 1, 1, 1, 1},
                                          {1, 96, 28, 28, 128, 3, 3, 1, 1, 1, 1},
                                          {8, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1}})
    conv("conv3x3", c);
  // Stems: 7x7 stride 2 (resnet50, googlenet), 3x3 stride 2 on 3 channels (inception_v3).
  conv("stem", {1, 3, 224, 224, 64, 7, 7, 2, 2, 3, 3});
  conv("stem", {1, 3, 299, 299, 32, 3, 3, 2, 2, 0, 0});
  conv("stem", {8, 3, 224, 224, 64, 7, 7, 2, 2, 3, 3});
  // Inception's factorized 1x7 / 7x1 (and 1x3 / 3x1, 5x5).
  conv("conv1x7", {1, 192, 17, 17, 192, 1, 7, 1, 1, 0, 3});
  conv("conv1x7", {1, 192, 17, 17, 192, 7, 1, 1, 1, 3, 0});
  conv("conv1x7", {1, 128, 17, 17, 128, 1, 7, 1, 1, 0, 3});
  conv("conv1x7", {1, 384, 8, 8, 384, 1, 3, 1, 1, 0, 1});
  conv("conv1x7", {1, 48, 35, 35, 64, 5, 5, 1, 1, 2, 2});
  conv("conv1x7", {8, 192, 17, 17, 192, 1, 7, 1, 1, 0, 3});
  // Depthwise (nasnet's separable convs).
  conv("depthwise", {1, 168, 42, 42, 168, 3, 3, 1, 1, 1, 1, 168});
  conv("depthwise", {1, 336, 21, 21, 336, 5, 5, 1, 1, 2, 2, 336});
  conv("depthwise", {1, 672, 11, 11, 672, 3, 3, 1, 1, 1, 1, 672});
  conv("depthwise", {1, 42, 83, 83, 42, 7, 7, 2, 2, 3, 3, 42});
  // Inner product (Gemm heads).
  v.push_back({"fc", "n1_2048_1000", [] { return make_fc(1, 2048, 1000); }});
  v.push_back({"fc", "n1_1024_1000", [] { return make_fc(1, 1024, 1000); }});
  v.push_back({"fc", "n8_2048_1000", [] { return make_fc(8, 2048, 1000); }});
  // Pooling (nhwc).
  v.push_back({"pool", "max_n1_64x112_k3s2", [] { return make_pool(1, 64, 112, 112, 3, 2, 1, true); }});
  v.push_back({"pool", "max_n1_192x71_k3s2", [] { return make_pool(1, 192, 71, 71, 3, 2, 0, true); }});
  v.push_back({"pool", "max_n1_512x14_k3s1", [] { return make_pool(1, 512, 14, 14, 3, 1, 1, true); }});
  v.push_back({"pool", "avg_n1_768x17_k3s1", [] { return make_pool(1, 768, 17, 17, 3, 1, 1, false); }});
  v.push_back({"pool", "avg_n1_288x35_k3s1", [] { return make_pool(1, 288, 35, 35, 3, 1, 1, false); }});
  v.push_back({"pool", "max_n8_64x112_k3s2", [] { return make_pool(8, 64, 112, 112, 3, 2, 1, true); }});
  // Residual: a bottleneck's last 1x1 conv + Add + Relu (resnet50), three ways.
  for (ConvSpec c : std::vector<ConvSpec>{{1, 64, 56, 56, 256, 1, 1, 1, 1, 0, 0},
                                          {1, 128, 28, 28, 512, 1, 1, 1, 1, 0, 0},
                                          {1, 256, 14, 14, 1024, 1, 1, 1, 1, 0, 0},
                                          {1, 512, 7, 7, 2048, 1, 1, 1, 1, 0, 0},
                                          {8, 128, 28, 28, 512, 1, 1, 1, 1, 0, 0}}) {
    const std::string n = conv_name(c);
    v.push_back({"res_separate", n, [c] { return make_conv_then_add(c); }});
    v.push_back({"res_sum", n, [c] { return make_conv(c, Post::kSumRelu); }});
    v.push_back({"res_binary", n, [c] { return make_conv(c, Post::kBinaryRelu); }});
  }
  return v;
}

double now_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Timing {
  double median, min;
};

// Median (and min) microseconds per step: samples of k back-to-back steps (k so a sample is >= 300 us),
// until min_ms has passed and at least 15 samples are in.
Timing measure(Step& s, double min_ms) {
  for (int i = 0; i < 3; ++i) s.run();
  double t0 = now_us();
  s.run();
  const double one = std::max(now_us() - t0, 1.0);
  const int k = std::max(1, static_cast<int>(300.0 / one));
  std::vector<double> samples;
  const double start = now_us();
  while (samples.size() < 15 || now_us() - start < min_ms * 1000.0) {
    t0 = now_us();
    for (int i = 0; i < k; ++i) s.run();
    samples.push_back((now_us() - t0) / k);
    if (samples.size() > 2000) break;
  }
  std::sort(samples.begin(), samples.end());
  return {samples[samples.size() / 2], samples.front()};
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  std::string filter;
  double min_ms = 150;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--filter")) filter = argv[i + 1];
    else if (!std::strcmp(argv[i], "--min-ms")) min_ms = std::atof(argv[i + 1]);
  }
#if DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_OMP
  // As braid's lanes: the primitive takes its thread count at creation (cpu_kernels.h).
  omp_set_num_threads(threads);
#endif
  // TBB (PyPI's SYCL build): no such call through oneDNN; compare.sh runs the process under
  // taskset with `threads` CPUs, and TBB sizes its arena from the affinity mask.
  const dnnl_version_t* ver = dnnl_version();
  char lib[64];
  std::snprintf(lib, sizeof lib, "%d.%d.%d%s", ver->major, ver->minor, ver->patch,
                kV3 && DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_TBB ? "-tbb" : "");
  for (Case& c : cases()) {
    const std::string full = c.cls + "/" + c.name;
    if (!filter.empty() && full.find(filter) == std::string::npos) continue;
    Step s = c.make();
    const Timing t = measure(s, min_ms);
    std::printf("%s,%d,%s,%s,%.2f,%s,%.2f\n", lib, threads, c.cls.c_str(), c.name.c_str(),
                t.median, s.impl.c_str(), t.min);
    std::fflush(stdout);
  }
  return 0;
}
