"""GPG: TOP's learned intra-block scheduler (top.txt §V-C, Algorithm 2, Eqs. 5-8), in PyTorch.

Training only: the trained networks are exported as ONNX beside a braid.policy/1 manifest of
kind "gpg", and braid's runtime evaluates them itself (`--intra gpg:DIR`, runtime/gpg.h), with
the same decision rule as `GpgNet.decide` here.

What the paper leaves open, decided here (docs/top.md, "GPG"):
- The action. The paper's μ(z) picks ⌊m·M⌋ of a list of endings in an unstated order, and the
  policy never sees the candidates; that list is the product of the sub-blocks' own lists (the
  sub-blocks of a combined block share no edge), millions at 4 sub-blocks of Inception V3. Here
  q scores each sub-block's endings, c = [Σ_{v in the ending} e_v, its units, groups, slowest
  group's and all units' latency, the sub-block's latency left] (runtime::candidate_extras), and
  a stage takes every sub-block's best, the best first while within s groups; a stage's value is
  the sum of its scores. A first version also scored "none" per sub-block; greedy on it, it
  scheduled one sub-block per stage (docs/top.md).
- Eqs. 7-8 (a TD critic q(z, m) and a deterministic policy gradient through a continuous m)
  become an actor-critic over those discrete picks: π is a softmax over each sub-block's ending
  scores, the critic V(z) (training only, like the paper's q) learns the return G_t, and the
  policy follows (G_t − V(z_t)) ∇ log π, plus an entropy bonus; G_t is the episode's rest
  (γ = 1: an episode is one combined block, a few to a few dozen stages). A first version, a
  Q-learner with n-step TD targets (Eq. 7's δ) and ε-greedy picks, stayed 20-30% slower than
  the zip in 4,000 steps (docs/top.md).
- The reward is −l_t / l_zip (scale-free; e^(−l) rewards more stages and vanishes on µs stages):
  l_zip is the combination's latency when its sub-blocks' own schedules are zipped, so a return
  above −1 is a schedule faster than the zip.
- Sizes: §VI-B's GNN functions (64, 32 hidden) for g1, h1, g2, h2, the scorer and the critic;
  §VI-B's policy (500-128) and value (1024-512-300) sizes would make every decision a hundred
  times costlier, where GPG's point is speed.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from .intra import EXTRAS, EnvAdapter, decide, index_choice, levels_of

__all__ = ["Config", "GpgNet", "Episode", "train", "export", "load"]


@dataclass
class Config:
    steps: int = 6000  # environment steps (stages chosen); the paper's 6,000 (§VI-E)
    seed: int = 0
    lr: float = 1e-3  # η (§VI-B)
    message: int = 32  # g's output
    embedding: int = 32  # z
    hidden: tuple = (64, 32)  # every network's hidden layers (§VI-B's GNN functions)
    episodes_per_update: int = 4  # on-policy: one gradient step per this many episodes
    entropy: float = 0.01  # weight of the policy's entropy in the loss (keeps it exploring)
    # "score": score every ending (what braid's runtime runs); "index": the paper's μ(z), one
    # m per sub-block read as an index into its endings (intra.index_choice), for comparison.
    action: str = "score"
    sigma: float = 0.1  # index: the Gaussian exploration around μ
    onnx_batch: int = 32  # rows per evaluation in braid's runtime


def mlp(inputs: int, hidden: tuple, outputs: int) -> nn.Sequential:
    layers, width = [], inputs
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    layers.append(nn.Linear(width, outputs))
    return nn.Sequential(*layers)


class GpgNet(nn.Module):
    def __init__(self, features: int, config: Config):
        super().__init__()
        self.features = features
        self.config = config
        c = config
        self.g1 = mlp(features, c.hidden, c.message)
        self.h1 = mlp(c.message, c.hidden, features)
        self.g2 = mlp(features, c.hidden, c.message)
        self.h2 = mlp(c.message, c.hidden, c.embedding)
        self.policy = mlp(c.embedding + features + EXTRAS, c.hidden, 1)  # an ending's score
        self.value = mlp(c.embedding, c.hidden, 1)  # the critic V(z): training only
        # index: μ per sub-block from [z, Σ e over its units left, its latency left]
        self.mu = mlp(c.embedding + features + 1, c.hidden, 1)

    def embed(self, x: torch.Tensor, parents: list, levels: list) -> torch.Tensor:
        """Eq. 5, level by level: e_v = h1(Σ_parents g1(e_p)) + s_v."""
        n = x.shape[0]
        e: list = [None] * n
        m: list = [None] * n
        zero = torch.zeros(self.config.message)
        for nodes in levels:
            sums = torch.stack([sum((m[p] for p in parents[v]), zero) for v in nodes])
            h = self.h1(sums)
            for i, v in enumerate(nodes):
                e[v] = x[v] + h[i]
            msg = self.g1(torch.stack([e[v] for v in nodes]))
            for i, v in enumerate(nodes):
                m[v] = msg[i]
        return torch.stack(e)

    def rows(self, e: torch.Tensor, g2: torch.Tensor, leaves: list, candidates: list):
        """z (Eq. 6) and q's input rows: every sub-block's endings in turn (runtime/gpg.cc)."""
        z = self.h2(g2[leaves].sum(dim=0))
        out = [torch.cat([z, e[nodes].sum(dim=0), torch.tensor(extras)])
               for of_block in candidates for nodes, _, extras in of_block]
        return torch.stack(out)


    def means(self, e: torch.Tensor, g2: torch.Tensor, leaves: list, candidates: list,
              left: list):
        """index: μ_k in (0, 1) for every sub-block with endings (in order)."""
        z = self.h2(g2[leaves].sum(dim=0))
        rows = [torch.cat([z, e[nodes].sum(dim=0), torch.tensor([of_block[0][2][4]])])
                for nodes, of_block in zip(left, candidates) if of_block]
        return torch.sigmoid(self.mu(torch.stack(rows)).squeeze(-1))


@dataclass
class Episode:
    x: np.ndarray
    parents: list
    levels: list
    # (leaves, candidates, choice, reward[, units left per sub-block, the m drawn]) per step
    steps: list = field(default_factory=list)
    zip_us: float = 0.0
    latency_us: float = 0.0


def _forward(net: GpgNet, episode: Episode):
    """Every step's scores (score: one tensor per step, rows() order; index: the μ_k) and V(z_t),
    with gradients."""
    e = net.embed(torch.from_numpy(episode.x), episode.parents, episode.levels)
    g2 = net.g2(e)
    scores, values = [], []
    for step in episode.steps:
        leaves, cands = step[0], step[1]
        z = net.h2(g2[leaves].sum(dim=0))
        if net.config.action == "index":
            scores.append(net.means(e, g2, leaves, cands, step[4]))
        else:
            scores.append(net.policy(net.rows(e, g2, leaves, cands)).squeeze(-1))
        values.append(net.value(z).squeeze(-1))
    return scores, torch.stack(values)


def _loss(net: GpgNet, episode: Episode) -> torch.Tensor:
    """Actor-critic on one episode: -A_t log π(a_t | z_t) per sub-block's pick (π a softmax over
    its endings' scores), A_t = G_t - V(z_t) with G_t the return from step t; the critic's squared
    error; minus the policy's entropy."""
    scores, values = _forward(net, episode)
    rewards = np.array([step[3] for step in episode.steps], dtype=np.float64)
    returns = torch.tensor(np.cumsum(rewards[::-1])[::-1].copy(), dtype=torch.float32)
    advantage = (returns - values).detach()
    actor, entropy = [], []
    for step, score, a in zip(episode.steps, scores, advantage):
        cands, choice = step[1], step[2]
        if net.config.action == "index":  # Gaussian log-density of the m drawn around μ
            drawn = torch.tensor(step[5], dtype=torch.float32)
            actor.append(a * ((drawn - score) ** 2).sum() / (2 * net.config.sigma ** 2))
            continue
        r = 0
        for k, of_block in enumerate(cands):
            if of_block:
                logp = torch.log_softmax(score[r:r + len(of_block)], dim=0)
                entropy.append(-(logp.exp() * logp).sum())
                if choice[k] >= 0:
                    actor.append(-a * logp[choice[k]])
            r += len(of_block)
    if not entropy:
        entropy.append(torch.zeros(()))
    critic = nn.functional.mse_loss(values, returns)
    return (torch.stack(actor).sum() / len(episode.steps) + critic
            - net.config.entropy * torch.stack(entropy).mean())


