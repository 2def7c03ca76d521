#include "serve/grpc_front.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include <fmt/format.h>

#include "base/error.h"
#include "serve/inference.grpc.pb.h"

namespace braid::serve {
namespace {

grpc::Status to_grpc(int http, const std::string& message) {
  switch (http) {
    case 200:
      return grpc::Status::OK;
    case 400:
      return {grpc::StatusCode::INVALID_ARGUMENT, message};
    case 404:
      return {grpc::StatusCode::NOT_FOUND, message};
    case 413:
    case 429:
      return {grpc::StatusCode::RESOURCE_EXHAUSTED, message};
    case 501:
      return {grpc::StatusCode::UNIMPLEMENTED, message};
    case 503:
      return {grpc::StatusCode::UNAVAILABLE, message};
    default:
      return {grpc::StatusCode::INTERNAL, message};
  }
}

template <typename T>
void append_values(std::string& out, const T* values, int n) {
  out.append(reinterpret_cast<const char*>(values), size_t(n) * sizeof(T));
}
template <typename To, typename From>
void append_narrowed(std::string& out, const google::protobuf::RepeatedField<From>& values) {
  for (const From v : values) {
    const To t = static_cast<To>(v);
    out.append(reinterpret_cast<const char*>(&t), sizeof(To));
  }
}

// Typed contents as the binary extension's little-endian bytes of `datatype` (then validated
// like raw bytes). A contents field of another type than the datatype's is refused by name.
std::string bytes_of_contents(const inference::ModelInferRequest::InferInputTensor& input) {
  const inference::InferTensorContents& c = input.contents();
  const std::optional<DataType> type = parse_datatype(input.datatype());
  std::string out;
  if (!type) return out;  // make_infer_request names the unknown datatype
  auto only = [&](int given, const char* field) {
    const int total = c.bool_contents_size() + c.int_contents_size() + c.int64_contents_size() +
                      c.uint_contents_size() + c.uint64_contents_size() + c.fp32_contents_size() +
                      c.fp64_contents_size() + c.bytes_contents_size();
    BRAID_CHECK(total == given, ErrorCode::kInvalidArgument, "input '", input.name(),
                "': ", input.datatype(), " values go in contents.", field);
  };
  switch (*type) {
    case DataType::kBool:
      only(c.bool_contents_size(), "bool_contents");
      append_narrowed<uint8_t>(out, c.bool_contents());
      break;
    case DataType::kInt8:
      only(c.int_contents_size(), "int_contents");
      append_narrowed<int8_t>(out, c.int_contents());
      break;
    case DataType::kInt16:
      only(c.int_contents_size(), "int_contents");
      append_narrowed<int16_t>(out, c.int_contents());
      break;
    case DataType::kInt32:
      only(c.int_contents_size(), "int_contents");
      append_values(out, c.int_contents().data(), c.int_contents_size());
      break;
    case DataType::kInt64:
      only(c.int64_contents_size(), "int64_contents");
      append_values(out, c.int64_contents().data(), c.int64_contents_size());
      break;
    case DataType::kUint8:
      only(c.uint_contents_size(), "uint_contents");
      append_narrowed<uint8_t>(out, c.uint_contents());
      break;
    case DataType::kUint16:
      only(c.uint_contents_size(), "uint_contents");
      append_narrowed<uint16_t>(out, c.uint_contents());
      break;
    case DataType::kUint32:
      only(c.uint_contents_size(), "uint_contents");
      append_values(out, c.uint_contents().data(), c.uint_contents_size());
      break;
    case DataType::kUint64:
      only(c.uint64_contents_size(), "uint64_contents");
      append_values(out, c.uint64_contents().data(), c.uint64_contents_size());
      break;
    case DataType::kFp32:
      only(c.fp32_contents_size(), "fp32_contents");
      append_values(out, c.fp32_contents().data(), c.fp32_contents_size());
      break;
    case DataType::kFp64:
      only(c.fp64_contents_size(), "fp64_contents");
      append_values(out, c.fp64_contents().data(), c.fp64_contents_size());
      break;
    case DataType::kFp16:
    case DataType::kBf16:
      BRAID_THROW(ErrorCode::kInvalidArgument, "input '", input.name(), "': ", to_string(*type),
                  " values have no contents field; send raw_input_contents");
    case DataType::kBytes:
      break;  // refused by make_infer_request
  }
  return out;
}

// The request's parameters.timeout (µs), as Triton reads it (int64 or uint64).
std::optional<uint64_t> timeout_of(const inference::ModelInferRequest& r) {
  const auto it = r.parameters().find("timeout");
  if (it == r.parameters().end()) return std::nullopt;
  const inference::InferParameter& p = it->second;
  if (p.has_uint64_param()) return p.uint64_param();
  BRAID_CHECK(p.has_int64_param() && p.int64_param() >= 0, ErrorCode::kInvalidArgument,
              "parameter 'timeout' must be a non-negative integer (microseconds)");
  return uint64_t(p.int64_param());
}

InferRequest parse(const inference::ModelInferRequest& r, const ModelMetadata& meta) {
  const bool raw = r.raw_input_contents_size() > 0;
  BRAID_CHECK(!raw || r.raw_input_contents_size() == r.inputs_size(), ErrorCode::kInvalidArgument,
              "raw_input_contents has ", r.raw_input_contents_size(), " entries for ",
              r.inputs_size(), " inputs");
  std::vector<std::string> converted(size_t(r.inputs_size()));
  std::vector<RawInput> inputs;
  for (int i = 0; i < r.inputs_size(); ++i) {
    const auto& in = r.inputs(i);
    BRAID_CHECK(!(raw && in.has_contents()), ErrorCode::kInvalidArgument, "input '", in.name(),
                "': contents and raw_input_contents both given");
    if (!raw) converted[size_t(i)] = bytes_of_contents(in);
    inputs.push_back(
        {in.name(),
         in.datatype(),
         {in.shape().begin(), in.shape().end()},
         raw ? std::string_view(r.raw_input_contents(i)) : std::string_view(converted[size_t(i)])});
  }
  std::vector<RequestedOutput> outputs;
  for (const auto& o : r.outputs()) outputs.push_back({o.name(), true});
  return make_infer_request(r.id(), inputs, std::move(outputs), timeout_of(r), meta);
}

class Service final : public inference::GRPCInferenceService::Service {
 public:
  explicit Service(ServerCore& core) : core_(core) {}

