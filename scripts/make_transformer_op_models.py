#!/usr/bin/env python3
"""Small ONNX models for the ops transformer exports run on activations, with their inputs.

  .venv/bin/python scripts/make_transformer_op_models.py OUT_DIR

Writes OUT_DIR/<name>.onnx, OUT_DIR/<name>.input_<i>.bin (raw float32 values in the graph's
input order, as braid's executors take them; int64 and bool inputs hold integral values) and
OUT_DIR/<name>.input_<i>.npy (the same values in the input's declared type, for ort_run.py).
One model per op (Erf, Sub, Div, Pow, Sqrt, Where, Expand, Gather, Cast, Equal, Not, Slice,
Unsqueeze/Squeeze, 6-D Transpose, 4-D MatMul), the two GELU patterns PyTorch exports before
opset 20, and a tiny BERT-like and ViT-like model built the way torch.onnx exports them
(opset 17; LayerNormalization, as opset 17 exports emit it). Weights and inputs come from a fixed seed: nothing is downloaded.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(15)
INT64_MAX = np.iinfo(np.int64).max


def floats(*shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, size=shape).astype(np.float32)


class Model:
    """Nodes, initializers and inputs of one graph; `save` writes the model and its inputs."""

    def __init__(self, name, opset=17):
        self.name, self.opset = name, opset
        self.nodes, self.inits, self.inputs, self.feeds, self.elems = [], [], [], [], []
        self.count = 0

    def input(self, name, data, elem=TensorProto.FLOAT):
        self.inputs.append(helper.make_tensor_value_info(name, elem, list(data.shape)))
        self.feeds.append(np.asarray(data, dtype=np.float32))
        self.elems.append(elem)
        return name

    def const(self, data, name=None):
        name = name or f"c{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(np.asarray(data), name))
        return name

    def op(self, op_type, inputs, **attrs):
        self.count += 1
        out = f"{op_type.lower()}_{self.count}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def save(self, out_dir, outputs):
        graph = helper.make_graph(self.nodes, self.name, self.inputs,
                                  [onnx.ValueInfoProto(name=o) for o in outputs], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        model.ir_version = 8
        # The outputs' types and shapes come from ONNX's shape inference.
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        known = {v.name: v for v in inferred.graph.value_info}
        del model.graph.output[:]
        model.graph.output.extend(known[o] for o in outputs)
        onnx.checker.check_model(model, full_check=True)
        onnx.save(model, os.path.join(out_dir, f"{self.name}.onnx"))
        typed = {TensorProto.FLOAT: np.float32, TensorProto.INT64: np.int64, TensorProto.BOOL: np.bool_}
        for i, (feed, elem) in enumerate(zip(self.feeds, self.elems)):
            feed.tofile(os.path.join(out_dir, f"{self.name}.input_{i}.bin"))
            np.save(os.path.join(out_dir, f"{self.name}.input_{i}.npy"), feed.astype(typed[elem]))


def gelu_erf(m, x, hf_order=False):
    """The exact GELU as torch.onnx exports it before opset 20."""
    if hf_order:  # HF BERT: x * 0.5 * (1 + erf(x / sqrt 2))
        half = m.op("Mul", [x, m.const(np.float32(0.5))])
        e = m.op("Erf", [m.op("Div", [x, m.const(np.float32(np.sqrt(2.0)))])])
        return m.op("Mul", [half, m.op("Add", [e, m.const(np.float32(1.0))])])
    e = m.op("Erf", [m.op("Div", [x, m.const(np.float32(np.sqrt(2.0)))])])
    y = m.op("Mul", [x, m.op("Add", [e, m.const(np.float32(1.0))])])
    return m.op("Mul", [y, m.const(np.float32(0.5))])


def linear(m, x, n_in, n_out):
    y = m.op("MatMul", [x, m.const(floats(n_in, n_out, low=-0.5, high=0.5))])
    return m.op("Add", [y, m.const(floats(n_out, low=-0.1, high=0.1))])


def layer_norm(m, x, hidden):
    return m.op("LayerNormalization",
                [x, m.const(floats(hidden, low=0.5, high=1.5)), m.const(floats(hidden))],
                axis=-1, epsilon=1e-5)


def attention(m, x, seq, hidden, heads, mask=None):
    """Multi-head self-attention as torch exports it: 4-D MatMuls, Transposes, Div, Softmax."""
    head = hidden // heads
    shape = m.const(np.array([1, seq, heads, head], np.int64))
    q, k, v = (m.op("Transpose", [m.op("Reshape", [linear(m, x, hidden, hidden), shape])],
                    perm=[0, 2, 1, 3]) for _ in range(3))
    kt = m.op("Transpose", [k], perm=[0, 1, 3, 2])
    scores = m.op("Div", [m.op("MatMul", [q, kt]), m.const(np.float32(np.sqrt(head)))])
    if mask is not None:
        scores = m.op("Add", [scores, mask])
    probs = m.op("Softmax", [scores], axis=-1)
    ctx = m.op("Transpose", [m.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    ctx = m.op("Reshape", [ctx, m.const(np.array([1, seq, hidden], np.int64))])
    return linear(m, ctx, hidden, hidden)


def encoder_layer(m, x, seq, hidden, heads, mask=None, hf_gelu=False):
    h = layer_norm(m, m.op("Add", [x, attention(m, x, seq, hidden, heads, mask)]), hidden)
    ffn = linear(m, gelu_erf(m, linear(m, h, hidden, 2 * hidden), hf_gelu), 2 * hidden, hidden)
    return layer_norm(m, m.op("Add", [h, ffn]), hidden)


def build_all(out_dir):
    m = Model("erf")
    m.save(out_dir, [m.op("Erf", [m.input("x", floats(2, 3, 4, low=-3, high=3))])])

    m = Model("sub")  # both orders: the broadcast operand first exercises the non-commuting path
    x, y = m.input("x", floats(2, 3, 4)), m.input("y", floats(4))
    m.save(out_dir, [m.op("Sub", [x, y]), m.op("Sub", [y, x]), m.op("Sub", [x, m.const(floats(3, 1))])])

    m = Model("div")
    x, y = m.input("x", floats(2, 3, 4)), m.input("y", floats(3, 1, low=0.5, high=2))
    m.save(out_dir, [m.op("Div", [x, y]), m.op("Div", [y, x]), m.op("Div", [x, m.const(np.float32(1.7))])])

    m = Model("pow")  # LayerNorm decomposed at opset < 17 squares with Pow(x, 2)
    x, y = m.input("x", floats(2, 3, 4, low=0.1, high=2)), m.input("y", floats(4, low=-2, high=2))
    m.save(out_dir, [m.op("Pow", [x, m.const(np.float32(2.0))]), m.op("Pow", [x, y])])

    m = Model("sqrt")
    m.save(out_dir, [m.op("Sqrt", [m.input("x", floats(2, 3, 4, low=0.0, high=4))])])

    m = Model("where_equal")  # bool from Equal on int64 inputs selects between floats
    a = m.input("a", rng.integers(0, 3, size=(2, 1, 5)).astype(np.float32), TensorProto.INT64)
    b = m.input("b", rng.integers(0, 3, size=(4, 5)).astype(np.float32), TensorProto.INT64)
    x = m.input("x", floats(2, 4, 5))
    cond = m.op("Equal", [a, b])
    m.save(out_dir, [m.op("Where", [cond, x, m.const(np.float32(-100.0))]),
                     m.op("Where", [cond, m.const(floats(5)), x]), m.op("Cast", [cond], to=TensorProto.FLOAT)])

    m = Model("equal_float")
    x = m.input("x", np.round(floats(3, 4) * 2) / 2)
    y = m.input("y", np.round(floats(4) * 2) / 2)
    m.save(out_dir, [m.op("Cast", [m.op("Equal", [x, y])], to=TensorProto.FLOAT)])

    m = Model("expand")
    x = m.input("x", floats(3, 1))
    m.save(out_dir, [m.op("Expand", [x, m.const(np.array([2, 3, 4], np.int64))]),
                     m.op("Expand", [x, m.const(np.array([1, 1], np.int64))])])

    m = Model("gather_embedding")  # BERT's word embeddings: int64 ids from a graph input
    ids = m.input("ids", rng.integers(0, 50, size=(2, 5)).astype(np.float32), TensorProto.INT64)
    neg = m.input("neg", rng.integers(-6, 0, size=(3,)).astype(np.float32), TensorProto.INT64)
    x = m.input("x", floats(2, 6, 4))
    m.save(out_dir, [m.op("Gather", [m.const(floats(50, 8)), ids], axis=0),
                     m.op("Gather", [x, neg], axis=1)])

    m = Model("gather_constant")  # ViT's class token x[:, 0] and a 2-D constant index
    x = m.input("x", floats(2, 5, 8))
    m.save(out_dir, [m.op("Gather", [x, m.const(np.array(0, np.int64))], axis=1),
                     m.op("Gather", [x, m.const(np.array([[4, 0], [-1, 2]], np.int64))], axis=2)])

    m = Model("cast")
    ids = m.input("ids", rng.integers(-9, 9, size=(2, 5)).astype(np.float32), TensorProto.INT64)
    x = m.input("x", floats(2, 5, low=-4, high=4))
    to_int = m.op("Cast", [x], to=TensorProto.INT64)  # truncates toward zero
    m.save(out_dir, [m.op("Mul", [m.op("Cast", [ids], to=TensorProto.FLOAT), x]),
                     m.op("Cast", [to_int], to=TensorProto.FLOAT),
                     m.op("Cast", [m.op("Cast", [x], to=TensorProto.BOOL)], to=TensorProto.FLOAT)])

    m = Model("slice_roll")  # Swin's torch.roll(x, -3, dims=1) on [B, H, W, C]: Slice + Concat
    x = m.input("x", floats(2, 8, 8, 3))
    i64 = lambda *v: m.const(np.array(v, np.int64))
    head = m.op("Slice", [x, i64(3), i64(INT64_MAX), i64(1)])
    tail = m.op("Slice", [x, i64(0), i64(3), i64(1)])
    rolled = m.op("Concat", [head, tail], axis=1)
    m.save(out_dir, [rolled,
                     m.op("Slice", [x, i64(-1, 1), i64(-INT64_MAX, 7), i64(2, 3), i64(-2, 1)]),
                     m.op("Slice", [x, i64(0, 0, 1), i64(1, 8, 3), i64(0, 1, 3), i64(1, 3, 1)])])

    m = Model("slice_opset9", opset=9)
    x = m.input("x", floats(4, 6))
    m.save(out_dir, [m.op("Slice", [x], starts=[1, -4], ends=[3, 1000], axes=[0, 1])])

    m = Model("unsqueeze_squeeze")
    x = m.input("x", floats(2, 1, 3))
    i64 = lambda *v: m.const(np.array(v, np.int64))
    m.save(out_dir, [m.op("Unsqueeze", [x, i64(0, -1)]), m.op("Squeeze", [x, i64(1)]),
                     m.op("Squeeze", [x])])

    m = Model("unsqueeze_opset11", opset=11)
    x = m.input("x", floats(2, 3))
    m.save(out_dir, [m.op("Unsqueeze", [x], axes=[1]), m.op("Squeeze", [m.op("Unsqueeze", [x], axes=[0])], axes=[0])])

    m = Model("transpose_6d")  # Swin's window partition
    x = m.input("x", floats(1, 2, 4, 2, 4, 3))
    m.save(out_dir, [m.op("Transpose", [x], perm=[0, 1, 3, 2, 4, 5])])

    m = Model("matmul_4d")
    a, b = m.input("a", floats(2, 3, 5, 4)), m.input("b", floats(2, 3, 4, 6))
    m.save(out_dir, [m.op("MatMul", [a, b]), m.op("MatMul", [a, m.const(floats(4, 6))]),
                     m.op("MatMul", [a, m.const(floats(3, 4, 2))])])

    m = Model("gelu_erf")  # both export patterns; braid folds each into one Gelu
    x = m.input("x", floats(2, 3, 8, low=-4, high=4))
    m.save(out_dir, [gelu_erf(m, x), gelu_erf(m, m.op("Sqrt", [m.op("Mul", [x, x])]), hf_order=True)])

    m = Model("gelu_erf_shared")  # the Div's output has a second reader: no fold, Erf runs
    x = m.input("x", floats(2, 8, low=-3, high=3))
    d = m.op("Div", [x, m.const(np.float32(np.sqrt(2.0)))])
    y = m.op("Mul", [m.op("Mul", [x, m.op("Add", [m.op("Erf", [d]), m.const(np.float32(1.0))])]),
                     m.const(np.float32(0.5))])
    m.save(out_dir, [y, d])

    build_tiny_bert(out_dir)
    build_tiny_vit(out_dir)
    build_where_not_equal(out_dir)  # last: the models above keep their random values


def build_where_not_equal(out_dir):
    """Swin's shifted-window mask: attn_mask.masked_fill(attn_mask != 0, -100.0) exports `!=` as
    Not(Equal(.)); the mask is a difference of window ids, an activation. Plus Not on a bool
    graph input, read back through Cast."""
    m = Model("where_not_equal")
    ids = m.input("ids", rng.integers(0, 3, size=(2, 1, 6)).astype(np.float32))
    d = m.op("Sub", [ids, m.op("Transpose", [ids], perm=[0, 2, 1])])  # [2, 6, 6]
    zero = m.const(np.float32(0.0))
    filled = m.op("Where", [m.op("Not", [m.op("Equal", [d, zero])]), m.const(np.float32(-100.0)), d])
    flags = m.input("flags", rng.integers(0, 2, size=(3, 4)).astype(np.float32), TensorProto.BOOL)
    m.save(out_dir, [filled, m.op("Cast", [m.op("Not", [flags])], to=TensorProto.FLOAT)])


def build_tiny_bert(out_dir, seq=8, hidden=16, heads=2, vocab=30):
    """BERT-base's export structure at toy size: int64 ids and mask, embeddings by Gather, the
    extended mask (1 - mask) * -10000 via Unsqueeze/Cast/Sub/Mul, two encoder layers."""
    m = Model("tiny_bert", opset=17)
    ids = m.input("input_ids", rng.integers(0, vocab, size=(1, seq)).astype(np.float32), TensorProto.INT64)
    mask_values = np.ones((1, seq), np.float32)
    mask_values[0, seq - 3:] = 0
    mask = m.input("attention_mask", mask_values, TensorProto.INT64)
    token_types = m.input("token_type_ids", np.zeros((1, seq), np.float32), TensorProto.INT64)
    x = m.op("Gather", [m.const(floats(vocab, hidden)), ids], axis=0)
    x = m.op("Add", [x, m.op("Gather", [m.const(floats(2, hidden)), token_types], axis=0)])
    x = m.op("Add", [x, m.const(floats(1, seq, hidden), "position_embeddings")])
    x = layer_norm(m, x, hidden)
    extended = m.op("Unsqueeze", [m.op("Unsqueeze", [mask, m.const(np.array([1], np.int64))]),
                                  m.const(np.array([2], np.int64))])
    extended = m.op("Cast", [extended], to=TensorProto.FLOAT)
    extended = m.op("Mul", [m.op("Sub", [m.const(np.float32(1.0)), extended]),
                            m.const(np.float32(-10000.0))])
    for layer in range(2):
        x = encoder_layer(m, x, seq, hidden, heads, extended, hf_gelu=layer == 1)
    pooled = m.op("Tanh", [linear(m, m.op("Gather", [x, m.const(np.array(0, np.int64))], axis=1),
                                  hidden, hidden)])
    m.save(out_dir, [x, pooled])


def build_tiny_vit(out_dir, image=16, patch=4, hidden=16, heads=2, classes=10):
    """torchvision ViT's export structure at toy size: conv patches, Reshape/Transpose, a class
    token Expand-ed over the batch and Concat-ed, position embeddings, one encoder layer, the
    class token taken back with Gather."""
    m = Model("tiny_vit", opset=17)
    x = m.input("x", floats(1, 3, image, image))
    tokens = (image // patch) ** 2
    p = m.op("Conv", [x, m.const(floats(hidden, 3, patch, patch, low=-0.2, high=0.2)),
                      m.const(floats(hidden, low=-0.1, high=0.1))],
             kernel_shape=[patch, patch], strides=[patch, patch])
    p = m.op("Transpose", [m.op("Reshape", [p, m.const(np.array([1, hidden, tokens], np.int64))])],
             perm=[0, 2, 1])
    cls = m.op("Expand", [m.const(floats(1, 1, hidden), "class_token"),
                          m.const(np.array([1, 1, 1], np.int64))])
    h = m.op("Concat", [cls, p], axis=1)
    h = m.op("Add", [h, m.const(floats(1, tokens + 1, hidden), "pos_embedding")])
    h = encoder_layer(m, h, tokens + 1, hidden, heads)
    cls_out = m.op("Gather", [h, m.const(np.array(0, np.int64))], axis=1)
    logits = m.op("Gemm", [cls_out, m.const(floats(classes, hidden)), m.const(floats(classes))],
                  transB=1)
    m.save(out_dir, [logits])


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    os.makedirs(sys.argv[1], exist_ok=True)
    build_all(sys.argv[1])