def rollout(net: GpgNet, adapter: EnvAdapter, rng: np.random.Generator | None,
            seed: int | None = None) -> Episode:
    """One episode: with `rng`, each sub-block's ending drawn from π (then the decision rule's
    s); without, the decision rule itself (what braid's runtime runs)."""
    env = adapter.env
    if seed is not None:
        env.reset(seed)
    x, parents = adapter.observe()
    episode = Episode(x=x, parents=parents, levels=levels_of(parents), zip_us=env.zip_us())
    with torch.no_grad():
        e = net.embed(torch.from_numpy(x), parents, episode.levels)
        g2 = net.g2(e)
        while not env.done():
            leaves = list(env.leaves())
            cands = [[(list(nodes), groups, list(extras)) for nodes, groups, extras in of_block]
                     for of_block in env.candidates()]
            if net.config.action == "index":
                left_nodes = np.asarray(env.left_nodes(), dtype=bool)
                offsets = list(env.offsets())
                left = [[v for v in range(offsets[k], offsets[k + 1]) if left_nodes[v]]
                        for k in range(len(cands))]
                mu = net.means(e, g2, leaves, cands, left).numpy().astype(np.float64)
                drawn = mu + net.config.sigma * rng.standard_normal(len(mu)) if rng is not None else mu
                m, it = np.zeros(len(cands)), iter(drawn)
                for k, of_block in enumerate(cands):
                    if of_block:
                        m[k] = next(it)
                choice = index_choice(m, cands, adapter.s)
                reward, latency, _ = env.step(choice)
                episode.latency_us += latency
                episode.steps.append((leaves, cands, choice, reward, left, drawn.tolist()))
                continue
            q = net.policy(net.rows(e, g2, leaves, cands)).squeeze(-1).numpy().astype(np.float64)
            if rng is not None:  # sample: the drawn ending gets the top score of its sub-block
                r = 0
                for of_block in cands:
                    if of_block:
                        p = np.exp(q[r:r + len(of_block)] - q[r:r + len(of_block)].max())
                        j = int(rng.choice(len(of_block), p=p / p.sum()))
                        q[r + j] = q[r:r + len(of_block)].max() + 1e-3
                    r += len(of_block)
            choice = decide(q, cands, adapter.s)
            reward, latency, _ = env.step(choice)
            episode.latency_us += latency
            episode.steps.append((leaves, cands, choice, reward))
    return episode


