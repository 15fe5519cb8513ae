"""End to end: ``python app.py`` in headless Debian Chromium, an audit from the gallery."""

import pytest

from recourse.render.audit_html import CARD_TITLES
from scripts.figures.app_screenshot import audit_gallery_face

pytestmark = [pytest.mark.requires("chromium", "playwright", "committed_variants"), pytest.mark.slow]


def test_gallery_audit_in_a_browser(browser_and_url):
    browser, url = browser_and_url
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        audit_gallery_face(page, url, face=0)
        # the two counterfactuals and the difference maps are real, loaded pictures
        for selector in ("#aligned img", "#teacher-cf img", "#student-cf img"):
            assert page.locator(selector).evaluate("img => img.complete && img.naturalWidth > 0"), selector
        cards = page.locator("#value-cards .value-card")
        assert cards.count() == len(CARD_TITLES)
        text = page.locator("#value-cards").inner_text()
        for title in CARD_TITLES:
            assert title in text
        assert "kept ✓" in text or "changed ✗" in text  # dlib's identity check on a 64-px face
        assert "no judge" not in text  # the committed judge sees the gallery face's framing
        assert "recourse" in page.locator("#verdict").inner_text()
        page.get_by_text("Both models' predictions").click()  # a closed accordion
        predictions = page.locator("#predictions").inner_text()
        assert "decisions differ" in predictions or "agree on all 40 decisions" in predictions
    finally:
        page.close()
