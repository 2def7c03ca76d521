"""FP16 and BF16 ONNX models exchange their inputs and outputs in their own type (issue 29), on
the CPU where braid computes them upcast to float32: `braid.InferenceSession` takes and returns
float16 arrays, as ONNX Runtime does; BF16 tensors are float32 arrays holding bfloat16 values (NumPy
has no bfloat16; ml_dtypes' bfloat16 arrays are taken too); `braid serve` describes and answers
them as the protocol's FP16 and BF16, checked with the official Triton client over HTTP (JSON and
binary) and gRPC. Every output is compared element-wise with ONNX Runtime on the same model and
input (BF16: ORT on the float32 model holding the same bfloat16 weights, as ORT's CPU has no BF16
convolution). The models come from scripts/make_fp16_models.py."""
import json
import os
import pathlib
import signal
import subprocess
import sys

import ml_dtypes
import numpy as np
import onnxruntime as ort
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from serve_util import BRAID, start_serve

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("BRAID_BINARY_DIR", ROOT / "build"))
sys.path.insert(0, str(BUILD / "python"))

braid = pytest.importorskip("braid")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("fp16")
    subprocess.run([sys.executable, str(ROOT / "scripts/make_fp16_models.py"), str(d)],
                   check=True, capture_output=True)
    manifest = json.loads((d / "manifest.json").read_text())
    return d, manifest["outputs"]


def close_to(got, want, atol, rtol, what):
    """|got - want| <= atol * max|want| + rtol * |want|, element-wise (the C++ oracle's rule)."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, what
    bound = atol * np.abs(want).max() + rtol * np.abs(want)
    worst = np.abs(got - want) - bound
    assert (worst <= 0).all(), f"{what}: worst excess {worst.max():.3g}"


def ort_outputs(path, x):
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
        None, {"x": x})


def test_session_takes_and_returns_float16(models):
    d, outputs = models
    x16 = np.load(d / "x.f16.npy")
    s = braid.InferenceSession(str(d / "half.onnx"), scheduler="sequential")
    assert [a.type for a in s.get_inputs()] == ["tensor(float16)"]
    assert [a.type for a in s.get_outputs()] == ["tensor(float16)"] * 3
    got = s.run(None, {"x": x16})
    want = ort_outputs(d / "half.onnx", x16)
    for name, g, w in zip(outputs, got, want):
        assert g.dtype == np.float16, name
        assert w.dtype == np.float16, name
        close_to(g, w, 1e-2, 1e-2, name)
    # As ONNX Runtime: a float32 array for a float16 input is refused, naming both types.
    with pytest.raises(TypeError, match=r"input 'x': dtype float32, expected tensor\(float16\)"):
        s.run(None, {"x": x16.astype(np.float32)})


def test_session_bfloat16_as_float32_arrays(models):
    d, outputs = models
    x = np.load(d / "x.npy")  # float32, not rounded: the session rounds it to bfloat16
    s = braid.InferenceSession(str(d / "bf16.onnx"), scheduler="sequential")
    assert [a.type for a in s.get_inputs()] == ["tensor(bfloat16)"]
    got = s.run(None, {"x": x})
    # ml_dtypes' bfloat16 arrays give the same outputs: the same values once rounded.
    same = s.run(None, {"x": x.astype(ml_dtypes.bfloat16)})
    want = ort_outputs(d / "bf16_weights.onnx", np.load(d / "x.bf16.npy"))
    for name, g, g2, w in zip(outputs, got, same, want):
        assert g.dtype == np.float32, name
        assert (g.view(np.uint32) & 0xFFFF == 0).all(), f"{name}: not bfloat16 values"
        np.testing.assert_array_equal(g, g2)
        # Rounding braid's float32 result to bfloat16 costs up to 2^-9 of each value.
        close_to(g, w, 1e-3, 8e-3, name)


@pytest.fixture(scope="module")
def fp16_server(models):
    """braid serve on half.onnx and bf16.onnx: (HTTP host:port, gRPC host:port)."""
    if not BRAID.exists():
        pytest.skip(f"{BRAID} is not built")
    d, _ = models
    proc, url = start_serve(["--models", f"{d / 'half.onnx'},{d / 'bf16.onnx'}",
                             "--scheduler", "sequential", "--grpc-port", "0"])
    yield url, proc.grpc_url
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0, proc.stderr.read()


def test_serve_describes_and_answers_fp16_and_bf16(models, fp16_server):
    d, outputs = models
    url, grpc_url = fp16_server
    client = httpclient.InferenceServerClient(url=url)
    for name, datatype in (("half", "FP16"), ("bf16", "BF16")):
        meta = client.get_model_metadata(name)
        assert [t["datatype"] for t in meta["inputs"]] == [datatype], meta
        assert [t["datatype"] for t in meta["outputs"]] == [datatype] * 3, meta

    x16 = np.load(d / "x.f16.npy")
    want = ort_outputs(d / "half.onnx", x16)
    for binary in (False, True):
        inp = httpclient.InferInput("x", list(x16.shape), "FP16")
        inp.set_data_from_numpy(x16, binary_data=binary)
        result = client.infer("half", [inp], outputs=[
            httpclient.InferRequestedOutput(o, binary_data=binary) for o in outputs])
        for o, w in zip(outputs, want):
            got = result.as_numpy(o)
            assert got.dtype == np.float16, (o, binary)
            close_to(got, w, 1e-2, 1e-2, f"http {o} binary={binary}")

    # BF16 travels as binary data (the client refuses it as JSON), as ml_dtypes' bfloat16.
    xbf = np.load(d / "x.bf16.npy").astype(ml_dtypes.bfloat16)
    want_bf = ort_outputs(d / "bf16_weights.onnx", np.load(d / "x.bf16.npy"))
    inp = httpclient.InferInput("x", list(xbf.shape), "BF16")
    inp.set_data_from_numpy(xbf, binary_data=True)
    result = client.infer("bf16", [inp], outputs=[
        httpclient.InferRequestedOutput(o, binary_data=True) for o in outputs])
    for o, w in zip(outputs, want_bf):
        got = result.as_numpy(o)
        assert got.dtype == ml_dtypes.bfloat16, o
        close_to(got.astype(np.float32), w, 1e-3, 8e-3, f"http bf16 {o}")

    assert grpc_url, "braid serve printed no gRPC address"
    g = grpcclient.InferenceServerClient(url=grpc_url)
    inp = grpcclient.InferInput("x", list(x16.shape), "FP16")
    inp.set_data_from_numpy(x16)
    result = g.infer("half", [inp])
    for o, w in zip(outputs, want):
        got = result.as_numpy(o)
        assert got.dtype == np.float16, o
        close_to(got, w, 1e-2, 1e-2, f"grpc {o}")
    inp = grpcclient.InferInput("x", list(xbf.shape), "BF16")
    inp.set_data_from_numpy(xbf)
    result = g.infer("bf16", [inp])
    for o, w in zip(outputs, want_bf):
        close_to(result.as_numpy(o).astype(np.float32), w, 1e-3, 8e-3, f"grpc bf16 {o}")

    # A float32 tensor for a float16 input is a bad request naming both types.
    inp = httpclient.InferInput("x", list(x16.shape), "FP32")
    inp.set_data_from_numpy(x16.astype(np.float32), binary_data=True)
    with pytest.raises(Exception, match=r"FP32.*FP16|FP16.*FP32"):
        client.infer("half", [inp])
