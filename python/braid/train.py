"""`braid train maddpg|gpg`: TOP's learned policies trained against braid's runtime (needs PyTorch).

    python -m braid.train maddpg --scenario docs/top/multi_a100.json --steps 8000 --seed 0 -o DIR
    python -m braid.train maddpg --device sim:a100_40gb --models squeezenet:240,resnet50:120:stages \\
        --episode-s 5 --steps 2000 -o DIR
    python -m braid.train toy --steps 1500 -o DIR       # MADDPG on a task with a known optimum
    python -m braid.train gpg --scenario docs/top/saturated_a100.json --max-sub-blocks 8 -o DIR

maddpg: DIR gets policy.json and one ONNX actor per agent (what `braid top --policy learned:DIR`
and `braid serve --policy learned:DIR` run, without PyTorch), curve.csv (one row per step) and
curve.png. gpg: policy.json, the networks g1, h1, g2, h2 and policy as ONNX (what `--intra
gpg:DIR` runs), gpg.pt, curve.csv (one row per episode), curve.png, and in policy.json the
evaluation on --held-out combinations it never trained on. `braid train` (the CLI) runs this module. Exit status: 0, 2 for bad input, 1 when
PyTorch is missing or training fails.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time

import numpy as np



class BadInput(Exception):
    pass


class TopEnvAdapter:
    """braid's runtime (runtime/env.h) as the trainer's Environment; the agents as braid.env
    names them."""

    def __init__(self, scenario: dict, step_s: float, samples: int, reward: str,
                 min_interval_us: float, max_interval_us: float, partition: str = "bins"):
        from . import _braid
        self.env = _braid.TopEnv(json.dumps(scenario), step_s, samples, reward, min_interval_us,
                                 max_interval_us, partition)
        self.models = list(self.env.models())
        self.agents = ["launcher"] + [f"model_{i}_{m}" for i, m in enumerate(self.models)]
        self.observation_size = int(self.env.observation_size())
        self.action_sizes = [int(n) for n in self.env.action_sizes()]

    def reset(self, seed: int) -> np.ndarray:
        return np.asarray(self.env.reset(int(seed)), np.float32)

    def step(self, actions):
        state, rewards, done, info = self.env.step([np.asarray(a, np.float64).tolist() for a in actions])
        numbers = {k: v for k, v in info.items() if isinstance(v, (bool, int, float))}
        return np.asarray(state, np.float32), list(rewards), bool(done), numbers


class ToyEnv:
    """Two agents, one step per episode: the state is a target t ∈ [0, 1]² drawn per episode;
    both get −Σ(a_i − t_i)², so the optimal action of agent i is t_i (a test of the learner)."""

    agents = ["agent_0", "agent_1"]
    observation_size = 2
    action_sizes = [1, 1]

    def __init__(self):
        self.target = np.zeros(2, np.float32)

    def reset(self, seed: int) -> np.ndarray:
        self.target = np.random.default_rng(seed).uniform(0, 1, 2).astype(np.float32)
        return self.target.copy()

    def step(self, actions):
        a = np.array([float(x[0]) for x in actions], np.float32)
        r = -float(np.sum((a - self.target) ** 2))
        return self.target.copy(), [r, r], True, {}


def parse_models(text: str) -> list[dict]:
    models = []
    for item in filter(None, text.split(",")):
        parts = item.split(":")
        if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] not in ("stages", "ir")):
            raise BadInput(f"--models: '{item}' is not NAME:FPS or NAME:FPS:stages")
        try:
            fps = float(parts[1])
        except ValueError:
            raise BadInput(f"--models: '{item}': FPS '{parts[1]}' is not a number") from None
        m = {"model": parts[0], "fps": fps}
        if len(parts) == 3:
            m["blocks"] = parts[2]
        models.append(m)
    if not models:
        raise BadInput("--models: give at least one NAME:FPS")
    return models


def scenario_of(args) -> dict:
    if args.scenario:
        try:
            with open(args.scenario, encoding="utf-8") as f:
                scenario = json.load(f)
        except OSError as e:
            raise BadInput(f"--scenario: cannot read {args.scenario}: {e.strerror}") from None
        except json.JSONDecodeError as e:
            raise BadInput(f"--scenario {args.scenario}: malformed JSON: {e}") from None
    else:
        if not args.models:
            raise BadInput("give --scenario FILE or --models NAME:FPS,...")
        scenario = {"format": "braid.top/1", "device": args.device or "sim:a100_40gb",
                    "models": parse_models(args.models)}
    if args.models and args.scenario:
        scenario["models"] = parse_models(args.models)
    if args.device:
        scenario["device"] = args.device
    if args.episode_s:
        scenario["duration_s"] = args.episode_s
    if args.dp_state_limit is not None:
        scenario["dp_state_limit"] = args.dp_state_limit
    for key, value in (("H", args.H), ("image_size", args.image_size), ("scheduler", args.scheduler)):
        if value is not None:
            scenario[key] = value
    return scenario


def write_curve(rows: list[dict], directory: str, title: str, x_label: str = "step",
                y_label: str = "mean reward per step") -> str | None:
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(os.path.join(directory, "curve.csv"), "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "curve.png not written: matplotlib is missing (Debian: python3-matplotlib)"
    reward = np.array([r["reward_mean"] for r in rows])
    window = max(1, len(reward) // 50)
    smooth = np.convolve(reward, np.ones(window) / window, mode="valid")
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(reward, alpha=0.3, label=y_label)
    ax.plot(np.arange(len(smooth)) + window - 1, smooth, label=f"moving mean ({window} {x_label}s)")
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(directory, "curve.png"), dpi=100)
    plt.close(fig)
    return None


def train_gpg(args, hidden: tuple, log) -> int:
    """`braid train gpg`: GPG on random combinations of the scenario's blocks (python/braid/gpg.py),
    then evaluated by braid's runtime (no PyTorch) on combinations it never trained on."""
    from . import gpg, intra, InvalidArgument, InvalidModel, InvalidSchedule, NotFound, Unsupported
    scenario = scenario_of(args)
    most = args.max_sub_blocks or int(scenario.get("H", 4))
    if args.min_sub_blocks < 1 or most < args.min_sub_blocks:
        raise BadInput(f"--min-sub-blocks {args.min_sub_blocks} and --max-sub-blocks {most}: "
                       "need 1 <= min <= max")
    if args.r < 1 or args.s < 1:
        raise BadInput(f"-r and -s must be >= 1, got {args.r} and {args.s}")
    try:
        adapter = intra.EnvAdapter(scenario, args.min_sub_blocks, most, args.r, args.s)
    except (InvalidArgument, InvalidModel, InvalidSchedule, NotFound, Unsupported) as e:
        raise BadInput(str(e)) from None
    config = gpg.Config(steps=args.steps, seed=args.seed, hidden=hidden)
    manifest = {"features": adapter.feature_names, "r": args.r, "s": args.s,
                "models": [{"name": m, "blocks": b}
                           for m, b in zip(adapter.env.models(), adapter.env.blocks())],
                "sub_blocks": [args.min_sub_blocks, most], "scenario": scenario}
    log(f"training gpg on {scenario['device']}: combinations of {args.min_sub_blocks}..{most} "
        f"sub-blocks of {', '.join(adapter.env.models())}, r = {args.r}, s = {args.s}, "
        f"{args.steps} steps, seed {args.seed}")
    started = time.monotonic()

    def save(net, rows):
        manifest["training"] = {"algorithm": "gpg", "steps": rows[-1]["step"] if rows else 0,
                                "of": args.steps, "seed": args.seed,
                                "combinations": sorted({tuple(map(tuple, r["combination"]))
                                                        for r in rows}),
                                "config": {k: list(v) if isinstance(v, tuple) else v
                                           for k, v in vars(config).items()},
                                "wall_s": round(time.monotonic() - started, 2),
                                "torch": torch_version()}
        gpg.export(net, args.output, manifest)
        return write_curve([dict(r, reward_mean=r["return"]) for r in rows], args.output,
                           f"GPG, {scenario['device']}, seed {args.seed}", x_label="episode",
                           y_label="return (-latency / the zip's)")

    net, rows = gpg.train(adapter, config, log=log, checkpoint=(args.checkpoint_every, save))
    wall = time.monotonic() - started
    note = save(net, rows)
    if note:
        log(note)
    evaluation = intra.evaluate(adapter, args.output, args.held_out, seed=args.seed,
                              trained=manifest["training"]["combinations"])
    manifest["evaluation"] = evaluation
    gpg.write_manifest(args.output, manifest, config)
    print(json.dumps({"output": args.output, "steps": rows[-1]["step"], "wall_s": round(wall, 2),
                      "held_out": evaluation["summary"]}))
    return 0


