"""Summarizes compare.sh's raw.csv (round,lib,threads,class,case,us,impl) as Markdown tables.

Medians over rounds per (library, threads, case); per op class the geometric mean of the ratios
to Debian's 2.6 at the same thread count (< 1: faster than Debian) and of the 1->2-thread
speedup (t1 / t2, 2.0 is perfect); the round-to-round spread says how noisy the machine was.
"""
import csv
import math
import os
import statistics
import sys
from collections import defaultdict

LIBS = ["debian", "gomp", "pypi"]
# median (default): each process's median step time; min: its fastest sample (less sensitive
# to other processes taking the CPUs). Either way, the median over rounds.
STAT = os.environ.get("STAT", "median")


def geomean(xs):
    xs = [x for x in xs if x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main(path):
    samples = defaultdict(list)  # (lib, threads, cls, case) -> [us]
    impl = {}
    version = {}
    for row in csv.reader(open(path)):
        if len(row) < 7:
            continue
        _, ver, threads, cls, case, us = row[:6]
        if STAT == "min" and len(row) > 7:
            us = row[7]
        lib = "debian" if ver.startswith("2.") else "gomp" if ver.startswith("3.2.") else "pypi"
        version[lib] = ver
        key = (lib, int(threads), cls, case)
        samples[key].append(float(us))
        impl[(lib, cls, case)] = row[6]
    med = {k: statistics.median(v) for k, v in samples.items()}
    spread = [(max(v) - min(v)) / statistics.median(v) for v in samples.values() if len(v) > 1]
    libs = [l for l in LIBS if l in version]
    cases = sorted({(k[2], k[3]) for k in med}, key=lambda c: (c[0], c[1]))
    classes = list(dict.fromkeys(c for c, _ in cases))

    print(f"statistic: {STAT} per process, median over rounds")
    print("libraries: " + ", ".join(f"{l} = oneDNN {version[l]}" for l in libs))
    if spread:
        print(f"round-to-round spread (max-min)/median: median {statistics.median(spread):.0%}, "
              f"max {max(spread):.0%} over {len(spread)} (lib, threads, case) cells\n")

    print("### Per op class (geometric means over the class's cases)\n")
    hdr = ["class", "cases"]
    for t in (1, 2):
        hdr += [f"{l} {t}t / debian {t}t" for l in libs if l != "debian"]
    hdr += [f"{l} 1t/2t" for l in libs]
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    for cls in classes:
        cc = [c for c in cases if c[0] == cls]
        row = [cls, str(len(cc))]
        for t in (1, 2):
            for l in libs:
                if l == "debian":
                    continue
                r = [med[(l, t) + c] / med[("debian", t) + c] for c in cc
                     if (l, t) + c in med and ("debian", t) + c in med]
                row.append(f"{geomean(r):.2f}")
        for l in libs:
            s = [med[(l, 1) + c] / med[(l, 2) + c] for c in cc if (l, 1) + c in med and (l, 2) + c in med]
            row.append(f"{geomean(s):.2f}")
        print("| " + " | ".join(row) + " |")

    print("\n### Per case: median microseconds (1 thread | 2 threads), 1->2 speedup, implementation\n")
    hdr = ["class", "case"] + [f"{l} 1t" for l in libs] + [f"{l} 2t" for l in libs] + \
          [f"{l} 1t/2t" for l in libs] + [f"{l} impl" for l in libs]
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    for c in cases:
        row = list(c)
        for t in (1, 2):
            row += [f"{med[(l, t) + c]:.0f}" if (l, t) + c in med else "-" for l in libs]
        row += [f"{med[(l, 1) + c] / med[(l, 2) + c]:.2f}" if (l, 1) + c in med and (l, 2) + c in med
                else "-" for l in libs]
        row += [impl.get((l,) + c, "-") for l in libs]
        print("| " + " | ".join(row) + " |")

    res = sorted({c[1] for c in cases if c[0] == "res_separate"})
    if res:
        print("\n### Residual Add: fused sum / binary post-op over conv then a separate Add-Relu "
              "(ratio of medians; < 1: fusing is faster)\n")
        hdr = ["shape"] + [f"{l} {t}t sum / sep" for t in (1, 2) for l in libs] + \
              [f"{l} {t}t binary / sep" for t in (1, 2) for l in libs]
        print("| " + " | ".join(hdr) + " |")
        print("|" + "---|" * len(hdr))
        for name in res:
            row = [name]
            for kind in ("res_sum", "res_binary"):
                for t in (1, 2):
                    for l in libs:
                        a, b = (l, t, kind, name), (l, t, "res_separate", name)
                        row.append(f"{med[a] / med[b]:.2f}" if a in med and b in med else "-")
            print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
