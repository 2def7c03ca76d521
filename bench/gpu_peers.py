#!/usr/bin/env python3
"""braid against PyTorch on the same torchvision architectures, on one GPU, in one interleaved run.

    python3 bench/gpu_peers.py googlenet inception_v3 resnet50 squeezenet1_0 \\
        --braid build/braid --device cuda:0 --rounds 5 --json gpu_peers.json --markdown gpu_peers.md

Needs a CUDA GPU, PyTorch with CUDA and torchvision in the Python that runs it, and a braid built
with CUDA (docs/gpu.md). Not part of `make test`: benchmarks measure, they never assert.

Configurations, per model (torchvision name; braid runs its zoo twin, checked to fuse to the same
units and edges by zoo_framework_test):
  - PyTorch eager: the model called under torch.inference_mode, timed with CUDA events;
  - PyTorch CUDA Graph: torch.cuda.CUDAGraph captured once, replayed; wall clock around
    replay + synchronize;
  - PyTorch torch.compile(mode="reduce-overhead") (CUDA Graphs inside), wall clock;
  - braid auto and every scheduler of --algos: `braid run MODEL --device cuda:0 --algo A --json`
    (graph replay, braid's default; add --braid-eager to also run every scheduler eagerly); its
    median latency_ms, which includes the input and output copies (PyTorch's rows do not).
Precision: FP32 with TF32 off on both sides (torch.backends.{cuda.matmul,cudnn}.allow_tf32 =
False; braid's cuDNN FMA math); --tf32 allows TF32 on both sides (braid --tf32).
Every round runs every configuration once, the order rotating from round to round, so drift of
the machine (clocks, temperature) hits all configurations alike; a row's figure is the median
over rounds of each round's median.
"""
from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# torchvision name -> (braid zoo name, input size).
MODELS = {
    "googlenet": ("googlenet", 224),
    "inception_v3": ("tv_inception_v3", 299),
    "resnet50": ("resnet50", 224),
    "squeezenet1_0": ("tv_squeezenet1_0", 224),
}
DEFAULT_ALGOS = "auto,sequential,greedy,lios,nimble,opara,ios,heft"


def median(values: list[float]) -> float:
    return statistics.median(values)


# ---- PyTorch ------------------------------------------------------------------------------------

class TorchModel:
    """One torchvision model on the GPU, with its three ways to run."""

    def __init__(self, name: str, batch: int, tf32: bool):
        import torch
        import torchvision
        self.torch = torch
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cudnn.benchmark = True
        size = MODELS[name][1]
        kwargs = {"weights": None}
        if name in ("googlenet", "inception_v3"):
            kwargs.update(aux_logits=False, init_weights=True, transform_input=False)
        self.model = getattr(torchvision.models, name)(**kwargs).eval().cuda()
        self.x = torch.randn(batch, 3, size, size, device="cuda")
        self.graph = None
        self.compiled = None

    def eager(self, iters: int) -> float:
        torch = self.torch
        times = []
        with torch.inference_mode():
            for _ in range(iters):
                begin = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                begin.record()
                self.model(self.x)
                end.record()
                end.synchronize()
                times.append(begin.elapsed_time(end))
        return median(times)

    def cuda_graph(self, iters: int) -> float:
        torch = self.torch
        if self.graph is None:
            with torch.inference_mode():
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):  # warm-up on a side stream, as the docs require
                    for _ in range(3):
                        self.model(self.x)
                torch.cuda.current_stream().wait_stream(side)
                self.graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(self.graph):
                    self.static_out = self.model(self.x)
        return self._wall(self.graph.replay, iters)

    def compiled_graph(self, iters: int) -> float:
        torch = self.torch
        if self.compiled is None:
            self.compiled = torch.compile(self.model, mode="reduce-overhead")
            with torch.inference_mode():
                for _ in range(5):  # compile, record, warm
                    self.compiled(self.x)
        with torch.inference_mode():
            return self._wall(lambda: self.compiled(self.x), iters)

    def _wall(self, fn, iters: int) -> float:
        torch = self.torch
        times = []
        for _ in range(iters):
            torch.cuda.synchronize()
            begin = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            times.append((time.perf_counter() - begin) * 1e3)
        return median(times)


# ---- braid --------------------------------------------------------------------------------------

def braid_run(args, zoo_name: str, algo: str, eager: bool) -> dict:
    cmd = [args.braid, "run", zoo_name, "--device", args.device, "--algo", algo,
           "--batch", str(args.batch), "--iters", str(args.iters), "--warmup", str(args.warmup),
           "--json"]
    if eager:
        cmd.append("--eager")
    if args.tf32:
        cmd.append("--tf32")
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {done.returncode}: {done.stderr.strip()}")
    return json.loads(done.stdout)


# ---- The run ------------------------------------------------------------------------------------

