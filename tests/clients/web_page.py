#!/usr/bin/env python3
"""The web page of `uffs serve` in a real browser (headless Chromium through selenium), as a person uses it.

    web_page.py --url URL --uffs BIN --index FILE --query Q --artifacts DIR

URL is what `uffs serve --index FILE` printed (with its token). The page is opened, Q typed into the search box,
and the rows it shows are compared with `uffs Q --index FILE --format jsonl` (the same order and paths): as
typed (index order), sorted by size (largest first), on the next page; then keyboard selection and Enter
(copies the path), a bad query's error, and the disk usage view (treemap, drilling into a folder, the
breadcrumb back up). Screenshots of the search and disk usage views go to DIR. Prints one JSON line with the
browser's timings; exits non-zero with a message on the first check that fails.

    web_page.py ... --rows-only

checks only the rows and the count, as typed and sorted by size, saves DIR/serve-rows.png, then that the query
with `| a` after it shows the refusal of a data term inside OR: for a query whose answer takes reading the files
(`content:`, `type:`), from an index whose volume is at hand.
"""

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

PAGE = 100


def browser():
    o = webdriver.ChromeOptions()
    o.binary_location = os.environ.get("UFFS_CHROMIUM", "/usr/bin/chromium")
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,900",
              "--disable-gpu", "--no-first-run", "--disable-extensions"):
        o.add_argument(a)
    svc = Service(os.environ.get("UFFS_CHROMEDRIVER", "/usr/bin/chromedriver"))
    return webdriver.Chrome(options=o, service=svc)


def expected(a, *extra):
    out = subprocess.run([a.uffs, a.query, "--index", a.index, "--format", "jsonl", "--columns", "path",
                          "--limit", str(PAGE), *extra], capture_output=True, check=False)
    if out.returncode not in (0, 1):
        sys.exit(f"uffs failed: {out.stderr.decode(errors='replace')}")
    return [json.loads(l)["path"] for l in out.stdout.decode().splitlines() if l]


def shown(d):
    return d.execute_script(
        "return Array.from(document.querySelectorAll('#results tbody tr')).map(r => r.dataset.path)")


def wait_rows(d, want, what):
    try:
        WebDriverWait(d, 20, poll_frequency=0.05).until(lambda d: shown(d) == want)
    except Exception:
        got = shown(d)
        sys.exit(f"{what}: the page shows {len(got)} rows, first {got[:3]}; expected {len(want)}, first {want[:3]}")


def check(cond, msg):
    if not cond:
        sys.exit(msg)


