"""TOP's policies over offered load as a fraction of the device's measured capacity (issue 30).

    .venv/bin/python bench/top_sweep.py --scenario docs/top/multi_a100.json \\
        --policies static,sync,top-heuristic,learned:DIR --loads 0.5,0.8,1.0,1.2,1.5 \\
        --json sweep.json --markdown sweep.md

Capacity: the highest total throughput the capacity policy (default `static`: every model's own
schedule, tasks launched on arrival, instances pipelined block by block) reaches when the
scenario's mix is offered at each of --overload's multiples of its rates (default 1.5, 2, 3, 5),
over --duration seconds: the most it serves, since past some load it serves less (more instances
in flight share the device less well). Load L then offers the same mix at L × capacity in total. One `braid top` run per load, every policy side by side on the
same arrivals; throughput, p99 (the worst model's), utilization and final queue variance per
policy and load.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run_top(braid: str, scenario: dict, policies: list[str], seed: int) -> list[dict]:
    with tempfile.TemporaryDirectory() as d:
        path = pathlib.Path(d) / "scenario.json"
        path.write_text(json.dumps(scenario))
        out = pathlib.Path(d) / "r.json"
        r = subprocess.run([braid, "top", "--scenario", str(path), "--policy", ",".join(policies),
                            "--seed", str(seed), "--json", str(out)], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"top_sweep: braid top failed ({r.returncode}): {r.stderr.strip()}")
        return json.loads(out.read_text())["runs"]


def scaled(scenario: dict, factor: float) -> dict:
    s = json.loads(json.dumps(scenario))
    for m in s["models"]:
        m["fps"] = m["fps"] * factor
    return s


def summary(run: dict) -> dict:
    return {"policy": run["policy"], "throughput_fps": run["throughput_fps"],
            "p99_ms": max(m["latency_ms"]["p99"] for m in run["models"]),
            "utilization": run["utilization"], "final_variance": run["final_variance"],
            "completed": [m["completed"] for m in run["models"]], "wall_s": run.get("wall_s")}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenario", required=True)
    p.add_argument("--braid", default=str(ROOT / "build" / "braid"))
    p.add_argument("--policies", default="static,static-serial,sync,top-heuristic")
    p.add_argument("--loads", default="0.5,0.8,1.0,1.2,1.5")
    p.add_argument("--capacity-policy", default="static")
    p.add_argument("--overload", default="1.5,2,3,5",
                   help="multiples of the scenario's rates the capacity policy is offered")
    p.add_argument("--duration", type=float, help="seconds of arrivals (default: the scenario's)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json")
    p.add_argument("--markdown")
    args = p.parse_args()
    scenario = json.loads(pathlib.Path(args.scenario).read_text())
    if args.duration:
        scenario["duration_s"] = args.duration
    policies = [x for x in args.policies.split(",") if x]
    base = sum(m["fps"] for m in scenario["models"])

    started = time.monotonic()
    ramp = []
    for factor in (float(x) for x in args.overload.split(",") if x):
        run = run_top(args.braid, scaled(scenario, factor), [args.capacity_policy], args.seed)[0]
        ramp.append({"factor": factor, "offered_fps": base * factor,
                     "throughput_fps": run["throughput_fps"]})
        print(f"capacity: {args.capacity_policy} at {factor}x the mix ({base * factor:.0f} FPS "
              f"offered): {run['throughput_fps']:.1f} FPS ({time.monotonic() - started:.0f} s)",
              file=sys.stderr)
    capacity = max(r["throughput_fps"] for r in ramp)
    rows = []
    for load in (float(x) for x in args.loads.split(",") if x):
        t = time.monotonic()
        factor = load * capacity / base
        runs = run_top(args.braid, scaled(scenario, factor), policies, args.seed)
        for run in runs:
            rows.append({"load": load, "offered_fps": base * factor, **summary(run)})
        print(f"load {load}: {time.monotonic() - t:.0f} s", file=sys.stderr)
    result = {"scenario": args.scenario, "device": scenario.get("device"), "capacity_fps": capacity,
              "capacity_policy": args.capacity_policy, "capacity_ramp": ramp,
              "duration_s": scenario.get("duration_s"), "seed": args.seed, "rows": rows}
    ramp_text = ", ".join(f"{r['throughput_fps']:.1f} at {r['factor']}x" for r in ramp)
    lines = [f"Capacity: {capacity:.1f} FPS, the most {args.capacity_policy} served offered the mix at "
             f"several rates ({ramp_text})\n",
             "| load | offered FPS | policy | FPS | x static | p99 ms | utilization | final σ² |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        static = next((x["throughput_fps"] for x in rows
                       if x["load"] == r["load"] and x["policy"] == "static"), None)
        ratio = f"{r['throughput_fps'] / static:.2f}" if static else ""
        lines.append(f"| {r['load']} | {r['offered_fps']:.0f} | {r['policy']} | {r['throughput_fps']:.1f} | "
                     f"{ratio} | {r['p99_ms']:.1f} | {100 * r['utilization']:.1f}% | {r['final_variance']:.1f} |")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        pathlib.Path(args.markdown).write_text(text + "\n")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
