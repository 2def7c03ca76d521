"""IOS's reference optimizer against braid's `ios` DP under one shared cost (issue 31 item 2).

    PYTHONPATH=build/python .venv/bin/python bench/ios_reference.py \\
        --ios-repo /path/to/inter-operator-scheduler --cost sim:v100 roofline \\
        --models inception_v3 squeezenet randwire nasnet --markdown ios_reference.md

IOS's own cost is a measurement on its GPU; here both optimizers are priced by one deterministic
function instead, braid's cost model (braid.StagePricer): IOS's `ios.optimizer.optimize` (from the
checkout given, not copied into braid) runs with a CostModel whose get_stage_latency prices each
stage through it, memoized; braid's `ios` runs as `braid schedule --algo ios` does. Both use
r=3, s=8 and parts of at most 50 units (IOS's experiments/latency/main.py passes 50; braid's
default). Each schedule is then priced by the same function (braid's predicted latency of the
schedule as braid.schedule/1 JSON), so the ratio compares the optimizers, not two costs.

IOS's graphs are built by its own model functions with their defaults (inception_v3(),
squeezenet(), randwire_large(), nasnet_large()): the constructors braid's zoo reproduces
(src/models/zoo_ios_test.cc). IOS names its nodes by number, so a node is matched to the braid
unit at the same position (IOS's blocks in order, each block's inner nodes then its exit; braid's
units in unit order), and the match is checked: the same op kind and the same predecessors for
every pair, and the same number of nodes. A mismatch is printed and the model stopped.

Two of IOS's module functions are wrapped in this process (its files are not changed):
`construct`, to record each block's stage list with the block's node numbering (the optimized
graph renames merged convolutions, so its stages no longer say which nodes they hold), and
`latency`, only for a merge stage of several convolutions, which IOS prices as a new wider Conv
node that braid has no unit for: that stage is priced by braid's merge_latency of its units
instead. NASNet and RandWire have no mergeable convolutions (peers.md §1).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import time
import types

ROOT = pathlib.Path(__file__).resolve().parents[1]
IOS_MODELS = {"inception_v3": "inception_v3", "squeezenet": "squeezenet",
              "randwire": "randwire_large", "nasnet": "nasnet_large"}
# braid's variant for each IOS opt_type: both search concurrent stages; dp_parallel_merge also
# merges convolutions.
BRAID_ALGO = {"dp_parallel": "ios-parallel", "dp_parallel_merge": "ios"}
R, S, PART = 3, 8, 50


def import_ios(repo: pathlib.Path):
    """IOS's python package from its checkout. tqdm (its progress bar) and pydot (its
    visualizer) are only imported, never used here: stubbed when absent."""
    sys.path.insert(0, str(repo / "python"))
    for name in ("tqdm", "pydot"):
        try:
            __import__(name)
        except ImportError:
            stub = types.ModuleType(name)
            stub.tqdm = None
            sys.modules[name] = stub
    import ios
    import ios.models
    import ios.optimizer
    return ios


# --- matching IOS's nodes to braid's units -------------------------------------------------

def ios_nodes(graph):
    """Every schedulable node in IOS's order, and the graph's input placeholder."""
    nodes = []
    for block in graph.blocks:
        nodes.extend(block.inner_nodes + [block.exit_node])
    return nodes, graph.enter_node


def ios_kind(node, ir) -> list[str]:
    """The ops of an IOS node, in braid's op names."""
    if isinstance(node, ir.Conv):
        return ["Conv"]
    if isinstance(node, ir.Pool):
        return [{"max": "MaxPool", "avg": "AveragePool", "global_avg": "GlobalAveragePool",
                 "global_max": "GlobalMaxPool"}[node.pool_type]]
    if isinstance(node, ir.Sequential):
        return [op for n in node.nodes for op in ios_kind(n, ir)]
    if isinstance(node, ir.Identity):
        return ["Concat" if len(node.inputs) > 1 else "Sum"]
    if isinstance(node, (ir.Relu, ir.Activation)):
        return ["Relu"]
    return [type(node).__name__]


def comparable(ops: list[str]) -> str:
    """Ops as both graphs can be compared: a Relu is a Conv's activation in IOS and an op of
    its own in braid, and braid's leading Sums are an IOS node's summed input terms."""
    while len(ops) > 1 and ops[0] == "Sum":
        ops = ops[1:]
    rest = [op for op in ops if op != "Relu"]
    return "-".join(rest or ops)


