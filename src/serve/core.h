// What the server's transports (HTTP in server.cc, gRPC in grpc_front.cc) ask of its core: one
// set of models, queues and metrics behind both, so a request means the same whichever way it
// comes. Statuses are HTTP's; the gRPC front maps them (grpc_front.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/metrics.h"
#include "serve/protocol.h"

namespace braid::serve {

struct CallStatus {
  int http = 200;
  std::string error;  // when http != 200
  bool ok() const { return http == 200; }
};

struct InferCall {
  std::string model, version;  // version "": the one served
  // Parses and validates the request against the model's metadata; throws braid::Error.
  std::function<InferRequest(const ModelMetadata&)> parse;
};

struct InferAnswer {
  int status = 200;  // HTTP's
  std::string error;
  bool retry_after = false;  // overload or draining: the client may retry
  std::string model_name, model_version;
  InferRequest request;  // as parsed: its id and the outputs it asks for
  std::vector<OutputTensor> outputs;
  RequestTimes times;  // recorded by the transport once the response is encoded
};

class ServerCore {
 public:
  virtual ~ServerCore() = default;
  virtual bool ready() const = 0;
  // Queues the request and waits for its answer (every accepted request is answered once).
  virtual InferAnswer infer(const InferCall& call) = 0;
  // The transport's verdict once it has encoded (or failed to encode) an answer.
  virtual void record_success(const std::string& model, const RequestTimes& times) = 0;
  virtual void record_failure(const std::string& model, double total_us) = 0;
  // A served model's metadata; 404 with Triton's message for an unknown model or version.
  virtual CallStatus metadata(const std::string& name, const std::string& version,
                              ModelMetadata* out) = 0;
  // 200 ready, 404 unknown, 503 draining.
  virtual CallStatus model_ready(const std::string& name, const std::string& version) = 0;
  // Triton's repository index: [{"name", "version", "state", "reason"?}].
  virtual CallStatus repository_index(nlohmann::json* out) = 0;
  // "load" or "unload" with the request's parameter names (model control, server.h).
  virtual CallStatus control(const std::string& action, const std::string& name,
                             const std::vector<std::string>& parameters) = 0;
};

}  // namespace braid::serve
