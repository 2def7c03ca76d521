#!/usr/bin/env python3
"""braid.InferenceSession.run against `braid run` on the same model and the same schedule, on
this CPU, interleaved: what a call through Python costs over the CLI's own loop.

    PYTHONPATH=build/python .venv/bin/python bench/python_bench.py squeezenet googlenet \
        --image-size 112 --rounds 5 --iters 50

For each model: a session is opened (scheduler greedy under the roofline cost: milliseconds);
its schedule is written to a file and `braid run --schedule FILE --json` times the same plan in
its own process. Each round times both (the order alternates from round to round); the table
gives each side's median over rounds of per-round medians, and their ratio. Issue 18's goal is
a ratio within 5%. Benchmarks measure; they do not assert.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("models", nargs="+")
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("--image-size", type=int, default=112)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--pin-threads", action="store_true",
                   help="pin the session's lanes, as braid run does by default")
    p.add_argument("--json", help="write the rows here")
    a = p.parse_args()
    sys.path.insert(0, str(pathlib.Path(a.build) / "python"))
    import numpy as np
    import braid

    rows = []
    for model in a.models:
        s = braid.InferenceSession(model, scheduler="greedy", cost="roofline",
                                   options={"image_size": a.image_size,
                                            "pin_threads": a.pin_threads})
        name = s.get_inputs()[0].name
        x = np.random.default_rng(1).uniform(-1, 1, s.get_inputs()[0].shape).astype(np.float32)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(s.schedule, f)
            schedule_file = f.name

        def python_side() -> float:
            for _ in range(a.warmup):
                s.run(None, {name: x})
            times = []
            for _ in range(a.iters):
                t = time.perf_counter()
                s.run(None, {name: x})
                times.append((time.perf_counter() - t) * 1e3)
            return statistics.median(times)

        def cli_side() -> float:
            out = subprocess.run(
                [str(pathlib.Path(a.build) / "braid"), "run", model, "--schedule", schedule_file,
                 "--image-size", str(a.image_size), "--iters", str(a.iters), "--warmup",
                 str(a.warmup), "--json"], check=True, capture_output=True, text=True).stdout
            return json.loads(out)["latency_ms"]["median"]

        py, cli = [], []
        for r in range(a.rounds):
            for side in ((python_side, py), (cli_side, cli))[:: 1 if r % 2 == 0 else -1]:
                side[1].append(side[0]())
        os.unlink(schedule_file)
        row = {"model": model, "image_size": a.image_size, "pin_threads": a.pin_threads,
               "python_ms": statistics.median(py),
               "cli_ms": statistics.median(cli)}
        row["ratio"] = row["python_ms"] / row["cli_ms"]
        rows.append(row)
        print(f"{model:16s} python {row['python_ms']:.3f} ms  braid run {row['cli_ms']:.3f} ms  "
              f"ratio {row['ratio']:.3f}", flush=True)
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
