"""Headless Chromium for the workbench's tests and benchmark: Debian's ``chromium`` driven by
Selenium through ``chromium-driver``, with the flags this machine's closed network needs."""

from __future__ import annotations

import shutil

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")

#: Headless, no sandbox (CI runs as root), and none of the background connections (updates,
#: sync, safe browsing) that a closed network refuses, many at a time.
CHROME_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--window-size=1400,1000",
    "--autoplay-policy=no-user-gesture-required",
    "--mute-audio",
)


def missing() -> str | None:
    """Why a browser cannot be started here (None when it can)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    if not (CHROMIUM and CHROMEDRIVER):
        return (
            "needs Debian's chromium and chromium-driver (apt-get install chromium "
            "chromium-driver; .ci/run installs them)"
        )
    return None


def chrome(extra: tuple[str, ...] = ()):
    """A new headless Chromium session (close it with ``.quit()``)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    for flag in (*CHROME_FLAGS, *extra):
        opts.add_argument(flag)
    opts.binary_location = CHROMIUM
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
