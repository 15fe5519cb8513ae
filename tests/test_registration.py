"""A run that names a registration file must be the registered run."""

import json

import pytest

from recourse.benchmark.registration import deviations, floor_deviations, registered_run
from recourse.locations import generator_dir

REGISTERED = "assets/results/benchmark-primary.json"


def registered_settings(run: dict) -> dict:
    return dict(split=run["split"], first_task=run["first_task"], tasks=run["tasks"],
                attributes=tuple(reversed(run["attributes"])), margin=run["margin"],
                variants=tuple(run["rows"]) + ("extra-row",), generator=str(generator_dir()), noise_draws=3,
                matched_noise=("ptq-int8", "ptq-int4", "gptq-int2", "cfq-qat-b2"), rerun_floor=True,
                reference_models=3)


def test_the_registered_run_keeps_its_registration():
    run = registered_run(REGISTERED)
    assert deviations(run, **registered_settings(run)) == []


@pytest.mark.parametrize("change, said", [
    ({"first_task": 0}, "first_task 0, registered 700"),
    ({"tasks": 200}, "tasks 200, registered 120"),
    ({"split": "val"}, "split 'val'"),
    ({"margin": 0.0}, "margin 0.0, registered 2.0"),
    ({"attributes": ("Smiling", "Young", "Male")}, "attributes Smiling, Young, Male"),
    ({"variants": ("ptq-int8",)}, "registered rows not run: ptq-int4"),
    ({"generator": "out/another-generator"}, "generator out/another-generator"),
    ({"noise_draws": 1}, "noise draws 1, registered 3"),
    ({"matched_noise": ("ptq-int4",)}, "no noise floor matched to gptq-int2, ptq-int8"),
    ({"rerun_floor": False}, "no fp32-rerun floor"),
    ({"reference_models": 2}, "2 reference models, registered at least 3"),
])
def test_each_deviation_is_named(change, said):
    run = registered_run(REGISTERED)
    found = deviations(run, **{**registered_settings(run), **change})
    assert len(found) == 1 and said in found[0], found


def test_a_floor_it_cannot_read_refuses_rather_than_passes():
    assert floor_deviations(["fp32-magic (whatever)"], 3, (), True, 3) == [
        "the registered floor 'fp32-magic (whatever)' is not one this check can read"]


def test_a_file_without_a_run_block_is_an_error(tmp_path):
    path = tmp_path / "primary.json"
    path.write_text(json.dumps({"claims": []}))
    with pytest.raises(ValueError, match="no registered run"):
        registered_run(path)
