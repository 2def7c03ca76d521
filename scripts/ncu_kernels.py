#!/usr/bin/env python3
"""Nsight Compute's kernel lists (`gpu_check.sh OUT kernels`) as devices/measured/h100_kernels.json
holds them, and the new lists beside the stored ones.

  python3 scripts/ncu_kernels.py convert OUT/kernels.*.txt -o kernels.json [--device NAME]
  python3 scripts/ncu_kernels.py compare devices/measured/h100_kernels.json kernels.json

`convert` reads what `ncu --csv --metrics ...` printed (one row per kernel and metric, after
whatever the profiled program printed) and writes, per model (the file name's middle part:
kernels.googlenet.txt -> googlenet; tv_* names keep their prefix), the kernels in launch order,
each with its name, grid, block and the metrics as ncu wrote them; a file without ncu's rows
is left out with a message (exit 1; 2 when no file had them). `compare` prints, per model
and kernel family (cuDNN/cuBLAS convolutions and GEMMs, braid's own kernels by name, copies),
how many kernels there were and their summed duration in each file: what a fusion removed shows
as a family that shrank. Only the standard library: it runs on the GPU machine as it is.
"""
import argparse
import csv
import io
import json
import re
import sys
from pathlib import Path

DURATION = "gpu__time_duration.sum"


def read_ncu_csv(text: str, source: str) -> list[dict]:
    """The kernels of one `ncu --csv` run, in ID order, metrics pivoted into each kernel."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise ValueError(f"{source}: no ncu CSV header (a line starting with \"ID\")")
    kernels: dict[str, dict] = {}
    reader = csv.DictReader(io.StringIO("\n".join(lines[start:])))
    for field in ("ID", "Kernel Name", "Metric Name", "Metric Value"):
        if field not in (reader.fieldnames or []):
            raise ValueError(f"{source}: the CSV has no column '{field}' ({reader.fieldnames})")
    for row in reader:
        if row.get("ID") is None or row.get("Metric Name") is None:
            continue  # a line the program printed between ncu's rows
        k = kernels.setdefault(row["ID"], {"kernel": row["Kernel Name"]})
        for column, key in (("Grid Size", "grid"), ("Block Size", "block")):
            if row.get(column):
                k[key] = row[column]
        k[row["Metric Name"]] = row["Metric Value"]
    return [kernels[i] for i in sorted(kernels, key=lambda i: int(i))]


def number(value: str) -> float:
    """ncu's numbers carry thousands separators ("19,040")."""
    return float(value.replace(",", ""))


def model_name(path: Path) -> str:
    return re.sub(r"\.(txt|csv)$", "", path.name.removeprefix("kernels."))


def family(kernel: str) -> str:
    """A kernel's family: braid's own by function name, the libraries' by what they compute."""
    m = re.search(r"braid::(?:[\w<>]+::)*?(\w+_kernel)\b", kernel)
    if m:
        return m.group(1)
    lower = kernel.lower()
    if "gemv" in lower:
        return "gemv (cuBLAS)"
    if "conv" in lower or "xmma_fprop" in lower or "implicit" in lower or "winograd" in lower:
        return "convolution (cuDNN)"
    if "gemm" in lower or "cutlass" in lower or "sm90_" in lower or "xmma" in lower:
        return "gemm (cuBLAS/cuDNN)"
    if "nchwtonhwc" in lower or "nhwctonchw" in lower or "transform" in lower:
        return "layout transform (cuDNN)"
    if "memcpy" in lower or "copy" in lower:
        return "copy"
    return re.sub(r"\(.*", "", kernel).strip()[:60] or "?"


def summarize(kernels: list[dict]) -> dict[str, tuple[int, float]]:
    out: dict[str, list] = {}
    for k in kernels:
        entry = out.setdefault(family(k["kernel"]), [0, 0.0])
        entry[0] += 1
        entry[1] += number(k.get(DURATION, "0")) / 1e3  # ns -> us
    return {f: (n, us) for f, (n, us) in out.items()}


def convert(args) -> int:
    models, failed = {}, 0
    for path in map(Path, args.files):  # a model whose run failed costs only its own entry
        try:
            models[model_name(path)] = read_ncu_csv(path.read_text(errors="replace"), str(path))
        except (OSError, ValueError) as e:
            print(f"ncu_kernels: {e}", file=sys.stderr)
            failed += 1
    if not models:
        return 2
    how = ("ncu --clock-control none --cache-control none --csv --metrics " + args.metrics +
           " on `braid run MODEL --device cuda:0 --algo sequential --cost sim:h100 --eager --iters"
           " 1 --warmup 0` (scripts/gpu_check.sh OUT kernels): every kernel in issue order, each"
           " replayed alone by the profiler (about 1-2 us of profiler time included per kernel)")
    doc = {"how": how, "device": args.device, "models": models}
    Path(args.output).write_text(json.dumps(doc, indent=1) + "\n")
    for name, kernels in models.items():
        total = sum(number(k.get(DURATION, "0")) for k in kernels) / 1e3
        print(f"{name}: {len(kernels)} kernels, {total:.1f} us")
    return 1 if failed else 0


def compare(args) -> int:
    try:
        old = json.loads(Path(args.before).read_text())["models"]
        new = json.loads(Path(args.after).read_text())["models"]
    except (OSError, ValueError, KeyError) as e:
        print(f"ncu_kernels: {e}", file=sys.stderr)
        return 2
    for name in [m for m in new if m in old] + [m for m in new if m not in old]:
        a, b = summarize(old.get(name, [])), summarize(new[name])
        ta, tb = sum(us for _, us in a.values()), sum(us for _, us in b.values())
        na, nb = sum(n for n, _ in a.values()), sum(n for n, _ in b.values())
        print(f"\n### {name}: {na} -> {nb} kernels, {ta:.1f} -> {tb:.1f} us\n")
        print("| family | kernels before | us before | kernels after | us after |")
        print("|---|---|---|---|---|")
        for f in sorted(set(a) | set(b), key=lambda f: -max(a.get(f, (0, 0))[1], b.get(f, (0, 0))[1])):
            (n0, u0), (n1, u1) = a.get(f, (0, 0.0)), b.get(f, (0, 0.0))
            print(f"| {f} | {n0} | {u0:.1f} | {n1} | {u1:.1f} |")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("convert", help="ncu CSV files -> one kernels JSON")
    c.add_argument("files", nargs="+")
    c.add_argument("-o", "--output", required=True)
    c.add_argument("--device", default="NVIDIA H100 80GB HBM3")
    c.add_argument("--metrics", default=f"{DURATION},launch__grid_size,launch__block_size,"
                   "launch__registers_per_thread,launch__shared_mem_per_block_static,"
                   "launch__shared_mem_per_block_dynamic")
    k = sub.add_parser("compare", help="per model and kernel family, before and after")
    k.add_argument("before")
    k.add_argument("after")
    args = p.parse_args()
    return convert(args) if args.command == "convert" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
