"""Blind rating of counterfactuals by a person: a self-contained HTML page and its scoring.

A generator run writes its pairs with :func:`save_pairs` (``originals``, ``counterfactuals``,
``attributes``, ``targets``; any generator). :func:`rating_page` draws N of them at random,
shows each as two faces A and B at 256 px in a random order with the attribute named (never the
model, the target or any number), and asks three questions:

1. Which face shows the attribute more? (A / B / no visible difference)
2. Are A and B the same person? (yes / no / unsure)
3. Was one of them altered by a computer, and which? (A / B / cannot tell)

:func:`merge_pairs` puts several runs' pairs (several methods or generators) on one page; each
pair's method stays in the key. The page's form exports the answers as JSON; the hidden key
(which side is the counterfactual, its target and method) goes to a separate file.
:func:`score_ratings` scores one against the other: the edit is *seen* when the rater picks the
face the target says should show the attribute more (the counterfactual for target 1, the
original for target 0).
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
from PIL import Image

from recourse.data import ATTRIBUTES

SHOWN_SIZE = 256
PAIR_KEYS = ("originals", "counterfactuals", "attributes", "targets")
ANSWERS = {"more": ("A", "B", "same"), "same_person": ("yes", "no", "unsure"), "altered": ("A", "B", "unsure")}


class RatingError(ValueError):
    """Bad pairs, a bad ratings file, or ratings that belong to another page."""


def _uint8_images(images: np.ndarray, name: str) -> np.ndarray:
    images = np.asarray(images)
    if images.ndim != 4 or images.shape[1] != 3:
        raise RatingError(f"{name}: expected images (N, 3, H, W), got shape {images.shape}")
    if images.dtype == np.uint8:
        return images
    if not np.issubdtype(images.dtype, np.floating) or images.min() < 0 or images.max() > 1:
        raise RatingError(f"{name}: expected uint8 images or floats in [0, 1]")
    return (images * 255).round().astype(np.uint8)


def save_pairs(path: str | Path, originals: np.ndarray, counterfactuals: np.ndarray,
               attributes: list[str] | np.ndarray, targets: np.ndarray, **extra: np.ndarray) -> Path:
    """Write a generator run's pairs for :func:`rating_page`: images ``(N, 3, H, W)`` (uint8, or
    floats in [0, 1]), one attribute name and one target decision (0/1) per pair. ``extra`` arrays
    (e.g. model names) are stored too and go to the key, never to the page."""
    pairs = {"originals": _uint8_images(originals, "originals"),
             "counterfactuals": _uint8_images(counterfactuals, "counterfactuals"),
             "attributes": np.asarray(attributes, dtype=str), "targets": np.asarray(targets).astype(np.int64)}
    _check_pairs(pairs)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **pairs, **extra)
    return path


def load_pairs(path: str | Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        pairs = {key: data[key] for key in data.files}
    return _normalised(pairs, str(path))


def _normalised(pairs: dict[str, np.ndarray], name: str) -> dict[str, np.ndarray]:
    """``pairs`` with uint8 images, string attributes and integer targets, checked."""
    missing = [key for key in PAIR_KEYS if key not in pairs]
    if missing:
        raise RatingError(f"{name}: missing {', '.join(missing)} (save the pairs with "
                          "recourse.instruments.rating.save_pairs)")
    pairs = {**pairs, "originals": _uint8_images(pairs["originals"], f"{name}: originals"),
             "counterfactuals": _uint8_images(pairs["counterfactuals"], f"{name}: counterfactuals"),
             "attributes": np.asarray(pairs["attributes"], dtype=str),
             "targets": np.asarray(pairs["targets"]).astype(np.int64)}
    _check_pairs(pairs)
    return pairs


def _check_pairs(pairs: dict[str, np.ndarray]) -> None:
    n = len(pairs["originals"])
    if pairs["counterfactuals"].shape != pairs["originals"].shape:
        raise RatingError(f"originals {pairs['originals'].shape} and counterfactuals "
                          f"{pairs['counterfactuals'].shape} must pair up")
    if len(pairs["attributes"]) != n or len(pairs["targets"]) != n:
        raise RatingError(f"one attribute and one target per pair are needed ({n} pairs)")
    unknown = sorted(set(pairs["attributes"].tolist()) - set(ATTRIBUTES))
    if unknown:
        raise RatingError(f"unknown attributes: {', '.join(unknown)}")
    if not np.isin(pairs["targets"], (0, 1)).all():
        raise RatingError("targets must be 0 or 1")


def merge_pairs(sources: Sequence[tuple[str, dict[str, np.ndarray]]]) -> dict[str, np.ndarray]:
    """One pairs dict for one page from several ``(name, pairs)`` sources, e.g. one per method
    or generator, in the sources' order (:func:`rating_page` shuffles them).

    Every pair keeps, for the key only, ``source`` (its source's name) and ``method``: the
    source's own ``method`` array, or else the name's stem (``runs/foreign-gan.npz`` →
    ``foreign-gan``). Other per-pair arrays are kept where every source has them; whole-file
    fields such as ``settings`` are dropped, as they describe one source, not the page. Refuses
    images of different sizes, and a face that is the original of two pairs: a rater who saw it
    twice would know which side was left alone.
    """
    if not sources:
        raise RatingError("no pairs to merge")
    sources = [(name, _normalised(pairs, name)) for name, pairs in sources]
    shapes = {name: pairs["originals"].shape[1:] for name, pairs in sources}
    if len(set(shapes.values())) > 1:
        raise RatingError("the pairs have different image sizes: " +
                          ", ".join(f"{name} {'x'.join(map(str, shape))}" for name, shape in shapes.items()))
    per_pair = set.intersection(*({key for key, values in pairs.items() if key not in PAIR_KEYS
                                   and values.ndim == 1 and len(values) == len(pairs["originals"])}
                                  for _, pairs in sources)) - {"method", "source"}
    merged = {key: np.concatenate([pairs[key] for _, pairs in sources]) for key in (*PAIR_KEYS, *sorted(per_pair))}
    merged["method"] = np.concatenate([np.broadcast_to(pairs.get("method", np.array(Path(name).stem)).astype(str),
                                                       len(pairs["originals"])) for name, pairs in sources])
    merged["source"] = np.concatenate([np.full(len(pairs["originals"]), name) for name, pairs in sources])
    first_seen: dict[bytes, int] = {}
    for index, original in enumerate(merged["originals"]):
        earlier = first_seen.setdefault(hashlib.sha256(original.tobytes()).digest(), index)
        if earlier != index:
            raise RatingError(f"the same face is the original of pair {earlier} ({merged['source'][earlier]}) and "
                              f"pair {index} ({merged['source'][index]}); a page shows each face once")
    return merged


def _png_data_url(image: np.ndarray) -> str:
    picture = Image.fromarray(image.transpose(1, 2, 0)).resize((SHOWN_SIZE, SHOWN_SIZE), Image.BICUBIC)
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")  # no metadata: nothing in the file tells the pair apart
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def attribute_words(attribute: str) -> str:
    return attribute.replace("_", " ").lower()


@dataclass(frozen=True)
class RatingPage:
    html: str
    key: dict


def rating_page(pairs: dict[str, np.ndarray], n: int, seed: int = 0, source: str = "") -> RatingPage:
    """The HTML page of ``n`` pairs drawn at random (each pair's order shuffled) and its hidden key."""
    total = len(pairs["originals"])
    if not 1 <= n <= total:
        raise RatingError(f"asked for {n} tasks, the pairs file has {total}")
    rng = np.random.default_rng(seed)
    chosen = rng.choice(total, n, replace=False)
    extra = [key for key in pairs if key not in PAIR_KEYS]
    tasks, blocks = [], []
    for number, index in enumerate(chosen.tolist(), start=1):
        counterfactual_side = "A" if rng.random() < 0.5 else "B"
        original, counterfactual = pairs["originals"][index], pairs["counterfactuals"][index]
        a, b = (counterfactual, original) if counterfactual_side == "A" else (original, counterfactual)
        attribute = str(pairs["attributes"][index])
        tasks.append({"task": number, "pair_index": index, "attribute": attribute,
                      "target": int(pairs["targets"][index]), "counterfactual": counterfactual_side,
                      **{key: pairs[key][index].tolist() for key in extra
                         if pairs[key].ndim == 1 and len(pairs[key]) == total}})
        blocks.append(_task_html(number, attribute, _png_data_url(a), _png_data_url(b)))
    # The page and its key share an id, so ratings are never scored against another page's key.
    page_id = hashlib.sha256(json.dumps([source, seed, tasks]).encode()).hexdigest()[:16]
    key = {"page_id": page_id, "source": source, "seed": seed, "n": n, "tasks": tasks}
    return RatingPage(_PAGE.replace("__PAGE_ID__", page_id).replace("__N__", str(n))
                      .replace("__TASKS__", "\n".join(blocks)), key)


def _task_html(number: int, attribute: str, a_url: str, b_url: str) -> str:
    words = html.escape(attribute_words(attribute))

    def choices(question: str, options: tuple[tuple[str, str], ...]) -> str:
        return " ".join(f'<label><input type="radio" name="{question}-{number}" value="{value}"> {text}</label>'
                        for value, text in options)

    return f"""<section class="task" data-task="{number}">
<h2>Task {number} — attribute: <em>{words}</em></h2>
<div class="pair"><figure><img src="{a_url}" width="{SHOWN_SIZE}" height="{SHOWN_SIZE}" alt="face A"><figcaption>A</figcaption></figure>
<figure><img src="{b_url}" width="{SHOWN_SIZE}" height="{SHOWN_SIZE}" alt="face B"><figcaption>B</figcaption></figure></div>
<p>1. Which face shows <em>{words}</em> more? {choices("more", (("A", "A"), ("B", "B"), ("same", "no visible difference")))}</p>
<p>2. Are A and B the same person? {choices("same_person", (("yes", "yes"), ("no", "no"), ("unsure", "unsure")))}</p>
<p>3. Was one of them altered by a computer? Which? {choices("altered", (("A", "A"), ("B", "B"), ("unsure", "cannot tell")))}</p>
</section>"""


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Rate face pairs</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 860px; margin: 1em auto; padding: 0 1em; }
.task { border-top: 1px solid #ccc; padding: 0.5em 0 1em; }
.pair { display: flex; gap: 1em; flex-wrap: wrap; }
figure { margin: 0; text-align: center; font-weight: bold; }
img { image-rendering: auto; border: 1px solid #888; }
label { margin-right: 1em; white-space: nowrap; }
textarea { width: 100%; height: 8em; }
</style></head><body>
<h1>Rate face pairs</h1>
<p>Each task shows two versions of a face photo, A and B, and names an attribute. Answer the three
questions from what you see; there is no time limit and no right number of "no difference"
answers. When you are done, press <b>Export ratings</b> at the bottom and send the file it saves.</p>
<p><label>Your name or initials: <input id="rater" type="text"></label></p>
__TASKS__
<section><button id="export" type="button">Export ratings</button> <span id="status"></span>
<p>If no file is saved, copy the text below instead:</p><textarea id="output" readonly></textarea></section>
<script>
const PAGE_ID = "__PAGE_ID__", N = __N__, QUESTIONS = ["more", "same_person", "altered"];
document.getElementById("export").addEventListener("click", () => {
  const ratings = [];
  let unanswered = 0;
  for (let task = 1; task <= N; task++) {
    const row = {task: task};
    for (const question of QUESTIONS) {
      const checked = document.querySelector(`input[name="${question}-${task}"]:checked`);
      row[question] = checked ? checked.value : null;
      if (!checked) unanswered++;
    }
    ratings.push(row);
  }
  const text = JSON.stringify({page_id: PAGE_ID, rater: document.getElementById("rater").value,
                               ratings: ratings}, null, 1);
  document.getElementById("output").value = text;
  document.getElementById("status").textContent =
    unanswered ? `${unanswered} questions unanswered (exported as null)` : "all questions answered";
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([text], {type: "application/json"}));
  link.download = `ratings-${PAGE_ID}.json`;
  document.body.appendChild(link);
  link.click();
  link.remove();
});
</script></body></html>
"""


@dataclass(frozen=True)
class RatingScore:
    """One rater's answers against the key (percentages of the tasks that question was answered on)."""

    rater: str
    n: int  # tasks on the page
    answered_more: int
    seen: float | None  # % picking the face the target says shows the attribute more
    seen_reversed: float | None  # % picking the other face
    no_difference: float | None  # % "no visible difference"
    answered_same_person: int
    same_person: float | None  # % "yes"
    different_person: float | None  # % "no"
    answered_altered: int
    altered_spotted: float | None  # % naming the counterfactual as the altered face
    original_blamed: float | None  # % naming the original
    cannot_tell: float | None
    seen_by_attribute: dict[str, float | None]  # ``seen`` per attribute

    def to_dict(self) -> dict:
        return asdict(self)


def _share(values: list[bool]) -> float | None:
    return round(100.0 * sum(values) / len(values), 2) if values else None


def score_ratings(ratings: dict, key: dict) -> RatingScore:
    """Score an exported ratings JSON (as a dict) against its page's key."""
    if ratings.get("page_id") != key.get("page_id"):
        raise RatingError(f"these ratings are for page {ratings.get('page_id')!r}, the key is for page "
                          f"{key.get('page_id')!r}")
    tasks = {task["task"]: task for task in key["tasks"]}
    rows = ratings.get("ratings")
    if not isinstance(rows, list):
        raise RatingError("the ratings file has no 'ratings' list")
    answers, rated = {question: {} for question in ANSWERS}, set()
    for row in rows:
        if row.get("task") not in tasks:
            raise RatingError(f"task {row.get('task')!r} is not on this page")
        if row["task"] in rated:
            raise RatingError(f"task {row['task']} is rated twice")
        rated.add(row["task"])
        for question, allowed in ANSWERS.items():
            value = row.get(question)
            if value is not None and value not in allowed:
                raise RatingError(f"task {row['task']}: {question} = {value!r}, expected one of {allowed} or null")
            if value is not None:
                answers[question][row["task"]] = value
    more, person, altered = answers["more"], answers["same_person"], answers["altered"]

    def other(side: str) -> str:
        return "B" if side == "A" else "A"

    def expected(number: int) -> str:
        """The face that should show the attribute more: the counterfactual when it adds it."""
        task = tasks[number]
        return task["counterfactual"] if task["target"] == 1 else other(task["counterfactual"])

    by_attribute = {}
    for attribute in sorted({task["attribute"] for task in tasks.values()}):
        by_attribute[attribute] = _share([more[t] == expected(t) for t in more if tasks[t]["attribute"] == attribute])
    return RatingScore(
        rater=str(ratings.get("rater", "")), n=len(tasks),
        answered_more=len(more),
        seen=_share([more[t] == expected(t) for t in more]),
        seen_reversed=_share([more[t] == other(expected(t)) for t in more]),
        no_difference=_share([more[t] == "same" for t in more]),
        answered_same_person=len(person),
        same_person=_share([v == "yes" for v in person.values()]),
        different_person=_share([v == "no" for v in person.values()]),
        answered_altered=len(altered),
        altered_spotted=_share([altered[t] == tasks[t]["counterfactual"] for t in altered]),
        original_blamed=_share([altered[t] == other(tasks[t]["counterfactual"]) for t in altered]),
        cannot_tell=_share([v == "unsure" for v in altered.values()]),
        seen_by_attribute=by_attribute,
    )
