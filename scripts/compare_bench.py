#!/usr/bin/env python3
"""Two `braid bench --json-file` results side by side: each model's rows (auto under its plain
name, whatever it chose) with both medians and the ratio before/after, as markdown.

    python3 scripts/compare_bench.py devices/measured/h100_2026-11-27/bench_fp16.json \\
        OUT/bench_fp16.json --labels 2026-11-27 today

What gpu_check.sh's precision part prints after its bench steps, so that one lease shows what the
executor's changes since the stored run did (the same GPU model, another day and machine: a
difference under a few percent is within what two leases differ by). Rows in one file only are
listed with a dash. Exit 2 on a file that is not a bench result.
"""
from __future__ import annotations

import argparse
import json
import sys


def load(path: str) -> dict[tuple[str, str], float]:
    try:
        with open(path) as f:
            rows = json.load(f)
        out = {}
        for r in rows:
            if "measured_ms" not in r:  # a failed row (its error) or an unmeasured one
                continue
            algo = "auto" if r["algorithm"].startswith("auto") else r["algorithm"]
            out[(r["model"], algo)] = float(r["measured_ms"]["median"])
        return out
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"compare_bench: {path}: not a braid bench result ({e})", file=sys.stderr)
        sys.exit(2)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--labels", nargs=2, default=["before", "after"], metavar=("BEFORE", "AFTER"))
    args = ap.parse_args()
    before, after = load(args.before), load(args.after)
    b, a = args.labels
    print(f"| model | algorithm | {b} ms | {a} ms | {b}/{a} |")
    print("|---|---|---|---|---|")
    for key in sorted(set(before) | set(after)):
        x, y = before.get(key), after.get(key)
        fmt = lambda v: f"{v:.3f}" if v is not None else "-"
        ratio = f"{x / y:.2f}x" if x and y else "-"
        print(f"| {key[0]} | {key[1]} | {fmt(x)} | {fmt(y)} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
