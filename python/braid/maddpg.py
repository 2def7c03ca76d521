"""MADDPG (Lowe et al. 2017) for TOP's W + 1 agents (top.txt §V-B), trained with PyTorch.

The agents are the task launcher (a⁰: one dequeue interval per model) and one agent per model (one
value per block, binned into the block partition); runtime/agents.h maps their actions and
runtime/env.h steps braid's runtime under them. Every agent observes the whole state (Eq. 1), so
each critic sees the state once and every agent's action: Q_i(x, a¹..a^N). What top.txt leaves
open is decided here (docs/top.md, "Learned policies: training"):

- the critic update is the standard one, (y − Q)² with y = r + γ·Q'(x', μ'(x')), not Eq. 3;
- target networks track their networks softly, τ = 0.01; Adam at η = 0.001 for both;
- exploration: uniform random actions for the warm-up, then Gaussian noise on the actor's action
  (σ from 0.2 down to 0.05 linearly over the training), clipped to [0, 1];
- one update of every agent per environment step once the buffer holds a batch and the warm-up
  is over; the buffer keeps the last 10⁵ transitions;
- `action_reg` (default 0, as before): the actor's loss gains action_reg × mean(pre-sigmoid²), the
  regularizer of Lowe et al.'s own code (openai/maddpg: 1e-3 × the mean square of the policy's
  logits), which keeps the actions off the sigmoid's flat ends where a critic's gradient vanishes.

Training needs PyTorch; a trained policy does not: `export` writes each actor as ONNX (Gemm,
Relu, Sigmoid) beside a braid.policy/1 JSON, and braid's runtime evaluates them with its own
executor (runtime/learned_policy.h: `--policy learned:DIR`).
"""
from __future__ import annotations

import copy
import dataclasses
import json
import os
import time
from typing import Callable, Protocol, Sequence

import numpy as np
import torch
from torch import nn


class Environment(Protocol):
    """What the trainer needs of an environment: every agent observes the same state."""

    agents: Sequence[str]
    observation_size: int
    action_sizes: Sequence[int]

    def reset(self, seed: int) -> np.ndarray: ...

    # (next state, one reward per agent, done, info)
    def step(self, actions: Sequence[np.ndarray]) -> tuple[np.ndarray, Sequence[float], bool, dict]: ...


@dataclasses.dataclass
class Config:
    steps: int = 8000
    seed: int = 0
    warmup: int = 2000               # §VI-B: 2×10³ steps of random actions
    batch: int = 100                 # §VI-B
    gamma: float = 0.95              # §VI-B
    lr: float = 1e-3                 # §VI-B: η
    tau: float = 0.01
    noise_start: float = 0.2
    noise_end: float = 0.05
    buffer: int = 100_000
    actor_sizes: tuple[int, ...] = (500, 128)          # §VI-B
    critic_sizes: tuple[int, ...] = (1024, 512, 300)   # §VI-B
    updates_per_step: int = 1
    action_reg: float = 0.0          # openai/maddpg's p_reg weight (1e-3 there); 0: off


def mlp(sizes: Sequence[int], out_activation: nn.Module | None) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i + 2 < len(sizes):
            layers.append(nn.ReLU())
    if out_activation is not None:
        layers.append(out_activation)
    return nn.Sequential(*layers)


class Buffer:
    """A ring of transitions, sampled uniformly by the trainer's own generator."""

    def __init__(self, capacity: int, obs_size: int, action_size: int, agents: int):
        self.capacity, self.size, self.next = capacity, 0, 0
        self.x = np.zeros((capacity, obs_size), np.float32)
        self.a = np.zeros((capacity, action_size), np.float32)
        self.r = np.zeros((capacity, agents), np.float32)
        self.x2 = np.zeros((capacity, obs_size), np.float32)
        self.done = np.zeros((capacity, 1), np.float32)

    def add(self, x, a, r, x2, done):
        i = self.next
        self.x[i], self.a[i], self.r[i], self.x2[i], self.done[i] = x, a, r, x2, float(done)
        self.next = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, rng: np.random.Generator, n: int):
        idx = rng.integers(0, self.size, n)
        return [torch.from_numpy(t[idx]) for t in (self.x, self.a, self.r, self.x2, self.done)]


