"""The app read on a 390×844 phone, in headless Chromium. An audit: its result comes into view
when Audit is pressed, nothing is wider than the screen, both probability tables show every
column, the faces are big enough to compare and the recourse plots' text is legible (each text's
size as drawn, after the SVG is scaled to the screen). The Benchmark tab: its accuracy plot's
text is legible too, the picture scrolling sideways in its own box."""

import pytest

from recourse.render.methods import CONTROL_LABELS
from recourse.ui.benchmark import benchmark_view

pytestmark = [pytest.mark.requires("chromium", "playwright", "committed_variants"), pytest.mark.slow]
WIDTH, HEIGHT = 390, 844
SMALLEST_TEXT_PX = 11  # chart text, as drawn
SMALLEST_FACE_PX = 160  # a face's width: below it the edits' details are lost on a phone
CHEAP_EDIT_STEPS = 4  # the denoiser's steps: the layout is the same as the default 24's, sooner

# Each text of every SVG chart: its font size times the scale it is drawn at (its rotation aside).
_CHART_TEXT_PX = """
() => Array.from(document.querySelectorAll('svg text')).filter(t => t.getClientRects().length).map(t => {
  const m = t.getScreenCTM();
  return {text: t.textContent.slice(0, 40), px: parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b)};
})
"""

# Where an element is cut off: its part outside the screen, or outside any ancestor that scrolls
# or hides its overflow. A table's column there is out of sight, and a phone shows no scroll bar
# to say that it can be scrolled to: every column must be on the screen at once.
_CUT_OFF = """
(element) => {
  const box = element.getBoundingClientRect();
  const cut = [];
  if (box.left < 0 || box.right > window.innerWidth + 0.5) cut.push(`screen: ${box.left}..${box.right}`);
  for (let el = element.parentElement; el && el !== document.body; el = el.parentElement) {
    if (getComputedStyle(el).overflowX === 'visible') continue;
    const outer = el.getBoundingClientRect();
    if (box.left < outer.left - 0.5 || box.right > outer.right + 0.5)
      cut.push(`${el.id || el.className}: ${outer.left}..${outer.right}, cut ${box.left}..${box.right}`);
  }
  return cut;
}
"""


def _top(page, selector: str) -> float:
    return page.locator(selector).first.evaluate("e => e.getBoundingClientRect().top")


def _cheap_settings(page) -> None:
    page.get_by_text("Generator settings").click()
    steps = page.get_by_label(f"number input for {CONTROL_LABELS['edit_steps']}")
    if steps.is_visible():  # the pixel edit's steps; the default face-part edit shows none and is cheap as it is
        steps.fill(str(CHEAP_EDIT_STEPS))
        steps.press("Enter")
    page.wait_for_timeout(300)


def test_on_a_phone_the_audit_result_reads(browser_and_url):
    """Every defect is gathered before the one assertion, so that a failure names them all."""
    browser, url = browser_and_url
    page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    defects = {}
    try:
        page.goto(url, wait_until="domcontentloaded")
        page.locator("#gallery button.thumbnail-item").first.click(timeout=120_000)
        page.locator("#aligned img").wait_for(timeout=120_000)
        _cheap_settings(page)
        page.locator("#run-audit").click()
        page.wait_for_timeout(800)
        if not 0 <= (top := _top(page, "#status")) < HEIGHT:  # the audit's progress is on the screen
            defects["status top"] = top
        page.locator("#value-cards .value-card").first.wait_for(timeout=120_000)
        page.locator("#student-cf img").wait_for(timeout=120_000)
        page.locator("#path-plots svg").first.wait_for(timeout=60_000)
        page.wait_for_timeout(800)  # the last pictures painted
        # the result arrives where the reader is, without scrolling: the verdict and the faces,
        # each with at least 80 px of it on the screen
        for selector in ("#verdict", "#aligned img", "#teacher-cf img", "#student-cf img"):
            if not 0 <= (top := _top(page, selector)) < HEIGHT - 80:
                defects[f"{selector} top"] = top

        if (width := page.evaluate("document.documentElement.scrollWidth")) > WIDTH:
            defects["page width"] = width
        for selector in ("#aligned img", "#teacher-cf img", "#student-cf img"):
            if (width := page.locator(selector).bounding_box()["width"]) < SMALLEST_FACE_PX:
                defects[f"{selector} width"] = width

        texts = page.evaluate(_CHART_TEXT_PX)
        small = [(t["text"], round(t["px"], 1)) for t in texts if t["px"] < SMALLEST_TEXT_PX - 0.05]
        if not texts or small:
            defects["chart text px"] = small or "no chart drawn"

        page.get_by_text("Both models' predictions").click()  # a closed accordion
        page.locator("#predictions table").first.wait_for()
        page.wait_for_timeout(500)
        for selector in ("#evidence table", "#predictions table"):
            if cut := page.locator(selector).first.evaluate(_CUT_OFF):
                defects[f"{selector} cut"] = cut
        if (width := page.evaluate("document.documentElement.scrollWidth")) > WIDTH:  # the opened chart too
            defects["page width, predictions open"] = width
    finally:
        page.close()
    assert not defects, "\n".join(f"{name}: {value}" for name, value in defects.items())


def test_on_a_phone_the_benchmark_plot_reads(browser_and_url):
    """The accuracy plot is one picture (matplotlib's): its smallest text, in points of the figure
    as the app draws it, times the inches the picture is drawn at."""
    import matplotlib.text

    figure = benchmark_view()[2]  # the run the tab opens on
    smallest_pt = min(text.get_fontsize() for text in figure.findobj(matplotlib.text.Text)
                      if text.get_visible() and text.get_text().strip())
    browser, url = browser_and_url
    page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    try:
        page.goto(url, wait_until="domcontentloaded")
        page.get_by_role("tab", name="Benchmark").click(timeout=120_000)  # after the app has loaded
        picture = page.locator(".matplotlib img").first
        picture.wait_for(timeout=60_000)
        page.wait_for_timeout(500)
        drawn = picture.evaluate("e => e.getBoundingClientRect().width")
        smallest_px = smallest_pt / 72 * drawn / figure.get_figwidth()
        scroller = page.locator(".matplotlib").first
        defects = {"smallest text px": round(float(smallest_px), 1)} if smallest_px < SMALLEST_TEXT_PX - 0.05 else {}
        if cut := scroller.evaluate(_CUT_OFF):  # its box on the screen, whole
            defects["plot box cut"] = cut
        if (reach := scroller.evaluate("e => e.scrollWidth")) < drawn - 1:  # scrolled to the picture's right edge
            defects["plot reach"] = (reach, drawn)
        if (width := page.evaluate("document.documentElement.scrollWidth")) > WIDTH:
            defects["page width"] = width
    finally:
        page.close()
    assert not defects, defects
