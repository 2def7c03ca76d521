// Kernels from units: the tiling covers the GEMM, every kernel fits an SM of its device, fused
// epilogues and views launch nothing of their own, merges become one GEMM plus a split.
#include "sim/kernels.h"

#include <gtest/gtest.h>

#include <iostream>

#include "base/error.h"
#include "ir/op_cost.h"
#include "models/loader.h"
#include "sim/program.h"
#include "sim/sim_cost.h"

namespace braid::sim {
namespace {

models::LoadedModel load(const std::string& name) {
  models::LoadOptions options;
  options.with_weights = false;
  return models::load_model(name, options);
}

TEST(Kernels, EveryZooUnitBecomesKernelsThatFitAndCarryItsWork) {
  for (const char* device : {"v100", "rtx3080", "jetson_nano", "h100"}) {
    const DeviceSpec spec = load_device(device);
    for (const char* model : {"inception_v3", "nasnet", "squeezenet", "bert"}) {
      SCOPED_TRACE(std::string(device) + " " + model);
      const models::LoadedModel m = load(model);
      const UnitKernels kernels(m.units, spec);
      for (size_t u = 0; u < m.units.num_units(); ++u) {
        const ir::Unit& unit = m.units.unit(UnitId(u));
        double flops = 0;
        for (const Kernel& k : kernels.of(UnitId(u))) {
          EXPECT_GT(k.blocks_per_sm(spec), 0) << k.name;
          EXPECT_GE(k.blocks, 1) << k.name;
          flops += k.flops * k.blocks;
        }
        // Padded tiles and split-K reductions only add work; nothing is lost.
        double op_flops = 0;
        for (NodeId n : unit.ops) op_flops += double(ir::op_flops(*m.graph, n));
        EXPECT_GE(flops * 1.0000001, op_flops) << unit.name;
      }
    }
  }
}

TEST(Kernels, ConvBnReluIsOneGemmAndViewsLaunchNothing) {
  const models::LoadedModel m = load("inception_v3");
  const DeviceSpec v100 = load_device("v100");
  size_t views = 0;
  for (size_t u = 0; u < m.units.num_units(); ++u) {
    const std::string sig = m.units.signature(UnitId(u));
    const std::vector<Kernel> ks = unit_kernels(m.units, UnitId(u), v100);
    if (sig == "Conv-BatchNormalization-Relu" || sig == "Conv-Relu") {
      ASSERT_FALSE(ks.empty());
      EXPECT_NE(ks.front().name.find("igemm"), std::string::npos) << ks.front().name;
      EXPECT_LE(ks.size(), 2u) << sig;  // the GEMM, and a split-K reduction at most
    }
    if (sig == "Flatten" || sig == "Reshape") {
      EXPECT_TRUE(ks.empty()) << sig;
      ++views;
    }
  }
  SUCCEED() << views << " view units";
}

TEST(Kernels, AWeightedDagUnitTakesItsLatencyOnAnIdleDevice) {
  const DeviceSpec v100 = load_device("v100");
  ir::Unit a{.name = "a", .latency = Micros(250)};
  const ir::UnitGraph g = ir::UnitGraph::from_dag("one", {a}, {});
  const std::vector<Kernel> ks = unit_kernels(g, UnitId(0), v100);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_NEAR(idle_kernel_us(ks[0], v100), 250 + SmModel::kBlockLatencyUs, 1e-6);
}

TEST(Kernels, TheTileHeuristicFillsTheDeviceForSmallOutputs) {
  // Late Inception layers (8x8 maps): a 128x128 tile would give a handful of blocks; the
  // heuristic picks smaller tiles or split-K so the grid reaches the SMs.
  const models::LoadedModel m = load("inception_v3");
  const DeviceSpec v100 = load_device("v100");
  const auto u = m.units.find_unit("mixed_7c/branch1x1");
  ASSERT_TRUE(u.has_value());
  const std::vector<Kernel> ks = unit_kernels(m.units, *u, v100);
  ASSERT_FALSE(ks.empty());
  EXPECT_GE(ks.front().blocks, 20) << ks.front().name;
}

// Issue 27: a ConvTranspose is priced as the cuDNN GEMM of its FLOPs (plus a crop where the
// CUDA executor needs one), a Resize as one memory-bound element-wise kernel.
TEST(Kernels, ConvTransposeIsAGemmAndResizeIsElementwise) {
  ir::GraphBuilder b("deconv_resize");
  const auto f32 = [](ir::Shape s) { return ir::TensorType{ir::DType::kFloat32, std::move(s)}; };
  const ValueId x = b.add_input("x", f32({2, 32, 14, 14}));
  const ValueId w = b.add_parameter("w", f32({32, 8, 4, 4}), ir::ParamInit::normal(0.1f));
  const ValueId bias = b.add_parameter("b", f32({16}), ir::ParamInit::normal(0.1f));
  ValueId y = b.add_op(
      ir::OpKind::ConvTranspose,
      ir::ConvTransposeAttrs{.kernel = {4, 4}, .stride = {2, 2}, .pads = {1, 1, 2, 2}, .groups = 2},
      {x, w, bias}, "deconv");
  y = b.add_op(ir::OpKind::Relu, {}, {y}, "relu");
  const ir::Shape ys = b.type(y).shape;  // a copy: add_op grows the builder's values
  ir::ResizeAttrs resize{.mode = ir::ResizeMode::kLinear,
                         .sizes = {ys[0], ys[1], ys[2] * 2, ys[3] * 2},
                         .scales = {1, 1, 2, 2}};
  b.mark_output(b.add_op(ir::OpKind::Resize, resize, {y}, "resize"));
  const auto graph = std::make_shared<const ir::Graph>(std::move(b).build());
  const ir::UnitGraph units = ir::fuse(graph);
  for (const char* device : {"v100", "h100"})
    for (bool per_op : {false, true}) {
      SCOPED_TRACE(std::string(device) + (per_op ? " per-op" : " fused"));
      DeviceSpec spec = load_device(device);
      spec.kernel_model.per_op_kernels = per_op;
      bool saw_gemm = false, saw_resize = false;
      for (size_t u = 0; u < units.num_units(); ++u) {
        const std::vector<Kernel> ks = unit_kernels(units, UnitId(u), spec);
        double flops = 0, op_flops = 0;
        for (NodeId n : units.unit(UnitId(u)).ops) op_flops += double(ir::op_flops(*graph, n));
        for (const Kernel& k : ks) {
          EXPECT_GT(k.blocks_per_sm(spec), 0) << k.name;
          EXPECT_GT(idle_kernel_us(k, spec), 0) << k.name;
          flops += k.flops * k.blocks;
          saw_gemm = saw_gemm || (k.gemm && k.name.find("deconv") != std::string::npos);
          saw_resize = saw_resize || k.name.find("resize") != std::string::npos;
        }
        EXPECT_GE(flops * 1.0000001, op_flops) << units.unit(UnitId(u)).name;
      }
      EXPECT_TRUE(saw_gemm);
      EXPECT_TRUE(saw_resize);
    }
}

// Issue 29: a plan's precision reaches the kernels. GEMM work is scaled by the FP32/tensor-core
// peak ratio of the device file (H100: 66.9 vs 989 TFLOP/s in FP16), every tensor's bytes by
// its element size; a device without that tensor peak is refused by name.
TEST(Kernels, PrecisionScalesGemmWorkAndTensorBytes) {
  const models::LoadedModel m = load("googlenet");
  const DeviceSpec fp32 = load_device("h100");
  const DeviceSpec fp16 = with_precision(fp32, Precision::kFp16);
  EXPECT_NEAR(fp16.gemm_flop_scale(), 66.9 / 989, 1e-9);
  EXPECT_EQ(fp16.element_bytes_scale(), 0.5);
  EXPECT_NEAR(with_precision(fp32, Precision::kTf32).gemm_flop_scale(), 66.9 / 494.7, 1e-9);
  EXPECT_EQ(with_precision(fp32, Precision::kTf32).element_bytes_scale(), 1.0);
  const TensorCoreModel& tc = fp16.kernel_model.tensor_cores;
  const int conversions_per_conv =
      int(tc.convert_input) + int(tc.convert_filter) + int(tc.convert_output);
  EXPECT_GT(conversions_per_conv, 0) << "devices/h100.json lists its layout conversions";
  size_t gemm_units = 0, elementwise_units = 0;
  for (size_t u = 0; u < m.units.num_units(); ++u) {
    const std::vector<Kernel> a = unit_kernels(m.units, UnitId(u), fp32);
    const std::vector<Kernel> b = unit_kernels(m.units, UnitId(u), fp16);
    const std::string& name = m.units.unit(UnitId(u)).name;
    double gemm_flops = 0, bytes_a = 0, bytes_b = 0, us_a = 0, us_b = 0;
    bool gemm = false;
    int layouts_a = 0, layouts_b = 0;  // TensorCoreModel's layout conversions
    for (const Kernel& k : a) {
      gemm = gemm || k.gemm;
      if (!k.gemm) bytes_a += k.dram_bytes * k.blocks;
      if (k.gemm) us_a += idle_kernel_us(k, fp32);
      layouts_a += k.name.ends_with(" layout");
    }
    for (const Kernel& k : b) {
      (k.gemm ? gemm_flops : bytes_b) += k.gemm ? k.flops * k.blocks : k.dram_bytes * k.blocks;
      if (k.gemm) us_b += idle_kernel_us(k, fp16);
      layouts_b += k.name.ends_with(" layout");
    }
    if (gemm) {
      ++gemm_units;
      // Scaled back, the tiles still carry every FLOP of the unit (they may pad more: a cheaper
      // GEMM can take a larger tile), and the GEMM is faster on an idle device; the NCHW
      // convolution pays its layout conversions in 16 bits only (googlenet: one conv per unit).
      double op_flops = 0;
      for (NodeId n : m.units.unit(UnitId(u)).ops) op_flops += double(ir::op_flops(*m.graph, n));
      EXPECT_GE(gemm_flops / fp16.gemm_flop_scale() * 1.0000001, op_flops) << name;
      EXPECT_LT(us_b, us_a) << name;
      EXPECT_EQ(layouts_a, 0) << name;
      EXPECT_EQ(layouts_b, conversions_per_conv) << name;
    } else if (bytes_a > 0) {
      ++elementwise_units;
      EXPECT_NEAR(bytes_b, bytes_a / 2, 1e-6 * bytes_a) << name;
    }
  }
  EXPECT_GT(gemm_units, 50u);
  EXPECT_GT(elementwise_units, 5u);
  try {
    with_precision(load_device("v100"), Precision::kBf16);
    ADD_FAILURE() << "a V100 in BF16 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("peak_tensor_bf16_tflops"), std::string::npos) << e.what();
  }
}

// CostModel::unit_resources on the simulator: the first kernel's block resources and grid, an
// occupancy in (0, 1], nothing for a unit that launches nothing, and the bound from the device's
// ridge: on the H100 (~20 FLOP/byte) GoogLeNet's 3x3 convolutions are compute-bound and its
// pools and concats memory-bound.
TEST(Kernels, SimCostAnswersUnitResourcesFromItsKernels) {
  const DeviceSpec spec = load_device("h100");
  const models::LoadedModel m = load("googlenet");
  SimCostModel cost(m.units, spec);
  int compute = 0, memory = 0, silent = 0;
  for (size_t i = 0; i < m.units.num_units(); ++i) {
    const UnitId u = make_id<UnitId>(i);
    const std::vector<Kernel> ks = unit_kernels(m.units, u, spec);
    const std::optional<cost::UnitResources> r = cost.unit_resources(u);
    SCOPED_TRACE(m.units.unit(u).name);
    if (ks.empty()) {
      EXPECT_FALSE(r);
      ++silent;
      continue;
    }
    ASSERT_TRUE(r);
    EXPECT_EQ(r->per_block.threads, ks.front().threads);
    EXPECT_EQ(r->per_block.registers, ks.front().registers);
    EXPECT_EQ(r->per_block.shared_memory, ks.front().shared_memory);
    EXPECT_EQ(r->blocks, ks.front().blocks);
    EXPECT_GT(r->occupancy, 0);
    EXPECT_LE(r->occupancy, 1);
    const std::string& name = m.units.unit(u).name;
    if (name.find("pool") != std::string::npos) {
      EXPECT_EQ(r->bound, ir::UnitClass::kMemory);
    }
    if (ks.front().gemm && ks.front().flops * ks.front().blocks > 1e8) {
      EXPECT_EQ(r->bound, ir::UnitClass::kCompute);
    }
    (r->bound == ir::UnitClass::kCompute ? compute : memory) += 1;
  }
  std::cout << "googlenet on h100: " << compute << " compute-bound, " << memory << " memory-bound, "
            << silent << " without kernels\n";
  EXPECT_GT(compute, 0);
  EXPECT_GT(memory, 0);
}

}  // namespace
}  // namespace braid::sim
