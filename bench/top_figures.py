#!/usr/bin/env python3
"""The tables and PNGs of docs/top.md: TOP's scenarios (top.txt §VI) run with `braid top`.

    .venv/bin/python bench/top_figures.py --braid build/braid --out docs/top [--only fig2,...]
                                          [--seeds 5] [--duration 10]

Every run is virtual time on a simulated GPU (deterministic for a seed) except `cpu`, which runs
the multi-model scenario for real on this machine. Writes OUT/<figure>.png, OUT/<figure>.json (the
raw reports) and OUT/tables.md (the markdown the doc quotes). Needs the venv's matplotlib.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

POLICIES = ["static", "static-serial", "sync", "top-heuristic"]
MULTI = [("inception_v3", 30), ("resnet50", 60, "stages"), ("squeezenet", 120)]
DEVICES = {"a100_40gb": 2, "jetson_nano": 1, "jetson_tx2": 1, "jetson_xavier_nx": 1}
H_OF = {"a100_40gb": 4, "jetson_nano": 2, "jetson_tx2": 2, "jetson_xavier_nx": 3}


def run_top(braid, models, device, policies, duration, seed=1, seeds=1, extra=()):
    """Runs braid top and returns its report runs (one per policy and seed)."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    cmd = [braid, "top", "--device", device, "--policy", ",".join(policies),
           "--duration", str(duration), "--seed", str(seed), "--seeds", str(seeds), "--json", path]
    for m in models:
        cmd += ["--model", ":".join(str(x) for x in m)]
    cmd += list(extra)
    print("+", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(path) as f:
        runs = json.load(f)["runs"]
    os.unlink(path)
    return runs


def mean_of(runs, policy, key):
    values = [r[key] for r in runs if r["policy"] == policy]
    return statistics.mean(values) if values else float("nan")


def fig2(args, tables):
    """ResNet-50 under static on the simulated RTX 3080, rising arrival rate: the knee."""
    rates = [25, 50, 100, 150, 200, 250, 300, 350, 400, 450, 500, 600]
    rows = []
    for fps in rates:
        runs = run_top(args.braid, [("resnet50", fps)], "sim:rtx3080", ["static", "top-heuristic"],
                       args.duration)
        for r in runs:
            m = r["models"][0]
            rows.append({"fps": fps, "policy": r["policy"], "latency_ms": m["latency_ms"]["mean"],
                         "p99_ms": m["latency_ms"]["p99"], "throughput": m["throughput_fps"],
                         "utilization": r["utilization"]})
    json.dump(rows, open(os.path.join(args.out, "fig2.json"), "w"), indent=1)
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
    for policy in ["static", "top-heuristic"]:
        pts = [r for r in rows if r["policy"] == policy]
        ax[0].plot([r["fps"] for r in pts], [r["latency_ms"] for r in pts], "o-", label=policy)
        ax[1].plot([r["fps"] for r in pts], [100 * r["utilization"] for r in pts], "o-",
                   label=policy)
    ax[0].axvline(167, color="grey", ls="--", label="paper's knee (167 FPS)")
    ax[0].set_xlabel("arrival rate (FPS)")
    ax[0].set_ylabel("mean latency (ms)")
    ax[0].set_yscale("log")
    ax[1].set_xlabel("arrival rate (FPS)")
    ax[1].set_ylabel("utilization (% active warps)")
    ax[0].legend()
    fig.suptitle("ResNet-50, simulated RTX 3080 (top.txt Fig. 2)")
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "fig2.png"), dpi=110)
    lines = ["| FPS | static mean ms | static p99 ms | static utilization | top-heuristic mean ms |",
             "|---|---|---|---|---|"]
    for fps in rates:
        s = next(r for r in rows if r["fps"] == fps and r["policy"] == "static")
        t = next(r for r in rows if r["fps"] == fps and r["policy"] == "top-heuristic")
        lines.append(f"| {fps} | {s['latency_ms']:.2f} | {s['p99_ms']:.2f} | "
                     f"{100 * s['utilization']:.1f}% | {t['latency_ms']:.2f} |")
    tables["fig2"] = "\n".join(lines)