def torch_version() -> str:
    import torch
    return torch.__version__


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="braid train", description=__doc__.split("\n\n")[0])
    p.add_argument("algorithm", choices=["maddpg", "gpg", "toy"])
    p.add_argument("--scenario", help="a braid.top/1 scenario file")
    p.add_argument("--device", help="sim:NAME (virtual time) or cpu")
    p.add_argument("--models", help="NAME:FPS[:stages],... (replaces the scenario's)")
    p.add_argument("--episode-s", type=float, help="an episode's length (the scenario's duration_s)")
    p.add_argument("--dp-state-limit", type=int,
                   help="the union DP's state cap while exploring (0: combinations zipped)")
    p.add_argument("--H", type=int)
    p.add_argument("--image-size", type=int)
    p.add_argument("--scheduler")
    p.add_argument("--steps", type=int,
                   help="environment steps (default: maddpg 8000, gpg 6000, as §VI-E)")
    p.add_argument("--warmup", type=int, help="random-action steps (default: min(2000, steps/4))")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--step-s", type=float, default=0.5)
    p.add_argument("--samples", type=int, default=5)
    p.add_argument("--reward", default="scale-free", choices=["scale-free", "paper"])
    p.add_argument("--min-interval-us", type=float, default=500.0)
    p.add_argument("--max-interval-us", type=float, default=1e6)
    p.add_argument("--partition", default="bins", choices=["bins", "offsets"],
                   help="maddpg: the block agents' encoding: Fig. 10's bins, or offsets from each "
                        "block's own bin (runtime/agents.h)")
    p.add_argument("--actor", default="500,128", help="actor hidden sizes (§VI-B: 500,128)")
    p.add_argument("--critic", default="1024,512,300", help="critic hidden sizes (§VI-B)")
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--lr", type=float, default=1e-3, help="maddpg: Adam's step, both networks (§VI-B: 0.001)")
    p.add_argument("--action-reg", type=float, default=0.0,
                   help="maddpg: weight of the actors' mean squared pre-sigmoid output (openai/maddpg: 1e-3)")
    p.add_argument("--min-sub-blocks", type=int, default=2,
                   help="gpg: fewest sub-blocks in a training combination")
    p.add_argument("--max-sub-blocks", type=int,
                   help="gpg: most sub-blocks in a training combination (default: H)")
    p.add_argument("-r", type=int, default=3, help="gpg: most units per group (ios.txt §4.3)")
    p.add_argument("-s", type=int, default=8, help="gpg: most groups per stage")
    p.add_argument("--gnn", default="64,32",
                   help="gpg: hidden sizes of every network (§VI-B's GNN functions: 64,32)")
    p.add_argument("--held-out", type=int, default=20,
                   help="gpg: combinations never trained on to evaluate the result on")
    p.add_argument("--threads", type=int, default=1, help="PyTorch's threads")
    p.add_argument("--checkpoint-every", type=int, default=0,
                   help="also write DIR (policy, curve) every N steps, so a long run can be used early")
    p.add_argument("-o", "--output", required=True, help="the policy's directory")
    p.add_argument("--quiet", action="store_true")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    log = (lambda s: None) if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    try:
        try:
            import torch
        except ImportError:
            print("braid train: needs PyTorch (Debian: apt-get install python3-torch; or set "
                  "BRAID_PYTHON to a Python that has it)", file=sys.stderr)
            return 1
        def sizes(text, flag):
            try:
                return tuple(int(v) for v in text.split(",") if v)
            except ValueError:
                raise BadInput(f"{flag}: '{text}' is not a comma-separated list of sizes") from None

        if args.steps is None:
            args.steps = 6000 if args.algorithm == "gpg" else 8000
        if args.steps < 1:
            raise BadInput(f"--steps must be >= 1, got {args.steps}")
        torch.set_num_threads(max(1, args.threads))
        if args.algorithm == "gpg":
            return train_gpg(args, sizes(args.gnn, "--gnn"), log)
        from . import maddpg

        warmup = args.warmup if args.warmup is not None else min(2000, args.steps // 4)
        if args.lr <= 0 or args.action_reg < 0:
            raise BadInput(f"--lr must be > 0 and --action-reg >= 0, got {args.lr} and {args.action_reg}")
        config = maddpg.Config(steps=args.steps, seed=args.seed, warmup=warmup, batch=args.batch,
                               lr=args.lr, action_reg=args.action_reg,
                               actor_sizes=sizes(args.actor, "--actor"),
                               critic_sizes=sizes(args.critic, "--critic"))
        started = time.monotonic()
        if args.algorithm == "toy":
            env = ToyEnv()
            manifest = {"format": "braid.policy/1", "kind": "toy"}
        else:
            scenario = scenario_of(args)
            from . import InvalidArgument, InvalidModel, InvalidSchedule, NotFound, Unsupported
            try:
                env = TopEnvAdapter(scenario, args.step_s, args.samples, args.reward,
                                    args.min_interval_us, args.max_interval_us, args.partition)
            except (InvalidArgument, InvalidModel, InvalidSchedule, NotFound, Unsupported) as e:
                raise BadInput(str(e)) from None
            blocks = env.action_sizes[1:]
            manifest = {
                "format": "braid.policy/1", "kind": "maddpg",
                "models": [{"name": m, "blocks": b} for m, b in zip(env.models, blocks)],
                "H": int(env.env.max_sub_blocks()), "observation_size": env.observation_size,
                "samples": args.samples, "step_s": args.step_s,
                "min_interval_us": args.min_interval_us, "max_interval_us": args.max_interval_us,
                "partition": args.partition,
                "reward": args.reward, "scenario": scenario}
        log(f"training maddpg on {args.algorithm == 'toy' and 'the toy task' or scenario['device']}: "
            f"{len(env.agents)} agents, state {env.observation_size}, actions {env.action_sizes}, "
            f"{args.steps} steps (warm-up {warmup}), seed {args.seed}")
        def save(agents, rows):
            manifest["training"] = {"algorithm": "maddpg", "steps": len(rows), "of": args.steps,
                                    "seed": args.seed,
                                    "config": {k: list(v) if isinstance(v, tuple) else v
                                               for k, v in vars(config).items()},
                                    "wall_s": round(time.monotonic() - started, 2),
                                    "torch": torch.__version__}
            maddpg.export(agents, env.agents, args.output, manifest)
            return write_curve(rows, args.output, f"MADDPG, {args.algorithm}, seed {args.seed}")

        agents, rows = maddpg.train(env, config, log=log,
                                    checkpoint=(args.checkpoint_every, save))
        wall = time.monotonic() - started
        note = save(agents, rows)
        if note:
            log(note)
        last = rows[-max(1, len(rows) // 10):]
        print(json.dumps({"output": args.output, "steps": len(rows), "wall_s": round(wall, 2),
                          "final_mean_reward": float(np.mean([r["reward_mean"] for r in last]))}))
        return 0
    except BadInput as e:
        print(f"braid train: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
