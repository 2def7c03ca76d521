// The server end to end on a loopback port: every endpoint, bad requests with their statuses and
// messages, served outputs equal to a plain run (JSON and binary tensors), a burst that fills
// the queues accounted for, and a graceful drain.
#include "serve/server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstring>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "exec/cpu/cpu_executor.h"
#include "runtime/exec_backend.h"
#include "sched/registry.h"

namespace braid::serve {
namespace {

using Outputs = std::vector<std::vector<float>>;
using nlohmann::json;

struct Fixture {
  runtime::ModelSet set;
  std::unique_ptr<runtime::ExecBackend> backend;
  std::unique_ptr<runtime::Policy> policy;
  std::vector<std::unique_ptr<exec::PreparedModel>> plain;  // the oracle

  Fixture() {
    auto sequential = sched::make_scheduler("sequential");
    for (const char* name : {"squeezenet", "googlenet"}) {
      set.add(name, {.load = {.zoo = {.image_size = 48}}});
      set.set_schedule(set.size() - 1, sequential->schedule(set.model(set.size() - 1).units()));
    }
    backend = std::make_unique<runtime::ExecBackend>(set);
    policy = runtime::make_policy("static");
    auto executor = exec::make_cpu_executor({.pin_threads = false});
    for (size_t m = 0; m < set.size(); ++m) {
      const runtime::RuntimeModel& model = set.model(m);
      plain.push_back(executor->prepare({model.units().graph_ptr(),
                                         std::make_shared<const ir::Weights>(model.loaded.weights),
                                         &model.units(), &model.plan}));
    }
  }
  std::vector<float> input(size_t m, uint64_t seed) const {
    const ir::Graph& g = *set.model(m).loaded.graph;
    std::vector<float> x(g.value(g.inputs()[0]).type.elements());
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (float& f : x) f = dist(rng);
    return x;
  }
  std::vector<float> plain_output(size_t m, const std::vector<float>& x) {
    auto request = plain[m]->new_request();
    plain[m]->set_input(*request, 0, x);
    plain[m]->run(*request);
    auto y = plain[m]->output(*request, 0);
    return {y.begin(), y.end()};
  }
  json infer_body(size_t m, const std::vector<float>& x, const std::string& id = "") const {
    const ir::Graph& g = *set.model(m).loaded.graph;
    const ir::Value& in = g.value(g.inputs()[0]);
    json body = {
        {"inputs",
         {{{"name", in.name}, {"shape", in.type.shape}, {"datatype", "FP32"}, {"data", x}}}}};
    if (!id.empty()) body["id"] = id;
    return body;
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

std::string path(const Fixture& f, size_t m, const std::string& tail) {
  return "/v2/models/" + f.set.model(m).name + tail;
}

TEST(Server, HealthMetadataAndUnknownModels) {
  Fixture& f = fixture();
  Server server(f.set, *f.backend, *f.policy, nullptr, {.port = 0});
  server.start();
  httplib::Client c("127.0.0.1", server.port());
  EXPECT_EQ(c.Get("/v2/health/live")->status, 200);
  EXPECT_EQ(c.Get("/v2/health/ready")->status, 200);
  auto meta = c.Get("/v2");
  ASSERT_EQ(meta->status, 200);
  EXPECT_EQ(json::parse(meta->body)["name"], "braid");

  auto model = c.Get(path(f, 1, ""));
  ASSERT_EQ(model->status, 200);
  const json m = json::parse(model->body);
  EXPECT_EQ(m["name"], "googlenet");
  ASSERT_EQ(m["inputs"].size(), 1u);
  EXPECT_EQ(m["inputs"][0]["datatype"], "FP32");
  EXPECT_EQ(m["inputs"][0]["shape"], json({1, 3, 48, 48}));
  EXPECT_EQ(c.Get(path(f, 1, "/versions/1"))->status, 200);
  EXPECT_EQ(c.Get(path(f, 1, "/ready"))->status, 200);

  auto unknown = c.Get("/v2/models/nope");
  EXPECT_EQ(unknown->status, 404);
  EXPECT_NE(
      json::parse(unknown->body)["error"].get<std::string>().find("Request for unknown model"),
      std::string::npos);
  EXPECT_EQ(c.Get(path(f, 0, "/versions/7"))->status, 404);
  auto no_route = c.Get("/v3/nothing");
  EXPECT_EQ(no_route->status, 404);
  EXPECT_TRUE(json::parse(no_route->body).contains("error"));
  server.shutdown();
  EXPECT_FALSE(server.ready());
}

// JSON in, JSON out; binary in, binary out: the outputs of a plain run, exactly; the id echoed.
TEST(Server, InferGivesAPlainRunsOutputs) {
  Fixture& f = fixture();
  Server server(f.set, *f.backend, *f.policy, nullptr, {.port = 0});
  server.start();
  httplib::Client c("127.0.0.1", server.port());
  for (size_t m = 0; m < 2; ++m) {
    const std::vector<float> x = f.input(m, 10 + m);
    const std::vector<float> want = f.plain_output(m, x);
    auto r = c.Post(path(f, m, "/infer"), f.infer_body(m, x, "req-7").dump(), "application/json");
    ASSERT_EQ(r->status, 200) << r->body;
    const json body = json::parse(r->body);
    EXPECT_EQ(body["id"], "req-7");
    EXPECT_EQ(body["model_name"], f.set.model(m).name);
    ASSERT_EQ(body["outputs"].size(), 1u);
    EXPECT_EQ(body["outputs"][0]["data"].get<std::vector<float>>(), want);

    // Binary: the JSON header, then the raw FP32 bytes; the output asked for in binary.
    const ir::Graph& g = *f.set.model(m).loaded.graph;
    json header = {
        {"inputs",
         {{{"name", g.value(g.inputs()[0]).name},
           {"shape", g.value(g.inputs()[0]).type.shape},
           {"datatype", "FP32"},
           {"parameters", {{"binary_data_size", x.size() * 4}}}}}},
        {"outputs",
         {{{"name", g.value(g.outputs()[0]).name}, {"parameters", {{"binary_data", true}}}}}}};
    const std::string head = header.dump();
    std::string request = head;
    request.append(reinterpret_cast<const char*>(x.data()), x.size() * 4);
    httplib::Headers headers = {{"Inference-Header-Content-Length", std::to_string(head.size())}};
    auto b = c.Post(path(f, m, "/infer"), headers, request, "application/octet-stream");
    ASSERT_EQ(b->status, 200) << b->body;
    ASSERT_TRUE(b->has_header("Inference-Header-Content-Length"));
    const size_t json_len = std::stoul(b->get_header_value("Inference-Header-Content-Length"));
    ASSERT_EQ(b->body.size(), json_len + want.size() * 4);
    std::vector<float> got(want.size());
    std::memcpy(got.data(), b->body.data() + json_len, want.size() * 4);
    EXPECT_EQ(got, want);
  }
}

TEST(Server, BadRequestsGetTheirStatusAndMessage) {
  Fixture& f = fixture();
  Server server(f.set, *f.backend, *f.policy, nullptr, {.port = 0, .max_request_bytes = 1 << 20});
  server.start();
  httplib::Client c("127.0.0.1", server.port());
  auto expect = [&](const std::string& body, int status, const std::string& fragment) {
    auto r = c.Post(path(f, 0, "/infer"), body, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << body.substr(0, 80);
    const json j = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << r->body;
    EXPECT_NE(j["error"].get<std::string>().find(fragment), std::string::npos)
        << j["error"] << " lacks '" << fragment << "'";
  };
  expect("{not json", 400, "");
  json wrong_shape = f.infer_body(0, f.input(0, 1));
  wrong_shape["inputs"][0]["shape"] = {1, 3, 48};
  expect(wrong_shape.dump(), 400, "shape");
  json wrong_type = f.infer_body(0, f.input(0, 1));
  wrong_type["inputs"][0]["datatype"] = "INT32";
  expect(wrong_type.dump(), 400, "datatype");
  json unknown_input = f.infer_body(0, f.input(0, 1));
  unknown_input["inputs"][0]["name"] = "nope";
  expect(unknown_input.dump(), 400, "nope");
  std::string huge(2 << 20, ' ');
  expect(huge, 413, "too large");
  auto unknown = c.Post("/v2/models/nope/infer", "{}", "application/json");
  EXPECT_EQ(unknown->status, 404);
  // The server still serves after all of them.
  auto ok = c.Post(path(f, 0, "/infer"), f.infer_body(0, f.input(0, 2)).dump(), "application/json");
  EXPECT_EQ(ok->status, 200);
}

// A burst from many clients against small queues: every request gets one answer, 200 or the
// overload status; the statistics and the metrics count the successes.
TEST(Server, ABurstIsAnsweredOnceEach) {
  Fixture& f = fixture();
  Server server(f.set, *f.backend, *f.policy, nullptr,
                {.port = 0, .queue_capacity = 2, .overload_status = 429, .http_threads = 24});
  server.start();
  constexpr int kClients = 12, kEach = 5;
  std::atomic<int> ok{0}, overloaded{0}, other{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < kClients; ++t)
    clients.emplace_back([&, t] {
      httplib::Client c("127.0.0.1", server.port());
      for (int i = 0; i < kEach; ++i) {
        const size_t m = size_t((t + i) % 2);
        auto r = c.Post(path(f, m, "/infer"), f.infer_body(m, f.input(m, t * 100 + i)).dump(),
                        "application/json");
        if (r && r->status == 200)
          ++ok;
        else if (r && r->status == 429 && r->has_header("Retry-After"))
          ++overloaded;
        else
          ++other;
      }
    });
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(ok + overloaded, kClients * kEach);
  EXPECT_EQ(other, 0);
  EXPECT_GT(ok, 0);
  httplib::Client c("127.0.0.1", server.port());
  const json stats = json::parse(c.Get("/v2/models/stats")->body);
  ASSERT_TRUE(stats.contains("model_stats")) << stats.dump();
  ASSERT_EQ(stats["model_stats"].size(), 2u);
  int64_t success = 0;
  for (const json& s : stats["model_stats"])
    success += s["inference_stats"]["success"]["count"].get<int64_t>();
  EXPECT_EQ(success, ok.load());
  const std::string metrics = c.Get("/metrics")->body;
  EXPECT_NE(metrics.find("nv_inference_request_success{model=\"squeezenet\",version=\"1\"}"),
            std::string::npos);
  EXPECT_NE(metrics.find("braid_inference_request_duration_us_bucket"), std::string::npos);
}

// shutdown(): readiness false at once, new requests 503, accepted ones answered, then closed.
TEST(Server, ShutdownDrainsAcceptedRequests) {
  Fixture& f = fixture();
  Server server(f.set, *f.backend, *f.policy, nullptr, {.port = 0, .exit_timeout_s = 30});
  server.start();
  const int port = server.port();
  std::atomic<int> ok{0}, unavailable{0}, other{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 6; ++t)
    clients.emplace_back([&, t] {
      httplib::Client c("127.0.0.1", port);
      for (int i = 0; i < 4; ++i) {
        auto r = c.Post(path(f, 1, "/infer"), f.infer_body(1, f.input(1, t * 10 + i)).dump(),
                        "application/json");
        if (!r) return;  // the listener closed: the request was never accepted
        if (r->status == 200)
          ++ok;
        else if (r->status == 503)
          ++unavailable;
        else
          ++other;
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  server.shutdown();
  EXPECT_FALSE(server.ready());
  for (std::thread& t : clients) t.join();
  EXPECT_GT(ok, 0);
  EXPECT_EQ(other, 0);
  httplib::Client c("127.0.0.1", port);
  EXPECT_FALSE(c.Get("/v2/health/live")) << "the listener is closed";
}

}  // namespace
}  // namespace braid::serve
