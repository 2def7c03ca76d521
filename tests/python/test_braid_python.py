"""`import braid`: braid.InferenceSession against ONNX Runtime on the same model and inputs, its
errors, concurrent runs, schedules as data, and no growth over many runs. Imports the package a
build puts in BUILD/python (BRAID_BINARY_DIR), or an installed one."""
import gc
import json
import os
import pathlib
import subprocess
import sys
import threading

import numpy as np
import onnxruntime as ort
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("BRAID_BINARY_DIR", ROOT / "build"))
sys.path.insert(0, str(BUILD / "python"))
braid = pytest.importorskip("braid", reason="the braid module is not built (BRAID_BUILD_PYTHON)")
BRAID = BUILD / "braid"
IMAGE = 48
# Every zoo model, small: CNNs at 48x48 (Inception at 75x75), BERT with 2 layers over 16 tokens.
ZOO = {
    "inception_v3": {"image_size": 75}, "squeezenet": {}, "nasnet": {}, "randwire": {},
    "googlenet": {}, "resnet50": {}, "tv_inception_v3": {"image_size": 75},
    "tv_squeezenet1_0": {}, "bert": None,
}
FAST = dict(scheduler="greedy", cost="roofline")


def close(got, want):
    """Element-wise: within 1e-4 of the largest magnitude of ONNX Runtime's output (plus 1e-5
    absolute for outputs that are all near zero)."""
    assert got.shape == want.shape and got.dtype == want.dtype
    scale = float(np.abs(want).max()) if want.size else 0.0
    return float(np.abs(got.astype(np.float64) - want).max()) <= 1e-4 * scale + 1e-5


def export(name, out, args):
    subprocess.run([str(BRAID), "export", name, *args, "-o", str(out)], check=True,
                   capture_output=True)
    return out


def feed(session, seed):
    rng = np.random.default_rng(seed)
    inputs = {}
    for a in session.get_inputs():
        if a.type == "tensor(int64)":
            inputs[a.name] = rng.integers(0, 100, a.shape).astype(np.int64)
        else:
            inputs[a.name] = rng.uniform(-1, 1, a.shape).astype(np.float32)
    return inputs


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    if not BRAID.exists():
        pytest.skip(f"{BRAID} is not built")
    d = tmp_path_factory.mktemp("zoo")
    out = {}
    for name, opts in ZOO.items():
        if opts is None:
            args = ["--layers", "2", "--seq-len", "16"]
        else:
            args = ["--image-size", str(opts.get("image_size", IMAGE))]
        out[name] = export(name, d / f"{name}.onnx", args)
    return out


