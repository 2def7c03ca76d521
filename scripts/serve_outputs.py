#!/usr/bin/env python3
"""One inference per served model, and a comparison of two servers' answers (scripts/gpu_check.sh
serve: `braid serve --device cuda:0` against `braid serve --device cpu` on the same request).

    serve_outputs.py ask HOST:PORT MODEL[,MODEL...] OUT.json   # the outputs, as JSON
    serve_outputs.py compare REFERENCE.json GOT.json [--atol A] [--rtol R]

`ask` sends every input of each model as JSON data, values sin(0.37 i) (any model, any FP
datatype the metadata names: the server rounds them to FP16/BF16), and writes each output's
datatype, shape and values. `compare` passes when every output of every model has the same shape
and |got - ref| <= atol * max|ref| + rtol * |ref| element-wise; it prints a line per output
(worst error as a fraction of the output's scale) and exits 1 on a mismatch, 2 on bad input.
The Python standard library only: the GPU machine has no tritonclient.
"""
import json
import math
import sys
import urllib.request


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def ask(address, models, path):
    answers = {}
    for model in models.split(","):
        with urllib.request.urlopen(f"http://{address}/v2/models/{model}", timeout=60) as r:
            meta = json.loads(r.read())
        inputs = []
        for t in meta["inputs"]:
            shape = [d if d > 0 else 1 for d in t["shape"]]
            n = math.prod(shape)
            if t["datatype"] in ("FP32", "FP16", "BF16", "FP64"):
                data = [math.sin(0.37 * i) for i in range(n)]
            elif t["datatype"] == "BOOL":
                data = [i % 2 == 0 for i in range(n)]
            else:
                data = [i % 7 for i in range(n)]
            inputs.append({"name": t["name"], "datatype": t["datatype"], "shape": shape, "data": data})
        res = post(f"http://{address}/v2/models/{model}/infer", {"inputs": inputs})
        answers[model] = {o["name"]: {"datatype": o["datatype"], "shape": o["shape"],
                                      "data": o["data"]} for o in res["outputs"]}
    with open(path, "w") as f:
        json.dump(answers, f)
    print(f"{path}: {', '.join(f'{m} ({len(o)} outputs)' for m, o in answers.items())}")
    return 0


def compare(ref_path, got_path, atol, rtol):
    with open(ref_path) as f:
        ref = json.load(f)
    with open(got_path) as f:
        got = json.load(f)
    bad = 0
    for model, outputs in ref.items():
        for name, r in outputs.items():
            g = got.get(model, {}).get(name)
            if g is None or g["shape"] != r["shape"] or len(g["data"]) != len(r["data"]):
                print(f"MISMATCH {model} {name}: missing or shape {g and g['shape']} != {r['shape']}")
                bad += 1
                continue
            a = [float("nan") if v is None else v for v in g["data"]]
            b = [float("nan") if v is None else v for v in r["data"]]
            scale = max((abs(v) for v in b if math.isfinite(v)), default=0.0)
            worst = 0.0
            ok = True
            for x, y in zip(a, b):
                if not (math.isfinite(x) and math.isfinite(y)):
                    ok = ok and (math.isnan(x) and math.isnan(y) or x == y)
                    continue
                err = abs(x - y)
                worst = max(worst, err)
                ok = ok and err <= atol * scale + rtol * abs(y)
            rel = worst / scale if scale > 0 else worst
            print(f"{'ok      ' if ok else 'MISMATCH'} {model} {name} {g['datatype']} "
                  f"{r['shape']}: worst {rel:.2e} of the scale {scale:.3g}")
            bad += not ok
    return 1 if bad else 0


def main(argv):
    try:
        if len(argv) == 4 and argv[0] == "ask":
            return ask(argv[1], argv[2], argv[3])
        if len(argv) >= 3 and argv[0] == "compare":
            atol, rtol = 1e-3, 1e-3
            rest = argv[3:]
            while rest:
                flag, value = rest[0], float(rest[1])
                if flag == "--atol":
                    atol = value
                elif flag == "--rtol":
                    rtol = value
                else:
                    raise ValueError(f"unknown flag {flag}")
                rest = rest[2:]
            return compare(argv[1], argv[2], atol, rtol)
    except (OSError, ValueError, KeyError, IndexError) as e:
        print(f"serve_outputs.py: {e}", file=sys.stderr)
        return 2
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
