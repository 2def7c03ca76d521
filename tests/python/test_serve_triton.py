"""braid serve against the official Triton client (tritonclient[http,grpc] from PyPI), unchanged:
health, metadata, inference with JSON and binary tensors over HTTP and over gRPC, outputs compared
element-wise to ONNX Runtime on the same model and input; /metrics parsed by prometheus-client's
own parser."""
import pathlib
import signal
import subprocess

import numpy as np
import onnxruntime as ort
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from prometheus_client.parser import text_string_to_metric_families
from serve_util import BRAID, start_serve

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ["squeezenet", "googlenet"]
IMAGE = 48


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """One braid serve, HTTP and gRPC: (host:port, host:grpc_port)."""
    if not BRAID.exists():
        pytest.skip(f"{BRAID} is not built")
    proc, url = start_serve(["--models", ",".join(MODELS), "--image-size", str(IMAGE),
                             "--scheduler", "sequential", "--policy", "top-heuristic",
                             "--grpc-port", "0"])
    yield url, proc.grpc_url
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0, proc.stderr.read()
    assert any("draining" in line for line in proc.rest), proc.rest


@pytest.fixture(scope="module")
def server(servers):
    return servers[0]


@pytest.fixture(scope="module")
def onnx_models(tmp_path_factory):
    out = {}
    d = tmp_path_factory.mktemp("onnx")
    for name in MODELS:
        path = d / f"{name}.onnx"
        subprocess.run([str(BRAID), "export", name, "--image-size", str(IMAGE), "-o", str(path)],
                       check=True, capture_output=True)
        out[name] = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return out


def test_health_and_metadata(server):
    client = httpclient.InferenceServerClient(url=server)
    assert client.is_server_live()
    assert client.is_server_ready()
    assert client.get_server_metadata()["name"] == "braid"
    for name in MODELS:
        assert client.is_model_ready(name)
        meta = client.get_model_metadata(name)
        assert meta["name"] == name
        assert meta["inputs"][0]["datatype"] == "FP32"
        assert meta["inputs"][0]["shape"] == [1, 3, IMAGE, IMAGE]
    with pytest.raises(Exception, match="unknown model"):
        client.get_model_metadata("nope")


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("name", MODELS)
def test_infer_matches_onnxruntime(server, onnx_models, name, binary):
    client = httpclient.InferenceServerClient(url=server)
    meta = client.get_model_metadata(name)
    x = np.random.default_rng(7).uniform(-1, 1, (1, 3, IMAGE, IMAGE)).astype(np.float32)
    inp = httpclient.InferInput(meta["inputs"][0]["name"], list(x.shape), "FP32")
    inp.set_data_from_numpy(x, binary_data=binary)
    out_name = meta["outputs"][0]["name"]
    out = httpclient.InferRequestedOutput(out_name, binary_data=binary)
    result = client.infer(name, [inp], outputs=[out], request_id="abc")
    got = result.as_numpy(out_name)
    sess = onnx_models[name]
    want = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    assert_close(got, want)
    assert result.get_response()["id"] == "abc"


def test_metrics_parse_and_count(server):
    client = httpclient.InferenceServerClient(url=server)
    stats = client.get_inference_statistics()
    served = sum(int(s["inference_stats"]["success"]["count"]) for s in stats["model_stats"])
    import urllib.request
    text = urllib.request.urlopen(f"http://{server}/metrics").read().decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert "nv_inference_request_success" in families
    total = sum(s.value for s in families["nv_inference_request_success"].samples)
    assert total == served
    assert "braid_inference_request_duration_us" in families
    assert families["braid_inference_request_duration_us"].type == "histogram"


def assert_close(got, want):
    """Element-wise against ONNX Runtime: within 1e-4 of the largest magnitude of its output."""
    assert got.shape == want.shape
    scale = float(np.abs(want).max())
    assert float(np.abs(got - want).max()) <= 1e-4 * max(scale, 1e-30)


