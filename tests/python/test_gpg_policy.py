"""GPG without PyTorch (the venv has none): braid.env.IntraBlockEnv passes Gymnasium's own checks;
a GPG directory written here with the onnx package (as `braid train gpg` exports one) is run by
braid's runtime (runtime/gpg.h) and decides as ONNX Runtime's evaluation of the same networks
with the decision rule of braid.intra; `braid top --intra gpg:DIR` serves with it; bad
directories exit 2. Training is tests/python_train/test_gpg.py (Debian's PyTorch)."""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from serve_util import BRAID

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("BRAID_BINARY_DIR", ROOT / "build"))
sys.path.insert(0, str(BUILD / "python"))
braid = pytest.importorskip("braid", reason="the braid module is not built (BRAID_BUILD_PYTHON)")
pytest.importorskip("gymnasium", reason=".venv lacks gymnasium (make deps)")
from braid import _braid, intra  # noqa: E402
from braid.env import IntraBlockEnv  # noqa: E402

SCENARIO = {"format": "braid.top/1", "device": "sim:a100_40gb", "duration_s": 0.3,
            "image_size": 64, "scheduler": "sequential", "H": 4,
            "models": [{"model": "squeezenet", "fps": 300},
                       {"model": "resnet50", "fps": 150, "blocks": "stages"}]}
MESSAGE, EMBEDDING, HIDDEN = 8, 8, 16


def test_venv_has_no_torch():
    with pytest.raises(ImportError):
        import torch  # noqa: F401


def test_gymnasium_env_checker():
    from gymnasium.utils.env_checker import check_env
    env = IntraBlockEnv(SCENARIO, max_sub_blocks=3)
    check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=3)
    assert obs.nodes.shape[1] == len(env.feature_names) and obs.nodes[:, -1].all()
    total, steps = 0.0, 0
    while True:
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        total += reward
        steps += 1
        if terminated:
            break
    assert not obs.nodes[:, -1].any() and steps >= 1 and total < 0


def mlp(path, inputs, outputs, seed):
    rng = np.random.default_rng(seed)
    w1 = rng.normal(0, 1 / np.sqrt(inputs), (HIDDEN, inputs)).astype(np.float32)
    w2 = rng.normal(0, 1 / np.sqrt(HIDDEN), (outputs, HIDDEN)).astype(np.float32)
    b1 = rng.normal(0, 0.1, HIDDEN).astype(np.float32)
    b2 = rng.normal(0, 0.1, outputs).astype(np.float32)
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], transB=1)]
    inits = [numpy_helper.from_array(v, n) for v, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", inputs])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", outputs])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    d = tmp_path_factory.mktemp("gpg")
    features = list(_braid.intra_feature_names())
    f = len(features)
    widths = {"g1": (f, MESSAGE), "h1": (MESSAGE, f), "g2": (f, MESSAGE), "h2": (MESSAGE, EMBEDDING),
              "policy": (EMBEDDING + f + intra.EXTRAS, 1)}
    for k, (name, (i, o)) in enumerate(widths.items()):
        mlp(d / f"{name}.onnx", i, o, seed=k)
    manifest = {"format": "braid.policy/1", "kind": "gpg", "features": features, "r": 3, "s": 8,
                "message_size": MESSAGE, "embedding_size": EMBEDDING, "batch": 4,
                "networks": {name: f"{name}.onnx" for name in widths}}
    (d / "policy.json").write_text(json.dumps(manifest))
    return d


def ort_stages(d, env):
    """The schedule the policy in d gives the env's current block, by ONNX Runtime and
    braid.intra.decide (Eqs. 5-6 as runtime/gpg.cc computes them)."""
    run = {name: (lambda s: lambda x: s.run(None, {"x": np.asarray(x, np.float32).reshape(len(x), -1)})[0])(
        ort.InferenceSession(str(d / f"{name}.onnx"))) for name in ("g1", "h1", "g2", "h2", "policy")}
    f = len(_braid.intra_feature_names())
    x = np.asarray(env.features(), np.float32).reshape(-1, f)
    parents = [list(p) for p in env.parents()]
    e, g1 = x.copy(), np.zeros((len(x), MESSAGE), np.float32)
    for nodes in intra.levels_of(parents):
        sums = np.stack([g1[parents[v]].sum(axis=0) if parents[v] else np.zeros(MESSAGE, np.float32)
                         for v in nodes])
        e[nodes] += run["h1"](sums)
        g1[nodes] = run["g1"](e[nodes])
    g2 = run["g2"](e)
    while not env.done():
        z = run["h2"](g2[list(env.leaves())].sum(axis=0, keepdims=True))[0]
        cands = [list(c) for c in env.candidates()]
        rows = [np.concatenate([z, e[nodes].sum(axis=0), extras])
                for of_block in cands for nodes, _, extras in of_block]
        env.step(intra.decide(run["policy"](np.stack(rows))[:, 0], cands, 8))
    return [[sorted(map(tuple, g)) for g in stage] for stage in env.stages()]


def test_runtime_decides_as_onnx_runtime(policy):
    env = _braid.IntraEnv(json.dumps(SCENARIO), 2, 4, 3, 8)
    for seed in range(6):
        env.reset(seed)
        _, _, ours = env.gpg(str(policy))  # checked: every unit once, after its producers
        assert all(len(stage) <= 8 and all(len(g) <= 3 for g in stage) for stage in ours)
        assert [[sorted(map(tuple, g)) for g in stage] for stage in ours] == ort_stages(policy, env)


def top(*args):
    return subprocess.run([str(BRAID), "top", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def test_top_serves_with_it(policy, tmp_path):
    if not BRAID.exists():
        pytest.skip(f"{BRAID} is not built")
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps(SCENARIO))
    r = top("--scenario", scenario, "--policy", "sync", "--intra", f"gpg:{policy}", "-m",
            "squeezenet:3000", "-m", "resnet50:1500:stages", "--json", tmp_path / "r.json")
    assert r.returncode == 0, r.stderr
    run = json.loads((tmp_path / "r.json").read_text())["runs"][0]
    assert sum(m["completed"] for m in run["models"]) > 0
    assert run["stage_dict"]["searched"] > run["stage_dict"]["superblocks"]


@pytest.mark.parametrize("change,message", [
    (lambda m: m.update(kind="maddpg"), "cannot run as a gpg policy"),
    (lambda m: m["features"].pop(), "node features unlike this braid's"),
    (lambda m: m.update(message_size=9), "expected 4 x 9"),
    (lambda m: m["networks"].update(policy="../policy.onnx"), "must be a file name"),
    (lambda m: m.pop("r"), 'no "r"'),
])
def test_bad_gpg_directories_exit_2(policy, tmp_path, change, message):
    if not BRAID.exists():
        pytest.skip(f"{BRAID} is not built")
    for f in policy.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    manifest = json.loads((policy / "policy.json").read_text())
    change(manifest)
    (tmp_path / "policy.json").write_text(json.dumps(manifest))
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps(SCENARIO))
    r = top("--scenario", scenario, "--duration", 0.1, "--intra", f"gpg:{tmp_path}")
    assert r.returncode == 2, r.stderr
    assert message in r.stderr, r.stderr
