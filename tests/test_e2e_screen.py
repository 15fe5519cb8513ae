"""The audit screen in headless Chromium: the evidence is on the first screen at 1280×800, the
page fits a 390 px phone, and an error clears the earlier results."""


import numpy as np
import pytest
from PIL import Image

from recourse.render.audit_html import CARD_TITLES
from scripts.figures.app_screenshot import audit_gallery_face

pytestmark = [pytest.mark.requires("chromium", "playwright", "committed_variants"), pytest.mark.slow]
EVIDENCE = ("#verdict", "#aligned img", "#teacher-cf img", "#student-cf img", "#evidence table", "#run-audit")


def test_the_evidence_is_on_the_first_screen_at_1280_by_800(browser_and_url):
    browser, url = browser_and_url
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    audit_gallery_face(page, url)
    page.evaluate("window.scrollTo(0, 0)")
    for selector in EVIDENCE:
        box = page.locator(selector).first.bounding_box()
        assert box is not None and box["y"] + box["height"] <= 800, (selector, box)
    page.close()


def test_the_page_fits_a_phone(browser_and_url):
    browser, url = browser_and_url
    page = browser.new_page(viewport={"width": 390, "height": 844})
    audit_gallery_face(page, url)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    tops = [page.locator(f"{selector} img").bounding_box()["y"] for selector in ("#aligned", "#teacher-cf", "#student-cf")]
    # the face above, both recourses side by side under it: each large enough to see (test_phone_layout.py)
    assert abs(tops[1] - tops[2]) < 5 and tops[0] < tops[1]
    # the recourse paths (two plots, two faces and a slider, open under the faces) add about 1,000 px
    assert page.evaluate("document.documentElement.scrollHeight") < 5200
    page.close()


def test_an_error_clears_the_earlier_results(browser_and_url, tmp_path):
    browser, url = browser_and_url
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    audit_gallery_face(page, url)
    assert page.locator("#value-cards .value-card").count() == len(CARD_TITLES)
    tiny = tmp_path / "tiny.png"
    Image.fromarray(np.zeros((10, 10, 3), np.uint8)).save(tiny)
    page.locator("#upload input[type=file]").set_input_files(str(tiny))
    page.wait_for_timeout(1000)
    page.locator("#run-audit").click()
    page.get_by_text("too small").first.wait_for(timeout=60_000)
    page.wait_for_timeout(500)
    assert page.locator("#value-cards .value-card").count() == 0
    assert page.locator("#teacher-cf img").count() == 0
    page.close()
