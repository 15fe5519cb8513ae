"""The adoption rule for a new face denoiser (issue 36, point 5)."""

from scripts.measurements.denoiser_candidates import shift_at_identity, verdict


def gate(*psnr, passed=True):
    return {"passed": passed, "psnr_db": {s: {"face denoiser": v} for s, v in zip(("0.1", "0.3"), psnr)}}


def stops(*rows):
    return {"summary": [{"stop": s, "shift": shift, "fva": fva} for s, shift, fva in rows]}


TODAY = stops((0, 0.3, 100.0), (8, 1.0, 100.0), (10, 1.1, 98.0))


def test_shift_at_identity_is_the_largest_shift_whose_identity_holds():
    assert shift_at_identity(TODAY["summary"], 100.0) == 1.0
    assert shift_at_identity(TODAY["summary"], 97.0) == 1.1
    assert shift_at_identity(TODAY["summary"], 99.5) == 1.0
    assert shift_at_identity(stops((0, 0.3, 90.0))["summary"], 97.0) is None


def test_a_sharper_denoiser_whose_edits_cost_identity_is_not_adopted():
    bigger_edits = stops((0, 0.4, 100.0), (8, 1.15, 96.0), (10, 1.2, 94.0))
    found = verdict(gate(30, 25), TODAY, gate(31, 26), bigger_edits)
    assert found["beats_gate"] and not found["beats_judges"] and not found["adopted"]


def test_adopted_only_when_it_wins_both_the_gate_and_the_judges():
    better = stops((0, 0.4, 100.0), (8, 1.2, 100.0), (10, 1.3, 98.0))
    assert verdict(gate(30, 25), TODAY, gate(31, 26), better)["adopted"]
    assert not verdict(gate(30, 25), TODAY, gate(31, 24.9), better)["adopted"]  # loses one σ of the gate
    assert not verdict(gate(30, 25), TODAY, gate(31, 26, passed=False), better)["adopted"]
    assert not verdict(gate(30, 25), TODAY, gate(31, 26), None)["adopted"]  # judges not run