def status_of(url, headers):
    req = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def check_guard(a, d):
    """The API refuses a request without the token, from another site (Origin) or through another name (Host)."""
    u = urllib.parse.urlparse(a.url)
    token = urllib.parse.parse_qs(u.query)["token"][0]
    api = f"http://{u.netloc}/api/status"
    auth = {"Authorization": "Bearer " + token}
    check(status_of(api, auth) == 200, "the API refuses its own token")
    check(status_of(api, {}) == 403, "the API answers without a token")
    check(status_of(api, {**auth, "Origin": "http://evil.example"}) == 403, "the API answers another Origin")
    check(status_of(api, {**auth, "Host": f"evil.example:{u.port}"}) == 403, "the API answers another Host")
    check(status_of(f"http://{u.netloc}/", {}) == 403, "the page is served without its token")
    # From inside the page: a fetch without the header is refused too.
    st = d.execute_async_script(
        "const done = arguments[0]; fetch('/api/status').then(r => done(r.status)).catch(e => done(String(e)))")
    check(st == 403, f"a fetch without the token got {st}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--uffs", required=True)
    ap.add_argument("--index", required=True)
    ap.add_argument("--query", required=True)
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--rows-only", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.artifacts, exist_ok=True)
    d = browser()
    try:
        d.set_page_load_timeout(20)
        d.get(a.url)
        WebDriverWait(d, 20).until(lambda d: "match" in d.find_element(By.ID, "count").text)

        box = d.find_element(By.ID, "q")
        box.send_keys(a.query)
        if a.rows_only:
            # A query that reads the files waits for Enter.
            time.sleep(0.3)
            check("Enter" in d.find_element(By.ID, "count").text,
                  f"a data term ran as it was typed: {d.find_element(By.ID, 'count').text!r}")
            box.send_keys(Keys.ENTER)
        first = expected(a)
        check(len(first) > 0, f"no rows for {a.query!r}: pick a query that finds something")
        wait_rows(d, first, f"typed {a.query!r}")
        total = int(subprocess.run([a.uffs, a.query, "--index", a.index, "--count"], capture_output=True)
                    .stdout.decode().strip())
        count = d.find_element(By.ID, "count").text
        check(count.replace(",", "").replace("\u202f", "").startswith(str(total)),
              f"the count shows {count!r}, uffs --count says {total}")

        d.find_element(By.CSS_SELECTOR, "th[data-sort=size]").click()
        by_size = expected(a, "--sort", "size", "--reverse")
        wait_rows(d, by_size, "sorted by size")
        sizes = d.execute_script(
            "return Array.from(document.querySelectorAll('#results tbody td.c-size')).map(c => c.textContent)")
        check(all(s for s in sizes[:5]), f"sizes not shown: {sizes[:5]}")
        if a.rows_only:
            d.save_screenshot(os.path.join(a.artifacts, "serve-rows.png"))
            rows = shown(d)
            # Inside OR, a data term is refused: the page shows why, with the caret under the term.
            box.send_keys(" | a", Keys.ENTER)
            WebDriverWait(d, 10).until(lambda d: "beside the rest" in d.find_element(By.ID, "error").text)
            msg = d.find_element(By.ID, "error").text
            check("^" in msg and d.find_element(By.ID, "error").is_displayed(), f"error shown: {msg!r}")
            print(json.dumps({"ok": True, "rows": rows, "timings": d.execute_script("return window.uffsTimings")}))
            return

        if total > PAGE:
            d.find_element(By.ID, "next").click()
            page2 = expected(a, "--sort", "size", "--reverse", "--offset", str(PAGE))
            wait_rows(d, page2, "next page")
            info = d.find_element(By.ID, "pageinfo").text
            check(info.startswith("101"), f"page info {info!r}")
            # A reload keeps the query, the order and the page (they are in the address's fragment).
            d.refresh()
            wait_rows(d, page2, "the next page after a reload")
            check(d.find_element(By.ID, "q").get_attribute("value") == a.query, "the query is lost on reload")
            box = d.find_element(By.ID, "q")
            d.find_element(By.ID, "prev").click()
            wait_rows(d, by_size, "previous page")

        # Keyboard: two rows down, Enter copies the third row's path.
        box.send_keys(Keys.ARROW_DOWN, Keys.ARROW_DOWN, Keys.ENTER)
        WebDriverWait(d, 5).until(lambda d: d.execute_script("return window.uffsCopied") is not None)
        copied = d.execute_script("return window.uffsCopied")
        check(copied == by_size[2], f"Enter copied {copied!r}, expected the third row {by_size[2]!r}")
        sel = d.execute_script("return document.querySelector('#results tbody tr.sel').dataset.path")
        check(sel == by_size[2], f"selected {sel!r}")
        d.save_screenshot(os.path.join(a.artifacts, "serve-search.png"))

        # A bad query: the error, with its caret, instead of rows.
        box.send_keys(" size:>zz")
        WebDriverWait(d, 10).until(lambda d: d.find_element(By.ID, "error").is_displayed())
        msg = d.find_element(By.ID, "error").text
        check("^" in msg and "size:>zz" in msg, f"error shown: {msg!r}")
        d.save_screenshot(os.path.join(a.artifacts, "serve-error.png"))
        for _ in range(len(" size:>zz")):
            box.send_keys(Keys.BACKSPACE)
        wait_rows(d, by_size, "after fixing the query")
        check(not d.find_element(By.ID, "error").is_displayed(), "the error stays after the query was fixed")

        # Disk usage: the treemap of the root, a folder drilled into, the breadcrumb back.
        d.find_element(By.ID, "tab-du").click()
        WebDriverWait(d, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#treemap .tile:not(.other):not(.leaf)"))
        tile = d.find_elements(By.CSS_SELECTOR, "#treemap .tile:not(.other):not(.leaf)")[0]
        folder = tile.get_attribute("data-path")
        tile.click()
        name = folder.rstrip("/\\").replace("\\", "/").split("/")[-1]
        WebDriverWait(d, 20).until(lambda d: d.find_element(By.ID, "crumbs").text.endswith(name))
        WebDriverWait(d, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#treemap .tile"))
        du = subprocess.run([a.uffs, "du", folder, "--index", a.index, "--format", "jsonl", "--limit", "40"],
                            capture_output=True, check=True).stdout.decode().splitlines()
        kids = [json.loads(l)["path"] for l in du if json.loads(l)["depth"] == 1]
        tiles = d.execute_script(
            "return Array.from(document.querySelectorAll('#treemap .tile[data-path]')).map(t => t.dataset.path)")
        check(set(tiles) <= set(kids) and tiles, f"tiles {tiles[:3]} not among {folder}'s children {kids[:3]}")
        rows = d.execute_script("return document.querySelectorAll('#du-table tbody tr').length")
        check(rows == len(kids), f"du table has {rows} rows, uffs du {len(kids)}")
        d.save_screenshot(os.path.join(a.artifacts, "serve-du.png"))
        # Tiles by logical size instead of allocated space: the largest tile is the folder's largest child by size.
        by_size = subprocess.run([a.uffs, "du", folder, "--index", a.index, "--format", "jsonl", "--limit", "40",
                                  "--sort", "size"], capture_output=True, check=True).stdout.decode().splitlines()
        first = [json.loads(l)["path"] for l in by_size if json.loads(l)["depth"] == 1][0]
        d.find_element(By.CSS_SELECTOR, "#du-by button[data-by=size]").click()
        WebDriverWait(d, 20).until(lambda d: d.execute_script(
            "return document.querySelector('#du-by button.active').dataset.by") == "size")
        WebDriverWait(d, 20).until(lambda d: d.execute_script(
            "const t = document.querySelector('#treemap .tile[data-path]'); return t && t.dataset.path") == first)
        d.find_element(By.CSS_SELECTOR, "#crumbs a").click()
        WebDriverWait(d, 20).until(lambda d: d.find_element(By.ID, "crumbs").text == "All volumes")

        check_guard(a, d)
        timings = d.execute_script("return window.uffsTimings")
        print(json.dumps({"ok": True, "timings": timings}))
    finally:
        d.quit()


if __name__ == "__main__":
    main()
