"""Headless Chromium for the browser tests: Debian's chromium driven by Playwright (which never
downloads a browser of its own), pages that record every console error, uncaught exception and
failed request, and the folder screenshots go to (SEARCHSVC_SCREENSHOTS, else the test's temp
dir) for people to look at."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def launch(playwright: Any) -> Any:
    """Debian's chromium, headless. Assertions on its pages wait up to 30 s (Playwright's
    default is 5 s): a page the service renders on request, beside a test suite that keeps
    every core busy, can take longer than that."""
    from playwright.sync_api import expect

    assert CHROMIUM, "Debian's chromium is not installed (make test installs it)"
    expect.set_options(timeout=30_000)
    return playwright.chromium.launch(
        executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])


def watched_page(browser: Any, errors: list[str], height: int = 900) -> Any:
    """A new page whose console errors, page errors and 4xx/5xx responses go to ``errors``."""
    page = browser.new_page(viewport={"width": 1280, "height": height})
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}")
            if r.status >= 400 else None)
    return page


def screenshot_dir(tmp_path: Path) -> Path:
    shots = Path(os.environ.get("SEARCHSVC_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    return shots