class Maddpg:
    def __init__(self, observation_size: int, action_sizes: Sequence[int], config: Config):
        self.config = config
        self.action_sizes = [int(n) for n in action_sizes]
        self.offsets = np.cumsum([0] + self.action_sizes)
        joint = int(self.offsets[-1])
        torch.manual_seed(config.seed)
        self.actors = [mlp([observation_size, *config.actor_sizes, n], nn.Sigmoid())
                       for n in self.action_sizes]
        self.critics = [mlp([observation_size + joint, *config.critic_sizes, 1], None)
                        for _ in self.action_sizes]
        self.target_actors = [self._copy(m) for m in self.actors]
        self.target_critics = [self._copy(m) for m in self.critics]
        self.actor_opt = [torch.optim.Adam(m.parameters(), lr=config.lr) for m in self.actors]
        self.critic_opt = [torch.optim.Adam(m.parameters(), lr=config.lr) for m in self.critics]

    @staticmethod
    def _copy(module: nn.Module) -> nn.Module:
        target = copy.deepcopy(module)
        for p in target.parameters():
            p.requires_grad_(False)
        return target

    def load_actors(self, directory: str) -> None:
        """The actors' weights from a directory `export` wrote (actors.pt)."""
        states = torch.load(os.path.join(directory, "actors.pt"))
        for actor, state in zip(self.actors, states):
            actor.load_state_dict(state)

    def act(self, x: np.ndarray) -> list[np.ndarray]:
        with torch.no_grad():
            t = torch.from_numpy(np.asarray(x, np.float32)).unsqueeze(0)
            return [a(t)[0].numpy().astype(np.float32) for a in self.actors]

    def update(self, batch) -> tuple[float, float]:
        x, a, r, x2, done = batch
        c = self.config
        with torch.no_grad():
            a2 = torch.cat([m(x2) for m in self.target_actors], dim=1)
        critic_loss = actor_loss = 0.0
        for i in range(len(self.actors)):
            with torch.no_grad():
                y = r[:, i:i + 1] + c.gamma * (1 - done) * self.target_critics[i](torch.cat([x2, a2], 1))
            q = self.critics[i](torch.cat([x, a], 1))
            loss = ((y - q) ** 2).mean()
            self.critic_opt[i].zero_grad()
            loss.backward()
            self.critic_opt[i].step()
            critic_loss += float(loss)
            # The actor's gradient through its own critic, the other agents' actions as sampled.
            lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
            logits = self.actors[i][:-1](x)  # the actor without its final Sigmoid
            joint = torch.cat([a[:, :lo], torch.sigmoid(logits), a[:, hi:]], 1)
            pg = -self.critics[i](torch.cat([x, joint], 1)).mean()
            if c.action_reg > 0:
                pg = pg + c.action_reg * (logits ** 2).mean()
            self.actor_opt[i].zero_grad()
            pg.backward()
            self.actor_opt[i].step()
            actor_loss += float(pg)
        with torch.no_grad():
            for net, target in zip(self.actors + self.critics, self.target_actors + self.target_critics):
                for p, tp in zip(net.parameters(), target.parameters()):
                    tp.mul_(1 - c.tau).add_(c.tau * p)
        return critic_loss, actor_loss


def train(env: Environment, config: Config, *, log: Callable[[str], None] | None = None,
          on_step: Callable[[dict], None] | None = None,
          checkpoint: tuple[int, Callable[[Maddpg, list[dict]], None]] | None = None
          ) -> tuple[Maddpg, list[dict]]:
    """Trains for config.steps environment steps; returns the agents and one row per step (step,
    episode, each agent's reward, the info's numbers). `checkpoint` = (every, f): f(agents, rows)
    after every `every` steps."""
    torch.use_deterministic_algorithms(True)  # Maddpg seeds torch; exploration uses `rng`
    rng = np.random.default_rng(config.seed)
    agents = Maddpg(env.observation_size, env.action_sizes, config)
    buffer = Buffer(config.buffer, env.observation_size, int(agents.offsets[-1]), len(env.agents))
    rows: list[dict] = []
    episode = 0
    x = env.reset(config.seed)
    started = time.monotonic()
    for step in range(config.steps):
        if step < config.warmup:
            actions = [rng.uniform(0, 1, n).astype(np.float32) for n in agents.action_sizes]
        else:
            frac = (step - config.warmup) / max(1, config.steps - config.warmup)
            sigma = config.noise_start + (config.noise_end - config.noise_start) * frac
            actions = [np.clip(a + rng.normal(0, sigma, a.shape), 0, 1).astype(np.float32)
                       for a in agents.act(x)]
        x2, rewards, done, info = env.step(actions)
        buffer.add(x, np.concatenate(actions), np.asarray(rewards, np.float32), x2, done)
        losses = (0.0, 0.0)
        if step >= config.warmup and buffer.size >= config.batch:
            for _ in range(config.updates_per_step):
                losses = agents.update(buffer.sample(rng, config.batch))
        row = {"step": step, "episode": episode, "wall_s": round(time.monotonic() - started, 3),
               "reward_mean": float(np.mean(rewards)), "critic_loss": losses[0],
               "actor_loss": losses[1]}
        row.update({f"reward_{a}": float(r) for a, r in zip(env.agents, rewards)})
        row.update({k: v for k, v in info.items() if isinstance(v, (bool, int, float))})
        rows.append(row)
        if on_step:
            on_step(row)
        if done:
            episode += 1
            x = env.reset(config.seed + episode)
        else:
            x = x2
        if checkpoint and checkpoint[0] > 0 and (step + 1) % checkpoint[0] == 0:
            checkpoint[1](agents, rows)
        if log and (step + 1) % max(1, config.steps // 20) == 0:
            recent = [r["reward_mean"] for r in rows[-max(1, config.steps // 20):]]
            log(f"step {step + 1}/{config.steps}: episode {episode}, mean reward "
                f"{np.mean(recent):.4f}, {time.monotonic() - started:.1f} s")
    return agents, rows


def export(agents: Maddpg, names: Sequence[str], directory: str, manifest: dict) -> None:
    """Each actor as ONNX (input "state" [1, observation], output "action" [1, actions]), their
    weights as actors.pt, and DIR/policy.json: `manifest` plus the agents' files."""
    os.makedirs(directory, exist_ok=True)
    entries = []
    for name, actor, n in zip(names, agents.actors, agents.action_sizes):
        path = f"actor_{name}.onnx"
        dummy = torch.zeros(1, actor[0].in_features)
        torch.onnx.export(actor, dummy, os.path.join(directory, path), input_names=["state"],
                          output_names=["action"], opset_version=13)
        entries.append({"name": name, "file": path, "actions": n})
    # The weights as PyTorch has them too (to go on training, or compare against the export).
    torch.save([a.state_dict() for a in agents.actors], os.path.join(directory, "actors.pt"))
    with open(os.path.join(directory, "policy.json"), "w", encoding="utf-8") as f:
        json.dump({**manifest, "agents": entries}, f, indent=2)
        f.write("\n")
