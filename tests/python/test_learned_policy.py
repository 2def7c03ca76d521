"""`--policy learned:DIR` runs a trained policy without PyTorch (the venv has none): braid top and
braid serve on a policy directory whose actors are written here with the onnx package, as
`braid train maddpg` exports them (Gemm, Relu, Sigmoid); the first decision against ONNX Runtime's
evaluation of the launcher's actor; bad policy directories exit 2 naming what is wrong.
Training itself is tests/python_train (Debian's PyTorch)."""
import json
import pathlib
import re
import signal
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from serve_util import BRAID, start_serve

IMAGE = 48
MODELS = [("squeezenet", 12), ("googlenet", None)]  # googlenet's block count is read from braid


def test_venv_has_no_torch():
    with pytest.raises(ImportError):
        import torch  # noqa: F401


def actor(path, inputs, outputs, seed):
    rng = np.random.default_rng(seed)
    w1 = rng.normal(0, 0.5, (16, inputs)).astype(np.float32)
    w2 = rng.normal(0, 0.5, (outputs, 16)).astype(np.float32)
    nodes = [helper.make_node("Gemm", ["state", "w1", "b1"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "w2", "b2"], ["z"], transB=1),
             helper.make_node("Sigmoid", ["z"], ["action"])]
    inits = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(np.full(16, 0.1, np.float32), "b1"),
             numpy_helper.from_array(w2, "w2"), numpy_helper.from_array(np.zeros(outputs, np.float32), "b2")]
    graph = helper.make_graph(nodes, "actor", [helper.make_tensor_value_info("state", TensorProto.FLOAT, [1, inputs])],
                              [helper.make_tensor_value_info("action", TensorProto.FLOAT, [1, outputs])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def blocks_of(name):
    r = subprocess.run([str(BRAID), "top", "--model", f"{name}:1", "--image-size", str(IMAGE),
                        "--scheduler", "sequential", "--duration", "0.01"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return int(re.search(rf"{name}: \d+ units in (\d+) blocks", r.stdout).group(1))


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    if not BRAID.exists():
        pytest.skip(f"{BRAID} is not built")
    d = tmp_path_factory.mktemp("learned")
    blocks = [blocks_of(name) for name, _ in MODELS]
    samples = 2
    state = samples * (len(MODELS) + sum(blocks))
    agents = [("launcher", len(MODELS))] + [(f"model_{i}_{n}", b) for i, ((n, _), b) in enumerate(zip(MODELS, blocks))]
    entries = []
    for k, (name, n) in enumerate(agents):
        actor(d / f"actor_{name}.onnx", state, n, seed=k)
        entries.append({"name": name, "file": f"actor_{name}.onnx", "actions": n})
    manifest = {"format": "braid.policy/1", "kind": "maddpg",
                "models": [{"name": n, "blocks": b} for (n, _), b in zip(MODELS, blocks)],
                "H": 4, "observation_size": state, "samples": samples, "step_s": 0.2,
                "min_interval_us": 500.0, "max_interval_us": 1e6, "agents": entries}
    (d / "policy.json").write_text(json.dumps(manifest))
    return d, state


def top(*args):
    return subprocess.run([str(BRAID), "top", *[str(a) for a in args]], capture_output=True,
                          text=True, timeout=300)


def test_top_runs_it_and_decides_as_onnx_runtime_evaluates_it(policy, tmp_path):
    d, state = policy
    models = [f"--model={n}:100" for n, _ in MODELS]
    r = top(*models, "--image-size", IMAGE, "--scheduler", "sequential", "--duration", 1,
            "--policy", f"static,learned:{d}", "--json", tmp_path / "r.json", "--log", tmp_path / "log.txt")
    assert r.returncode == 0, r.stderr
    runs = json.loads((tmp_path / "r.json").read_text())["runs"]
    assert runs[1]["policy"] == f"learned:{d}"  # last: --log is the last run's
    assert sum(m["completed"] for m in runs[1]["models"]) > 0
    # A decision every step_s (0.2 s) of the 1 s run, and the first at t = 0 on the idle state
    # (every row zero): the launcher's actions through the log-scale mapping.
    log = (tmp_path / "log.txt").read_text().splitlines()
    assert sum(" redecide cadence" in l for l in log) >= 4
    line = next(l for l in log if " decide intervals" in l)
    logged = [float(v) for v in line.split("intervals")[1].split("partition")[0].split()]
    a0 = ort.InferenceSession(str(d / "actor_launcher.onnx")).run(
        None, {"state": np.zeros((1, state), np.float32)})[0][0].astype(np.float64)
    assert np.allclose(logged, 500.0 * (1e6 / 500.0) ** a0, rtol=1e-4), (logged, a0)


def test_serve_runs_it_on_the_cpu(policy):
    import tritonclient.http as httpclient
    d, _ = policy
    proc, url = start_serve(["--models", ",".join(n for n, _ in MODELS), "--image-size", str(IMAGE),
                             "--scheduler", "sequential", "--policy", f"learned:{d}"])
    try:
        client = httpclient.InferenceServerClient(url=url)
        for name, _ in MODELS:
            meta = client.get_model_metadata(name)
            shape = [int(v) for v in meta["inputs"][0]["shape"]]
            x = httpclient.InferInput(meta["inputs"][0]["name"], shape, "FP32")
            x.set_data_from_numpy(np.random.default_rng(0).random(shape, dtype=np.float32))
            y = client.infer(name, [x]).as_numpy(meta["outputs"][0]["name"])
            assert y is not None and np.isfinite(y).all()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, proc.stderr.read()


@pytest.mark.parametrize("change,message", [
    (lambda m: m.update(format="nope"), "not a braid.policy/1 manifest"),
    (lambda m: m.update(kind="toy"), "cannot run as a maddpg policy"),
    (lambda m: m.update(H=2), "trained with H = 2"),
    (lambda m: m["models"][0].update(name="mobilenet"), "was trained on mobilenet (12 blocks)"),
    (lambda m: m["models"].reverse(), "agent model_0_squeezenet has 12 actions"),
    (lambda m: m.update(samples=3), "observation_size"),
    (lambda m: m["agents"][0].update(file="../x.onnx"), "must be a file name"),
    (lambda m: m["agents"].pop(), "agents for 2 models"),
    (lambda m: m.pop("step_s"), "no \"step_s\""),
    (lambda m: m.update(partition="grid"), "unknown partition encoding 'grid' (known: bins, offsets)"),
])
def test_bad_policy_directories_exit_2(policy, tmp_path, change, message):
    d, _ = policy
    for f in d.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    manifest = json.loads((d / "policy.json").read_text())
    change(manifest)
    (tmp_path / "policy.json").write_text(json.dumps(manifest))
    r = top(*[f"--model={n}:100" for n, _ in MODELS], "--image-size", IMAGE, "--scheduler",
            "sequential", "--duration", 0.1, "--policy", f"learned:{tmp_path}")
    assert r.returncode == 2, r.stderr
    assert message in r.stderr, r.stderr


def test_missing_directory_and_broken_actor_exit_2(policy, tmp_path):
    r = top("--model=squeezenet:100", "--duration", 0.1, "--policy", f"learned:{tmp_path / 'none'}")
    assert r.returncode == 2 and "no " in r.stderr and "policy.json" in r.stderr, r.stderr
    d, _ = policy
    for f in d.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    (tmp_path / "actor_launcher.onnx").write_bytes(b"not onnx")
    r = top(*[f"--model={n}:100" for n, _ in MODELS], "--image-size", IMAGE, "--scheduler",
            "sequential", "--duration", 0.1, "--policy", f"learned:{tmp_path}")
    assert r.returncode == 2 and "actor_launcher.onnx" in r.stderr, r.stderr
