"""TOP's runtime as a multi-agent environment, in PettingZoo's parallel API (MADDPG's), and one
combined block's intra-block scheduling in Gymnasium's API (GPG's: IntraBlockEnv, below).

braid's multi-model runtime (docs/top.md) on a simulated GPU, in virtual time, stepped by W + 1
agents as top.txt §V-B has them: the task launcher (one dequeue interval per model) and one agent
per model (one value per block, binned into the block partition). Any RL library that speaks
PettingZoo can train against braid's scheduler::

    from braid.env import TopParallelEnv
    env = TopParallelEnv("docs/top/multi_a100.json", step_s=0.5, samples=5)
    obs, infos = env.reset(seed=0)
    while env.agents:
        actions = {a: env.action_space(a).sample() for a in env.agents}
        obs, rewards, terminations, truncations, infos = env.step(actions)

Every action value lies in [0, 1]; every agent observes the whole state (Eq. 1: `samples` rows of
per-model backlog deviations and per-block progress). Rewards, the interval mapping and the bins
are runtime/agents.h's and runtime/env.h's (docs/top.md, "Learned policies").
"""
from __future__ import annotations

import json
import os
from typing import Any, Mapping

import numpy as np
import gymnasium
from gymnasium import spaces
from pettingzoo import ParallelEnv

from . import _braid
from .intra import index_choice

__all__ = ["TopParallelEnv", "IntraBlockEnv"]

LAUNCHER = "launcher"


def _scenario_json(scenario: str | Mapping[str, Any]) -> str:
    if isinstance(scenario, Mapping):
        return json.dumps(dict(scenario))
    if os.path.exists(scenario):
        with open(scenario, encoding="utf-8") as f:
            return f.read()
    return scenario  # JSON text


class TopParallelEnv(ParallelEnv):
    """PettingZoo parallel environment over braid's TOP runtime (a `braid.top/1` scenario).

    `scenario`: a path, JSON text or a dict (runtime/scenario.h; `device` must be `sim:NAME`
    for virtual time). `step_s`: how long each joint action holds on the runtime's clock;
    `samples`: the state's rows per step; `reward`: "scale-free" (default) or "paper" (Eq. 2);
    `min_interval_us`/`max_interval_us`: the launcher's log-scale range; `partition`: the block
    agents' encoding, "bins" (Fig. 10) or "offsets" (runtime/agents.h). An episode ends when
    the scenario's duration is over (`terminations` all true).
    """

    metadata = {"name": "braid_top_v0", "render_modes": []}

    def __init__(self, scenario: str | Mapping[str, Any], *, step_s: float = 0.5, samples: int = 5,
                 reward: str = "scale-free", min_interval_us: float = 500.0,
                 max_interval_us: float = 1e6, partition: str = "bins"):
        self._env = _braid.TopEnv(_scenario_json(scenario), float(step_s), int(samples), reward,
                                  float(min_interval_us), float(max_interval_us), partition)
        self.models = list(self._env.models())
        self.possible_agents = [LAUNCHER] + [f"model_{i}_{name}" for i, name in enumerate(self.models)]
        self.agents: list[str] = []
        sizes = self._env.action_sizes()
        self._action_spaces = {a: spaces.Box(0.0, 1.0, shape=(int(n),), dtype=np.float32)
                               for a, n in zip(self.possible_agents, sizes)}
        n = int(self._env.observation_size())
        self._observation_spaces = {a: spaces.Box(-np.inf, np.inf, shape=(n,), dtype=np.float32)
                                    for a in self.possible_agents}
        self.max_sub_blocks = int(self._env.max_sub_blocks())

    def observation_space(self, agent: str) -> spaces.Box:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Box:
        return self._action_spaces[agent]

    def _observations(self, state) -> dict[str, np.ndarray]:
        x = np.asarray(state, dtype=np.float32)
        return {a: x.copy() for a in self.agents}

    def reset(self, seed: int | None = None, options: dict | None = None):
        self.agents = list(self.possible_agents)
        state = self._env.reset(int(seed) if seed is not None else 0)
        return self._observations(state), {a: {} for a in self.agents}

    def step(self, actions: Mapping[str, Any]):
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise ValueError(f"no action for agent(s) {', '.join(missing)}")
        joint = [np.asarray(actions[a], dtype=np.float64).reshape(-1).tolist()
                 for a in self.possible_agents]
        state, rewards, done, info = self._env.step(joint)
        observations = self._observations(state)
        rewards = {a: float(r) for a, r in zip(self.possible_agents, rewards)}
        terminations = {a: bool(done) for a in self.agents}
        truncations = {a: False for a in self.agents}
        infos = {a: dict(info) for a in self.agents}
        if done:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def report(self) -> dict:
        """The episode's report (as `braid top --json`); ends the episode."""
        self.agents = []
        return json.loads(self._env.finish())

    def render(self):
        return None

    def close(self):
        pass


