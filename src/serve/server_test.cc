// The server end to end on a loopback port: every endpoint, bad requests with their statuses and
// messages, served outputs equal to a plain run (JSON and binary tensors), a burst that fills
// the queues accounted for, and a graceful drain.
#include "serve/server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstring>
#include <thread>

#include <nlohmann/json.hpp>

#include "runtime/exec_backend.h"
#include "runtime/test_models.h"

namespace braid::serve {
namespace {

using nlohmann::json;

struct Fixture {
  runtime::ModelSet set = runtime::testing_models::small_models(48, {"squeezenet", "googlenet"});
  std::unique_ptr<runtime::ExecBackend> backend = std::make_unique<runtime::ExecBackend>(set);
  std::unique_ptr<runtime::Policy> policy = runtime::make_policy("static");
  runtime::testing_models::PlainRuns plain{set};  // the oracle

  std::vector<float> input(size_t m, uint64_t seed) const {
    return runtime::testing_models::random_inputs(set.model(m), seed)[0];
  }
  std::vector<float> plain_output(size_t m, const std::vector<float>& x) const {
    return plain.run(m, {x})[0];
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
  // Model control mode NONE (Triton's default): load and unload have no effect, with an error.
  auto unload = c.Post("/v2/repository/models/squeezenet/unload", "", "application/json");
  EXPECT_EQ(unload->status, 400);
  EXPECT_NE(unload->body.find("model control mode NONE"), std::string::npos) << unload->body;
  EXPECT_EQ(c.Get(path(f, 0, "/ready"))->status, 200);
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
  // Shut down once the first answer is back, with the other clients' requests in flight (a
  // fixed sleep shut down before any was accepted on a loaded machine).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (ok == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_GT(ok, 0) << "no request was answered in 30 s";
  server.shutdown();
  EXPECT_FALSE(server.ready());
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(other, 0);
  httplib::Client c("127.0.0.1", port);
  EXPECT_FALSE(c.Get("/v2/health/live")) << "the listener is closed";
}

}  // namespace
}  // namespace braid::serve

namespace braid::serve {
namespace {

// A config.pbtxt's max_batch_size: the metadata shows a leading -1, a request of b samples is
// answered with b rows, each a plain run of its sample; b outside 1..max, a queue too small
// for the request and a config that contradicts the model are refused by name.
TEST(Server, ABatchingModelAnswersEverySampleAsAPlainRun) {
  Fixture& f = fixture();
  const ModelConfig batching{.max_batch_size = 4};
  Server server(f.set, *f.backend, *f.policy, nullptr,
                {.port = 0, .models = {{.config = batching}, {}}});
  server.start();
  httplib::Client c("127.0.0.1", server.port());
  const json meta = json::parse(c.Get(path(f, 0, ""))->body);
  EXPECT_EQ(meta["inputs"][0]["shape"], json({-1, 3, 48, 48}));
  EXPECT_EQ(meta["outputs"][0]["shape"][0], -1);
  // The other model keeps its own shapes.
  EXPECT_EQ(json::parse(c.Get(path(f, 1, ""))->body)["inputs"][0]["shape"][0], 1);

  const ir::Graph& g = *f.set.model(0).loaded.graph;
  const std::string input_name = g.value(g.inputs()[0]).name;
  auto body_of = [&](const std::vector<std::vector<float>>& samples) {
    std::vector<float> x;
    for (const auto& s : samples) x.insert(x.end(), s.begin(), s.end());
    return json{{"inputs",
                 {{{"name", input_name},
                   {"shape", {int64_t(samples.size()), 3, 48, 48}},
                   {"datatype", "FP32"},
                   {"data", x}}}}}
        .dump();
  };
  const std::vector<std::vector<float>> samples = {f.input(0, 1), f.input(0, 2), f.input(0, 3)};
  auto r = c.Post(path(f, 0, "/infer"), body_of(samples), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  const json out = json::parse(r->body)["outputs"][0];
  const std::vector<float> got = out["data"].get<std::vector<float>>();
  const size_t per_sample = got.size() / samples.size();
  EXPECT_EQ(out["shape"][0], 3);
  for (size_t i = 0; i < samples.size(); ++i) {
    const std::vector<float> want = f.plain_output(0, samples[i]);
    ASSERT_EQ(want.size(), per_sample);
    EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin() + ptrdiff_t(i * per_sample)))
        << "sample " << i;
  }
  auto too_many = c.Post(path(f, 0, "/infer"),
                         body_of({samples[0], samples[0], samples[0], samples[0], samples[0]}),
                         "application/json");
  EXPECT_EQ(too_many->status, 400);
  EXPECT_NE(too_many->body.find("outside 1..4"), std::string::npos) << too_many->body;
  server.shutdown();