def match(graph, pricer, ir) -> tuple[dict, list[str]]:
    """IOS node -> braid unit name, by position; the mismatches found (empty when they agree)."""
    nodes, enter = ios_nodes(graph)
    units = pricer.units
    problems = []
    if len(nodes) != len(units):
        return {}, [f"IOS has {len(nodes)} nodes, braid {len(units)} units"]
    to_unit = {node: units[i][0] for i, node in enumerate(nodes)}
    preds = {name: set() for name, _, _ in units}
    for name, _, successors in units:
        for s in successors:
            preds[s].add(name)
    for node, (name, signature, _) in zip(nodes, units):
        ops = ios_kind(node, ir)
        if comparable(ops) != comparable(signature.split("-")):
            problems.append(f"{node.name} ({'-'.join(ops)}) vs {name} ({signature})")
        ios_preds = {to_unit[v.node] for term in node.inputs for v in term if v.node is not enter}
        if ios_preds != preds[name]:
            problems.append(f"{node.name} -> {name}: predecessors {sorted(ios_preds)} vs "
                            f"{sorted(preds[name])}")
    return to_unit, problems


# --- IOS's optimizer under braid's cost -----------------------------------------------------

class PricedStages:
    """IOS's CostModel: every stage priced by braid's cost model, memoized (ms, as IOS's own
    measurements are)."""

    def __init__(self, pricer, to_unit):
        self.pricer, self.to_unit = pricer, to_unit
        self.memo: dict = {}
        self.queries = 0

    def price(self, groups: list[list[str]], merge: bool) -> float:
        key = (tuple(tuple(g) for g in groups), merge)
        if key not in self.memo:
            self.queries += 1
            self.memo[key] = self.pricer.stage_latencies([(groups, merge)])[0] / 1e3
        return self.memo[key]

    def get_stage_latency(self, stage, batch_size, warmup, number, repeat, profile_stage=False):
        return [self.price([[self.to_unit[n] for n in seq] for seq in stage], False)]


def run_ios(ios, graph, pricer, to_unit, opt_type: str):
    """IOS's optimize() under braid's cost: (stages as (groups of unit names, merge), search
    seconds, IOS's DP optimum in ms, states, transitions, stage queries)."""
    opt = ios.optimizer
    cost = PricedStages(pricer, to_unit)
    recorded = []
    original_construct, original_latency = opt.construct, opt.latency

    def construct(stage_list, block, constructed_blocks, graph_enter, idn, nid, compute_weight):
        for seqs, qtype in stage_list:
            recorded.append(([[to_unit[idn[i]] for i in seq] for seq in seqs],
                             qtype == "merge" and len(seqs) > 1))
        return original_construct(stage_list, block, constructed_blocks, graph_enter, idn, nid,
                                  compute_weight)

    def latency(stage, block, merge_latency, parallel_latency, cost_model, idn, nid, *args):
        seqs, qtype = stage
        if qtype != "merge" or len(seqs) == 1:
            return original_latency(stage, block, merge_latency, parallel_latency, cost_model,
                                    idn, nid, *args)
        ss = sum(1 << u for seq in seqs for u in seq)
        if ss not in merge_latency:
            merge_latency[ss] = cost.price([[to_unit[idn[u]]] for seq in seqs for u in seq], True)
        return merge_latency[ss]

    info: dict = {}
    opt.construct, opt.latency = construct, latency
    try:
        begin = time.perf_counter()
        opt.optimize(graph, batch_size=1, cost_model=cost, opt_type=opt_type, warmup=1, number=1,
                     repeat=1, max_num_groups=S, max_part_size=PART, max_group_size=R,
                     compute_weight=False, debug_dp_info=info)
        seconds = time.perf_counter() - begin
    finally:
        opt.construct, opt.latency = original_construct, original_latency
    dp_ms = sum(cost.price(groups, merge) for groups, merge in recorded)
    return (recorded, seconds, dp_ms, sum(info["#states"]), sum(info["#transitions"]),
            cost.queries)


def as_schedule(model: str, stages, num_units: int) -> dict:
    return {"format": "braid.schedule/1", "model": model, "algorithm": "ios-reference",
            "devices": 1, "num_units": num_units,
            "stages": [{"device": 0, "kind": "merge" if merge else "concurrent", "groups": groups}
                       for groups, merge in stages]}


def in_unit_order(stages, order: dict) -> list:
    """The same stages with each stage's groups in unit-id order: the stream order braid's DP
    gives a stage (it prices a stage by its set of units). The sim cost is not indifferent to
    which group launches first."""
    return [(sorted(groups, key=lambda g: order[g[0]]), merge) for groups, merge in stages]


