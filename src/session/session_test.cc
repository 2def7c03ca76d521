// A session gives the outputs of a plain run of its schedule, from one thread or many, reuses
// its requests once their outputs are dropped, runs a schedule given as data, and names what is
// wrong with bad inputs, options and schedules.
#include "session/session.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "base/error.h"
#include "base/float16.h"
#include "exec/cpu/cpu_executor.h"
#include "models/onnx_test_util.h"
#include "sched/lower.h"
#include "sched/registry.h"

namespace braid::session {
namespace {

SessionOptions small(std::string scheduler = "sequential") {
  SessionOptions o{.scheduler = std::move(scheduler), .cost = tune::parse_cost_name("roofline")};
  o.load.zoo.image_size = 48;
  return o;
}

std::vector<float> random_input(const TensorInfo& t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> x(size_t(ir::num_elements(t.shape)));
  for (float& f : x) f = dist(rng);
  return x;
}

std::vector<float> run_once(const Session& s, const std::vector<float>& x) {
  const std::span<const float> in[] = {x};
  Outputs out = s.run(in);
  return {out.values(0).begin(), out.values(0).end()};
}

// The oracle: the CPU executor's plain run of the same model and schedule.
std::vector<float> plain_run(const Session& s, const std::vector<float>& x) {
  models::LoadOptions load;
  load.zoo.image_size = 48;
  models::LoadedModel m = models::load_model("googlenet", load);
  auto weights = std::make_shared<const ir::Weights>(std::move(m.weights));
  const sched::ExecutionPlan plan = sched::lower(m.units, s.schedule());
  auto prepared =
      exec::make_cpu_executor({.pin_threads = false})->prepare({m.graph, weights, &m.units, &plan});
  auto request = prepared->new_request();
  prepared->set_input(*request, 0, x);
  prepared->run(*request);
  const auto y = prepared->output(*request, 0);
  return {y.begin(), y.end()};
}

// sim:NAME: simulated time, values from the CPU executor; the outputs are the CPU session's.
TEST(Session, RunsOnASimulatedDeviceWithTheCpusOutputs) {
  SessionOptions on_sim = small("ios");
  on_sim.device = parse_device("sim:a100_40gb");
  on_sim.cost.reset();  // the planner's default for the device: sim:a100_40gb
  const Session sim = Session::open("googlenet", on_sim);
  EXPECT_EQ(sim.device(), Device::simulated("a100_40gb"));
  SessionOptions on_cpu = small();
  on_cpu.schedule = sim.schedule_json();  // the same plan on the CPU
  const Session cpu = Session::open("googlenet", on_cpu);
  const std::vector<float> x = random_input(sim.inputs()[0], 7);
  const std::vector<float> got = run_once(sim, x);
  EXPECT_EQ(got, run_once(cpu, x));
  EXPECT_EQ(got, plain_run(sim, x));
  EXPECT_EQ(run_once(sim, x), got);  // the request is reused
}

TEST(Session, RunsGiveAPlainRunsOutputsFromManyThreads) {
  const Session s = Session::open("googlenet", small("greedy"));
  ASSERT_EQ(s.inputs().size(), 1u);
  EXPECT_EQ(s.inputs()[0].shape, (std::vector<int64_t>{1, 3, 48, 48}));
  EXPECT_EQ(s.schedule_summary(), "greedy");
  std::vector<std::vector<float>> xs, wants;
  for (uint64_t k = 0; k < 4; ++k) {
    xs.push_back(random_input(s.inputs()[0], k));
    wants.push_back(plain_run(s, xs.back()));
  }
  EXPECT_EQ(run_once(s, xs[0]), wants[0]);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (size_t t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i)
        if (run_once(s, xs[(t + size_t(i)) % 4]) != wants[(t + size_t(i)) % 4]) ++wrong;
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong, 0);
}

// Buffers in the input's dtype give what floats give; a buffer a run read in place may change
// after it without changing its outputs (they are the request's own).
TEST(Session, InputBuffersGiveWhatFloatsGive) {
  const Session s = Session::open("squeezenet", small("greedy"));
  std::vector<float> x = random_input(s.inputs()[0], 4);
  const std::vector<float> want = run_once(s, x);
  const InputBuffer in[] = {{models::ElementType::kFloat32, std::as_bytes(std::span(x))}};
  Outputs out = s.run(in);
  EXPECT_EQ(std::vector<float>(out.values(0).begin(), out.values(0).end()), want);
  std::fill(x.begin(), x.end(), 0.0f);
  EXPECT_EQ(std::vector<float>(out.values(0).begin(), out.values(0).end()), want);
}

TEST(Session, OutputsStayValidWhileHeldAndTheirRequestIsReusedAfter) {
  const Session s = Session::open("squeezenet", small());
  const std::vector<float> a = random_input(s.inputs()[0], 1), b = random_input(s.inputs()[0], 2);
  const std::span<const float> in_a[] = {a}, in_b[] = {b};
  Outputs held = s.run(in_a);
  const std::vector<float> a_values(held.values(0).begin(), held.values(0).end());
  const float* a_data = held.values(0).data();
  {
    Outputs other = s.run(in_b);  // a second request: `held` still has its own
    EXPECT_NE(other.values(0).data(), a_data);
    EXPECT_EQ(std::vector<float>(held.values(0).begin(), held.values(0).end()), a_values);
  }
  // Dropped outputs give their request back: the next run reuses an arena.
  Outputs again = s.run(in_b);
  EXPECT_NE(again.values(0).data(), a_data);  // `held` still holds the first one
  EXPECT_THROW(again.values(5), Error);
}

TEST(Session, AScheduleGivenAsDataRunsAndRoundTrips) {
  const Session searched = Session::open("squeezenet", small("greedy"));
  SessionOptions o = small();
  o.schedule = searched.schedule_json();
  const Session given = Session::open("squeezenet", o);
  EXPECT_EQ(given.schedule_json(), searched.schedule_json());
  const std::vector<float> x = random_input(given.inputs()[0], 3);
  EXPECT_EQ(run_once(given, x), run_once(searched, x));

  nlohmann::json broken = searched.schedule_json();
  broken["stages"] = nlohmann::json::array();  // covers no unit
  o.schedule = broken;
  try {
    Session::open("squeezenet", o);
    ADD_FAILURE() << "a schedule that runs nothing was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidSchedule) << e.what();
  }
}

TEST(Session, BadInputsAndOptionsAreNamed) {
  const Session s = Session::open("squeezenet", small());
  const std::vector<float> short_input(10);
  const std::span<const float> in[] = {short_input};
  try {
    s.run(in);
    ADD_FAILURE() << "a short input was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("10 elements"), std::string::npos) << e.what();
  }
  EXPECT_THROW(s.run(std::span<const InputBuffer>{}), Error);
  const std::vector<int64_t> ids(size_t(ir::num_elements(s.inputs()[0].shape)));
  const InputBuffer wrong_dtype[] = {{models::ElementType::kInt64, std::as_bytes(std::span(ids))}};
  try {
    s.run(wrong_dtype);
    ADD_FAILURE() << "an int64 input to a float32 model was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("int64 given"), std::string::npos) << e.what();
  }
  auto code_of = [](const std::string& model, SessionOptions o) {
    try {
      Session::open(model, std::move(o));
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::kInternal;  // opened: not what these expect
  };
  EXPECT_EQ(code_of("no_such_model", small()), ErrorCode::kNotFound);
  EXPECT_EQ(code_of("squeezenet", small("no-such-scheduler")), ErrorCode::kNotFound);
  SessionOptions no_threads = small();
  no_threads.threads_per_stream = 0;
  EXPECT_EQ(code_of("squeezenet", no_threads), ErrorCode::kInvalidArgument);
  // 16-bit and TF32 plans are CUDA's: the CPU refuses them in one sentence, before any search.
  SessionOptions fp16 = small();
  fp16.precision = Precision::kFp16;
  try {
    Session::open("squeezenet", fp16);
    ADD_FAILURE() << "fp16 on the CPU was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("precision fp16 needs a GPU device"), std::string::npos)
        << e.what();
  }
  try {
    Session::from_onnx_bytes("not onnx", "junk", small());
    ADD_FAILURE() << "bytes that are not ONNX were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("junk"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace braid::session

namespace braid::session {
namespace {

// Issue 29: an FP16 model's session takes and gives float16 (computed upcast): its inputs in
// float16 bytes, or float32 rounded to float16 as read; Outputs::write gives float16 bytes.
TEST(Session, Float16ModelExchangesFloat16) {
  models::ModelMaker mm;
  mm.input("x", {1, 6});
  mm.output("y", {1, 6});
  for (auto* list : {mm.g->mutable_input(), mm.g->mutable_output()})
    for (auto& v : *list)
      v.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT16);
  auto* k = mm.g->add_initializer();
  k->set_name("k");
  k->set_data_type(onnx::TensorProto::FLOAT16);
  k->add_dims(1);
  const uint16_t minus_three = float_to_float16(-3.0f);
  k->mutable_raw_data()->append(reinterpret_cast<const char*>(&minus_three), 2);
  mm.node("Mul", "mul", {"x", "k"}, {"y"});
  const Session s =
      Session::from_onnx_bytes(mm.m.SerializeAsString(), "half", {.scheduler = "sequential"});
  ASSERT_EQ(s.inputs()[0].type, models::ElementType::kFloat16);
  EXPECT_EQ(s.inputs()[0].dtype, ir::DType::kFloat32);
  ASSERT_EQ(s.outputs()[0].type, models::ElementType::kFloat16);

  const std::vector<float> x = {0.1f, -1.7f, 3.3f, 1000.1f, 1e-6f, 30000.0f};
  std::vector<uint16_t> x16;
  for (float v : x) x16.push_back(float_to_float16(v));
  // Each output: the float16 input times -3, rounded to float16 (30000 * -3 overflows to -inf).
  std::vector<uint16_t> want;
  for (uint16_t h : x16) want.push_back(float_to_float16(-3.0f * float16_to_float(h)));
  auto output_of = [&](const InputBuffer& in) {
    const Outputs out = s.run(std::span(&in, 1));
    std::vector<uint16_t> y(6);
    out.write(0, std::as_writable_bytes(std::span(y)));
    EXPECT_THROW(out.write(0, std::as_writable_bytes(std::span(y).subspan(1))), Error);
    return y;
  };
  EXPECT_EQ(output_of({models::ElementType::kFloat16, std::as_bytes(std::span(x16))}), want);
  EXPECT_EQ(output_of({models::ElementType::kFloat32, std::as_bytes(std::span(x))}), want);
  // Floats as given are rounded to float16 too; values() are the upcast results, unrounded.
  const std::span<const float> xs(x);
  const Outputs floats = s.run(std::span(&xs, 1));
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(floats.values(0)[i], -3.0f * float16_to_float(x16[i])) << i;
  const std::vector<int64_t> ids(6, 1);
  const InputBuffer wrong{models::ElementType::kInt64, std::as_bytes(std::span(ids))};
  EXPECT_THROW(s.run(std::span(&wrong, 1)), Error);
}

}  // namespace
}  // namespace braid::session