def configs(args) -> list[tuple[str, dict]]:
    rows = [("pytorch eager", {"engine": "pytorch", "mode": "eager"}),
            ("pytorch cuda graph", {"engine": "pytorch", "mode": "graph"})]
    if not args.no_compile:
        rows.append(("pytorch torch.compile", {"engine": "pytorch", "mode": "compile"}))
    for algo in args.algos.split(","):
        rows.append((f"braid {algo}", {"engine": "braid", "algo": algo, "eager": False}))
        if args.braid_eager and algo != "auto":
            rows.append((f"braid {algo} eager", {"engine": "braid", "algo": algo, "eager": True}))
    return rows


def bench_model(args, name: str) -> list[dict]:
    zoo_name = MODELS[name][0]
    torch_model = None if args.dry_run else TorchModel(name, args.batch, args.tf32)
    plan = configs(args)
    samples = {label: [] for label, _ in plan}
    extra = {label: {} for label, _ in plan}
    for round_index in range(args.rounds):
        shift = round_index % len(plan)
        for label, config in plan[shift:] + plan[:shift]:
            if args.dry_run:
                print(f"round {round_index}: {name} {label}")
                continue
            if config["engine"] == "pytorch":
                run = {"eager": torch_model.eager, "graph": torch_model.cuda_graph,
                       "compile": torch_model.compiled_graph}[config["mode"]]
                samples[label].append(run(args.iters))
            else:
                result = braid_run(args, zoo_name, config["algo"], config["eager"])
                samples[label].append(result["latency_ms"]["median"])
                if "auto" in result:
                    extra[label]["auto"] = result["auto"]
                extra[label]["algorithm"] = result.get("algorithm")
    rows = []
    for label, config in plan:
        row = {"model": name, "braid_model": zoo_name, "config": label, **config,
               "batch": args.batch, "tf32": args.tf32, **extra[label]}
        if samples[label]:
            row["median_ms"] = median(samples[label])
            row["round_medians_ms"] = samples[label]
        rows.append(row)
    return rows


def markdown(rows: list[dict]) -> str:
    lines = []
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == model and "median_ms" in r]
        if not mine:
            continue
        graph = next((r["median_ms"] for r in mine if r["config"] == "pytorch cuda graph"), None)
        lines += [f"### {model} (batch {mine[0]['batch']}, {'TF32' if mine[0]['tf32'] else 'FP32'})",
                  "", "| configuration | median ms | x PyTorch CUDA Graph |", "|---|---|---|"]
        for r in mine:
            ratio = f"{graph / r['median_ms']:.2f}" if graph else "-"
            label = r["config"]
            if r.get("auto"):
                label += f" (chose {r['auto'].get('winner', '?')})"
            lines.append(f"| {label} | {r['median_ms']:.3f} | {ratio} |")
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # Checked below, not with choices=: argparse checks an empty or default list against them.
    parser.add_argument("models", nargs="*", metavar="MODEL",
                        help=f"torchvision names: {', '.join(MODELS)} (default: all)")
    parser.add_argument("--braid", default=str(REPO / "build" / "braid"))
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--algos", default=DEFAULT_ALGOS, help="braid rows (auto included)")
    parser.add_argument("--braid-eager", action="store_true",
                        help="also run every braid scheduler eagerly (--eager)")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iters", type=int, default=200, help="timed runs per config and round")
    parser.add_argument("--warmup", type=int, default=20, help="braid's untimed runs")
    parser.add_argument("--tf32", action="store_true", help="allow TF32 on both sides")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--dry-run", action="store_true", help="print the interleaved plan only")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--markdown", help="write the tables here")
    args = parser.parse_args()
    args.models = args.models or list(MODELS)
    unknown = [m for m in args.models if m not in MODELS]
    if unknown:
        parser.error(f"unknown model {', '.join(unknown)}; known: {', '.join(MODELS)}")
    if not args.dry_run:
        try:
            import torch
        except ImportError:
            print("gpu_peers: needs PyTorch with CUDA in this Python", file=sys.stderr)
            return 2
        if not torch.cuda.is_available():
            print("gpu_peers: no CUDA device visible to PyTorch", file=sys.stderr)
            return 2
    rows = []
    for name in args.models:
        rows += bench_model(args, name)
        if not args.dry_run:
            write_report(args, rows)  # after every model: a run cut short keeps what it measured
    if args.dry_run:
        return 0
    print(markdown(rows))
    return 0


def write_report(args, rows: list[dict]) -> None:
    report = {"when": datetime.datetime.now().isoformat(timespec="seconds"),
              "device": args.device, "rounds": args.rounds, "iters": args.iters, "rows": rows}
    try:
        import torch
        report["gpu"] = torch.cuda.get_device_name(0)
        report["torch"] = torch.__version__
    except Exception:  # the report is still useful without the names
        pass
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(markdown(rows) + "\n")


if __name__ == "__main__":
    sys.exit(main())