  grpc::Status ServerLive(grpc::ServerContext*, const inference::ServerLiveRequest*,
                          inference::ServerLiveResponse* out) override {
    out->set_live(true);
    return grpc::Status::OK;
  }
  grpc::Status ServerReady(grpc::ServerContext*, const inference::ServerReadyRequest*,
                           inference::ServerReadyResponse* out) override {
    out->set_ready(core_.ready());
    return grpc::Status::OK;
  }
  grpc::Status ModelReady(grpc::ServerContext*, const inference::ModelReadyRequest* in,
                          inference::ModelReadyResponse* out) override {
    // Unknown, unloaded or draining: not ready (tritonclient reads an error as one to raise).
    out->set_ready(core_.model_ready(in->name(), in->version()).ok());
    return grpc::Status::OK;
  }
  grpc::Status ServerMetadata(grpc::ServerContext*, const inference::ServerMetadataRequest*,
                              inference::ServerMetadataResponse* out) override {
    out->set_name("braid");
    out->set_version("0.1.0");
    for (const char* e : {"binary_tensor_data", "statistics", "model_repository"})
      out->add_extensions(e);
    return grpc::Status::OK;
  }
  grpc::Status ModelMetadata(grpc::ServerContext*, const inference::ModelMetadataRequest* in,
                             inference::ModelMetadataResponse* out) override {
    serve::ModelMetadata meta;
    const CallStatus s = core_.metadata(in->name(), in->version(), &meta);
    if (!s.ok()) return to_grpc(s.http, s.error);
    out->set_name(meta.name);
    for (const std::string& v : meta.versions) out->add_versions(v);
    out->set_platform(meta.platform);
    auto add = [](auto* list, const TensorSpec& t) {
      auto* m = list->Add();
      m->set_name(t.name);
      m->set_datatype(std::string(to_string(t.datatype)));
      for (const int64_t d : t.shape) m->add_shape(d);
    };
    for (const TensorSpec& t : meta.inputs) add(out->mutable_inputs(), t);
    for (const TensorSpec& t : meta.outputs) add(out->mutable_outputs(), t);
    return grpc::Status::OK;
  }
  grpc::Status ModelInfer(grpc::ServerContext*, const inference::ModelInferRequest* in,
                          inference::ModelInferResponse* out) override {
    InferAnswer a =
        core_.infer({.model = in->model_name(),
                     .version = in->model_version(),
                     .parse = [&](const serve::ModelMetadata& meta) { return parse(*in, meta); }});
    if (a.status != 200) return to_grpc(a.status, a.error);
    try {
      out->set_model_name(a.model_name);
      out->set_model_version(a.model_version);
      out->set_id(a.request.id);
      for (const OutputTensor& t : a.outputs) {
        const bool wanted = a.request.outputs.empty() ||
                            std::any_of(a.request.outputs.begin(), a.request.outputs.end(),
                                        [&](const RequestedOutput& o) { return o.name == t.name; });
        if (!wanted) continue;
        auto* o = out->add_outputs();
        o->set_name(t.name);
        o->set_datatype(std::string(to_string(t.datatype)));
        for (const int64_t d : t.shape) o->add_shape(d);
        *out->add_raw_output_contents() = encode_tensor_bytes(t);
      }
    } catch (const Error& e) {
      core_.record_failure(a.model_name, a.times.total_us);
      return to_grpc(http_status(e.code()), e.what());
    }
    core_.record_success(a.model_name, a.times);
    return grpc::Status::OK;
  }
  grpc::Status RepositoryIndex(grpc::ServerContext*, const inference::RepositoryIndexRequest* in,
                               inference::RepositoryIndexResponse* out) override {
    nlohmann::json index;
    const CallStatus s = core_.repository_index(&index);
    if (!s.ok()) return to_grpc(s.http, s.error);
    for (const nlohmann::json& m : index) {
      if (in->ready() && m.value("state", "") != "READY") continue;
      auto* e = out->add_models();
      e->set_name(m.value("name", ""));
      e->set_version(m.value("version", ""));
      e->set_state(m.value("state", ""));
      e->set_reason(m.value("reason", ""));
    }
    return grpc::Status::OK;
  }
  grpc::Status RepositoryModelLoad(grpc::ServerContext*,
                                   const inference::RepositoryModelLoadRequest* in,
                                   inference::RepositoryModelLoadResponse*) override {
    return control("load", in->model_name(), in->parameters());
  }
  grpc::Status RepositoryModelUnload(grpc::ServerContext*,
                                     const inference::RepositoryModelUnloadRequest* in,
                                     inference::RepositoryModelUnloadResponse*) override {
    return control("unload", in->model_name(), in->parameters());
  }

