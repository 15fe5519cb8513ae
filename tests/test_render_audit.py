"""The audit's cards and the status line in plain words: symbols in a tooltip, no file paths or
dates on the screen (the export keeps them)."""

import html
import re
from types import SimpleNamespace

import pytest

from recourse.audit.result import AuditSettings
from recourse.audit.stops import AuditStops
from recourse.metrics import image_recourse
from recourse.render import audit_html
from recourse.render.audit_html import CARD_TITLES, CARDS, stops_sentence, stops_summary, value_cards

SOURCE = "assets/results/visible-stop-val.json (24 val faces, 2026-12-03)"
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def shown(recourse, face_logit: float = 2.0, settings: AuditSettings | None = None):
    """What the cards and the status line read of an audit, without running one."""
    from recourse.audit.image_noise_floor import compared

    return SimpleNamespace(recourse=recourse, face_logit=face_logit,
                           compared=recourse is not None and compared(recourse, face_logit),
                           judge=None, strong_judge=None, identity=None, missing={}, settings=settings)


def committed_like(visible_source: str = SOURCE) -> AuditSettings:
    stops = AuditStops(benchmark=2.0, visible=10.0, edit=14.0,
                       benchmark_source="assets/results/val-sweep-denoised.json (96 val tasks, 2026-12-02)",
                       visible_source=visible_source)
    return AuditSettings(stops=stops)


# --- plain labels, the symbol in a tooltip ------------------------------------------------------


@pytest.mark.parametrize("symbol, label", [
    ("V_f(x'_f)", "Full-precision model accepts its own edit"),
    ("V_g(x'_f)", "Compressed model accepts the full-precision edit"),
    ("V_g(x'_g)", "Compressed model accepts its own edit"),
    ("CRG_i", "Size gap (CRG)"),
    ("DirSim_i", "Direction match (DirSim)"),
])
def test_cards_are_labelled_plainly_with_the_symbol_in_a_tooltip(symbol, label):
    """Was a card titled "V_f(x'_f)" or "CRG_i" and nothing else."""
    cards = value_cards(shown(image_recourse(True, True, True, 0.1, 0.12, 0.9)))
    assert label in CARD_TITLES and symbol not in CARD_TITLES
    assert f'<abbr title="{html.escape(symbol)}"' in cards and f">{html.escape(label)}</abbr>" in cards


def test_no_card_title_is_a_bare_symbol():
    assert not [title for title in CARD_TITLES if re.search(r"_[a-z]\b|\(x'", title)], CARD_TITLES


def test_the_export_keys_stay_the_symbols_fields():
    assert [key for key, *_ in CARDS] == ["teacher_valid", "student_accepts_teacher", "student_valid",
                                           "teacher_cost", "student_cost", "crg", "dirsim"]


@pytest.mark.parametrize("face_logit, why", [(-5.88, "below the noise floor"), (0.016, "on the boundary")])
def test_a_small_change_far_from_the_boundary_is_not_carded_as_on_it(face_logit, why):
    """Was "not compared: on the boundary" on a face at logit -5.88 whose recourses are under the floor."""
    cards = value_cards(shown(image_recourse(True, True, True, 0.001, 0.0015, 0.9), face_logit))
    assert cards.count(f"not compared: {why}") == 2


# --- no paths or dates in the status line -------------------------------------------------------


def test_the_status_line_names_the_validation_faces_not_the_file():
    """Was "pictures at the visible stop, margin 10 (assets/results/visible-stop-val.json (24 val
    faces, 2026-12-03)); ..."."""
    settings = committed_like()
    said = stops_summary(shown(None, settings=settings))
    assert "the visible stop, margin 10 (chosen on 24 validation faces)" in said, said
    assert ".json" not in said and "assets/" not in said and not DATE.search(said)
    # the export keeps where it came from
    assert settings.to_dict()["stops"]["visible_source"] == SOURCE


def test_the_evidence_caption_names_no_file_either():
    said = stops_sentence(shown(None, settings=committed_like()))
    assert "24 validation faces" in said and ".json" not in said and not DATE.search(said), said
    assert "CRG_i" not in said and "size gap" in said


@pytest.mark.parametrize("source, plain", [
    (SOURCE, "chosen on 24 validation faces"),
    ("chosen by the user", "chosen by the user"),
    ("the generator's dataset default: visible stop not chosen yet (no assets/results/visible-stop-val.json)",
     "not chosen yet: the generator's default"),
])
def test_every_stop_source_is_said_without_its_file(source, plain):
    assert audit_html.plain_source(source) == plain


# --- the path captions compare no sizes the verdict does not compare ----------------------------


@pytest.mark.parametrize("recourse, face_logit, ratio", [
    (image_recourse(True, True, True, 0.1, 0.12, 0.9), 2.0, True),
    (image_recourse(True, True, True, 0.001, 0.0015, 0.9), -5.88, False),  # both under the noise floor
])
def test_the_path_captions_follow_the_verdict(recourse, face_logit, ratio):
    import torch

    from recourse.ui.audit import PathState, path_state, paths_view
    from tests.test_edit_path import flips_at

    path = flips_at(0.40, 0.60)
    result = shown(recourse, face_logit)
    result.paths, result.predictions = (path,), SimpleNamespace(variant="ptq-int8", aligned=torch.zeros(3, 8, 8))
    result.teacher_edit = result.student_edit = torch.ones(3, 8, 8)
    state = path_state(result)
    assert isinstance(state, PathState) and state.sizes_compared is ratio
    for page in (audit_html.paths_html(result), paths_view(state, 0.5)):
        assert page.count("needs 50% more of the same edit") == (2 if ratio else 0)  # the caption and its label