def table2(args, tables):
    """Single-model 240 FPS each and the multi-model mix, every device, every policy."""
    out = {}
    lines = ["| device | scenario | policy | throughput FPS | mean latency ms | utilization | "
             "final queue variance |", "|---|---|---|---|---|---|---|"]
    for device, factor in DEVICES.items():
        h = ["-H", str(H_OF[device])]
        scenarios = {f"single {m}": [(m, 240 * factor) + (("stages",) if m == "resnet50" else ())]
                     for m in ["inception_v3", "resnet50", "squeezenet"]}
        scenarios["multi"] = [(m[0], m[1] * factor) + tuple(m[2:]) for m in MULTI]
        for name, models in scenarios.items():
            policies = POLICIES if name == "multi" else ["static", "static-serial", "top-heuristic"]
            runs = run_top(args.braid, models, f"sim:{device}", policies, args.duration,
                           seeds=args.seeds, extra=h)
            out[f"{device} {name}"] = runs
            for p in policies:
                lat = statistics.mean(
                    statistics.mean(m["latency_ms"]["mean"] for m in r["models"])
                    for r in runs if r["policy"] == p)
                lines.append(f"| {device} | {name} | {p} | {mean_of(runs, p, 'throughput_fps'):.1f} "
                             f"| {lat:.1f} | {100 * mean_of(runs, p, 'utilization'):.1f}% | "
                             f"{mean_of(runs, p, 'final_variance'):.1f} |")
    json.dump(out, open(os.path.join(args.out, "table2.json"), "w"), indent=1)
    tables["table2"] = "\n".join(lines)
    # Fig. 17: queue-length variance over time, multi-model on the A100.
    runs = out["a100_40gb multi"]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for p in ["sync", "static", "top-heuristic"]:
        r = next(r for r in runs if r["policy"] == p)
        ax.plot([s["t_s"] for s in r["samples"]], [s["variance"] for s in r["samples"]], label=p)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("variance of queue lengths")
    ax.set_yscale("symlog")
    ax.legend()
    ax.set_title("Multi-model, simulated A100 (top.txt Fig. 17)")
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "fig17.png"), dpi=110)


def fig18(args, tables):
    """The H sweep: throughput and search time against H, per device, multi-model."""
    lines = ["| device | H | throughput FPS | gain over H=1 | combined-block search s |",
             "|---|---|---|---|---|"]
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
    for device, factor in DEVICES.items():
        models = [(m[0], m[1] * factor) + tuple(m[2:]) for m in MULTI]
        xs, gains, times = [], [], []
        base = None
        for h in range(1, 6):
            runs = run_top(args.braid, models, f"sim:{device}", ["top-heuristic"], args.duration,
                           extra=["-H", str(h)])
            fps = runs[0]["throughput_fps"]
            base = base or fps
            xs.append(h)
            gains.append(fps / base)
            times.append(runs[0]["stage_dict"]["search_s"])
            lines.append(f"| {device} | {h} | {fps:.1f} | {fps / base:.3f} | {times[-1]:.2f} |")
        ax[0].plot(xs, gains, "o-", label=device)
        ax[1].plot(xs, times, "o-", label=device)
    ax[0].set_xlabel("H")
    ax[0].set_ylabel("throughput / throughput at H=1")
    ax[1].set_xlabel("H")
    ax[1].set_ylabel("combined-block search time (s)")
    ax[0].legend()
    fig.suptitle("H sweep, multi-model (top.txt Fig. 18)")
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "fig18.png"), dpi=110)
    tables["fig18"] = "\n".join(lines)


def fig26(args, tables):
    """Batch sizes 1-128, multi-model on the A100 (tasks batched into instances)."""
    lines = ["| batch | policy | images/s | utilization |", "|---|---|---|---|"]
    rows = []
    for batch in [1, 2, 4, 8, 16, 32, 64, 128]:
        # Instances per second: the doubled multi-model rates, each instance a batch.
        models = [(m[0], m[1] * 2) + tuple(m[2:]) for m in MULTI]
        runs = run_top(args.braid, models, "sim:a100_40gb", ["sync", "top-heuristic"],
                       args.duration, extra=["--batch", str(batch)])
        for r in runs:
            rows.append({"batch": batch, "policy": r["policy"],
                         "images": r["throughput_fps"] * batch, "utilization": r["utilization"]})
            lines.append(f"| {batch} | {r['policy']} | {r['throughput_fps'] * batch:.0f} | "
                         f"{100 * r['utilization']:.1f}% |")
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for p in ["sync", "top-heuristic"]:
        pts = [r for r in rows if r["policy"] == p]
        ax.plot([r["batch"] for r in pts], [r["images"] for r in pts], "o-", label=p)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size")
    ax.set_ylabel("images/s")
    ax.legend()
    ax.set_title("Batch sizes, multi-model, simulated A100 (top.txt Figs. 26-27)")
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "fig26.png"), dpi=110)
    tables["fig26"] = "\n".join(lines)


