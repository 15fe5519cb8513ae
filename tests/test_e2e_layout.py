"""The screen as a reader sees it (issue 24), in headless Chromium at 1280×800 and at a
390×844 phone: before an audit, after one, and on the Benchmark tab. Each test fails on
horizontal overflow, clipped text or a word broken across lines (scripts/figures/screen_checks.py)."""

import pytest

from scripts.figures.app_screenshot import audit_gallery_face
from scripts.figures.screen_checks import broken_words, clipped_text, horizontal_overflow

pytestmark = [pytest.mark.requires("chromium", "playwright", "committed_variants"), pytest.mark.slow]
LAYOUTS = [pytest.param((1280, 800), id="1280x800"), pytest.param((390, 844), id="390x844")]


def _open_every_accordion(page) -> None:
    for toggle in page.locator("button.label-wrap").all():
        if toggle.is_visible():
            toggle.click()
    page.wait_for_timeout(800)


@pytest.fixture
def page_of(browser_and_url):
    """A fresh page at a window size, closed after the test whatever its outcome."""
    browser, url = browser_and_url
    pages = []

    def make(size):
        pages.append(browser.new_page(viewport={"width": size[0], "height": size[1]}))
        return pages[-1], url

    yield make
    for page in pages:
        page.close()


def _overlap(a: dict, b: dict) -> bool:
    return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])

@pytest.mark.parametrize("size", LAYOUTS)
def test_the_audit_screen_reads(page_of, size):
    page, url = page_of(size)
    page.goto(url, wait_until="domcontentloaded")
    page.locator("#gallery button.thumbnail-item").first.wait_for(timeout=120_000)
    assert not page.get_by_text("Audit as JSON").first.is_visible()  # no empty download boxes before an audit
    # gallery thumbnails: the whole face, the caption under it, not over it
    thumbnail = page.locator("#gallery button.thumbnail-item").first
    image, caption = thumbnail.locator("img").bounding_box(), thumbnail.locator(".caption-label").bounding_box()
    assert caption["y"] >= image["y"] + image["height"] - 1, (image, caption)
    assert thumbnail.locator("img").evaluate("e => getComputedStyle(e).objectFit") == "contain"
    audit_gallery_face(page, None)  # the page is open: a second load would queue behind the first
    _open_every_accordion(page)
    for selector in ("#aligned", "#teacher-cf", "#student-cf"):  # the faces keep their captions at 390 px
        label = page.locator(f"{selector} label").first
        assert label.is_visible(), selector
        # no button covers the caption (a download button did at 390 px)
        caption = label.bounding_box()
        for button in page.locator(f"{selector} button:not(:has(img))").all():  # the picture is a button too
            box = button.bounding_box()
            assert box is None or not _overlap(caption, box), (selector, caption, box)
        assert page.locator(f"{selector} img").evaluate("e => getComputedStyle(e).imageRendering") != "pixelated"
    assert horizontal_overflow(page) == []
    assert clipped_text(page) == []


@pytest.mark.parametrize("size", LAYOUTS)
def test_the_benchmark_tab_reads(page_of, size):
    page, url = page_of(size)
    page.goto(url, wait_until="domcontentloaded")
    page.get_by_role("tab", name="Benchmark").click(timeout=120_000)  # after the app has loaded
    page.locator("#benchmark-table th").first.wait_for(timeout=60_000)
    page.wait_for_timeout(500)
    assert broken_words(page, "#benchmark-table th") == []  # was "DirSi / m %", "Overhe / ad"
    assert horizontal_overflow(page) == []
    assert clipped_text(page) == []


def test_on_a_phone_the_status_line_is_on_the_screen_once_the_audit_starts(page_of):
    """At 390×844 the status sits below the settings: pressing Audit brings it into view, and
    the result arrives there (issue 36)."""
    page, url = page_of((390, 844))
    page.goto(url, wait_until="domcontentloaded")
    page.locator("#gallery button.thumbnail-item").first.click(timeout=120_000)
    page.locator("#aligned img").wait_for(timeout=120_000)
    page.locator("#run-audit").click()
    page.wait_for_timeout(800)
    status = page.locator("#status").bounding_box()
    assert status is not None and 0 <= status["y"] < 844, status
    page.locator("#value-cards .value-card").first.wait_for(timeout=120_000)
    assert page.locator("#path-plots svg").count() == 2  # both recourse paths are drawn