@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_models_match_onnxruntime(exported, name):
    path = exported[name]
    s = braid.InferenceSession(str(path), **FAST)
    ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [a.name for a in s.get_inputs()] == [a.name for a in ref.get_inputs()]
    assert [a.shape for a in s.get_inputs()] == [a.shape for a in ref.get_inputs()]
    assert [a.type for a in s.get_outputs()] == [a.type for a in ref.get_outputs()]
    inputs = feed(s, 1)
    got = s.run(None, inputs)
    want = ref.run(None, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert close(g, w), name


# The torchvision models `make models` exports (models/NAME.onnx with models/NAME.input.npy), when
# present; a few, by size, so the suite stays short.
EXPORTED = sorted(ROOT.glob("models/*.onnx"), key=lambda p: p.stat().st_size)[:4]


@pytest.mark.skipif(not EXPORTED, reason="no exported models (make models)")
@pytest.mark.parametrize("path", EXPORTED, ids=[p.stem for p in EXPORTED])
def test_exported_models_match_onnxruntime(path):
    s = braid.InferenceSession(str(path), **FAST)
    ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    saved = path.with_suffix(".input.npy")
    inputs = ({s.get_inputs()[0].name: np.load(saved)} if saved.exists() and
              len(s.get_inputs()) == 1 else feed(s, 5))
    for g, w in zip(s.run(None, inputs), ref.run(None, inputs)):
        assert close(g, w), path.stem


def test_a_model_from_bytes_and_by_output_name(exported):
    data = pathlib.Path(exported["squeezenet"]).read_bytes()
    s = braid.InferenceSession(data, **FAST)
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    inputs = feed(s, 2)
    out_name = s.get_outputs()[0].name
    (got,) = s.run([out_name], inputs)
    assert close(got, ref.run([out_name], inputs)[0])


def test_modelmeta_providers_and_options_as_onnxruntime_gives_them(exported):
    import onnx
    model = onnx.load(str(exported["squeezenet"]))
    model.producer_name, model.domain, model.doc_string = "tests", "ai.braid.test", "a model"
    model.model_version = 7
    model.graph.doc_string = "its graph"
    onnx.helper.set_model_props(model, {"author": "braid", "braid.unit_hints": "[]"})
    data = model.SerializeToString()
    s = braid.InferenceSession(data, None, ["CPUExecutionProvider"], **FAST)
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    got, want = s.get_modelmeta(), ref.get_modelmeta()
    for field in ("producer_name", "graph_name", "domain", "description", "graph_description",
                  "version", "custom_metadata_map"):
        assert getattr(got, field) == getattr(want, field), field
    assert s.get_providers() == ["CPUExecutionProvider"]
    assert s.get_provider_options() == {"CPUExecutionProvider": {}}
    zoo = braid.InferenceSession("squeezenet", options={"image_size": IMAGE}, **FAST)
    assert (zoo.get_modelmeta().producer_name, zoo.get_modelmeta().graph_name) == \
        ("braid", "squeezenet")

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    assert braid.InferenceSession(data, options, **FAST).get_providers() == \
        ["CPUExecutionProvider"]
    with pytest.raises(ValueError, match="unknown provider 'TensorrtExecutionProvider'"):
        braid.InferenceSession(data, providers=["TensorrtExecutionProvider"], **FAST)
    with pytest.raises(ValueError, match="disagree"):
        braid.InferenceSession(data, providers=["CUDAExecutionProvider"], device="cpu", **FAST)


def test_io_binding_reads_inputs_in_place_and_fills_output_buffers():
    s = braid.InferenceSession("googlenet", options={"image_size": IMAGE}, **FAST)
    name, out = s.get_inputs()[0].name, s.get_outputs()[0]
    x = feed(s, 6)[name]
    want = s.run(None, {name: x})[0].copy()
    binding = s.io_binding()
    binding.bind_cpu_input(name, x)
    binding.bind_output(out.name)
    s.run_with_iobinding(binding)
    assert np.array_equal(binding.get_outputs()[0], want)
    assert np.array_equal(binding.copy_outputs_to_cpu()[0], want)

    # A raw input pointer and a caller's output buffer; the bound input changes in place.
    y = np.zeros(out.shape, np.float32)
    binding.clear_binding_inputs()
    binding.clear_binding_outputs()
    binding.bind_input(name, "cpu", 0, np.float32, x.shape, x.ctypes.data)
    binding.bind_output(out.name, "cpu", 0, np.float32, out.shape, y.ctypes.data)
    s.run_with_iobinding(binding)
    assert np.array_equal(y, want)
    x2 = feed(s, 7)[name]
    x[...] = x2
    s.run_with_iobinding(binding)
    assert np.array_equal(y, s.run(None, {name: x2})[0])
    assert binding.get_outputs()[0] is not None and not np.array_equal(y, want)

    with pytest.raises(ValueError, match="unknown input 'nope'"):
        binding.bind_cpu_input("nope", x)
    with pytest.raises(NotImplementedError, match="CPU buffers only"):
        binding.bind_output(out.name, "cuda", 0)


def test_zoo_names_open_directly():
    s = braid.InferenceSession("squeezenet", options={"image_size": IMAGE}, **FAST)
    assert s.get_inputs()[0].shape == [1, 3, IMAGE, IMAGE]
    assert s.get_inputs()[0].type == "tensor(float)"
    assert s.schedule_summary == "greedy"


def test_errors_name_what_is_wrong():
    s = braid.InferenceSession("squeezenet", options={"image_size": IMAGE}, **FAST)
    name = s.get_inputs()[0].name
    x = np.zeros((1, 3, IMAGE, IMAGE), np.float32)
    with pytest.raises(ValueError, match=f"input '{name}': shape \\[1, 3, 4\\], expected"):
        s.run(None, {name: np.zeros((1, 3, 4), np.float32)})
    with pytest.raises(TypeError, match=f"input '{name}': dtype float64, expected tensor\\(float\\)"):
        s.run(None, {name: x.astype(np.float64)})
    with pytest.raises(ValueError, match="unknown input 'nope'"):
        s.run(None, {name: x, "nope": x})
    with pytest.raises(ValueError, match=f"missing input '{name}'"):
        s.run(None, {})
    with pytest.raises(ValueError, match="unknown output 'nope'"):
        s.run(["nope"], {name: x})
    with pytest.raises(braid.NotFound, match="no_such_model"):
        braid.InferenceSession("no_such_model")
    with pytest.raises(braid.NotFound):
        braid.InferenceSession("squeezenet", scheduler="no-such-scheduler")
    with pytest.raises(braid.InvalidModel):
        braid.InferenceSession(b"not an onnx model", **FAST)
    with pytest.raises(ValueError, match="unknown option 'colour'"):
        braid.InferenceSession("squeezenet", options={"colour": 1})
    with pytest.raises(ValueError, match="precision fp16 needs a GPU device"):
        braid.InferenceSession("squeezenet", precision="fp16", **FAST)
    with pytest.raises(ValueError, match="fp32, tf32, fp16, bf16"):
        braid.InferenceSession("squeezenet", precision="half", **FAST)
    with pytest.raises(TypeError, match="model must be"):
        braid.InferenceSession(42)


def test_four_threads_share_a_session():
    s = braid.InferenceSession("googlenet", options={"image_size": IMAGE}, **FAST)
    name = s.get_inputs()[0].name
    xs = [feed(s, k)[name] for k in range(4)]
    wants = [s.run(None, {name: x})[0].copy() for x in xs]
    wrong = []

    def work(t):
        for i in range(8):
            k = (t + i) % 4
            if not np.array_equal(s.run(None, {name: xs[k]})[0], wants[k]):
                wrong.append((t, i))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong


def test_outputs_are_views_that_keep_their_buffers():
    s = braid.InferenceSession("squeezenet", options={"image_size": IMAGE}, **FAST)
    name = s.get_inputs()[0].name
    a, b = feed(s, 1)[name], feed(s, 2)[name]
    ya = s.run(None, {name: a})[0]
    assert not ya.flags.owndata  # a view of the session's buffer, not a copy
    assert ya.flags.writeable  # as ONNX Runtime's outputs are
    keep = ya.copy()
    yb = s.run(None, {name: b})[0]  # another buffer: ya is still held
    assert np.array_equal(ya, keep)
    assert not np.array_equal(ya, yb)


def test_inputs_in_any_layout_give_the_same_outputs():
    """A C-contiguous float32 input is read in place; a Fortran-ordered, a strided and a
    misaligned one take the copying paths. All give the same outputs, bit for bit."""
    s = braid.InferenceSession("squeezenet", options={"image_size": IMAGE}, **FAST)
    name = s.get_inputs()[0].name
    x = feed(s, 5)[name]
    want = s.run(None, {name: x})[0].copy()
    wide = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), np.float32)
    wide[..., ::2] = x
    for what, given in [("fortran", np.asfortranarray(x)), ("strided", wide[..., ::2]),
                        ("misaligned", misaligned_copy(x))]:
        assert np.array_equal(s.run(None, {name: given})[0], want), what


