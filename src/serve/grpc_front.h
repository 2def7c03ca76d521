// The Open Inference Protocol v2 over gRPC — service inference.GRPCInferenceService with
// Triton's messages (serve/inference.proto) — in front of the server's core (serve/core.h), so
// tritonclient.grpc works unchanged. Calls: ServerLive, ServerReady, ModelReady,
// ServerMetadata, ModelMetadata, ModelInfer (raw_input_contents or typed contents in,
// raw_output_contents out), RepositoryIndex, RepositoryModelLoad/Unload; any other call of
// Triton's service is UNIMPLEMENTED.
//
//   serve::GrpcFront grpc(core, "127.0.0.1", 8001, 64 << 20);  // listening on return
//   grpc.port();
//   grpc.shutdown();   // after the core has answered what it accepted
//
// Errors carry the HTTP front's message with Triton's mapping of statuses: 400 INVALID_ARGUMENT,
// 404 NOT_FOUND, 413 and 429 RESOURCE_EXHAUSTED, 501 UNIMPLEMENTED, 503 UNAVAILABLE, 500 INTERNAL.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "serve/core.h"

namespace braid::serve {

class GrpcFront {
 public:
  // Binds host:port (0: an ephemeral one) and serves; kInvalidArgument naming them when it
  // cannot. Messages over max_message_bytes are refused by gRPC (RESOURCE_EXHAUSTED).
  GrpcFront(ServerCore& core, const std::string& host, int port, size_t max_message_bytes);
  ~GrpcFront();  // shutdown()
  int port() const;
  // Stops listening; calls under way get up to a second to finish.
  void shutdown();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace braid::serve