def run_braid(braid_bin: pathlib.Path, model: str, cost: str, algo: str) -> dict:
    out = subprocess.run([str(braid_bin), "-q", "schedule", model, "--algo", algo, "--cost", cost,
                          "-r", str(R), "-s", str(S), "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def table(rows) -> str:
    header = ("| model | cost | IOS opt_type / braid algo | IOS optimizer (ms) | braid (ms) | "
              "braid / IOS | IOS, groups in unit order (ms) | stages IOS / braid | states IOS / "
              "braid | transitions IOS / braid | search IOS / braid (s) |")
    lines = [header, "|" + "---|" * 11]
    for r in rows:
        reordered = r.get("ios_unit_order_ms")  # rows written before this column: not run
        reordered = "not run" if reordered is None else f"{reordered:.3f}"
        lines.append(
            f"| {r['model']} | {r['cost']} | {r['ios_opt_type']} / {r['braid_algo']} | "
            f"{r['ios_ms']:.3f} | {r['braid_ms']:.3f} | "
            f"{r['ratio']:.4f} | {reordered} | {r['ios_stages']} / {r['braid_stages']} | "
            f"{r['ios_states']:,} / {r['braid_states']:,} | "
            f"{r['ios_transitions']:,} / {r['braid_transitions']:,} | "
            f"{r['ios_search_s']:.1f} / {r['braid_search_s']:.2f} |")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ios-repo", type=pathlib.Path,
                   help="a checkout of mit-han-lab/inter-operator-scheduler")
    p.add_argument("--from-json", type=pathlib.Path, nargs="+",
                   help="only print the table of rows written by earlier --json runs")
    p.add_argument("--cost", nargs="+", default=["sim:v100"], help="braid cost models")
    p.add_argument("--models", nargs="+", default=list(IOS_MODELS), choices=list(IOS_MODELS))
    p.add_argument("--opt-type", nargs="+", default=["dp_parallel_merge"],
                   choices=list(BRAID_ALGO), help="IOS's optimization types")
    p.add_argument("--braid", type=pathlib.Path, default=ROOT / "build" / "braid")
    p.add_argument("--json", type=pathlib.Path, help="write the rows here")
    p.add_argument("--markdown", type=pathlib.Path, help="write the table here")
    p.add_argument("--schedules", type=pathlib.Path,
                   help="write both schedules here (MODEL.COST.{ios-reference,braid}.json)")
    args = p.parse_args()
    if args.from_json:
        rows = [r for f in args.from_json for r in json.loads(f.read_text())]
        print(table(rows))
        return 0
    if args.ios_repo is None:
        p.error("--ios-repo is required")

    import braid
    ios = import_ios(args.ios_repo)
    rows = []
    for model in args.models:
        graph = getattr(ios.models, IOS_MODELS[model])()
        for cost in args.cost:
            pricer = braid.StagePricer(model, cost=cost)
            to_unit, problems = match(graph, pricer, ios.ir)
            if problems:
                print(f"{model}: IOS's graph and braid's differ:", *problems[:20], sep="\n  ")
                return 1
            for opt_type in args.opt_type:
                algo = BRAID_ALGO[opt_type]
                stages, seconds, dp_ms, states, transitions, queries = run_ios(
                    ios, graph, pricer, to_unit, opt_type)
                ios_schedule = as_schedule(model, stages, len(to_unit))
                ios_ms = pricer.schedule_latency(ios_schedule) / 1e3
                order = {name: i for i, (name, _, _) in enumerate(pricer.units)}
                reordered = as_schedule(model, in_unit_order(stages, order), len(to_unit))
                ios_unit_order_ms = pricer.schedule_latency(reordered) / 1e3
                # The reference's own optimum and its schedule's price are one function apart.
                assert abs(ios_ms - dp_ms) <= 1e-6 * dp_ms, (ios_ms, dp_ms)
                b = run_braid(args.braid, model, cost, algo)
                braid_ms = pricer.schedule_latency(b["schedule"]) / 1e3
                if args.schedules:
                    args.schedules.mkdir(parents=True, exist_ok=True)
                    stem = f"{model}.{cost.replace(':', '_')}"
                    for name, sched in (("ios-reference", ios_schedule), ("braid", b["schedule"])):
                        (args.schedules / f"{stem}.{name}.json").write_text(
                            json.dumps(sched, indent=1) + "\n")
                row = {"model": model, "cost": cost, "ios_opt_type": opt_type,
                       "braid_algo": algo, "ios_ms": ios_ms, "braid_ms": braid_ms,
                       "ratio": braid_ms / ios_ms, "ios_unit_order_ms": ios_unit_order_ms,
                       "ios_stages": len(stages),
                       "braid_stages": b["stages"], "ios_states": states,
                       "ios_transitions": transitions, "ios_stage_queries": queries,
                       "braid_states": b["states"], "braid_transitions": b["transitions"],
                       "braid_stage_queries": b["stage_queries"], "ios_search_s": seconds,
                       "braid_search_s": b["search_ms"] / 1e3}
                rows.append(row)
                print(json.dumps(row), flush=True)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    if args.markdown:
        args.markdown.write_text(table(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