def misaligned_copy(x):
    raw = np.zeros(x.nbytes + 1, np.uint8)
    y = np.frombuffer(raw.data[1:], dtype=x.dtype).reshape(x.shape)
    y[...] = x
    assert not y.flags.aligned
    return y


def test_int64_inputs_in_place_are_exact_and_copies_are_checked(tmp_path):
    """int64 inputs read in place are the arrays' own values, as ONNX Runtime reads them: Equal
    tells 2^25 + 1 from 2^25. A misaligned array is copied through the executors' float
    interface, which holds integers exactly to 2^24 only: within it the outputs are the same,
    beyond it the input is refused by name."""
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Equal", ["a", "b"], ["eq"]),
         helper.make_node("Cast", ["eq"], ["same"], to=TensorProto.FLOAT)], "ids",
        [helper.make_tensor_value_info(n, TensorProto.INT64, [1, 8]) for n in ("a", "b")],
        [helper.make_tensor_value_info("same", TensorProto.FLOAT, [1, 8])])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]) \
        .SerializeToString()
    s = braid.InferenceSession(data, **FAST)
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    a = np.arange(8, dtype=np.int64).reshape(1, 8)
    b = a.copy()
    b[0, 1] = 5
    a[0, 0], b[0, 0] = 2 ** 25 + 1, 2 ** 25
    got = s.run(None, {"a": a, "b": b})[0]
    assert np.array_equal(got, ref.run(None, {"a": a, "b": b})[0])
    assert list(got[0, :2]) == [0, 0]
    small = {"a": a % 100, "b": b % 100}
    want = ref.run(None, small)[0]
    assert np.array_equal(s.run(None, {"a": misaligned_copy(small["a"]), "b": small["b"]})[0],
                          want)
    with pytest.raises(braid.InvalidArgument, match="input 'a': value 33554433 at element 0"):
        s.run(None, {"a": misaligned_copy(a), "b": b})
    # braid.Server's queued tasks hold floats: the same value is refused at submit.
    path = tmp_path / "ids.onnx"
    path.write_bytes(data)
    with braid.Server([str(path)]) as server:
        with pytest.raises(braid.InvalidArgument, match="input 'a': value 33554433 at element 0"):
            server.submit("ids", {"a": a, "b": b})
        assert np.array_equal(server.submit("ids", small).result(timeout=60)[0], want)


