"""TOP's runtime as a multi-agent environment, in PettingZoo's parallel API.

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
from gymnasium import spaces
from pettingzoo import ParallelEnv

from . import _braid

__all__ = ["TopParallelEnv"]

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
    `min_interval_us`/`max_interval_us`: the launcher's log-scale range. An episode ends when
    the scenario's duration is over (`terminations` all true).
    """

    metadata = {"name": "braid_top_v0", "render_modes": []}

    def __init__(self, scenario: str | Mapping[str, Any], *, step_s: float = 0.5, samples: int = 5,
                 reward: str = "scale-free", min_interval_us: float = 500.0,
                 max_interval_us: float = 1e6):
        self._env = _braid.TopEnv(_scenario_json(scenario), float(step_s), int(samples), reward,
                                  float(min_interval_us), float(max_interval_us))
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
