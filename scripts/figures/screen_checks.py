"""Layout defects a reader sees, measured in the browser (for the browser tests and app_screenshot).

Measured on a Playwright page; shared by the browser tests (tests/test_e2e_layout.py) and
``python -m scripts.figures.app_screenshot --check``.

Each check returns a list of defects, empty when the screen reads:

* ``horizontal_overflow``: the page is wider than the window (the reader must scroll sideways);
* ``clipped_text``: visible text cut off by its box (an ellipsis, or hidden overflow), unless
  the box scrolls so that the rest can be reached;
* ``broken_words``: a word split across two lines (a header set as "DirSi / m %").
"""

from __future__ import annotations

_CLIPPED = """
(root) => {
  const found = [];
  const scope = root ? document.querySelector(root) : document.body;
  for (const el of scope.querySelectorAll('*')) {
    if (!el.offsetParent && getComputedStyle(el).position !== 'fixed') continue;  // not shown
    if (el.clientWidth <= 2) continue;  // a screen reader's text, visually hidden on purpose
    const text = Array.from(el.childNodes).filter(n => n.nodeType === 3).map(n => n.textContent).join('').trim();
    if (!text) continue;
    const style = getComputedStyle(el);
    const hides = ['hidden', 'clip'].includes(style.overflowX) || style.textOverflow === 'ellipsis';
    if (hides && el.scrollWidth > el.clientWidth + 1) found.push(text.slice(0, 60));
  }
  return found;
}
"""

_BROKEN_WORDS = """
(selector) => {
  const found = [];
  for (const el of document.querySelectorAll(selector)) {
    if (!el.offsetParent) continue;
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const re = /\\S+/g;
      let match;
      while ((match = re.exec(node.textContent))) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const tops = new Set(Array.from(range.getClientRects()).filter(r => r.width > 0).map(r => Math.round(r.top)));
        if (tops.size > 1) found.push(match[0]);
      }
    }
  }
  return found;
}
"""


def horizontal_overflow(page) -> list[str]:
    width, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    return [] if width <= inner else [f"page is {width} px wide in a {inner} px window"]


def clipped_text(page, root: str | None = None) -> list[str]:
    return page.evaluate(_CLIPPED, root)


def broken_words(page, selector: str) -> list[str]:
    return page.evaluate(_BROKEN_WORDS, selector)