def test_schedules_round_trip_as_data(tmp_path):
    s = braid.InferenceSession("squeezenet", options={"image_size": IMAGE}, **FAST)
    data = s.schedule
    assert data["format"].startswith("braid.schedule")
    given = braid.InferenceSession("squeezenet", options={"image_size": IMAGE},
                                   schedule=data, cost="roofline")
    assert given.schedule == data
    name = s.get_inputs()[0].name
    x = feed(s, 3)[name]
    assert np.array_equal(given.run(None, {name: x})[0], s.run(None, {name: x})[0])
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    assert braid.InferenceSession("squeezenet", options={"image_size": IMAGE},
                                  schedule=str(path), cost="roofline").schedule == data

    searched = braid.schedule("squeezenet", "lios", cost="roofline", streams=4,
                              options={"image_size": IMAGE})
    assert searched["algorithm"] == "lios"
    assert braid.validate("squeezenet", searched)["valid"]
    broken = json.loads(json.dumps(searched))
    first = broken["streams"][0]
    for key in ("units", "start_ms", "finish_ms"):
        first[key] = first[key][1:]  # its first unit now runs nowhere
    verdict = braid.validate("squeezenet", broken)
    assert not verdict["valid"] and verdict["errors"]
    with pytest.raises(braid.InvalidSchedule):
        braid.InferenceSession("squeezenet", options={"image_size": IMAGE}, schedule=broken,
                               cost="roofline")


def rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_no_growth_over_a_thousand_runs():
    s = braid.InferenceSession("squeezenet", options={"image_size": 32}, **FAST)
    name = s.get_inputs()[0].name
    x = feed(s, 4)[name]
    before_refs = sys.getrefcount(x)
    for _ in range(100):
        s.run(None, {name: x})
    gc.collect()
    start = rss_kb()
    for _ in range(1000):
        y = s.run(None, {name: x})
    del y
    gc.collect()
    grown = rss_kb() - start
    assert sys.getrefcount(x) == before_refs  # no reference to the input kept
    assert grown < 2048, f"RSS grew {grown} kB over 1,000 runs"


def test_profile_and_trace_cover_every_unit(tmp_path):
    s = braid.InferenceSession("googlenet", options={"image_size": IMAGE}, **FAST)
    timings = s.profile(runs=2)
    units = s.schedule["num_units"]
    assert len(timings) == units  # each unit once: the last run only
    assert len({t["unit"] for t in timings}) == units
    assert all(0 <= t["begin_us"] <= t["end_us"] for t in timings)
    assert all(t["lane"] >= 0 for t in timings)
    path = tmp_path / "trace.json"
    s.trace(path, runs=2)
    events = json.loads(path.read_text())
    slices = [e for e in (events["traceEvents"] if isinstance(events, dict) else events)
              if e.get("ph") == "X"]
    assert len(slices) == 2 * units


def test_bench_rows_load_into_a_table():
    rows = braid.bench(["squeezenet"], ["sequential", "greedy"], iters=3,
                       warmup=1, options={"image_size": 32})
    assert [r["algorithm"] for r in rows] == ["sequential", "greedy"]
    for r in rows:
        assert r["model"] == "squeezenet"
        assert r["measured_ms"] > 0 and r["measured_p10_ms"] <= r["measured_p90_ms"]
        assert r["outputs_match_sequential"]
    assert rows[0]["measured_speedup"] == 1.0
    with pytest.raises(braid.NotFound):
        braid.bench(["squeezenet"], ["no-such-scheduler"], options={"image_size": 32})
    predicted = braid.bench(["squeezenet"], ["lios"], measure=False, options={"image_size": 32})
    assert "measured_ms" not in predicted[0] and predicted[0]["predicted_ms"] > 0


def test_server_futures_give_a_sessions_outputs():
    models = ["squeezenet", "googlenet"]
    sessions = {m: braid.InferenceSession(m, scheduler="sequential", cost="roofline",
                                          options={"image_size": IMAGE}) for m in models}
    with braid.Server(models, policy="top-heuristic", options={"image_size": IMAGE}) as srv:
        assert srv.models == models
        jobs = []
        for k in range(12):
            m = models[k % 2]
            name = srv.get_inputs(m)[0].name
            x = feed(sessions[m], 100 + k)[name]
            jobs.append((m, name, x, srv.submit(m, {name: x})))
        for m, name, x, future in jobs:
            (got,) = future.result(timeout=120)
            (want,) = sessions[m].run(None, {name: x})
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
        with pytest.raises(ValueError, match="unknown model 'nope'"):
            srv.submit("nope", {})
        with pytest.raises(ValueError, match="shape"):
            srv.submit("squeezenet", {name: np.zeros((1, 3), np.float32)})
    with pytest.raises(braid.InvalidArgument, match="closed"):
        srv.submit("squeezenet", {name: x})


