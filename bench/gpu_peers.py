#!/usr/bin/env python3
"""braid against PyTorch on the same torchvision architectures, on one GPU, in one interleaved run.

    python3 bench/gpu_peers.py googlenet inception_v3 resnet50 squeezenet1_0 \\
        --braid build/braid --device cuda:0 --rounds 5 --precision fp16 \\
        --compile-modes reduce-overhead,max-autotune --json gpu_peers.json --markdown gpu_peers.md

Needs a CUDA GPU, PyTorch with CUDA and torchvision in the Python that runs it, and a braid built
with CUDA (docs/gpu.md). Not part of `make test`: benchmarks measure, they never assert.

Configurations, per model (torchvision name; braid runs its zoo twin, checked to fuse to the same
units and edges by zoo_framework_test):
  - PyTorch eager: the model called under torch.inference_mode, timed with CUDA events;
  - PyTorch CUDA Graph: torch.cuda.CUDAGraph captured once, replayed; wall clock around
    replay + synchronize;
  - PyTorch CUDA Graph + copies: the same replay doing the work braid's figure includes: an FP32
    input copied from pinned host memory, converted to the model's type on the device, the replay,
    the output converted to FP32 on the device and copied to pinned host memory; the same-work
    comparison for braid's rows;
  - torch.compile(MODE), one row per mode of --compile-modes (default reduce-overhead; also
    default, max-autotune, max-autotune-no-cudagraphs; none: no such row), wall clock. Compiling
    and warming up happen before the rounds, untimed; their seconds go to stderr and the JSON. A
    mode that fails to compile or run is recorded as failed, with its error, and the run goes on;
  - braid auto and every scheduler of --algos: `braid run MODEL --device cuda:0 --algo A
    --precision P --json` (graph replay, braid's default; add --braid-eager to also run every
    scheduler eagerly); its median latency_ms, which includes the input and output copies
    (PyTorch's rows do not, except "+ copies").
Every PyTorch row runs with torch.backends.cudnn.benchmark = True (cuDNN picks its fastest
convolution algorithms for these shapes), as a practitioner would run it.
Precision (--precision, default fp32), the same on both sides, braid given `--precision P`:
  - fp32: TF32 off (torch.backends.{cuda.matmul,cudnn}.allow_tf32 = False; braid's FMA math);
  - tf32: FP32 tensors, TF32 tensor cores allowed (both allow_tf32 = True); --tf32 is its
    deprecated spelling;
  - fp16, bf16: model and input converted (model.half() / .to(torch.bfloat16)); TF32 moot.
    braid keeps its inputs and outputs FP32 and converts on the device.
    Tensors stay NCHW, braid's layout; --channels-last gives PyTorch channels_last instead, the
    layout its tensor-core convolutions prefer.
Every round runs every configuration once, the order rotating from round to round, so drift of
the machine (clocks, temperature) hits all configurations alike; a row's figure is the median
over rounds of each round's median. Progress goes to stderr as it happens (max-autotune can
compile for minutes).
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
PRECISIONS = {"fp32": "FP32", "tf32": "TF32", "fp16": "FP16", "bf16": "BF16"}
# --compile-modes value -> torch.compile's mode ("default" is its mode=None).
COMPILE_MODES = {"default": None, "reduce-overhead": "reduce-overhead",
                 "max-autotune": "max-autotune",
                 "max-autotune-no-cudagraphs": "max-autotune-no-cudagraphs"}


def median(values: list[float]) -> float:
    return statistics.median(values)


def log(message: str) -> None:
    print(f"gpu_peers: {message}", file=sys.stderr, flush=True)


# ---- PyTorch ------------------------------------------------------------------------------------

class TorchModel:
    """One torchvision model on the GPU, with its ways to run."""

    def __init__(self, name: str, batch: int, precision: str, channels_last: bool):
        import torch
        import torchvision
        self.torch = torch
        tf32 = precision == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cudnn.benchmark = True
        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(precision, torch.float32)
        size = MODELS[name][1]
        kwargs = {"weights": None}
        if name in ("googlenet", "inception_v3"):
            kwargs.update(aux_logits=False, init_weights=True, transform_input=False)
        self.model = getattr(torchvision.models, name)(**kwargs).eval().cuda().to(dtype)
        self.x = torch.randn(batch, 3, size, size, device="cuda", dtype=dtype)
        if channels_last:
            self.model = self.model.to(memory_format=torch.channels_last)
            self.x = self.x.contiguous(memory_format=torch.channels_last)
        self.graph = None
        self.compiled = {}
        # What braid's interface exchanges: FP32 in pinned host memory, staged on the device.
        self.x_host = torch.empty(self.x.shape, dtype=torch.float32).pin_memory()
        self.x_host.copy_(self.x.float().cpu())
        self.x_staged = torch.empty(self.x.shape, dtype=torch.float32, device="cuda")

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

    def capture(self) -> None:
        torch = self.torch
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
        self.out_staged = torch.empty(self.static_out.shape, dtype=torch.float32, device="cuda")
        self.out_host = torch.empty(self.static_out.shape, dtype=torch.float32).pin_memory()

    def cuda_graph(self, iters: int) -> float:
        return self._wall(self.graph.replay, iters)

    def cuda_graph_with_copies(self, iters: int) -> float:
        def step():
            self.x_staged.copy_(self.x_host, non_blocking=True)
            self.x.copy_(self.x_staged)  # to the model's type (and layout), on the device
            self.graph.replay()
            self.out_staged.copy_(self.static_out)
            self.out_host.copy_(self.out_staged, non_blocking=True)
        return self._wall(step, iters)

    def compile(self, mode: str) -> float:
        """Compiles, records and warms `mode`; returns the seconds that took."""
        torch = self.torch
        begin = time.perf_counter()
        compiled = torch.compile(self.model, mode=COMPILE_MODES[mode])
        with torch.inference_mode():
            for _ in range(5):  # compile (torch.compile is lazy), record the graphs, warm
                compiled(self.x)
        torch.cuda.synchronize()
        self.compiled[mode] = compiled
        return time.perf_counter() - begin

    def compiled_run(self, mode: str, iters: int) -> float:
        compiled = self.compiled[mode]
        with self.torch.inference_mode():
            return self._wall(lambda: compiled(self.x), iters)

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

def braid_command(args, zoo_name: str, algo: str, eager: bool) -> list[str]:
    cmd = [args.braid, "run", zoo_name, "--device", args.device, "--algo", algo,
           "--batch", str(args.batch), "--iters", str(args.iters), "--warmup", str(args.warmup),
           "--precision", args.precision, "--json"]
    if eager:
        cmd.append("--eager")
    return cmd


def braid_run(args, zoo_name: str, algo: str, eager: bool) -> dict:
    cmd = braid_command(args, zoo_name, algo, eager)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.braid_timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {done.returncode}: {done.stderr.strip()}")
    return json.loads(done.stdout)


# ---- The run ------------------------------------------------------------------------------------

def configs(args) -> list[tuple[str, dict]]:
    rows = [("pytorch eager", {"engine": "pytorch", "mode": "eager"}),
            ("pytorch cuda graph", {"engine": "pytorch", "mode": "graph"}),
            ("pytorch cuda graph + copies", {"engine": "pytorch", "mode": "graph_copies"})]
    for mode in args.compile_modes:
        rows.append((f"torch.compile({mode})",
                     {"engine": "pytorch", "mode": "compile", "compile_mode": mode}))
    for algo in args.algos.split(","):
        rows.append((f"braid {algo}", {"engine": "braid", "algo": algo, "eager": False}))
        if args.braid_eager and algo != "auto":
            rows.append((f"braid {algo} eager", {"engine": "braid", "algo": algo, "eager": True}))
    return rows


def describe_precision(args) -> str:
    torch_side = {"fp32": "FP32, TF32 off", "tf32": "FP32, TF32 allowed",
                  "fp16": "model.half() and a half input",
                  "bf16": "model.to(torch.bfloat16) and a bf16 input"}[args.precision]
    layout = "channels_last" if args.channels_last else "NCHW"
    return (f"precision {args.precision} ({PRECISIONS[args.precision]}): PyTorch {torch_side}, "
            f"{layout}, cudnn.benchmark on; braid run --precision {args.precision}")


def dry_run(args, name: str, plan: list[tuple[str, dict]]) -> None:
    zoo_name, size = MODELS[name]
    print(f"{name} (braid {zoo_name}, {size}x{size}, batch {args.batch}, "
          f"{PRECISIONS[args.precision]}): {len(plan)} configurations")
    for label, config in plan:
        if config["engine"] == "braid":
            command = " ".join(braid_command(args, zoo_name, config["algo"], config["eager"]))
            print(f"  {label}: {command}")
        else:
            print(f"  {label}")
    for round_index in range(args.rounds):
        shift = round_index % len(plan)
        order = [label for label, _ in plan[shift:] + plan[:shift]]
        print(f"  round {round_index}: {', '.join(order)}")


def bench_model(args, name: str) -> list[dict]:
    zoo_name = MODELS[name][0]
    plan = configs(args)
    if args.dry_run:
        dry_run(args, name, plan)
        return []
    samples = {label: [] for label, _ in plan}
    extra = {label: {} for label, _ in plan}
    failed = {}

    def fail(label: str, error: Exception) -> None:  # a failure costs only its row
        failed[label] = f"{type(error).__name__}: {error}".strip()[:4000]  # Inductor's run long
        log(f"{name}: {label} failed: {failed[label].splitlines()[0][:300]}")

    log(f"{name}: building the PyTorch model ({PRECISIONS[args.precision]}, batch {args.batch})")
    torch_model = TorchModel(name, args.batch, args.precision, args.channels_last)
    torch_model.capture()
    for label, config in plan:
        if config.get("mode") != "compile":
            continue
        log(f"{name}: {label}: compiling...")
        try:
            seconds = torch_model.compile(config["compile_mode"])
        except Exception as error:
            fail(label, error)
            continue
        extra[label]["compile_s"] = round(seconds, 1)
        log(f"{name}: {label}: compiled and warmed in {seconds:.1f} s")
    for round_index in range(args.rounds):
        shift = round_index % len(plan)
        log(f"{name}: round {round_index + 1}/{args.rounds}")
        for label, config in plan[shift:] + plan[:shift]:
            if label in failed:
                continue
            if config["engine"] == "pytorch":
                if config["mode"] == "compile":
                    try:
                        ms = torch_model.compiled_run(config["compile_mode"], args.iters)
                    except Exception as error:
                        fail(label, error)
                        continue
                else:
                    run = {"eager": torch_model.eager,
                           "graph": torch_model.cuda_graph,
                           "graph_copies": torch_model.cuda_graph_with_copies}[config["mode"]]
                    ms = run(args.iters)
            else:  # a braid failure or hang costs its row, not the table
                try:
                    result = braid_run(args, zoo_name, config["algo"], config["eager"])
                    ms = result["latency_ms"]["median"]
                except (RuntimeError, ValueError, KeyError, subprocess.TimeoutExpired) as error:
                    fail(label, error)
                    continue
                if "auto" in result:
                    extra[label]["auto"] = result["auto"]
                extra[label]["algorithm"] = result.get("algorithm")
                extra[label]["braid_precision"] = result.get("precision")  # what braid says it ran
            samples[label].append(ms)
            log(f"{name}: {label}: {ms:.3f} ms")
    rows = []
    for label, config in plan:
        row = {"model": name, "braid_model": zoo_name, "config": label, **config,
               "batch": args.batch, "precision": args.precision, **extra[label]}
        if label in failed:
            row.update(failed=True, error=failed[label])
        if samples[label]:
            row["median_ms"] = median(samples[label])
            row["round_medians_ms"] = samples[label]
        rows.append(row)
    return rows


def markdown(rows: list[dict], channels_last: bool = False) -> str:
    lines = []
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == model and ("median_ms" in r or r.get("failed"))]
        if not mine:
            continue
        graph = next((r.get("median_ms") for r in mine if r["config"] == "pytorch cuda graph"),
                     None)
        copies = next((r.get("median_ms") for r in mine
                       if r["config"] == "pytorch cuda graph + copies"), None)
        layout = ", PyTorch channels_last" if channels_last else ""
        heading = f"{model} (batch {mine[0]['batch']}, {PRECISIONS[mine[0]['precision']]}{layout})"
        lines += [f"### {heading}", "",
                  "| configuration | median ms | x PyTorch CUDA Graph | x CUDA Graph + copies |",
                  "|---|---|---|---|"]
        for r in mine:
            label = r["config"]
            if r.get("auto"):
                label += f" (chose {r['auto'].get('winner', '?')})"
            if r.get("failed"):  # a row that failed in a later round keeps no median
                lines.append(f"| {label} | failed | - | - |")
                continue
            ratio = f"{graph / r['median_ms']:.2f}" if graph else "-"
            same_work = f"{copies / r['median_ms']:.2f}" if copies else "-"
            lines.append(f"| {label} | {r['median_ms']:.3f} | {ratio} | {same_work} |")
        lines.append("")
    return "\n".join(lines)


def parse_args() -> argparse.Namespace:
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
    parser.add_argument("--braid-timeout", type=float, default=90,
                        help="seconds one `braid run` may take before its row is failed")
    parser.add_argument("--precision", choices=list(PRECISIONS),
                        help="both sides' arithmetic (default fp32: TF32 off)")
    parser.add_argument("--tf32", action="store_true",
                        help="deprecated: the same as --precision tf32")
    parser.add_argument("--channels-last", action="store_true",
                        help="fp16, bf16: PyTorch's tensors channels_last (default NCHW, braid's)")
    parser.add_argument("--compile-modes",
                        help="torch.compile rows, comma-separated: none or of "
                             f"{', '.join(COMPILE_MODES)} (default reduce-overhead)")
    parser.add_argument("--no-compile", action="store_true",
                        help="the same as --compile-modes none")
    parser.add_argument("--dry-run", action="store_true", help="print the configurations only")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--markdown", help="write the tables here")
    args = parser.parse_args()
    args.models = args.models or list(MODELS)
    unknown = [m for m in args.models if m not in MODELS]
    if unknown:
        parser.error(f"unknown model {', '.join(unknown)}; known: {', '.join(MODELS)}")
    if args.tf32:
        if args.precision not in (None, "tf32"):
            parser.error(f"--tf32 means --precision tf32, not {args.precision}")
        log("--tf32 is deprecated; use --precision tf32")
        args.precision = "tf32"
    args.precision = args.precision or "fp32"
    if args.channels_last and args.precision not in ("fp16", "bf16"):
        parser.error("--channels-last applies to --precision fp16 or bf16")
    if args.no_compile and args.compile_modes not in (None, "none"):
        parser.error("--no-compile and --compile-modes disagree")
    modes = [m for m in ("none" if args.no_compile else args.compile_modes or "reduce-overhead")
             .split(",") if m]
    wrong = [m for m in modes if m not in COMPILE_MODES and m != "none"]
    if wrong or not modes or ("none" in modes and len(modes) > 1):
        parser.error(f"--compile-modes: none, or a comma list of {', '.join(COMPILE_MODES)}")
    args.compile_modes = list(dict.fromkeys(m for m in modes if m != "none"))
    return args


def main() -> int:
    args = parse_args()
    if args.dry_run:
        print(f"gpu_peers (dry run): {describe_precision(args)}; batch {args.batch}, "
              f"{args.rounds} rounds; torch.compile modes: {', '.join(args.compile_modes) or 'none'}")
    else:
        try:
            import torch
        except ImportError:
            print("gpu_peers: needs PyTorch with CUDA in this Python", file=sys.stderr)
            return 2
        if not torch.cuda.is_available():
            print("gpu_peers: no CUDA device visible to PyTorch", file=sys.stderr)
            return 2
        log(describe_precision(args))
    rows = []
    for name in args.models:
        rows += bench_model(args, name)
        if not args.dry_run:
            write_report(args, rows)  # after every model: a run cut short keeps what it measured
    if args.dry_run:
        return 0
    print(markdown(rows, args.channels_last))
    return 0


def write_report(args, rows: list[dict]) -> None:
    report = {"when": datetime.datetime.now().isoformat(timespec="seconds"),
              "device": args.device, "precision": args.precision, "batch": args.batch,
              "channels_last": args.channels_last, "cudnn_benchmark": True,
              "compile_modes": args.compile_modes, "rounds": args.rounds, "iters": args.iters,
              "rows": rows}
    try:
        import torch
        report["gpu"] = torch.cuda.get_device_name(0)
        report["torch"] = torch.__version__
        report["cudnn"] = torch.backends.cudnn.version()
        import torchvision
        report["torchvision"] = torchvision.__version__
    except Exception:  # the report is still useful without the names
        pass
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(markdown(rows, args.channels_last) + "\n")


if __name__ == "__main__":
    sys.exit(main())
