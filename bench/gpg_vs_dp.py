"""GPG against IOS's DP inside combined blocks of 2..8 sub-blocks (top.txt Fig. 13; issue 30).

    PYTHONPATH=build/python .venv/bin/python bench/gpg_vs_dp.py --policy DIR \\
        --scenario docs/top/saturated_a100.json --sizes 2,3,4,5,6,8 --per-size 4 \\
        --dp-timeout 60 --json gpg_vs_dp.json --markdown gpg_vs_dp.md

For each size, --per-size combinations drawn from seeds no training run uses (braid.intra.evaluate's),
none that the policy trained on (its manifest lists them). On each: the DP (runtime::union_dp:
concurrent stages, r and s, no state limit) in a child process killed after --dp-timeout seconds,
and the trained GPG as braid's runtime runs it (no PyTorch; its schedule checked); both timed from
the combination to the stages, both priced by the scenario's stage cost; the zip of the
sub-blocks' own schedules beside them. The DP needs a union of at most 64 units.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def make_env(scenario: str, size: int, r: int, s: int):
    from braid import _braid
    return _braid.IntraEnv(scenario, size, size, r, s)


def _dp_child(scenario: str, size: int, r: int, s: int, combination, out) -> None:
    env = make_env(scenario, size, r, s)
    env.reset_to(combination)
    latency, seconds, states, _ = env.dp()
    out.put((latency, seconds, states))


def run_dp(scenario: str, size: int, r: int, s: int, combination, timeout: float):
    """(latency µs, seconds, states), or None when it did not finish within `timeout`."""
    out = multiprocessing.get_context("fork").Queue()
    child = multiprocessing.get_context("fork").Process(
        target=_dp_child, args=(scenario, size, r, s, combination, out))
    child.start()
    child.join(timeout + 30)  # + the child's own model loading
    if child.is_alive():
        child.kill()
        child.join()
        return None
    return out.get() if not out.empty() else None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--policy", required=True, help="a GPG directory (braid train gpg -o DIR)")
    p.add_argument("--scenario", default=str(ROOT / "docs/top/saturated_a100.json"))
    p.add_argument("--sizes", default="2,3,4,5,6,8")
    p.add_argument("--per-size", type=int, default=4)
    p.add_argument("--dp-timeout", type=float, default=60.0)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--json")
    p.add_argument("--markdown")
    args = p.parse_args()
    sys.path.insert(0, str(ROOT / "build" / "python"))
    from braid import intra

    manifest = json.loads((pathlib.Path(args.policy) / "policy.json").read_text())
    r, s = int(manifest["r"]), int(manifest["s"])
    trained = {tuple(map(tuple, c)) for c in manifest.get("training", {}).get("combinations", [])}
    scenario = pathlib.Path(args.scenario).read_text()
    rows = []
    for size in [int(v) for v in args.sizes.split(",")]:
        env = make_env(scenario, size, r, s)
        found, draw = 0, 0
        while found < args.per_size and draw < 1000:
            env.reset(intra.HELD_OUT_SEEDS + args.seed * 7919 + size * 1009 + draw)
            draw += 1
            combination = tuple(map(tuple, env.combination()))
            if combination in trained:
                continue
            found += 1
            units = env.offsets()[-1]
            gpg_us, gpg_s, stages = env.gpg(args.policy)
            row = {"sub_blocks": size, "units": units, "combination": [list(c) for c in combination],
                   "zip_us": env.zip_us(), "gpg_us": gpg_us, "gpg_s": gpg_s, "gpg_stages": len(stages),
                   "dp_us": None, "dp_s": None, "dp_states": None, "dp": "not run: > 64 units"}
            if units <= 64:
                started = time.monotonic()
                dp = run_dp(scenario, size, r, s, list(combination), args.dp_timeout)
                if dp is None:
                    row["dp"] = f"did not finish in {args.dp_timeout:.0f} s"
                    row["dp_s"] = time.monotonic() - started
                else:
                    row["dp_us"], row["dp_s"], row["dp_states"] = dp
                    row["dp"] = "finished"
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)

    lines = ["| sub-blocks | combinations | units (mean) | DP finished | DP time (median) | "
             "GPG time (median) | DP time / GPG time | GPG latency / DP latency | "
             "GPG latency / zip latency |", "|---|---|---|---|---|---|---|---|---|"]
    for size in sorted({row["sub_blocks"] for row in rows}):
        group = [row for row in rows if row["sub_blocks"] == size]
        done = [row for row in group if row["dp"] == "finished"]
        gpg_time = statistics.median(row["gpg_s"] for row in group)
        dp_time = statistics.median(row["dp_s"] for row in done) if done else None
        speed = statistics.median(row["dp_s"] / row["gpg_s"] for row in done) if done else None
        vs_dp = statistics.geometric_mean([row["gpg_us"] / row["dp_us"] for row in done]) if done else None
        vs_zip = statistics.geometric_mean([row["gpg_us"] / row["zip_us"] for row in group])
        lines.append(
            f"| {size} | {len(group)} | {statistics.mean(row['units'] for row in group):.0f} | "
            f"{len(done)}/{len(group)} | {f'{dp_time:.3f} s' if dp_time is not None else '—'} | "
            f"{gpg_time * 1e3:.1f} ms | {f'{speed:.0f}×' if speed else '—'} | "
            f"{f'{vs_dp:.3f}' if vs_dp else '—'} | {vs_zip:.3f} |")
    table = "\n".join(lines)
    print(table)
    if args.markdown:
        pathlib.Path(args.markdown).write_text(table + "\n")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"policy": args.policy, "r": r, "s": s,
                                                       "dp_timeout_s": args.dp_timeout,
                                                       "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
