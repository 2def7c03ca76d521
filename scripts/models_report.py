#!/usr/bin/env python3
"""The table of docs/models.md: which exported models import, run and match ONNX Runtime.

  build/tests/e2e/exported_models_test --gtest_output=json:build/models.json
  .venv/bin/python scripts/models_report.py build/models.json [more.json ...] [--models models/] > table.md

Reads the test's JSON reports (one test per model; a model in several reports takes the last) and, for each model, its ONNX file: the status
(pass, import, run, mismatch, skipped), the first failure message, the largest error over the
output's scale and the worst element-wise ratio |a-b| / bound over the three schedules (<= 1 passes), and the ONNX op types that are not
in src/ir/op_kinds.inc (the ones braid neither runs nor drops at import), so one run lists every
op a model still needs, not only the first the importer met.
"""
import argparse
import collections
import json
import os
import re
import sys

import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMPORT_ONLY = {"Constant", "Dropout"}  # consumed by the importer, no braid op


def braid_ops():
    with open(os.path.join(ROOT, "src/ir/op_kinds.inc")) as f:
        return set(re.findall(r'BRAID_OP\(\w+,\s*"(\w+)"\)', f.read())) | IMPORT_ONLY


def missing_ops(path, known):
    model = onnx.load(path, load_external_data=False)
    counts = collections.Counter(n.op_type for n in model.graph.node if n.op_type not in known)
    return ", ".join(f"{op}" + (f" ×{c}" if c > 1 else "") for op, c in sorted(counts.items()))


def classify(test):
    failures = [f["failure"] for f in test.get("failures", [])]
    if test.get("result") == "SKIPPED" or (not failures and "skipped" in test.get("result", "").lower()):
        return "skipped", ""
    if not failures:
        return "pass", ""
    text = failures[0]
    lines = [l for l in text.splitlines() if l.strip() and not l.startswith(("../", "/")) and l.strip() != "Failed"]
    message = next((l for l in lines if l.startswith(("import:", "run under"))), lines[-1] if lines else text)
    if message.startswith("import:"):
        return "import", message[len("import: "):]
    if message.startswith("run under"):
        return "run", message
    mismatch = next((l for l in text.splitlines() if "outside |a-b|" in l), message)
    return "mismatch", mismatch.strip()


def skipped_reason(models_dir, name):
    path = os.path.join(models_dir, "skipped.txt")
    if not os.path.exists(path):
        return ""
    with open(path) as f:
        return next((l.split(": ", 1)[1].strip() for l in f if l.startswith(name + ": ")), "")


def largest(test, suffix):
    values = [float(v) for k, v in test.items() if k.endswith(suffix)]
    return f"{max(values):.2g}" if values else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reports", nargs="+")
    ap.add_argument("--models", default=os.path.join(ROOT, "models"))
    args = ap.parse_args()
    tests = {}
    for report in args.reports:
        with open(report) as f:
            for suite in json.load(f)["testsuites"]:
                for test in suite["testsuite"]:
                    if test["name"].startswith("ImportsRuns"):
                        tests[test["name"].split("/")[-1]] = test
    known = braid_ops()
    rows, counts = [], collections.Counter()
    for name, test in sorted(tests.items()):
        status, message = classify(test)
        path = os.path.join(args.models, name + ".onnx")
        ops = missing_ops(path, known) if os.path.exists(path) else ""
        if status == "skipped":
            message = skipped_reason(args.models, name) or "not exported (run make models)"
        counts[status] += 1
        message = message.replace("|", "\\|").replace(str(args.models).rstrip("/") + "/", "")
        rows.append(f"| {name} | {status} | {largest(test, '_max_relative_error')} | {largest(test, '_worst_ratio')} "
                    f"| {test.get('time', '')} | {ops} | {message} |")
    print("| model | result | max error / scale | worst ratio | time | ONNX ops not in braid's op list | first failure |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print()
    print(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) + f"; {sum(counts.values())} models")
    return 0


if __name__ == "__main__":
    sys.exit(main())
