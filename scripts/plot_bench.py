#!/usr/bin/env python3
"""Bar chart of a `braid bench --csv` file: per model, each algorithm's speed-up over sequential,
measured (solid) where the schedules were run, predicted (hatched) otherwise.

    .venv/bin/python scripts/plot_bench.py bench.csv bench.png
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(csv_path: str, png_path: str) -> None:
    with open(csv_path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if not r["error"]]
    if not rows:
        sys.exit(f"{csv_path}: no rows without errors")
    models = list(dict.fromkeys(r["model"] for r in rows))
    algos = list(dict.fromkeys(r["algorithm"] for r in rows))
    width = 0.8 / len(algos)
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(models) * max(1, len(algos) / 3)), 4))
    for i, algo in enumerate(algos):
        xs, ys, hatches = [], [], []
        for m, model in enumerate(models):
            row = next((r for r in rows if r["model"] == model and r["algorithm"] == algo), None)
            if row is None:
                continue
            measured = row["measured_speedup"] != ""
            xs.append(m + (i - (len(algos) - 1) / 2) * width)
            ys.append(float(row["measured_speedup"] if measured else row["predicted_speedup"]))
            hatches.append("" if measured else "//")
        bars = ax.bar(xs, ys, width, label=algo)
        for bar, hatch in zip(bars, hatches):
            bar.set_hatch(hatch)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(models)))
    ax.set_xticklabels(models)
    ax.set_ylabel("speed-up over sequential")
    ax.set_title("braid bench (solid: measured on CPU; hatched: predicted)")
    ax.legend(fontsize="small", ncol=min(4, len(algos)))
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot_bench.py BENCH.csv OUT.png")
    main(sys.argv[1], sys.argv[2])