def dynamic_cnn(dims):
    """x [dims] -> Conv 3->4 (3x3, pad 1) -> its own Shape: Gather n, h, w; Mul h*w; Concat
    [n, 4, h*w] -> Reshape -> Softmax -> y. dims: ints (-1 and 0 included) or dim_param names."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, None)
    for d in dims:
        dim = x.type.tensor_type.shape.dim.add()
        if isinstance(d, int):
            dim.dim_value = d
        else:
            dim.dim_param = d
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.uniform(-0.5, 0.5, (4, 3, 3, 3)).astype(np.float32), "w")]
    inits += [numpy_helper.from_array(np.array(v, np.int64), n)
              for n, v in [("i0", [0]), ("i2", [2]), ("i3", [3]), ("four", [4])]]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Shape", ["c"], ["s"]),
        helper.make_node("Gather", ["s", "i0"], ["n"]),
        helper.make_node("Gather", ["s", "i2"], ["h"]),
        helper.make_node("Gather", ["s", "i3"], ["w_"]),
        helper.make_node("Mul", ["h", "w_"], ["hw"]),
        helper.make_node("Concat", ["n", "four", "hw"], ["target"], axis=0),
        helper.make_node("Reshape", ["c", "target"], ["r"]),
        helper.make_node("Softmax", ["r"], ["y"], axis=-1),
    ]
    model = helper.make_model(helper.make_graph(nodes, "dynamic", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def test_dynamic_dims_are_fixed_by_shapes_or_dims():
    model = dynamic_cnn(["N", 3, "height", "width"])
    oracle = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    with pytest.raises(braid.Unsupported,
                       match=r"graph input 'x': dim 2 \('height'\) is dynamic; fix it with "
                             r"--shape x=1x3x<height>x<width> or --dim height=<height>"):
        braid.InferenceSession(model, **FAST)
    x = np.random.default_rng(1).uniform(-1, 1, (2, 3, 6, 10)).astype(np.float32)
    (want,) = oracle.run(None, {"x": x})
    by_shape = braid.InferenceSession(model, shapes={"x": [2, 3, 6, 10]}, **FAST)
    assert by_shape.get_inputs()[0].shape == [2, 3, 6, 10]
    assert by_shape.get_outputs()[0].shape == [2, 4, 60]
    (got,) = by_shape.run(None, {"x": x})
    assert close(got, want)
    by_dims = braid.InferenceSession(model, dims={"height": 6, "width": 10},
                                     options={"batch": 2}, **FAST)
    (got,) = by_dims.run(None, {"x": x})
    assert close(got, want)


def test_minus_one_and_zero_dims_are_dynamic():
    x = np.random.default_rng(2).uniform(-1, 1, (3, 3, 5, 7)).astype(np.float32)
    # ORT reads -1 as dynamic, but 0 as a zero-size dim: its oracle is the model with names.
    (want,) = ort.InferenceSession(dynamic_cnn(["N", 3, "h", 7]),
                                   providers=["CPUExecutionProvider"]).run(None, {"x": x})
    minus_one = braid.InferenceSession(dynamic_cnn([-1, 3, 5, 7]), options={"batch": 3}, **FAST)
    assert close(minus_one.run(None, {"x": x})[0], want)
    zero = braid.InferenceSession(dynamic_cnn([0, 3, 0, 7]), shapes={"x": [3, 3, 5, 7]}, **FAST)
    assert close(zero.run(None, {"x": x})[0], want)


def test_shapes_and_dims_that_do_not_fit_are_refused():
    model = dynamic_cnn(["N", 3, "height", "width"])
    with pytest.raises(braid.InvalidArgument, match="no input 'images' \\(its inputs: 'x'\\)"):
        braid.InferenceSession(model, shapes={"images": [1, 3, 8, 8]}, **FAST)
    with pytest.raises(braid.InvalidArgument, match="its named dims: 'N', 'height', 'width'"):
        braid.InferenceSession(model, dims={"W": 8}, **FAST)
    with pytest.raises(braid.InvalidArgument, match="dim 1 fixed at 3"):
        braid.InferenceSession(model, shapes={"x": [1, 4, 8, 8]}, **FAST)
    with pytest.raises(ValueError, match=r"dims\['width'\]: a dimension must be >= 1"):
        braid.InferenceSession(model, dims={"width": 0}, **FAST)
    with pytest.raises(TypeError, match="must be an int"):
        braid.InferenceSession(model, shapes={"x": [1, 3, 8.5, 8]}, **FAST)