 private:
  template <typename Map>
  grpc::Status control(const char* action, const std::string& name, const Map& parameters) {
    std::vector<std::string> keys;
    for (const auto& [key, value] : parameters) keys.push_back(key);
    const CallStatus s = core_.control(action, name, keys);
    return to_grpc(s.http, s.error);
  }

  ServerCore& core_;
};

}  // namespace

struct GrpcFront::Impl {
  explicit Impl(ServerCore& core) : service(core) {}
  Service service;
  std::unique_ptr<grpc::Server> server;
  int port = -1;
};

GrpcFront::GrpcFront(ServerCore& core, const std::string& host, int port, size_t max_message_bytes)
    : impl_(std::make_unique<Impl>(core)) {
  BRAID_CHECK(port >= 0 && port <= 65535, ErrorCode::kInvalidArgument, "gRPC port ", port,
              " is out of range");
  grpc::ServerBuilder builder;
  builder.AddListeningPort(fmt::format("{}:{}", host, port), grpc::InsecureServerCredentials(),
                           &impl_->port);
  builder.SetMaxReceiveMessageSize(int(std::min<size_t>(max_message_bytes, INT32_MAX)));
  builder.SetMaxSendMessageSize(INT32_MAX);
  builder.RegisterService(&impl_->service);
  impl_->server = builder.BuildAndStart();
  BRAID_CHECK(impl_->server != nullptr && impl_->port > 0, ErrorCode::kInvalidArgument,
              "cannot listen for gRPC on ", host, ":", port,
              " (in use, or not an address of this machine)");
}

GrpcFront::~GrpcFront() {
  shutdown();
}

int GrpcFront::port() const {
  return impl_->port;
}

void GrpcFront::shutdown() {
  if (!impl_->server) return;
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  impl_->server->Wait();
  impl_->server.reset();
}

}  // namespace braid::serve