def train(adapter: EnvAdapter, config: Config, log=print, checkpoint=(0, None)):
    """Trains on random combinations (seeds from config.seed) for config.steps stages. Returns the
    network and the curve: one row per episode."""
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    net = GpgNet(len(adapter.feature_names), config)
    optimizer = torch.optim.Adam(net.parameters(), lr=config.lr)
    rows: list = []
    steps, episode_index = 0, 0
    every, save = checkpoint
    next_checkpoint = every
    started = time.monotonic()
    while steps < config.steps:
        batch = []
        for _ in range(config.episodes_per_update):
            episode = rollout(net, adapter, rng, seed=config.seed * 1_000_003 + episode_index)
            episode_index += 1
            steps += len(episode.steps)
            batch.append(episode)
            rows.append({"step": steps, "episode": episode_index,
                         "combination": [list(c) for c in adapter.env.combination()],
                         "return": -episode.latency_us / episode.zip_us,
                         "speedup_vs_zip": episode.zip_us / episode.latency_us,
                         "wall_s": round(time.monotonic() - started, 3)})
        optimizer.zero_grad()
        loss = sum(_loss(net, ep) for ep in batch) / len(batch)
        loss.backward()
        optimizer.step()
        rows[-1]["loss"] = float(loss)
        if episode_index % 100 == 0:
            recent = rows[-100:]
            log(f"gpg: step {steps}/{config.steps}, episode {episode_index}, mean return "
                f"{np.mean([r['return'] for r in recent]):.4f} (zip: -1), loss {float(loss):.4f}")
        if every and save and steps >= next_checkpoint:
            save(net, rows)
            next_checkpoint += every
    return net, rows


NETWORKS = ("g1", "h1", "g2", "h2", "policy")  # the critic (value) is training's only


def write_manifest(directory: str, manifest: dict, config: Config) -> None:
    """DIR/policy.json: `manifest` (features, r, s, training, ...) as runtime/gpg.h reads it."""
    full = dict(manifest)
    full.update({"format": "braid.policy/1", "kind": "gpg", "message_size": config.message,
                 "embedding_size": config.embedding, "batch": config.onnx_batch,
                 "networks": {name: f"{name}.onnx" for name in NETWORKS}})
    with open(os.path.join(directory, "policy.json"), "w", encoding="utf-8") as f:
        json.dump(full, f, indent=1)
        f.write("\n")


def export(net: GpgNet, directory: str, manifest: dict) -> None:
    """Writes DIR/{g1,h1,g2,h2,q}.onnx, DIR/gpg.pt and DIR/policy.json (runtime/gpg.h)."""
    os.makedirs(directory, exist_ok=True)
    c = net.config
    widths = {"g1": net.features, "h1": c.message, "g2": net.features, "h2": c.message,
              "policy": c.embedding + net.features + EXTRAS}
    for name in NETWORKS:
        torch.onnx.export(getattr(net, name), torch.zeros(c.onnx_batch, widths[name]),
                          os.path.join(directory, f"{name}.onnx"), input_names=["x"],
                          output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
                          opset_version=13)
    torch.save(net.state_dict(), os.path.join(directory, "gpg.pt"))
    write_manifest(directory, manifest, c)


def load(directory: str) -> GpgNet:
    with open(os.path.join(directory, "policy.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    config = Config(**{k: tuple(v) if isinstance(v, list) else v
                       for k, v in manifest["training"]["config"].items()})
    net = GpgNet(len(manifest["features"]), config)
    net.load_state_dict(torch.load(os.path.join(directory, "gpg.pt")))
    return net
