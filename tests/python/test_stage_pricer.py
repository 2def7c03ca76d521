"""braid.StagePricer: stages named by unit names, priced by the cost model braid's schedulers use
(bench/ios_reference.py prices IOS's reference optimizer with it). A stage-form schedule on one
device takes the sum of its stages, so pricing a braid schedule's stages one by one must give
what `braid schedule` predicts for it."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("BRAID_BINARY_DIR", ROOT / "build"))
sys.path.insert(0, str(BUILD / "python"))
braid = pytest.importorskip("braid", reason="the braid module is not built (BRAID_BUILD_PYTHON)")
OPTIONS = {"image_size": 48}


def as_stages(schedule):
    return [(s["groups"], s["kind"] == "merge") for s in schedule["stages"]]


@pytest.mark.parametrize("cost,algo", [("roofline", "ios"), ("sim:v100", "ios"),
                                       ("sim:v100", "ios-merge")])
def test_stages_sum_to_the_schedules_predicted_latency(cost, algo):
    pricer = braid.StagePricer("squeezenet", cost=cost, options=OPTIONS)
    assert pricer.cost == cost
    schedule = braid.schedule("squeezenet", algo, cost=cost, options=OPTIONS)
    stages = pricer.stage_latencies(as_stages(schedule))
    assert len(stages) == len(schedule["stages"]) and min(stages) > 0
    assert sum(stages) == pytest.approx(pricer.schedule_latency(schedule), rel=1e-9)
    assert pricer.schedule_latency(schedule) == pytest.approx(schedule["predicted_ms"] * 1e3,
                                                              rel=1e-9)


def test_a_concurrent_stage_and_a_merge_are_priced_apart():
    pricer = braid.StagePricer("squeezenet", cost="sim:v100", options=OPTIONS)
    a, b = ["fire2/expand1x1"], ["fire2/expand3x3"]
    alone_a, alone_b, side_by_side, one_after_other = pricer.stage_latencies(
        [[a], [b], [a, b], [a + b]])
    # Side by side never beats the slower one alone; in one group they are sequential.
    assert side_by_side >= max(alone_a, alone_b)
    assert one_after_other == pytest.approx(alone_a + alone_b, rel=1e-9)
    # A bare list of groups is a concurrent stage, (groups, False) the same.
    assert pricer.stage_latencies([([a, b], False)]) == [side_by_side]


def test_units_are_the_models_units_with_their_successors():
    pricer = braid.StagePricer("squeezenet", cost="roofline", options=OPTIONS)
    inspect = json.loads(subprocess.run(
        [str(BUILD / "braid"), "inspect", "squeezenet", "--image-size", "48", "--units", "--json"],
        check=True, capture_output=True, text=True).stdout)
    want = [(u["name"], sorted(u["successors"])) for u in inspect["unit_list"]]
    assert [(name, sorted(succ)) for name, _, succ in pricer.units] == want
    assert dict((n, sig) for n, sig, _ in pricer.units)["fire2/add"] == "Sum"


def test_unknown_units_and_invalid_schedules_are_refused():
    pricer = braid.StagePricer("squeezenet", cost="roofline", options=OPTIONS)
    with pytest.raises(braid.NotFound, match="no_such_unit"):
        pricer.stage_latencies([[["conv1"], ["no_such_unit"]]])
    schedule = braid.schedule("squeezenet", "ios", cost="roofline", options=OPTIONS)
    schedule["stages"] = schedule["stages"][::-1]  # consumers before their producers
    with pytest.raises(braid.InvalidSchedule):
        pricer.schedule_latency(schedule)