def test_model_repository_serves_the_highest_version(tmp_path):
    """Triton's layout: REPO/NAME/VERSION/model.onnx; the highest version is served and named."""
    if not BRAID.exists():
        pytest.skip(f"{BRAID} is not built")
    repo = tmp_path / "repo"
    for version in ("1", "3"):
        (repo / "sq" / version).mkdir(parents=True)
        subprocess.run([str(BRAID), "export", "squeezenet", "--image-size", str(IMAGE), "-o",
                        str(repo / "sq" / version / "model.onnx")], check=True,
                       capture_output=True)
    proc, url = start_serve(["--model-repository", str(repo), "--scheduler", "sequential"])
    try:
        client = httpclient.InferenceServerClient(url=url)
        meta = client.get_model_metadata("sq", model_version="3")
        assert meta["versions"] == ["3"]
        assert not client.is_model_ready("sq", model_version="1")
        x = np.random.default_rng(3).uniform(-1, 1, (1, 3, IMAGE, IMAGE)).astype(np.float32)
        inp = httpclient.InferInput(meta["inputs"][0]["name"], list(x.shape), "FP32")
        inp.set_data_from_numpy(x)
        got = client.infer("sq", [inp], model_version="3").as_numpy(meta["outputs"][0]["name"])
        sess = ort.InferenceSession(str(repo / "sq" / "3" / "model.onnx"),
                                    providers=["CPUExecutionProvider"])
        want = sess.run(None, {sess.get_inputs()[0].name: x})[0]
        assert_close(got, want)
        # Model control mode NONE, as Triton's default: load/unload refused, the model kept.
        with pytest.raises(Exception, match="model control mode NONE"):
            client.unload_model("sq")
        assert client.is_model_ready("sq")
        index = client.get_model_repository_index()
        assert [(m["name"], m["version"], m["state"]) for m in index] == [("sq", "3", "READY")]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0


def test_config_pbtxt_batches_and_bounds_the_queue(tmp_path):
    """A Triton config.pbtxt, as Triton's docs write one: max_batch_size 4 makes the metadata's
    leading dimension -1 and a request of 3 samples gives 3 rows, each ONNX Runtime's output for
    its sample; a batch over the maximum is refused with 400."""
    if not BRAID.exists():
        pytest.skip(f"{BRAID} is not built")
    repo = tmp_path / "repo"
    (repo / "sq" / "1").mkdir(parents=True)
    model = repo / "sq" / "1" / "model.onnx"
    subprocess.run([str(BRAID), "export", "squeezenet", "--image-size", str(IMAGE), "-o",
                    str(model)], check=True, capture_output=True)
    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    in_name, out_name = sess.get_inputs()[0].name, sess.get_outputs()[0].name
    (repo / "sq" / "config.pbtxt").write_text(f"""
name: "sq"
platform: "onnxruntime_onnx"
max_batch_size: 4
input [ {{ name: "{in_name}", data_type: TYPE_FP32, dims: [ 3, {IMAGE}, {IMAGE} ] }} ]
instance_group [ {{ count: 1, kind: KIND_CPU }} ]
dynamic_batching {{
  default_queue_policy {{ max_queue_size: 8, default_timeout_microseconds: 10000000 }}
}}
""")
    proc, url = start_serve(["--model-repository", str(repo), "--scheduler", "sequential"])
    try:
        client = httpclient.InferenceServerClient(url=url)
        meta = client.get_model_metadata("sq")
        assert meta["inputs"][0]["shape"] == [-1, 3, IMAGE, IMAGE]
        x = np.random.default_rng(5).uniform(-1, 1, (3, 3, IMAGE, IMAGE)).astype(np.float32)
        inp = httpclient.InferInput(in_name, list(x.shape), "FP32")
        inp.set_data_from_numpy(x, binary_data=True)
        got = client.infer("sq", [inp]).as_numpy(out_name)
        assert got.shape[0] == 3
        for i in range(3):
            want = sess.run(None, {in_name: x[i:i + 1]})[0]
            assert_close(got[i:i + 1], want)
        big = np.zeros((5, 3, IMAGE, IMAGE), np.float32)
        inp = httpclient.InferInput(in_name, list(big.shape), "FP32")
        inp.set_data_from_numpy(big)
        with pytest.raises(Exception, match="max_batch_size"):
            client.infer("sq", [inp])
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0


