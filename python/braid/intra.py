"""GPG's world without PyTorch: the intra-block environment (runtime/intra_env.h) as Python
sees it, GPG's decision rule as braid's runtime applies it (runtime/gpg.cc), and the evaluation of
a trained GPG by braid's runtime on combinations it never trained on. Training is braid.gpg.
"""
from __future__ import annotations

import json

import numpy as np

__all__ = ["EXTRAS", "HELD_OUT_SEEDS", "EnvAdapter", "levels_of", "decide", "index_choice",
           "evaluate"]

EXTRAS = 5  # runtime::kCandidateExtras: units, groups, slowest group, all, the sub-block's left


def levels_of(parents: list) -> list:
    level = [0] * len(parents)
    for v, ps in enumerate(parents):
        for p in ps:
            level[v] = max(level[v], level[p] + 1)
    out: list = [[] for _ in range(max(level) + 1 if level else 0)]
    for v, d in enumerate(level):
        out[d].append(v)
    return out


def decide(q: np.ndarray, candidates: list, s: int) -> list:
    """The decision rule (runtime/gpg.cc): per sub-block its best ending by q (the first of
    equals); the best scores first while within s groups, at least one. One index per sub-block,
    -1 where it sits out."""
    best, r = [], 0
    for k, of_block in enumerate(candidates):
        if of_block:
            scores = q[r:r + len(of_block)]
            j = int(np.argmax(scores))
            best.append((k, j, float(scores[j]), of_block[j][1]))
        r += len(of_block)
    order = sorted(range(len(best)), key=lambda i: -best[i][2])  # stable: ties keep sub-block order
    choice = [-1] * len(candidates)
    groups = 0
    for n, i in enumerate(order):
        k, j, _, g = best[i]
        if n == 0 or groups + g <= s:
            choice[k] = j
            groups += g
    return choice


def index_choice(m, candidates: list, s: int) -> list:
    """The paper's index read per sub-block (top.txt §V-C: ⌊m·M⌋ of a list of endings, here each
    sub-block's, in sched::for_each_ending's order, where neighbours differ by about one unit):
    ⌊m_k·(M_k + 1)⌋ − 1, −1 sitting out. With no ending at all, the largest m's sub-block takes
    ⌊m·M_k⌋; over s groups, the smallest m sit out first."""
    m = np.clip(np.asarray(m, dtype=np.float64).reshape(-1), 0.0, 1.0)
    active = [k for k, c in enumerate(candidates) if c]
    choice = [-1] * len(candidates)
    for k in active:
        n = len(candidates[k])
        choice[k] = min(int(m[k] * (n + 1)), n) - 1
    if all(choice[k] < 0 for k in active):
        k = max(active, key=lambda k: m[k])
        choice[k] = min(int(m[k] * len(candidates[k])), len(candidates[k]) - 1)
    groups = 0
    for k in sorted(active, key=lambda k: -m[k]):  # the largest values keep their endings
        if choice[k] < 0:
            continue
        g = candidates[k][choice[k]][1]
        if groups > 0 and groups + g > s:
            choice[k] = -1
        else:
            groups += g
    return choice


class EnvAdapter:
    """braid._braid.IntraEnv (runtime/intra_env.h) from a braid.top/1 scenario."""

    def __init__(self, scenario: dict, min_sub_blocks: int, max_sub_blocks: int, r: int, s: int):
        from . import _braid
        self.env = _braid.IntraEnv(json.dumps(scenario), min_sub_blocks, max_sub_blocks, r, s)
        self.feature_names = list(_braid.intra_feature_names())
        self.r, self.s = r, s

    def observe(self):
        env = self.env
        x = np.asarray(env.features(), dtype=np.float32).reshape(-1, len(self.feature_names))
        return x, [list(p) for p in env.parents()]


HELD_OUT_SEEDS = 1 << 40  # evaluation draws combinations from seeds no training run uses


def evaluate(adapter: EnvAdapter, directory: str, count: int, seed: int, trained) -> dict:
    """The policy in DIR as braid's runtime runs it (no PyTorch), on `count` distinct combinations
    not in `trained`: each schedule checked (every unit once, after its producers; r and s),
    its latency against the zip of the sub-blocks' own schedules."""
    seen = {tuple(map(tuple, c)) for c in trained}
    env = adapter.env
    rows, draw = [], 0
    while len(rows) < count and draw < 100 * max(1, count):
        env.reset(HELD_OUT_SEEDS + seed * 100_003 + draw)
        draw += 1
        combination = tuple(map(tuple, env.combination()))
        if combination in seen:
            continue
        seen.add(combination)
        latency, seconds, stages = env.gpg(directory)
        for stage in stages:
            if len(stage) > adapter.s or any(len(g) > adapter.r for g in stage):
                raise AssertionError(f"GPG broke r = {adapter.r} or s = {adapter.s} on {combination}")
        rows.append({"combination": [list(c) for c in combination], "zip_us": env.zip_us(),
                     "gpg_us": latency, "gpg_s": seconds, "stages": len(stages)})
    ratios = [r["zip_us"] / r["gpg_us"] for r in rows]
    summary = {"combinations": len(rows),
               "speedup_vs_zip_geomean": float(np.exp(np.mean(np.log(ratios)))) if rows else None,
               "speedup_vs_zip_min": min(ratios, default=None),
               "speedup_vs_zip_max": max(ratios, default=None),
               "gpg_ms_mean": 1e3 * float(np.mean([r["gpg_s"] for r in rows])) if rows else None}
    return {"summary": summary, "combinations": rows}


