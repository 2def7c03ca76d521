"""braid.env.TopParallelEnv: TOP's runtime as a PettingZoo parallel environment. PettingZoo's own
API test, determinism for a seed, and the agents' action/observation spaces."""
import os
import pathlib
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("BRAID_BINARY_DIR", ROOT / "build"))
sys.path.insert(0, str(BUILD / "python"))
braid = pytest.importorskip("braid", reason="the braid module is not built (BRAID_BUILD_PYTHON)")
pytest.importorskip("pettingzoo", reason=".venv lacks pettingzoo (make deps)")
from braid.env import TopParallelEnv  # noqa: E402
from pettingzoo.test import parallel_api_test  # noqa: E402

SCENARIO = {"format": "braid.top/1", "device": "sim:a100_40gb", "duration_s": 0.6,
            "image_size": 64, "scheduler": "sequential", "H": 4,
            "models": [{"model": "squeezenet", "fps": 300},
                       {"model": "resnet50", "fps": 150, "blocks": "stages"}]}


@pytest.fixture(scope="module")
def env():
    return TopParallelEnv(SCENARIO, step_s=0.1, samples=3)


def test_pettingzoo_parallel_api(env):
    parallel_api_test(env, num_cycles=20)


def test_agents_and_spaces(env):
    assert env.possible_agents == ["launcher", "model_0_squeezenet", "model_1_resnet50"]
    assert env.action_space("launcher").shape == (2,)
    blocks = [env.action_space(a).shape[0] for a in env.possible_agents[1:]]
    assert blocks[1] == 5  # ResNet-50 by stages
    row = 2 + sum(blocks)
    for a in env.possible_agents:
        assert env.observation_space(a).shape == (3 * row,)
        assert env.action_space(a).low.min() == 0 and env.action_space(a).high.max() == 1


def run_episode(env, seed, rng_seed):
    rng = np.random.default_rng(rng_seed)
    obs, _ = env.reset(seed=seed)
    trace = [obs["launcher"]]
    steps = 0
    while env.agents:
        actions = {a: rng.uniform(0, 1, env.action_space(a).shape).astype(np.float32)
                   for a in env.agents}
        obs, rewards, terms, truncs, infos = env.step(actions)
        steps += 1
        trace += [obs["launcher"], np.array(list(rewards.values()))]
        assert all(np.isfinite(list(rewards.values())))
    return trace, steps


def test_episode_is_deterministic_for_a_seed(env):
    a, steps = run_episode(env, 4, 9)
    b, _ = run_episode(env, 4, 9)
    c, _ = run_episode(env, 5, 9)
    assert steps == 6  # 0.6 s in steps of 0.1 s
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def test_report_and_bad_actions(env):
    env.reset(seed=1)
    with pytest.raises(ValueError, match="no action"):
        env.step({"launcher": np.zeros(2)})
    with pytest.raises(braid.InvalidArgument, match="blocks"):
        env.step({a: np.zeros(1) if a != "launcher" else np.zeros(2) for a in env.agents})
    env.step({a: np.full(env.action_space(a).shape, 0.1) for a in env.agents})
    report = env.report()
    assert report["policy"] == "actions"
    assert env.agents == []