def test_explicit_model_control_with_the_triton_client(tmp_path):
    """--model-control-mode explicit: tritonclient's load_model/unload_model work unchanged and
    the repository index follows them; a model loaded on request answers as ONNX Runtime does."""
    if not BRAID.exists():
        pytest.skip(f"{BRAID} is not built")
    repo = tmp_path / "repo"
    for name in ("sq", "gn"):
        (repo / name / "1").mkdir(parents=True)
        subprocess.run([str(BRAID), "export", {"sq": "squeezenet", "gn": "googlenet"}[name],
                        "--image-size", str(IMAGE), "-o", str(repo / name / "1" / "model.onnx")],
                       check=True, capture_output=True)
    proc, url = start_serve(["--model-repository", str(repo), "--scheduler", "sequential",
                             "--model-control-mode", "explicit", "--load-model", "sq",
                             "--grpc-port", "0"])
    try:
        client = httpclient.InferenceServerClient(url=url)
        assert client.is_model_ready("sq")
        assert not client.is_model_ready("gn")
        states = {m["name"]: m["state"] for m in client.get_model_repository_index()}
        assert states == {"gn": "UNAVAILABLE", "sq": "READY"}
        client.load_model("gn")
        assert client.is_model_ready("gn")
        meta = client.get_model_metadata("gn")
        x = np.random.default_rng(9).uniform(-1, 1, (1, 3, IMAGE, IMAGE)).astype(np.float32)
        inp = httpclient.InferInput(meta["inputs"][0]["name"], list(x.shape), "FP32")
        inp.set_data_from_numpy(x)
        got = client.infer("gn", [inp]).as_numpy(meta["outputs"][0]["name"])
        sess = ort.InferenceSession(str(repo / "gn" / "1" / "model.onnx"),
                                    providers=["CPUExecutionProvider"])
        want = sess.run(None, {sess.get_inputs()[0].name: x})[0]
        assert_close(got, want)
        client.unload_model("sq")
        assert not client.is_model_ready("sq")
        with pytest.raises(Exception, match="no model 'nope'"):
            client.load_model("nope")
        # The same over gRPC.
        g = grpcclient.InferenceServerClient(url=proc.grpc_url)
        g.load_model("sq")
        assert g.is_model_ready("sq")
        g.unload_model("gn")
        assert not g.is_model_ready("gn")
        index = g.get_model_repository_index()
        assert {m.name: m.state for m in index.models} == {"gn": "UNAVAILABLE", "sq": "READY"}
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0


def test_grpc_health_metadata_and_errors(servers):
    client = grpcclient.InferenceServerClient(url=servers[1])
    assert client.is_server_live()
    assert client.is_server_ready()
    assert client.get_server_metadata().name == "braid"
    for name in MODELS:
        assert client.is_model_ready(name)
        meta = client.get_model_metadata(name)
        assert meta.inputs[0].datatype == "FP32"
        assert list(meta.inputs[0].shape) == [1, 3, IMAGE, IMAGE]
    with pytest.raises(grpcclient.InferenceServerException, match="unknown model") as e:
        client.get_model_metadata("nope")
    assert "NOT_FOUND" in str(e.value.status())
    meta = client.get_model_metadata(MODELS[0])
    bad = grpcclient.InferInput(meta.inputs[0].name, [1, 3, IMAGE], "FP32")
    bad.set_data_from_numpy(np.zeros((1, 3, IMAGE), np.float32))
    with pytest.raises(grpcclient.InferenceServerException, match="does not match") as e:
        client.infer(MODELS[0], [bad])
    assert "INVALID_ARGUMENT" in str(e.value.status())


