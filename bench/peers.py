#!/usr/bin/env python3
"""braid against ONNX Runtime on the same model, on this CPU, in one interleaved run.

    .venv/bin/python bench/peers.py inception_v3 googlenet --rounds 5 --iters 20 --json peers.json

Each MODEL is a braid zoo name (exported once with `braid export`, seeded weights) or an .onnx
path used as is; braid and ORT then run the same .onnx file. Every round runs every config of
a model once (the config order rotates from round to round), so slow drift of the machine hits
all configs alike. See bench/README.md for what each config means and for the hygiene rules;
in short:
  - the whole process (and so every braid child) is pinned with `taskset -c 0,1`;
  - every measurement is bracketed by snapshots of /proc/stat and of every other thread's
    /proc/<pid>/task/<tid>/schedstat; if other processes used more than 10% of a core during it,
    the measurement is marked busy, retried (up to --retries times) and excluded from the table;
  - spinning is one policy for both engines (--spin): libgomp's GOMP_SPINCOUNT/OMP_WAIT_POLICY
    for braid, session.{intra,inter}_op.allow_spinning for ORT.
Benchmarks measure; they do not assert (STYLE.md §5).
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import glob
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PIN_ENV = "BRAID_PEERS_PINNED"
HZ = os.sysconf("SC_CLK_TCK")

# ---- Configurations ---------------------------------------------------------------------------
# To benchmark another braid scheduler, add a line here (or pass --braid-config algo:S:T).


@dataclasses.dataclass(frozen=True)
class BraidConfig:
    algo: str     # "default": `braid run MODEL` with no scheduling flags (auto)
    streams: int  # 0 (with threads 0): the scheduler decides (an allotment plans its own threads)
    threads: int  # per stream

    @property
    def name(self) -> str:
        if self.algo == "default":
            return "braid run (default)"
        if self.streams == 0:
            return f"braid {self.algo}"
        return f"braid {self.algo} {self.streams}x{self.threads}"

    def describe(self) -> dict:
        return {"engine": "braid", "algo": self.algo, "streams": self.streams,
                "threads_per_stream": self.threads}


@dataclasses.dataclass(frozen=True)
class OrtConfig:
    mode: str    # "sequential" | "parallel"
    intra: int   # intra_op_num_threads
    inter: int   # inter_op_num_threads (only read by ORT_PARALLEL)
    level: str   # "all" | "extended"

    @property
    def name(self) -> str:
        if self.mode == "parallel":
            return f"ort parallel inter{self.inter} intra{self.intra} {self.level}"
        return f"ort seq intra{self.intra} {self.level}"

    def describe(self) -> dict:
        return {"engine": "ort", "execution_mode": self.mode, "intra_op_num_threads": self.intra,
                "inter_op_num_threads": self.inter, "graph_optimization_level": self.level}


BRAID_CONFIGS = [
    BraidConfig("default", 0, 0),      # what a user gets: auto over intra- and inter-op plans
    BraidConfig("sequential", 1, 1),
    BraidConfig("sequential", 1, 2),   # intra-operator only
    BraidConfig("greedy", 2, 1),       # inter-operator only
    BraidConfig("moldable", 0, 0),     # an allotment on every core (docs/schedulers.md)
]
ORT_CONFIGS = [
    OrtConfig("sequential", 1, 1, "all"),
    OrtConfig("sequential", 2, 1, "all"),
    OrtConfig("sequential", 1, 1, "extended"),   # no NCHWc layout: isolates scheduling from layout
    OrtConfig("sequential", 2, 1, "extended"),
    OrtConfig("parallel", 1, 2, "all"),
]

# One spinning policy for both engines.
SPIN_POLICIES = {
    # Both libraries' shipped behaviour, made explicit: spin a bounded while, then sleep.
    # 300000 is libgomp's own default (it drops to 1000 by itself when oversubscribed).
    "on": {"braid_env": {"GOMP_SPINCOUNT": "300000"}, "braid_unset": ["OMP_WAIT_POLICY"],
           "ort_allow_spinning": "1"},
    # Never spin: sleep at once (robust on a shared machine, slower for 2-thread intra-op).
    "off": {"braid_env": {"OMP_WAIT_POLICY": "passive", "GOMP_SPINCOUNT": "0"}, "braid_unset": [],
            "ort_allow_spinning": "0"},
}
# Variables that would change how braid's lanes are placed (ecosystem.md §4.3): never inherit.
BRAID_ENV_DROP = ["OMP_PROC_BIND", "OMP_PLACES", "OMP_NUM_THREADS", "GOMP_CPU_AFFINITY",
                  "KMP_AFFINITY"]


def percentile(values: list[float], p: float) -> float:
    """Linear interpolation, as `braid run` computes it."""
    v = sorted(values)
    pos = p * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def summarize(samples_ms: list[float]) -> dict:
    return {"median": percentile(samples_ms, 0.5), "p10": percentile(samples_ms, 0.1),
            "p90": percentile(samples_ms, 0.9)}


# ---- Hygiene: who else used the CPU during a measurement ----------------------------------------

def read_loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


def read_psi_cpu_some_us() -> int | None:
    try:
        for line in Path("/proc/pressure/cpu").read_text().splitlines():
            if line.startswith("some"):
                return int(line.rsplit("total=", 1)[1])
    except OSError:
        pass
    return None


def read_cpu_ticks(cpus: list[int]) -> tuple[int, int, int]:
    """(busy, total, steal) ticks summed over `cpus` from /proc/stat."""
    busy = total = steal = 0
    wanted = {f"cpu{c}" for c in cpus}
    for line in Path("/proc/stat").read_text().splitlines():
        f = line.split()
        if f and f[0] in wanted:
            v = [int(x) for x in f[1:9]]  # user nice system idle iowait irq softirq steal
            total += sum(v)
            busy += v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
            steal += v[7]
    return busy, total, steal


def read_thread_runtimes(exclude_pid: int) -> dict[tuple[int, int], int]:
    """CPU time (ns, from the scheduler's own clock) of every thread not in our process."""
    out = {}
    for path in glob.glob("/proc/[0-9]*/task/[0-9]*/schedstat"):
        parts = path.split("/")
        pid, tid = int(parts[2]), int(parts[4])
        if pid == exclude_pid:
            continue
        try:
            out[(pid, tid)] = int(Path(path).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # the thread ended between glob and read
    return out


def own_cpu_seconds() -> float:
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


class CpuWatch:
    """Brackets one measurement: how much CPU did everyone but us (and our children) use?

    Two estimates, and the larger one decides:
      precise: summed schedstat deltas of every other thread (threads born during the window
               count in full; threads that died during it are missed);
      coarse:  busy ticks of our CPUs in /proc/stat minus our own rusage, less a slack of two
               ticks per CPU for the tick sampling (catches short-lived processes)."""

    def __init__(self, cpus: list[int], threshold: float):
        self.cpus = cpus
        self.threshold = threshold
        # The precise estimate counts threads on every CPU: exact only when we own them all.
        self.precise_valid = len(cpus) >= (os.cpu_count() or len(cpus))

    def __enter__(self):
        self.t0 = time.perf_counter()
        self.ticks0 = read_cpu_ticks(self.cpus)
        self.own0 = own_cpu_seconds()
        self.threads0 = read_thread_runtimes(os.getpid())
        self.psi0 = read_psi_cpu_some_us()
        return self

    def __exit__(self, *exc):
        threads1 = read_thread_runtimes(os.getpid())
        ticks1 = read_cpu_ticks(self.cpus)
        own1 = own_cpu_seconds()
        psi1 = read_psi_cpu_some_us()
        wall = time.perf_counter() - self.t0
        precise_ns = sum(ns - self.threads0.get(key, 0) for key, ns in threads1.items()
                         if ns >= self.threads0.get(key, 0))
        precise = precise_ns / 1e9 / wall
        busy_ticks = ticks1[0] - self.ticks0[0]
        slack = 2 * len(self.cpus)
        coarse = max(0.0, (max(0, busy_ticks - slack) / HZ - (own1 - self.own0)) / wall)
        self.result = {
            "wall_s": round(wall, 4),
            "other_cores_precise": round(precise, 4) if self.precise_valid else None,
            "other_cores_coarse": round(coarse, 4),
            "steal_ticks": ticks1[2] - self.ticks0[2],
            "psi_cpu_some_ms": None if psi1 is None or self.psi0 is None
            else round((psi1 - self.psi0) / 1000, 2),
        }
        other = max(coarse, precise if self.precise_valid else 0.0)
        self.result["other_cores"] = round(other, 4)
        self.result["busy"] = other > self.threshold
        return False


# ---- The two engines -------------------------------------------------------------------------

def braid_env(policy: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in BRAID_ENV_DROP}
    for k in SPIN_POLICIES[policy]["braid_unset"]:
        env.pop(k, None)
    env.update(SPIN_POLICIES[policy]["braid_env"])
    return env


def run_braid(braid: str, model: str, cfg: BraidConfig, iters: int, warmup: int, env: dict) -> dict:
    cmd = [braid, "run", model]
    if cfg.algo != "default":
        cmd += ["--algo", cfg.algo]
    if cfg.streams > 0:
        cmd += ["--streams", str(cfg.streams), "--threads-per-stream", str(cfg.threads)]
    cmd += ["--iters", str(iters), "--warmup", str(warmup), "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()}")
    return json.loads(p.stdout)


class SessionRunner:
    """What both engines' runners share: `session` (ORT's API: get_inputs(), run()) and `feeds`."""

    def measure(self, iters: int, warmup: int) -> list[float]:
        run, feeds = self.session.run, self.feeds
        for _ in range(warmup):
            run(None, feeds)
        samples = []
        clock = time.perf_counter
        for _ in range(iters):
            t0 = clock()
            run(None, feeds)
            samples.append((clock() - t0) * 1e3)
        return samples


def random_feeds(session) -> dict:
    """Uniform [-1, 1) inputs from one seed, so every config of a model sees the same ones."""
    import numpy as np
    rng = np.random.default_rng(1)
    feeds = {}
    for i in session.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        feeds[i.name] = rng.uniform(-1, 1, size=shape).astype(np.float32)
    return feeds


class BraidRunner(SessionRunner):
    """braid in this process (`import braid`, the module the build puts beside the CLI): the same
    plan `braid run` makes for the config, each run() called from Python as ORT's is."""

    def __init__(self, braid_mod, onnx_path: str, cfg: BraidConfig):
        # Lanes pinned to their CPUs, as `braid run` pins them (Python sessions do not by
        # default: sessions of one process would share CPUs; these run one at a time).
        kwargs = {"options": {"pin_threads": True}}
        if cfg.algo != "default":
            kwargs["scheduler"] = cfg.algo
        if cfg.streams > 0:
            kwargs["threads"] = cfg.threads
            kwargs["options"]["streams"] = cfg.streams
        self.session = braid_mod.InferenceSession(onnx_path, **kwargs)
        self.feeds = random_feeds(self.session)

    def plan(self) -> str:
        return self.session.schedule_summary



def import_braid(braid_cli: str):
    """The `braid` Python module built beside the CLI (build/python)."""
    path = Path(braid_cli).parent / "python"
    if not (path / "braid").is_dir():
        sys.exit(f"{path}/braid is missing: build the Python module (make build) or pass "
                 "--braid-runs process")
    sys.path.insert(0, str(path))
    import braid
    return braid


class OrtRunner(SessionRunner):
    def __init__(self, ort, onnx_path: str, cfg: OrtConfig, spin: str, profile_prefix: str | None = None):
        so = ort.SessionOptions()
        so.execution_mode = (ort.ExecutionMode.ORT_PARALLEL if cfg.mode == "parallel"
                             else ort.ExecutionMode.ORT_SEQUENTIAL)
        so.intra_op_num_threads = cfg.intra
        so.inter_op_num_threads = cfg.inter
        so.graph_optimization_level = {
            "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
            "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED}[cfg.level]
        allow = SPIN_POLICIES[spin]["ort_allow_spinning"]
        so.add_session_config_entry("session.intra_op.allow_spinning", allow)
        so.add_session_config_entry("session.inter_op.allow_spinning", allow)
        so.log_severity_level = 3
        if profile_prefix:
            so.enable_profiling = True
            so.profile_file_prefix = profile_prefix
        self.session = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
        self.feeds = random_feeds(self.session)



def python_overhead_us(ort, workdir: Path, spin: str) -> dict:
    """ORT's timing is per session.run() called from Python; braid times run() in C++. The cost of
    one session.run() on a 1-element Relu model bounds what Python and the binding add."""
    import onnx
    from onnx import TensorProto, helper
    path = workdir / "relu1.onnx"
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu1",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    r = OrtRunner(ort, str(path), OrtConfig("sequential", 1, 1, "all"), spin)
    samples = r.measure(2000, 200)
    clock = time.perf_counter
    t = [(lambda t0: (clock() - t0) * 1e3)(clock()) for _ in range(2000)]
    return {"session_run_relu1_us": round(percentile(samples, 0.5) * 1e3, 2),
            "session_run_relu1_p90_us": round(percentile(samples, 0.9) * 1e3, 2),
            "timer_pair_us": round(percentile(t, 0.5) * 1e3, 3)}


def check_ort_parallel(ort, onnx_path: str, workdir: Path, spin: str, iters: int = 5) -> dict:
    """Does ORT_PARALLEL run nodes concurrently on CPU? Profile it and a sequential session and
    count the distinct threads that ran nodes, and the most node executions ever overlapping."""
    out = {}
    for cfg in (OrtConfig("parallel", 1, 2, "all"), OrtConfig("sequential", 1, 1, "all")):
        prefix = str(workdir / f"prof_{Path(onnx_path).stem}_{cfg.mode}")
        r = OrtRunner(ort, onnx_path, cfg, spin, profile_prefix=prefix)
        r.measure(iters, 2)
        trace_path = r.session.end_profiling()
        events = json.loads(Path(trace_path).read_text())
        nodes = [e for e in events if e.get("cat") == "Node" and e.get("ph") == "X"
                 and str(e.get("name", "")).endswith("_kernel_time")]
        tids = sorted({e.get("tid") for e in nodes})
        caller = threading.get_native_id()
        edges = sorted([(e["ts"], 1) for e in nodes] + [(e["ts"] + e["dur"], -1) for e in nodes],
                       key=lambda x: (x[0], x[1]))
        live = peak = 0
        for _, d in edges:
            live += d
            peak = max(peak, live)
        out[cfg.name] = {"node_events": len(nodes), "distinct_node_threads": len(tids),
                         "max_concurrent_nodes": peak,
                         "caller_thread_ran_nodes": caller in tids, "trace": trace_path}
        del r
    par = out["ort parallel inter2 intra1 all"]
    out["finding"] = (
        "ORT_PARALLEL ran nodes concurrently" if par["max_concurrent_nodes"] > 1 else
        f"ORT_PARALLEL never overlapped two nodes ({par['distinct_node_threads']} node thread(s), "
        f"{'the caller' if par['caller_thread_ran_nodes'] else 'not the caller: one hand-off per run'}): "
        "on CPU it is one stream, i.e. sequential")
    return out


# ---- Driver ----------------------------------------------------------------------------------

def pin_self(cpus: str) -> None:
    """Re-run this script under `taskset -c CPUS` (once); fall back to sched_setaffinity."""
    if os.environ.get(PIN_ENV) == cpus:
        return
    if shutil.which("taskset"):
        env = dict(os.environ, **{PIN_ENV: cpus})
        os.execvpe("taskset", ["taskset", "-c", cpus, sys.executable, *sys.argv], env)
    os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})
    os.environ[PIN_ENV] = cpus


def export_model(braid: str, model: str, workdir: Path, batch: int) -> str:
    if model.endswith(".onnx"):
        return str(Path(model).resolve())
    path = workdir / f"{model}_b{batch}.onnx"
    if not path.exists():
        subprocess.run([braid, "export", model, "--batch", str(batch), "-o", str(path)],
                       check=True, capture_output=True, text=True)
    return str(path)


def versions(braid: str, ort) -> dict:
    import numpy
    import onnx
    git = lambda *a: subprocess.run(["git", "-C", str(REPO), *a], capture_output=True,
                                    text=True).stdout.strip()
    cpu_model = next((l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text()
                      .splitlines() if l.startswith("model name")), "?")
    return {"onnxruntime": ort.__version__, "onnx": onnx.__version__, "numpy": numpy.__version__,
            "python": platform.python_version(), "braid_binary": braid,
            "braid_git": git("rev-parse", "--short", "HEAD") + ("-dirty" if git("status", "--porcelain", "-uno") else ""),
            "kernel": platform.release(), "cpu": cpu_model, "cpus_online": os.cpu_count(),
            "affinity": sorted(os.sched_getaffinity(0)), "clk_tck": HZ}


def wait_quiet(cpus: list[int], threshold: float, timeout: float) -> float:
    """Polls 0.5 s windows until other processes use at most `threshold` cores, or `timeout`
    seconds pass. Returns the seconds waited."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        with CpuWatch(cpus, threshold) as w:
            time.sleep(0.5)
        if not w.result["busy"]:
            break
    return time.perf_counter() - start


def measure_once(cfg, args, onnx_path, runners, env, cpus):
    waited = wait_quiet(cpus, args.busy_threshold, args.wait_quiet) if args.wait_quiet > 0 else 0.0
    with CpuWatch(cpus, args.busy_threshold) as watch:
        if isinstance(cfg, BraidConfig) and cfg not in runners:
            j = run_braid(args.braid, onnx_path, cfg, args.iters, args.warmup, env)
            stats, extra = j["latency_ms"], {"braid": j}
        else:
            samples = runners[cfg].measure(args.iters, args.warmup)
            stats, extra = summarize(samples), {"samples_ms": [round(s, 4) for s in samples]}
    # Spinning threads of the engine just measured (libgomp's team, ORT's pool) go idle before
    # the next one starts.
    time.sleep(args.gap_ms / 1e3)
    return {"config": cfg.name, "latency_ms": stats, **watch.result, "waited_quiet_s": round(waited, 2),
            **extra}


def measure_round_interleaved(order, args, runners, cpus) -> list[dict]:
    """One round with every engine in this process: `warmup` untimed then `iters` timed runs of
    each config, one run at a time in turn (A B C ... A B C ...), a pause of --gap-ms after each
    so the last engine's spinning threads go idle. Every run then starts after a pause: this
    measures a run after idle, not the steady state (a two-thread braid run took one thread's
    time so before lanes pinned their teams; bench/README, issue 28 session 14). The watch for
    other processes covers the whole round."""
    samples = {cfg: [] for cfg in order}
    clock = time.perf_counter
    with CpuWatch(cpus, args.busy_threshold) as watch:
        for i in range(args.warmup + args.iters):
            for cfg in order:
                run, feeds = runners[cfg].session.run, runners[cfg].feeds
                t0 = clock()
                run(None, feeds)
                if i >= args.warmup:
                    samples[cfg].append((clock() - t0) * 1e3)
                time.sleep(args.gap_ms / 1e3)
    return [{"config": cfg.name, "latency_ms": summarize(samples[cfg]), **watch.result,
             "waited_quiet_s": 0.0, "interleaved": True,
             "samples_ms": [round(x, 4) for x in samples[cfg]]} for cfg in order]


def bench_model(model: str, args, ort, cpus, env, configs) -> dict:
    onnx_path = export_model(args.braid, model, args.workdir, args.batch)
    record = {"model": model, "onnx": onnx_path, "rounds": []}
    print(f"\n== {model} ({onnx_path})", flush=True)
    if not args.no_parallel_check:
        record["ort_parallel_check"] = check_ort_parallel(ort, onnx_path, args.workdir, args.spin)
        print(f"   {record['ort_parallel_check']['finding']}", flush=True)
    runners = {c: OrtRunner(ort, onnx_path, c, args.spin) for c in configs if isinstance(c, OrtConfig)}
    if args.braid_module is not None:
        # A session per config, all alive together as ORT's are; the default one runs auto's
        # search (profiling, measuring its candidates) here, untimed, or reads its cached decision.
        record["plans"] = {}
        for c in configs:
            if isinstance(c, BraidConfig):
                runners[c] = BraidRunner(args.braid_module, onnx_path, c)
                record["plans"][c.name] = runners[c].plan()
                print(f"   {c.name}: {record['plans'][c.name]}", flush=True)
    for r in runners.values():
        r.measure(0, args.warmup)
    # `braid run` with no flags runs auto: its search (profiling, measuring its candidates) runs
    # once here, untimed, and the rounds reuse its cached decision as any second run would.
    for cfg in configs:
        if isinstance(cfg, BraidConfig) and cfg.algo == "default" and cfg not in runners:
            j = run_braid(args.braid, onnx_path, cfg, 1, 0, env)
            record["auto"] = j.get("auto")
            print(f"   auto: {j.get('auto', {}).get('winner')} (search done, decision cached)",
                  flush=True)
    for rnd in range(args.rounds):
        order = configs[rnd % len(configs):] + configs[:rnd % len(configs)]
        entry = {"round": rnd, "loadavg_before": read_loadavg(), "measurements": []}
        if all(c in runners for c in configs) and args.interleave:
            entry["measurements"] = measure_round_interleaved(order, args, runners, cpus)
            for m in entry["measurements"]:
                flag = " BUSY (other processes used %.0f%% of a core)" % (100 * m["other_cores"]) if m["busy"] else ""
                print(f"   round {rnd} {m['config']:38s} median {m['latency_ms']['median']:9.3f} ms{flag}", flush=True)
            entry["loadavg_after"] = read_loadavg()
            record["rounds"].append(entry)
            continue
        for cfg in order:
            for attempt in range(args.retries + 1):
                m = measure_once(cfg, args, onnx_path, runners, env, cpus)
                m["attempt"] = attempt
                entry["measurements"].append(m)
                flag = " BUSY (other processes used %.0f%% of a core)" % (100 * m["other_cores"]) if m["busy"] else ""
                print(f"   round {rnd} {cfg.name:38s} median {m['latency_ms']['median']:9.3f} ms{flag}", flush=True)
                if not m["busy"]:
                    break
                time.sleep(args.retry_wait)
        entry["loadavg_after"] = read_loadavg()
        record["rounds"].append(entry)
    record["summary"] = summarize_model(record, configs)
    return record


def summarize_model(record: dict, configs) -> list[dict]:
    """Per config: the median over clean rounds of each round's median / p10 / p90 (the same
    aggregation for both engines: braid reports per-run percentiles only). A config with no clean
    measurement falls back to its busy ones and is marked noisy."""
    rows = []
    for cfg in configs:
        ms = [m for r in record["rounds"] for m in r["measurements"] if m["config"] == cfg.name]
        clean = [m for m in ms if not m["busy"]]
        use = clean or ms
        row = {"config": cfg.name, **cfg.describe(), "clean_rounds": len(clean),
               "busy_measurements": len(ms) - len(clean), "noisy": not clean}
        for k in ("median", "p10", "p90"):
            row[k] = statistics.median(m["latency_ms"][k] for m in use)
        rows.append(row)
    ort_rows = [r for r in rows if r["engine"] == "ort"]
    if ort_rows:
        best = min(ort_rows, key=lambda r: r["median"])
        for r in rows:
            r["vs_ort_best"] = r["median"] / best["median"]
            r["ort_best"] = best["config"]
            # Paired: within each round, over ORT's best config of that same round, then the
            # median over rounds; drift slower than a round cancels.
            ratios = []
            for rnd in record["rounds"]:
                clean = {m["config"]: m["latency_ms"]["median"] for m in rnd["measurements"]
                         if not m["busy"]}
                if r["config"] in clean and best["config"] in clean:
                    ratios.append(clean[r["config"]] / clean[best["config"]])
            r["vs_ort_best_paired"] = statistics.median(ratios) if ratios else float("nan")
    return rows


def print_table(record: dict) -> None:
    rows = record["summary"]
    print(f"\n{record['model']}: median over clean rounds (ms); x = median / ORT's best median "
          f"({rows[0].get('ort_best', '-')})")
    print(f"  {'config':38s} {'median':>9s} {'p10':>9s} {'p90':>9s} {'x ORT best':>10s} {'paired':>7s}  clean/taken")
    for r in rows:
        mark = "  NOISY (no clean round)" if r["noisy"] else ""
        print(f"  {r['config']:38s} {r['median']:9.3f} {r['p10']:9.3f} {r['p90']:9.3f} "
              f"{r.get('vs_ort_best', float('nan')):10.2f} {r.get('vs_ort_best_paired', float('nan')):7.2f}"
              f"  {r['clean_rounds']}/{r['clean_rounds'] + r['busy_measurements']}{mark}")


def markdown(out: dict) -> str:
    """The summary as Markdown, for bench/README.md."""
    v = out["versions"]
    busy = sum(r["busy_measurements"] for rec in out["models"] for r in rec["summary"])
    lines = [f"{out['date']}, {v['cpu']} ({v['cpus_online']} vCPU, pinned {v['affinity']}), "
             f"onnxruntime {v['onnxruntime']}, braid {v['braid_git']}; "
             f"{out['settings']['rounds']} rounds x {out['settings']['iters']} iters, braid "
             f"{'in this process' if out['settings'].get('braid_runs') == 'python' else 'as child processes'}, "
             f"spin '{out['spin_policy']['name']}'; loadavg {out['loadavg_start']} -> "
             f"{out['loadavg_end']}; busy measurements excluded: {busy}.", ""]
    for rec in out["models"]:
        rows = rec["summary"]
        lines += [f"**{rec['model']}** (batch {out['settings']['batch']}), ms:", "",
                  "| config | median | p10 | p90 | x ORT best | paired x | clean/taken |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for r in rows:
            noisy = " NOISY" if r["noisy"] else ""
            lines.append(f"| {r['config']} | {r['median']:.2f} | {r['p10']:.2f} | {r['p90']:.2f} | "
                         f"{r.get('vs_ort_best', float('nan')):.2f} | "
                         f"{r.get('vs_ort_best_paired', float('nan')):.2f} | "
                         f"{r['clean_rounds']}/{r['clean_rounds'] + r['busy_measurements']}{noisy} |")
        if rec.get("plans", {}).get("braid run (default)"):
            lines += ["", f"`braid run` (default): {rec['plans']['braid run (default)']}"]
        if rec.get("auto"):
            a = rec["auto"]
            lines += ["", f"`braid run` (default) ran auto's pick **{a['winner']}**: in auto's own "
                          f"interleaved rounds {a['speedup_over_intra']:.2f}x over the best "
                          f"intra-operator run ({a['best_intra']}), "
                          f"{a['speedup_over_sequential']:.2f}x over sequential."]
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", help="zoo names (exported with braid export) or .onnx paths")
    ap.add_argument("--braid", default=str(REPO / "build" / "braid"), help="the braid CLI")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20, help="timed iterations per config per round")
    ap.add_argument("--warmup", type=int, default=3, help="untimed iterations before each measurement")
    ap.add_argument("--batch", type=int, default=1, help="batch of exported zoo models")
    ap.add_argument("--spin", choices=sorted(SPIN_POLICIES), default="on",
                    help="spinning policy, the same for both engines (README: Hygiene)")
    ap.add_argument("--busy-threshold", type=float, default=0.10,
                    help="cores other processes may use during a measurement before it is busy")
    ap.add_argument("--retries", type=int, default=2, help="re-takes of a busy measurement")
    ap.add_argument("--retry-wait", type=float, default=1.0, help="seconds before a re-take")
    ap.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                    help="before each measurement, wait up to this long for a quiet machine")
    ap.add_argument("--braid-config", action="append", default=[], metavar="ALGO:STREAMS:THREADS",
                    help="an extra braid config (repeatable), e.g. greedy:2:1")
    ap.add_argument("--only", default="", help="keep configs whose name contains this text")
    ap.add_argument("--skip", action="append", default=[], metavar="TEXT",
                    help="drop configs whose name contains this text (repeatable)")
    ap.add_argument("--cpus", default="0,1", help="CPUs to pin the whole run to (taskset -c)")
    ap.add_argument("--no-pin", action="store_true")
    ap.add_argument("--braid-runs", choices=["python", "process"], default="python",
                    help="python: braid's sessions live in this process beside ORT's and run() is "
                         "timed from Python for both (default); process: each measurement is a "
                         "`braid run` child timing its own C++ loop")
    ap.add_argument("--gap-ms", type=float, default=20.0,
                    help="pause after each measurement (each run with --interleave), so "
                         "spinning threads go idle")
    ap.add_argument("--interleave", action="store_true",
                    help="with --braid-runs python: alternate the configs run by run within a "
                         "round instead of running each config's iterations in a block")
    ap.add_argument("--no-parallel-check", action="store_true", help="skip the ORT_PARALLEL profile")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/braid-peers"))
    ap.add_argument("--json", type=Path, help="write everything here")
    ap.add_argument("--markdown", type=Path, help="write the tables as Markdown here")
    ap.add_argument("--from-json", type=Path, help="only print the tables of an earlier --json")
    args = ap.parse_args()
    if args.from_json:
        out = json.loads(args.from_json.read_text())
        for record in out["models"]:
            print_table(record)
        if args.markdown:
            args.markdown.write_text(markdown(out))
        return 0
    if not args.models:
        ap.error("name at least one model (or --from-json FILE)")
    if args.interleave and args.braid_runs != "python":
        ap.error("--interleave alternates sessions of this process: it needs --braid-runs python")

    if not args.no_pin:
        pin_self(args.cpus)
    try:
        import onnxruntime as ort
    except ImportError:
        sys.exit("onnxruntime is missing: run with the project's venv (.venv/bin/python bench/peers.py)")
    args.braid = str(Path(args.braid).resolve())
    if not Path(args.braid).exists():
        sys.exit(f"{args.braid} does not exist: build it (ninja -C build braid_cli) or pass --braid")
    args.workdir.mkdir(parents=True, exist_ok=True)
    cpus = sorted(os.sched_getaffinity(0))
    configs = list(BRAID_CONFIGS)
    for spec in args.braid_config:
        algo, s, t = spec.split(":")
        configs.append(BraidConfig(algo, int(s), int(t)))
    configs += ORT_CONFIGS
    if args.only:
        configs = [c for c in configs if args.only in c.name]
    for text in args.skip:
        configs = [c for c in configs if text not in c.name]
    env = braid_env(args.spin)
    args.braid_module = None
    if args.braid_runs == "python":
        # libgomp reads its spinning policy when it loads, with the module.
        for k in BRAID_ENV_DROP + SPIN_POLICIES[args.spin]["braid_unset"]:
            os.environ.pop(k, None)
        os.environ.update(SPIN_POLICIES[args.spin]["braid_env"])
        args.braid_module = import_braid(args.braid)

    out = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "argv": sys.argv, "versions": versions(args.braid, ort),
        "settings": {"rounds": args.rounds, "iters": args.iters, "warmup": args.warmup,
                     "batch": args.batch, "busy_threshold_cores": args.busy_threshold,
                     "retries": args.retries, "wait_quiet_s": args.wait_quiet,
                     "pinned_cpus": cpus, "braid_runs": args.braid_runs,
                     "gap_ms": args.gap_ms, "interleave": args.interleave},
        "spin_policy": {"name": args.spin, **SPIN_POLICIES[args.spin],
                        "braid_env_dropped": BRAID_ENV_DROP},
        "configs": [{"name": c.name, **c.describe()} for c in configs],
        "loadavg_start": read_loadavg(),
    }
    print(f"pinned to CPUs {cpus}; spin policy '{args.spin}'; loadavg {out['loadavg_start']}")
    out["python_overhead"] = python_overhead_us(ort, args.workdir, args.spin)
    print(f"ORT session.run() of a 1-element Relu from Python: "
          f"{out['python_overhead']['session_run_relu1_us']} us (median)")
    out["models"] = [bench_model(m, args, ort, cpus, env, configs) for m in args.models]
    out["loadavg_end"] = read_loadavg()
    for record in out["models"]:
        print_table(record)
    busy = sum(r["busy_measurements"] for rec in out["models"] for r in rec["summary"])
    print(f"\nloadavg start {out['loadavg_start']} / end {out['loadavg_end']}; "
          f"busy measurements excluded: {busy}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
        print(f"wrote {args.json}")
    if args.markdown:
        args.markdown.write_text(markdown(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
