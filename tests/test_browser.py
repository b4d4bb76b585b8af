"""The HTML report in a real browser: Debian's Chromium, headless, driven by Playwright (setup.sh installs both;
Playwright's own browser downloads are not used). A seed's report and a lab bundle's load without console errors,
show their key parts, and a `<script>` / `<img onerror>` planted in a log line stays text. Screenshots are saved
in the test's tmp folder (pytest keeps the last runs)."""

from __future__ import annotations

import os
import shutil

import pytest

from conftest import DATA

CHROMIUM = next(filter(None, map(shutil.which, ("chromium", "chromium-browser"))), None)
PAYLOAD = ' <script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2">'


def _browser_or_skip():
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing: setup.sh installs it from Debian's packages")
        pytest.skip("Chromium is not installed (setup.sh installs it from Debian's packages)")
    return pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def pages(spark, rules, tmp_path_factory):
    """HTML reports of a seed (its soft lockup line carrying the payload) and of a lab bundle."""
    from flinkdoctor.pipeline import diagnose
    from flinkdoctor.views import render_html

    base = tmp_path_factory.mktemp("browser")
    seed = base / "seed-003"
    shutil.copytree(DATA / "seeds" / "003", seed)
    messages = (seed / "messages").read_text().splitlines(keepends=True)
    lockup = next(i for i, line in enumerate(messages) if "soft lockup" in line)
    messages[lockup] = messages[lockup].rstrip("\n") + PAYLOAD + "\n"
    (seed / "messages").write_text("".join(messages))
    out = {}
    for name, path in (
        ("seed-003", seed),
        ("lab-checkpoint-timeout", DATA / "lab" / "1.20.3" / "checkpoint-timeout.tar.gz"),
    ):
        report = diagnose([path], spark=spark, rules=rules, work_dir=base / f"work-{name}")
        out[name] = base / f"{name}.html"
        out[name].write_text(render_html(report), encoding="utf-8")
    return out


@pytest.mark.parametrize("name", ["seed-003", "lab-checkpoint-timeout"])
def test_report_loads_cleanly_in_chromium(pages, name):
    sync_api = _browser_or_skip()
    problems = []
    with sync_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("request", lambda r: problems.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
            page.goto(pages[name].as_uri())
            for selector in ("#verdict", "#root-causes h3", "svg.timeline", "#accounting table", "button.copy"):
                assert page.locator(selector).first.is_visible(), selector
            assert page.locator("svg.timeline circle.root").count() >= 1
            assert page.evaluate("window.__pwned") is None  # the planted script and handler never ran
            if name == "seed-003":
                assert page.locator("img").count() == 0
                assert "<script>window.__pwned = 1</script>" in page.locator("#cause-1 .line").first.inner_text()
            page.screenshot(path=str(pages[name].with_suffix(".png")), full_page=True)
        finally:
            browser.close()
    assert problems == []
    assert pages[name].with_suffix(".png").stat().st_size > 10_000