@pytest.mark.parametrize("name", MODELS)
def test_grpc_infer_matches_onnxruntime(servers, onnx_models, name):
    client = grpcclient.InferenceServerClient(url=servers[1])
    meta = client.get_model_metadata(name)
    x = np.random.default_rng(11).uniform(-1, 1, (1, 3, IMAGE, IMAGE)).astype(np.float32)
    inp = grpcclient.InferInput(meta.inputs[0].name, list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    out_name = meta.outputs[0].name
    result = client.infer(name, [inp], outputs=[grpcclient.InferRequestedOutput(out_name)],
                          request_id="g1")
    got = result.as_numpy(out_name)
    sess = onnx_models[name]
    want = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    assert_close(got, want)
    assert result.get_response().id == "g1"
    # Over HTTP the same input gives the same bytes.
    http = httpclient.InferenceServerClient(url=servers[0])
    hin = httpclient.InferInput(meta.inputs[0].name, list(x.shape), "FP32")
    hin.set_data_from_numpy(x, binary_data=True)
    assert np.array_equal(http.infer(name, [hin]).as_numpy(out_name), got)


def dynamic_ocr_model():
    """x [N, 3, 48, width] -> Conv 3->4 (3x3, pad 1) -> its Shape: Gather n and w; Concat
    [n, 4, 48 * w] -> Reshape -> Softmax -> y: a batch and a width left dynamic, as OCR models
    ship."""
    from onnx import TensorProto, helper, numpy_helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 48, "width"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    rng = np.random.default_rng(4)
    inits = [numpy_helper.from_array(rng.uniform(-0.5, 0.5, (4, 3, 3, 3)).astype(np.float32), "w")]
    inits += [numpy_helper.from_array(np.array(v, np.int64), n)
              for n, v in [("i0", [0]), ("i3", [3]), ("four", [4]), ("h", [48])]]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Shape", ["c"], ["s"]),
        helper.make_node("Gather", ["s", "i0"], ["n"]),
        helper.make_node("Gather", ["s", "i3"], ["w_"]),
        helper.make_node("Mul", ["h", "w_"], ["hw"]),
        helper.make_node("Concat", ["n", "four", "hw"], ["target"], axis=0),
        helper.make_node("Reshape", ["c", "target"], ["r"]),
        helper.make_node("Softmax", ["r"], ["y"], axis=-1),
    ]
    model = helper.make_model(helper.make_graph(nodes, "ocr", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def expect_ort_answer(client, name, model, x):
    """Model `name`'s answer for input x equals ONNX Runtime's on the same ONNX bytes."""
    inp = httpclient.InferInput("x", list(x.shape), "FP32")
    inp.set_data_from_numpy(x, binary_data=True)
    got = client.infer(name, [inp]).as_numpy("y")
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    assert_close(got, sess.run(None, {"x": x})[0])


def test_config_pbtxt_dims_fix_dynamic_dims(tmp_path):
    """An ONNX model with a dynamic batch and width is served once its config.pbtxt's dims fix
    the width (Triton's dims, without the batch under max_batch_size); answers match ONNX Runtime
    sample by sample. Dims that leave the width at -1 refuse to load, naming the input and dim."""
    if not BRAID.exists():
        pytest.skip(f"{BRAID} is not built")
    model = dynamic_ocr_model()
    repo = tmp_path / "repo"
    (repo / "ocr" / "1").mkdir(parents=True)
    (repo / "ocr" / "1" / "model.onnx").write_bytes(model)
    config = repo / "ocr" / "config.pbtxt"
    config.write_text('max_batch_size: 2\n'
                      'input [ { name: "x", data_type: TYPE_FP32, dims: [ 3, 48, -1 ] } ]\n')
    failed = subprocess.run([str(BRAID), "serve", "--model-repository", str(repo), "--port", "0",
                             "--grpc-port", "-1", "--scheduler", "sequential"],
                            capture_output=True, text=True, timeout=120)
    assert failed.returncode == 2
    assert "graph input 'x': dim 3 ('width') is dynamic" in failed.stderr
    assert "config.pbtxt: give its dims" in failed.stderr

    config.write_text('max_batch_size: 2\n'
                      'input [ { name: "x", data_type: TYPE_FP32, dims: [ 3, 48, 40 ] } ]\n')
    proc, url = start_serve(["--model-repository", str(repo), "--scheduler", "sequential"])
    try:
        client = httpclient.InferenceServerClient(url=url)
        meta = client.get_model_metadata("ocr")
        assert meta["inputs"][0]["shape"] == [-1, 3, 48, 40]
        assert meta["outputs"][0]["shape"] == [-1, 4, 48 * 40]
        x = np.random.default_rng(6).uniform(-1, 1, (2, 3, 48, 40)).astype(np.float32)
        expect_ort_answer(client, "ocr", model, x)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0


def test_serve_shape_flags_fix_models_on_the_command_line(tmp_path):
    """--models with --dim: a dynamic model named on the command line is fixed by the flags."""
    if not BRAID.exists():
        pytest.skip(f"{BRAID} is not built")
    model = dynamic_ocr_model()
    path = tmp_path / "ocr.onnx"
    path.write_bytes(model)
    proc, url = start_serve(["--models", str(path), "--dim", "width=24", "--scheduler",
                             "sequential"])
    try:
        client = httpclient.InferenceServerClient(url=url)
        assert client.get_model_metadata("ocr")["inputs"][0]["shape"] == [1, 3, 48, 24]
        x = np.random.default_rng(8).uniform(-1, 1, (1, 3, 48, 24)).astype(np.float32)
        expect_ort_answer(client, "ocr", model, x)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0


def run_load(url, *args, timeout=120):
    """`braid load URL ARGS --json F`: (exit status, the JSON report, stdout + stderr)."""
    import json
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        report = pathlib.Path(d) / "load.json"
        r = subprocess.run([str(BRAID), "load", url, *args, "--json", str(report)],
                           capture_output=True, text=True, timeout=timeout)
        return r.returncode, (json.loads(report.read_text()) if report.exists() else None), \
            r.stdout + r.stderr


def test_braid_load_answers_every_request_of_a_pattern_the_server_sustains(server):
    """10 req/s for 2 s, periodic: the 20 requests due are all sent and answered 200."""
    rc, report, text = run_load(server, "--pattern", "squeezenet:10", "--duration", "2")
    assert rc == 0, text
    (m,) = report["models"]
    assert (m["due"], m["sent"], m["ok"], m["unsent"]) == (20, 20, 20, 0), text
    assert report["failed"] == 0 and "WARNING" not in text


def test_braid_load_closes_its_window_on_a_server_slower_than_the_pattern(server):
    """5000 req/s through one sender, far beyond what googlenet answers here: the window closes
    after 1 s with the backlog counted as not sent (perf_analyzer's warning), instead of sending
    all 5000 however late. Every request sent is answered 200, so the run exits 0."""
    rc, report, text = run_load(server, "--pattern", "googlenet:5000", "--duration", "1",
                                "--concurrency", "1", timeout=60)
    assert rc == 0, text
    (m,) = report["models"]
    assert m["due"] == 5000 and m["sent"] + m["unsent"] == m["due"], m
    assert m["unsent"] > 0 and m["ok"] == m["sent"] > 0, m
    assert report["unsent"] == m["unsent"]
    assert "[WARNING]" in text and "not sent" in text


def test_braid_load_exits_1_when_the_server_fails_requests(tmp_path):
    """A queue of one request (config.pbtxt) under 16 senders: the server refuses some requests;
    braid load counts them by HTTP status, says how many failed and exits 1."""
    if not BRAID.exists():
        pytest.skip(f"{BRAID} is not built")
    (tmp_path / "sq" / "1").mkdir(parents=True)
    subprocess.run([str(BRAID), "export", "googlenet", "--image-size", str(IMAGE), "-o",
                    str(tmp_path / "sq" / "1" / "model.onnx")], check=True, capture_output=True)
    (tmp_path / "sq" / "config.pbtxt").write_text("""
name: "sq"
platform: "onnxruntime_onnx"
dynamic_batching { default_queue_policy { max_queue_size: 1 } }
""")
    proc, url = start_serve(["--model-repository", str(tmp_path), "--scheduler", "sequential"])
    try:
        rc, report, text = run_load(url, "--pattern", "sq:2000", "--duration", "1",
                                    "--concurrency", "16", timeout=60)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    (m,) = report["models"]
    assert rc == 1, text
    assert report["failed"] == m["sent"] - m["ok"] > 0, m
    assert sum(m["errors"].values()) == report["failed"], m
    assert "requests sent failed" in text


def test_braid_load_sends_integer_and_bool_inputs_as_zeros(tmp_path):
    """A transformer-shaped model (int64 token ids into a Gather of an embedding, a bool mask)
    takes braid load's traffic: zeros, a valid index and mask, every request answered 200, in
    binary and in JSON tensors."""
    if not BRAID.exists():
        pytest.skip(f"{BRAID} is not built")
    from onnx import TensorProto, helper, numpy_helper
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 8])
    mask = helper.make_tensor_value_info("mask", TensorProto.BOOL, [1, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 4])
    emb = numpy_helper.from_array(np.arange(40, dtype=np.float32).reshape(10, 4), "emb")
    nodes = [helper.make_node("Gather", ["emb", "ids"], ["e"]),
             helper.make_node("Cast", ["mask"], ["m"], to=TensorProto.FLOAT),
             helper.make_node("Unsqueeze", ["m", "axes"], ["m3"]),
             helper.make_node("Mul", ["e", "m3"], ["y"])]
    axes = numpy_helper.from_array(np.array([2], np.int64), "axes")
    model = helper.make_model(helper.make_graph(nodes, "tok", [ids, mask], [y], [emb, axes]),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    (tmp_path / "tok" / "1").mkdir(parents=True)
    (tmp_path / "tok" / "1" / "model.onnx").write_bytes(model.SerializeToString())
    proc, url = start_serve(["--model-repository", str(tmp_path), "--scheduler", "sequential"])
    try:
        for tensors in ([], ["--json-tensors"]):
            rc, report, text = run_load(url, "--pattern", "tok:20", "--duration", "1", *tensors)
            assert rc == 0, text
            (m,) = report["models"]
            assert m["due"] == m["ok"] == 20 and not m["errors"], text
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
