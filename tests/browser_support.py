"""A page loaded in headless Chromium: its console lines and a screenshot."""

from __future__ import annotations

import shutil
import subprocess


def chromium_screenshot(page, tmp_path, size=(1200, 800)) -> tuple[list[str], object]:
    """Load ``page`` (a path) in Debian's chromium, headless: (console lines, screenshot path)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    assert browser, "the HTML test needs Debian's chromium package (apt-get install chromium)"
    shot = tmp_path / "shot.png"
    r = subprocess.run([browser, "--headless", "--disable-gpu", "--no-sandbox", "--enable-logging=stderr",
                        "--v=0", f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
                        f"--window-size={size[0]},{size[1]}", page.as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return [line for line in r.stderr.splitlines() if ":CONSOLE" in line], shot