def fig24(args, tables):
    """Throughput against concurrent instances of one model, queues never empty (top.txt
    Fig. 24): static with at most c instances in flight, beside top-heuristic (whose instances
    are bounded by the blocks: one per sub-block)."""
    lines = ["| model | c | static FPS | top-heuristic FPS |", "|---|---|---|---|"]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for model in ["inception_v3", "resnet50", "squeezenet"]:
        spec = (model, 3000) + (("stages",) if model == "resnet50" else ())
        top = run_top(args.braid, [spec], "sim:a100_40gb", ["top-heuristic"], args.duration)
        top_fps = top[0]["throughput_fps"]
        xs, ys = [], []
        for c in [1, 2, 3, 4, 6, 8]:
            runs = run_top(args.braid, [spec], "sim:a100_40gb", ["static"], args.duration,
                           extra=["--max-in-flight", str(c)])
            xs.append(c)
            ys.append(runs[0]["throughput_fps"])
            lines.append(f"| {model} | {c} | {ys[-1]:.1f} | {top_fps:.1f} |")
        line, = ax.plot(xs, ys, "o-", label=f"{model} static")
        ax.axhline(top_fps, color=line.get_color(), ls="--", label=f"{model} top-heuristic")
    ax.set_xlabel("concurrent instances (static)")
    ax.set_ylabel("throughput (FPS)")
    ax.legend(fontsize=7)
    ax.set_title("Concurrency of one model, simulated A100 (top.txt Fig. 24)")
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "fig24.png"), dpi=110)
    tables["fig24"] = "\n".join(lines)


def cpu(args, tables):
    """The multi-model mix for real on this CPU, rates scaled to what 2 cores sustain."""
    # The paper's 1:2:4 rates, scaled to what 2 cores sustain at 112x112 (about two thirds
    # busy), and doubled (the offered load at what 2 cores can do: the policies then differ).
    lines = ["| load | policy | throughput FPS | mean latency ms | utilization | busy | "
             "final queue variance |",
             "|---|---|---|---|---|---|---|"]
    for scale in (1, 2):
        models = [("inception_v3", 8 * scale), ("resnet50", 16 * scale, "stages"),
                  ("squeezenet", 32 * scale)]
        runs = run_top(args.braid, models, "cpu", POLICIES, args.duration,
                       extra=["--image-size", "112", "--scheduler", "sequential"])
        load = "/".join(str(m[1]) for m in models) + " FPS"
        for r in runs:
            lat = statistics.mean(m["latency_ms"]["mean"] for m in r["models"])
            lines.append(f"| {load} | {r['policy']} | {r['throughput_fps']:.1f} | {lat:.0f} | "
                         f"{100 * r['utilization']:.1f}% | {100 * r['busy']:.1f}% | "
                         f"{r['final_variance']:.1f} |")
    tables["cpu"] = "\n".join(lines)


FIGURES = {"fig2": fig2, "table2": table2, "fig18": fig18, "fig24": fig24, "fig26": fig26,
           "cpu": cpu}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--braid", default="build/braid")
    ap.add_argument("--out", default="docs/top")
    ap.add_argument("--only", default=",".join(FIGURES))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--duration", type=float, default=10)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    tables = {}
    for name in args.only.split(","):
        FIGURES[name](args, tables)
    with open(os.path.join(args.out, "tables.md"), "a") as f:
        for name, table in tables.items():
            f.write(f"## {name}\n\n{table}\n\n")
    print(open(os.path.join(args.out, "tables.md")).read())


if __name__ == "__main__":
    main()
