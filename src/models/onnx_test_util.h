// Test helpers for the ONNX importer: ModelMaker writes small ModelProtos by hand, expect_error
// checks a braid::Error's code and that its message names the culprit.
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "models/onnx_import.h"

namespace braid::models {

struct ModelMaker {
  onnx::ModelProto m;
  onnx::GraphProto* g;
  explicit ModelMaker(int64_t opset = 17) : g(m.mutable_graph()) {
    m.set_ir_version(8);
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    g->set_name("hand");
  }
  // dims < 0 are written as dim_param "N".
  static void shape(onnx::ValueInfoProto* vi, const std::string& name, std::vector<int64_t> dims) {
    vi->set_name(name);
    auto* t = vi->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    auto* s = t->mutable_shape();
    for (int64_t d : dims) {
      if (d < 0) {
        s->add_dim()->set_dim_param("N");
      } else {
        s->add_dim()->set_dim_value(d);
      }
    }
  }
  void input(const std::string& name, std::vector<int64_t> dims) {
    shape(g->add_input(), name, dims);
  }
  void output(const std::string& name, std::vector<int64_t> dims) {
    shape(g->add_output(), name, dims);
  }
  void value_info(const std::string& name, std::vector<int64_t> dims) {
    shape(g->add_value_info(), name, dims);
  }
  onnx::TensorProto* init(const std::string& name, std::vector<int64_t> dims, float fill = 0.5f) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) {
      t->add_dims(d);
      n *= d;
    }
    for (int64_t i = 0; i < n; ++i) t->add_float_data(fill + 0.01f * static_cast<float>(i));
    return t;
  }
  void init64(const std::string& name, std::vector<int64_t> values) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
  }
  // A 0-d int64 initializer.
  void scalar64(const std::string& name, int64_t value) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_int64_data(value);
  }
  onnx::NodeProto* node(const std::string& op, const std::string& name, std::vector<std::string> in,
                        std::vector<std::string> out) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& s : in) n->add_input(s);
    for (auto& s : out) n->add_output(s);
    return n;
  }
  static void ints(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void integer(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void text(onnx::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  void metadata(const std::string& key, const std::string& value) {
    auto* p = m.add_metadata_props();
    p->set_key(key);
    p->set_value(value);
  }
  ImportedModel import(OnnxImportOptions options = {}) const {
    return import_onnx_bytes(m.SerializeAsString(), "hand.onnx", options);
  }
};

template <typename F>
inline void expect_error(F&& f, ErrorCode code, std::vector<std::string> needles) {
  try {
    f();
    ADD_FAILURE() << "expected braid::Error(" << to_string(code) << ")";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos)
          << "'" << n << "' missing in: " << e.what();
  }
}

}  // namespace braid::models