class IntraBlockEnv(gymnasium.Env):
    """Gymnasium environment over GPG's task (runtime/intra_env.h; top.txt Algorithm 2): schedule
    one combined block of `min_sub_blocks`..`max_sub_blocks` sub-blocks of the scenario's models,
    drawn at reset, from its end, a stage per step::

        from braid.env import IntraBlockEnv
        env = IntraBlockEnv("docs/top/saturated_a100.json", max_sub_blocks=4)
        obs, info = env.reset(seed=0)
        while True:
            obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
            if terminated: break

    Observation: the block as a graph (gymnasium.spaces.Graph): per unit its GPG features
    (braid._braid.intra_feature_names()) and a last column, 1 while it is left to schedule; edges
    (one kind) from producer to consumer. Action: one value in [0, 1] per sub-block slot, the paper's index
    read per sub-block: ⌊m·(M_k + 1)⌋ − 1 over its M_k endings (−1: it sits out); slots past the
    block's sub-blocks are ignored. A stage needs an ending and at most s groups: with none, the
    largest value's sub-block takes ⌊m·M_k⌋; over s, the smallest values sit out first. Reward:
    −l / l_zip per stage (a return above −1 beats zipping the sub-blocks' own schedules).
    `info["candidates"]`: each sub-block's endings (units, groups, features), for policies that
    score them (braid's GPG does: python/braid/gpg.py).
    """

    metadata = {"render_modes": []}

    def __init__(self, scenario: str | Mapping[str, Any], *, min_sub_blocks: int = 2,
                 max_sub_blocks: int = 4, r: int = 3, s: int = 8):
        self._env = _braid.IntraEnv(_scenario_json(scenario), int(min_sub_blocks),
                                    int(max_sub_blocks), int(r), int(s))
        self.feature_names = list(_braid.intra_feature_names()) + ["left"]
        self.s = int(s)
        self.observation_space = spaces.Graph(
            node_space=spaces.Box(-np.inf, np.inf, shape=(len(self.feature_names),),
                                  dtype=np.float32), edge_space=spaces.Discrete(1))
        self.action_space = spaces.Box(0.0, 1.0, shape=(int(max_sub_blocks),), dtype=np.float32)

    def _observation(self):
        x = np.asarray(self._env.features(), dtype=np.float32).reshape(-1, len(self.feature_names) - 1)
        left = np.asarray(self._env.left_nodes(), dtype=np.float32).reshape(-1, 1)
        links = [(p, v) for v, parents in enumerate(self._env.parents()) for p in parents]
        return spaces.GraphInstance(nodes=np.concatenate([x, left], axis=1),
                                    edges=np.zeros(len(links), dtype=np.int64),
                                    edge_links=np.asarray(links, dtype=np.int64).reshape(-1, 2))

    def _info(self) -> dict:
        return {"candidates": self._candidates, "combination": self._env.combination(),
                "zip_us": self._env.zip_us()}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._env.reset(int(seed) if seed is not None else int(self.np_random.integers(1 << 62)))
        self._candidates = list(self._env.candidates())
        return self._observation(), self._info()

    def choice(self, action) -> list[int]:
        """The ending index per sub-block (-1: sits out) that `action` reads as (above)."""
        return index_choice(action, self._candidates, self.s)

    def step(self, action):
        reward, latency, done = self._env.step(self.choice(action))
        self._candidates = list(self._env.candidates())
        info = self._info() | {"latency_us": latency}
        return self._observation(), float(reward), bool(done), False, info

    def render(self):
        return None
