"""Loads one report page (a file:// report or the proxy's live inspector) in headless
Chromium through Playwright and prints, as one JSON object, what a person would see:
the chart's SVG marks counted by kind and colour, the pass table's cells, whether a
folded <details> opens on a click, every request the page made, every console error,
and how long the page took to load. The Rust tests assert on it.

    check_page.py URL

The browser is Debian's Chromium ($COMPACTOR_CHROMIUM, default /usr/bin/chromium), driven
with a fresh profile; Playwright's own browser download is never used.
"""

import json
import os
import shutil
import sys
import tempfile
import time

from playwright.sync_api import sync_playwright

ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

MARKS = """() => {
  const counts = {};
  for (const el of document.querySelectorAll('#chart svg *')) {
    const key = [el.tagName.toLowerCase(), (el.getAttribute('fill') || '').toUpperCase(),
                 (el.getAttribute('stroke') || '').toUpperCase()].join('|');
    counts[key] = (counts[key] || 0) + 1;
  }
  return counts;
}"""

ROWS = """() => Array.from(document.querySelectorAll('#passes tr.pass-row')).map(tr => ({
  line: Number(tr.dataset.line),
  kind: tr.querySelector('.kind').textContent.trim(),
  tokens_before: Number(tr.querySelector('.tokens-before').textContent),
  tokens_after: Number(tr.querySelector('.tokens-after').textContent),
  replaced: Number(tr.querySelector('.replaced').textContent),
  elisions: Number(tr.querySelector('.elisions').textContent),
  repairs: Number(tr.querySelector('.repairs').textContent),
  flags: tr.querySelector('.flags').textContent.trim(),
  summarizer: tr.querySelector('.summarizer').textContent.trim(),
}))"""

SESSIONS = """() => Array.from(document.querySelectorAll('#sessions tr.session-row')).map(tr => ({
  key: tr.querySelector('.session-link').textContent,
  href: tr.querySelector('.session-link').getAttribute('href'),
  requests: (tr.querySelector('.requests') || {textContent: ''}).textContent,
  compactions: (tr.querySelector('.compactions') || {textContent: ''}).textContent,
}))"""


def fold(page):
    """Opens a pass's folded list of stubs (or of replaced messages) and then the first
    text in it: each must be closed and hidden before its click, open and shown after."""
    outer = page.locator("details.stubs, details.replaced-list").first
    if outer.count() == 0:
        return {"tried": False}
    inner = outer.locator("details").first
    pre = inner.locator("pre").first
    before = {
        "open": outer.evaluate("d => d.open") or inner.evaluate("d => d.open"),
        "visible": pre.is_visible(),
    }
    outer.locator("summary").first.click()
    middle = {"open": outer.evaluate("d => d.open"), "visible": pre.is_visible()}
    inner.locator("summary").first.click()
    after = {"open": inner.evaluate("d => d.open"), "visible": pre.is_visible()}
    return {"tried": True, "before": before, "outer_opened": middle, "after": after}


def main():
    url = sys.argv[1]
    chromium = os.environ.get("COMPACTOR_CHROMIUM", "/usr/bin/chromium")
    profile = tempfile.mkdtemp(prefix="compactor-browser-")
    requests, console_errors, dialogs = [], [], []
    try:
        with sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                profile, executable_path=chromium, headless=True, args=ARGS
            )
            page = context.new_page()
            page.on("request", lambda r: requests.append(r.url))
            page.on(
                "console",
                lambda m: console_errors.append(m.text) if m.type == "error" else None,
            )
            page.on("pageerror", lambda e: console_errors.append(str(e)))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            started = time.monotonic()
            response = page.goto(url, wait_until="load", timeout=60_000)
            wall_ms = (time.monotonic() - started) * 1000.0
            nav = page.evaluate(
                "() => { const n = performance.getEntriesByType('navigation')[0];"
                " return n ? {load: n.loadEventEnd, dom: n.domContentLoadedEventEnd} : null; }"
            )
            figure = page.locator("#chart")
            out = {
                "status": response.status if response else None,
                "title": page.title(),
                "wall_ms": wall_ms,
                "navigation": nav,
                "html_bytes": len(page.content()),
                "chart": figure.count() > 0,
                "chart_requests": figure.get_attribute("data-requests") if figure.count() else None,
                "chart_points": figure.get_attribute("data-points") if figure.count() else None,
                "svg_visible": page.locator("#chart svg").first.is_visible() if figure.count() else False,
                "marks": page.evaluate(MARKS),
                "passes": page.evaluate(ROWS),
                "pass_sections": page.locator("section.pass").count(),
                "sessions": page.evaluate(SESSIONS),
                "fold": fold(page),
            }
            context.close()
        out["requests"] = requests
        out["console_errors"] = console_errors
        out["dialogs"] = dialogs
        print(json.dumps(out))
    finally:
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main()
