"""report.html in a real headless Chromium: it loads from disk with no console errors,
every test's table is there and every chart image has loaded."""
from __future__ import annotations

import shutil

import pytest

from bench.report import html, tables
from tests.unit.conftest import run_doc, case_doc

pytestmark = pytest.mark.browser
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.fixture
def browser():
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.fail("chromium and chromedriver are needed (`make test` installs them: "
                    "apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=opts, service=Service(CHROMEDRIVER))
    yield driver
    driver.quit()


def test_report_opens_from_disk_with_every_table_and_chart(browser, tmp_path):
    doc = run_doc([
        case_doc("fast", "postgres", False, "get user", rps=(9000, 9100, 8950)),
        case_doc("slow", "mysql", True, "get user", rps=(500, 520, 480)),
        case_doc("broken", "mysql", False, "get user", rps=(), status="verification failed",
                reason="GET /user/1/: <script>alert(1)</script> is not a user"),
        case_doc("fast", "none", False, "plain", rps=(90000, 91000, 89000)),
        case_doc("fast", "none", False, "to json", rps=(80000, 81000, 79000)),
    ])
    doc["verification"] = {"broken/mysql/raw": {"passed": False, "reason": "wrong <b>user</b>"}}
    path = html.write(doc, tables.build_tables(doc), tmp_path)
    from selenium.webdriver.common.by import By
    browser.get(path.as_uri())
    headings = [h.text for h in browser.find_elements(By.TAG_NAME, "h2")]
    assert headings[:3] == ["get user", "plain", "to json"]
    assert "Verification" in headings and "Environment" in headings
    assert "cost to run" in headings                       # the samples' memory figures
    page_tables = browser.find_elements(By.TAG_NAME, "table")
    assert len(page_tables) == 3 + 1 + 1       # one per test, cost to run, verification
    assert "9,000 ±" in page_tables[0].text and "verification failed" in page_tables[0].text
    # text from the results is escaped, never run
    assert "<script>alert(1)</script>" in page_tables[0].text
    images = browser.find_elements(By.TAG_NAME, "img")
    # throughput + latency per test, and what each case costs to run
    assert len(images) == 6 + 1
    assert images[-1].get_attribute("alt") == "what each case costs to run"
    for img in images:
        assert browser.execute_script(
            "return arguments[0].complete && arguments[0].naturalWidth > 0", img), \
            img.get_attribute("alt")
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
    browser.save_screenshot(str(tmp_path / "report.png"))
