from dataclasses import replace

from recourse.benchmark.replication import replications, summarise
from recourse.benchmark.rows import FamilyRow
from recourse.benchmark.run import BenchmarkResult
from recourse.benchmark.sweep import SweepPoint
from scripts.measurements.replicate import main


def _run(vd: tuple[float, float, float], paired: tuple[float, float, float]) -> BenchmarkResult:
    own = {"all": {"vd": {"mean": vd[0], "sd": None, "low": vd[1], "high": vd[2]}}}
    family = FamilyRow("cfq-qat", ("cfq-qat",), "cfq-qat", 4.0, (90.0, 0.0), (99.0, 0.0), own,
                       {"ptq-int4": {"all": {"vd": list(paired), "crg": [0.1, None, None]}}})
    return BenchmarkResult(date="2026-12-01", command="", split="test", n=10, attributes=("Smiling",),
                           accuracy_images=10, processes=1, seconds=1.0, settings={}, rows=(), families=(family,))


def test_a_claim_holds_when_the_second_run_excludes_zero_on_the_same_side():
    found = replications(_run((5, 3, 7), (-2, -3, -1)), _run((8, 6, 10), (-1.2, -1.8, -0.2)))
    assert [(d.reference, d.metric) for d in found] == [("", "vd"), ("ptq-int4", "vd")]  # the incomplete crg is left out
    own, paired = found
    assert not own.second_inside_first and not own.first_inside_second
    assert paired.claim and paired.held and paired.second_inside_first and not paired.first_inside_second
    assert summarise(found).to_dict() == {"compared": 2, "second_inside_first": 1, "first_inside_second": 0,
                                          "claims": 1, "claims_held": 1, "claims_second_inside_first": 1}


def test_a_claim_fails_when_its_sign_flips_or_the_second_interval_covers_zero():
    first = _run((5, 3, 7), (-2, -3, -1))
    for second in ((-0.5, -1.5, 0.5), (1.5, 0.5, 2.5)):
        (paired,) = [d for d in replications(first, _run((5, 3, 7), second)) if d.reference]
        assert paired.claim and not paired.held
    (no_claim,) = [d for d in replications(_run((5, 3, 7), (1, -1, 2)), first) if d.reference]
    assert not no_claim.claim and not no_claim.held and summarise([no_claim]).claims == 0


def test_the_script_prints_the_claims_and_writes_every_comparison(tmp_path, capsys):
    import json

    paths = []
    for name, run in (("a", _run((5, 3, 7), (-2, -3, -1))), ("b", _run((5.5, 3, 7), (-2.5, -3.5, -1)))):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(run.to_dict()))
    assert main([str(paths[0]), str(paths[1]), "--json", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "| cfq-qat − ptq-int4 | all | vd | -2 [-3, -1] | -2.5 [-3.5, -1] | yes | yes |" in out
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["summary"]["claims_held"] == 1 and len(record["values"]) == 2


def test_the_sweep_values_are_compared_margin_by_margin():
    def point(margin: float, vd: float, interval: tuple[float, float]) -> SweepPoint:
        return SweepPoint(margin, 100.0, 0.01, 10, {"ptq-int4": {"vd": vd, "fa_75": 3.0}},
                          {"ptq-int4": {"vd": list(interval)}})

    first = replace(_run((5, 3, 7), (-2, -3, -1)), sweep=(point(0.0, 60, (50, 70)), point(1.0, 20, (15, 25))))
    second = replace(first, sweep=(point(1.0, 30, (22, 37)), point(3.0, 0, (0, 0))))
    swept = [d for d in replications(first, second) if d.group.startswith("margin")]
    # margin 0 and 3 are in one run only; fa_75 has no interval
    assert [(d.family, d.group, d.metric, d.first, d.second) for d in swept] == [
        ("ptq-int4", "margin 1", "vd", (20.0, 15.0, 25.0), (30.0, 22.0, 37.0))]
    assert not swept[0].second_inside_first and summarise(replications(first, second)).claims == 1  # not a claim
