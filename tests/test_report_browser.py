"""`recall report` as a person sees it: the page rendered by headless Chromium.

A store is built from the shipped examples (with a withdrawn note, a note titled with markup
and a note refused for its date added), its report is written, and Chromium renders it twice:
`--dump-dom` gives the document as the browser built it, `--screenshot` what a 1440×900 laptop
window shows. The screenshot is kept in $RECALL_TEST_ARTIFACTS when it is set, else in the
test's temporary folder; its path is printed (`pytest -s` shows it).

Chromium is required: without a `chromium` on PATH the test fails, naming the install command
(`apt-get install -y chromium` on Debian), unless RECALL_SKIP_BROWSER=1 says to skip it.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

import recall
from recall.report import write_report
from tests.report_pages import MARKUP_TITLE, NOW, example_store, note_nodes

WINDOW = (1440, 900)


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("RECALL_SKIP_BROWSER") == "1":
            pytest.skip("RECALL_SKIP_BROWSER=1: the report is not rendered in a browser")
        pytest.fail(
            "the report's browser test needs Chromium on PATH: install it with "
            "'apt-get install -y chromium' (Debian), or set RECALL_SKIP_BROWSER=1 to skip it"
        )
    return found


def _run(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={profile}",
            "--no-first-run",
            f"--window-size={WINDOW[0]},{WINDOW[1]}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_report_renders_in_chromium(tmp_path: Path) -> None:
    browser = _chromium()
    db, _ = example_store(tmp_path)
    page = tmp_path / "report.html"
    with recall.open(db) as mem:
        written = write_report(mem, page, now=NOW)
        documents = mem.stats().documents
    artifacts = Path(os.environ.get("RECALL_TEST_ARTIFACTS") or tmp_path)
    artifacts.mkdir(parents=True, exist_ok=True)
    shot = artifacts / "recall-report-examples.png"
    shot.unlink(missing_ok=True)
    url = page.resolve().as_uri()

    dom = _run(browser, tmp_path / "profile", "--dump-dom", url).stdout
    parsed = note_nodes(dom)
    # Every note the store holds is drawn once, as the browser built the page.
    assert len(parsed.nodes) == documents == written.notes == 12
    nodes = {n.attrs["data-path"]: n for n in parsed.nodes}
    assert len(nodes) == documents
    # A superseded note and its successor, with their titles on them.
    old, new = nodes["rate-limits-v1.md"], nodes["rate-limits-v2.md"]
    assert old.attrs["data-state"] == "superseded"
    assert old.shown == "Public API rate limits"
    assert new.attrs["data-state"] == "current"
    assert new.shown.startswith("Public API rate limits (2026 revision)")
    # The retired mark is on the withdrawn note, and on no other.
    assert [p for p, n in nodes.items() if n.attrs["data-state"] == "retired"] == [
        "cache-policy.md"
    ]
    assert "withdrawn" in nodes["cache-policy.md"].shown
    assert nodes["oncall-rotation-2025.md"].attrs["data-state"] == "expired"
    # A title written as markup reads as text: the browser built no element from it.
    assert "script" not in parsed.tags
    assert nodes["markup-title.md"].attrs["data-title"] == MARKUP_TITLE
    assert nodes["markup-title.md"].shown.startswith("<script>")
    # The note refused for its date is shown apart from the stored ones.
    assert 'class="unread k-refused"' in dom and "broken-date.md" in dom

    _run(browser, tmp_path / "profile", f"--screenshot={shot}", url)
    data = shot.read_bytes()
    assert _png_size(data) == WINDOW
    # A blank 1440×900 page compresses to a few kilobytes; the drawing makes far more.
    assert len(data) > 40_000, len(data)
    print(f"\nscreenshot of the report: {shot}")
