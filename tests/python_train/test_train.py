"""braid train (python/braid/train.py, maddpg.py): MADDPG with Debian's PyTorch against braid's
runtime. Run by Debian's /usr/bin/python3 (python3-torch, python3-pytest: make deps), not the
venv, whose NumPy 2 does not fit torch 1.13. The policy's run without PyTorch is
tests/python/test_learned_policy.py (the venv has no torch)."""
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("BRAID_BINARY_DIR", ROOT / "build"))
BRAID = BUILD / "braid"
sys.path.insert(0, str(BUILD / "python"))
torch = pytest.importorskip("torch", reason="no PyTorch (Debian: python3-torch; make deps)")
pytest.importorskip("braid._braid", reason="the braid module is not built")
from braid import maddpg, train  # noqa: E402

# Two models, small images, 2 s episodes of 20 steps: seconds per hundred steps.
SCENARIO = {"format": "braid.top/1", "device": "sim:a100_40gb", "duration_s": 2,
            "image_size": 64, "scheduler": "sequential", "H": 4,
            "models": [{"model": "squeezenet", "fps": 300},
                       {"model": "resnet50", "fps": 150, "blocks": "stages"}]}
SMALL = dict(actor_sizes=(32, 32), critic_sizes=(64, 64), batch=32)


def small_env(partition="bins"):
    return train.TopEnvAdapter(SCENARIO, 0.1, 1, "scale-free", 500.0, 1e6, partition)


def test_toy_task_learns_its_known_optimum():
    # The optimal action of agent i is the state's t_i: after training, the deterministic actors
    # must land within 0.1 of it on targets never seen.
    config = maddpg.Config(steps=1500, warmup=200, seed=3, actor_sizes=(64, 64),
                           critic_sizes=(64, 64), batch=64)
    agents, rows = maddpg.train(train.ToyEnv(), config)
    errors = []
    for t in np.random.default_rng(1234).uniform(0, 1, (50, 2)).astype(np.float32):
        a = agents.act(t)
        errors.append(abs(float(a[0][0]) - t[0]) + abs(float(a[1][0]) - t[1]))
    assert np.mean(errors) / 2 < 0.1, np.mean(errors)
    first = np.mean([r["reward_mean"] for r in rows[:200]])
    last = np.mean([r["reward_mean"] for r in rows[-200:]])
    assert last > first + 0.2, (first, last)  # random actions average about -0.33


def test_same_seed_same_curve():
    def curve(seed):
        config = maddpg.Config(steps=60, warmup=30, seed=seed, **SMALL)
        _, rows = maddpg.train(small_env(), config)
        return [(r["reward_mean"], r["critic_loss"], r["actor_loss"]) for r in rows]

    a, b, c = curve(5), curve(5), curve(6)
    # One machine, one thread: the same numbers (the stated tolerance, 1e-9, is for the
    # float32 losses printed through float64).
    assert np.allclose(a, b, rtol=0, atol=1e-9)
    assert not np.allclose(a, c, rtol=0, atol=1e-9)


def test_action_reg_keeps_actors_off_the_sigmoids_ends():
    # A critic that rewards larger actions without bound drives a plain actor's pre-sigmoid
    # output up; openai/maddpg's regularizer (action_reg) holds it near 0.
    def mean_logit(reg):
        config = maddpg.Config(seed=2, action_reg=reg, **SMALL)
        agents = maddpg.Maddpg(3, [2], config)
        x = torch.rand(32, 3)
        for _ in range(60):
            a = torch.rand(32, 2)
            r = a.sum(1, keepdim=True)  # the reward is the action's sum
            agents.update([x, a, r, x, torch.ones(32, 1)])
        return float(agents.actors[0][:-1](x).abs().mean())

    free, held = mean_logit(0.0), mean_logit(10.0)
    assert held < 0.5 * free, (free, held)


def run_braid(*args, timeout=120, env=None):
    return subprocess.run([str(BRAID), *args], capture_output=True, text=True, timeout=timeout,
                          env=env)