  // A queue of 2 places cannot take a request of 3 samples: the overload status, nothing run.
  Server small(f.set, *f.backend, *f.policy, nullptr,
               {.port = 0, .models = {{.config = {.max_batch_size = 4, .max_queue_size = 2}}, {}}});
  small.start();
  httplib::Client c2("127.0.0.1", small.port());
  auto full = c2.Post(path(f, 0, "/infer"), body_of(samples), "application/json");
  EXPECT_EQ(full->status, 503);
  EXPECT_NE(full->body.find("queue full"), std::string::npos) << full->body;
  EXPECT_EQ(
      c2.Post(path(f, 0, "/infer"), body_of({samples[0], samples[1]}), "application/json")->status,
      200);
  small.shutdown();

  // A config that names an input the model does not have.
  ModelConfig wrong{.where = "squeezenet/config.pbtxt"};
  wrong.inputs.push_back({.name = "image", .datatype = DataType::kFp32, .dims = {3, 48, 48}});
  try {
    Server bad(f.set, *f.backend, *f.policy, nullptr, {.port = 0, .models = {{.config = wrong}}});
    ADD_FAILURE() << "a config naming no input of the model was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("squeezenet/config.pbtxt: input 'image'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace braid::serve

namespace braid::serve {
namespace {

DeploySettings two_zoo_models() {
  return {.models = {{.model = "squeezenet"}, {.model = "googlenet"}},
          .scenario = {.device = Device::cpu(), .image_size = 48, .scheduler = "sequential"},
          .policy = "static"};
}

// EXPLICIT model control: what is loaded at start, load and unload on request; requests sent
// all the while are each answered 200 with a plain run's outputs (a swap loses none); a model
// not loaded is 404, an unknown one cannot be loaded, and the metrics list what is loaded.
TEST(Server, ExplicitModelControlLoadsAndUnloadsWithoutLosingARequest) {
  Fixture& f = fixture();  // the same zoo models and weights: its plain runs are the oracle
  Server server(two_zoo_models(), ModelControl::kExplicit, {"squeezenet"}, {.port = 0});
  server.start();
  EXPECT_EQ(server.models(), std::vector<std::string>{"squeezenet"});
  httplib::Client c("127.0.0.1", server.port());
  EXPECT_EQ(c.Get(path(f, 1, ""))->status, 404);  // googlenet: known, not loaded
  json index = json::parse(c.Post("/v2/repository/index", "", "application/json")->body);
  ASSERT_EQ(index.size(), 2u);
  EXPECT_EQ(index[0]["state"], "READY");
  EXPECT_EQ(index[1]["name"], "googlenet");
  EXPECT_EQ(index[1]["state"], "UNAVAILABLE");
  EXPECT_EQ(index[1]["reason"], "unloaded");

  // Squeezenet requests from another thread while googlenet is loaded (a new deployment swapped
  // in, the old one finishing what it accepted).
  const std::vector<float> x = f.input(0, 21);
  const std::vector<float> want = f.plain_output(0, x);
  std::atomic<bool> stop{false};
  std::atomic<int> answered{0}, wrong{0};
  std::thread client([&] {
    httplib::Client cc("127.0.0.1", server.port());
    while (!stop) {
      auto r = cc.Post(path(f, 0, "/infer"), f.infer_body(0, x).dump(), "application/json");
      if (!r || r->status != 200 ||
          json::parse(r->body)["outputs"][0]["data"].get<std::vector<float>>() != want)
        ++wrong;
      ++answered;
    }
  });
  auto load = c.Post("/v2/repository/models/googlenet/load", "", "application/json");
  EXPECT_EQ(load->status, 200) << load->body;
  while (answered < 20) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  stop = true;
  client.join();
  EXPECT_EQ(wrong, 0) << "of " << answered << " requests across the load";
  EXPECT_EQ(server.models(), (std::vector<std::string>{"squeezenet", "googlenet"}));
  const std::vector<float> y = f.input(1, 22);
  auto r = c.Post(path(f, 1, "/infer"), f.infer_body(1, y).dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["outputs"][0]["data"].get<std::vector<float>>(),
            f.plain_output(1, y));

  // Unload: gone from requests and metrics; its counts come back with it.
  EXPECT_EQ(c.Post("/v2/repository/models/squeezenet/unload", "", "application/json")->status, 200);
  EXPECT_EQ(c.Post(path(f, 0, "/infer"), f.infer_body(0, x).dump(), "application/json")->status,
            404);
  EXPECT_EQ(server.models(), std::vector<std::string>{"googlenet"});
  const std::string metrics = c.Get("/metrics")->body;
  EXPECT_EQ(metrics.find("model=\"squeezenet\""), std::string::npos);
  EXPECT_NE(metrics.find("nv_inference_request_success{model=\"googlenet\",version=\"1\"} 1"),
            std::string::npos)
      << metrics;
  // Unloading what is not loaded does nothing (as in Triton); an unknown model cannot load.
  EXPECT_EQ(c.Post("/v2/repository/models/squeezenet/unload", "", "application/json")->status, 200);
  auto unknown = c.Post("/v2/repository/models/nope/load", "", "application/json");
  EXPECT_EQ(unknown->status, 400);
  EXPECT_NE(unknown->body.find("no model 'nope'"), std::string::npos) << unknown->body;
  EXPECT_EQ(server.models(), std::vector<std::string>{"googlenet"});  // unchanged
  auto with_config = c.Post("/v2/repository/models/squeezenet/load",
                            R"({"parameters": {"config": "{}"}})", "application/json");
  EXPECT_EQ(with_config->status, 501);
  // The last model unloaded: nothing served, the server still live and ready.
  EXPECT_EQ(c.Post("/v2/repository/models/googlenet/unload", "", "application/json")->status, 200);
  EXPECT_TRUE(server.models().empty());
  EXPECT_EQ(c.Get("/v2/health/ready")->status, 200);
  EXPECT_EQ(c.Post("/v2/repository/models/squeezenet/load", "", "application/json")->status, 200);
  EXPECT_EQ(server.models(), std::vector<std::string>{"squeezenet"});
  server.shutdown();
}

TEST(Server, StartupModelsAreChecked) {
  try {
    Server bad(two_zoo_models(), ModelControl::kExplicit, {"nope"}, {.port = 0});
    ADD_FAILURE() << "an unknown startup model was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("known: squeezenet, googlenet"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(Server(two_zoo_models(), ModelControl::kNone, {"squeezenet"}, {.port = 0}), Error);
  Server all(two_zoo_models(), ModelControl::kExplicit, {"*"}, {.port = 0});
  EXPECT_EQ(all.models(), (std::vector<std::string>{"squeezenet", "googlenet"}));
  Server none(two_zoo_models(), ModelControl::kExplicit, {}, {.port = 0});
  EXPECT_TRUE(none.models().empty());
}

}  // namespace
}  // namespace braid::serve