# Both encodings of the block agents (runtime/agents.h): the manifest carries it to the runtime.
@pytest.fixture(scope="module", params=["bins", "offsets"])
def trained(tmp_path_factory, request):
    """A short training through the CLI (a `make test` run: well under 2 minutes)."""
    if not BRAID.exists():
        pytest.skip(f"{BRAID} is not built")
    d = tmp_path_factory.mktemp("policy")
    (d / "scenario.json").write_text(json.dumps(SCENARIO))
    started = time.monotonic()
    r = run_braid("train", "maddpg", "--scenario", str(d / "scenario.json"), "--step-s", "0.1",
                  "--samples", "1", "--steps", "300", "--warmup", "100", "--actor", "32,32",
                  "--critic", "64,64", "--batch", "32", "--seed", "1", "-o", str(d / "out"),
                  "--partition", request.param, "--quiet", env={**os.environ, "BRAID_PYTHON": sys.executable})
    assert r.returncode == 0, r.stderr
    wall = time.monotonic() - started
    assert wall < 120, wall
    return d, request.param


def test_cli_writes_policy_curve_and_plot(trained):
    trained, partition = trained
    out = trained / "out"
    manifest = json.loads((out / "policy.json").read_text())
    assert manifest["format"] == "braid.policy/1" and manifest["kind"] == "maddpg"
    assert manifest["partition"] == partition
    assert [m["name"] for m in manifest["models"]] == ["squeezenet", "resnet50"]
    assert [a["name"] for a in manifest["agents"]] == ["launcher", "model_0_squeezenet",
                                                      "model_1_resnet50"]
    for a in manifest["agents"]:
        assert (out / a["file"]).stat().st_size > 0
    lines = (out / "curve.csv").read_text().splitlines()
    assert len(lines) == 301 and lines[0].startswith("step,episode,wall_s,reward_mean")
    assert (out / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_runtime_runs_the_trained_agents_as_the_environment_did(trained, tmp_path):
    # The agents stepping the environment deterministically, and braid top running their ONNX
    # export with its own executor on the same scenario and seed, serve the same tasks.
    trained, partition = trained
    scenario = trained / "scenario.json"
    r = run_braid("top", "--scenario", str(scenario), "--policy",
                  f"learned:{trained / 'out'}", "--seed", "1", "--json", str(tmp_path / "r.json"),
                  "--log", str(tmp_path / "log.txt"))
    assert r.returncode == 0, r.stderr
    runtime_run = json.loads((tmp_path / "r.json").read_text())["runs"][0]

    env = small_env(partition)
    config = maddpg.Config(steps=300, warmup=100, seed=1, actor_sizes=(32, 32),
                           critic_sizes=(64, 64), batch=32)
    agents = maddpg.Maddpg(env.observation_size, env.action_sizes, config)
    agents.load_actors(trained / "out")
    x = env.reset(1)
    first = agents.act(x)
    done = False
    while not done:
        x, _, done, _ = env.step(agents.act(x))
    env_run = json.loads(env.env.finish())
    assert [m["completed"] for m in runtime_run["models"]] == \
        [m["completed"] for m in env_run["models"]]
    assert runtime_run["steps"] == env_run["steps"]
    # The first decision (t = 0): the launcher's actions through the log-scale mapping.
    line = next(l for l in (tmp_path / "log.txt").read_text().splitlines() if " decide " in l)
    logged = [float(v) for v in line.split("intervals")[1].split("partition")[0].split()]
    expected = 500.0 * (1e6 / 500.0) ** first[0].astype(np.float64)
    assert np.allclose(logged, expected, rtol=1e-4), (logged, expected)


def test_bad_input_exits_2(tmp_path):
    if not BRAID.exists():
        pytest.skip(f"{BRAID} is not built")
    env = {**os.environ, "BRAID_PYTHON": sys.executable}
    cases = [
        (["train", "maddpg", "--models", "nosuch:10", "-o", str(tmp_path / "a")], "unknown model 'nosuch'"),
        (["train", "maddpg", "--models", "squeezenet", "-o", str(tmp_path / "b")], "NAME:FPS"),
        (["train", "maddpg", "--scenario", str(tmp_path / "none.json"), "-o", str(tmp_path / "c")], "cannot read"),
        (["train", "maddpg", "--models", "squeezenet:10", "--steps", "0", "-o", str(tmp_path / "d")], "--steps"),
        (["train", "maddpg", "--models", "squeezenet:10"], "-o/--output"),
        (["train", "maddpg", "--models", "squeezenet:10", "--lr", "0", "-o", str(tmp_path / "e")], "--lr"),
    ]
    for args, message in cases:
        r = run_braid(*args, env=env)
        assert r.returncode == 2, (args, r.stderr)
        assert message in r.stderr, (args, r.stderr)
