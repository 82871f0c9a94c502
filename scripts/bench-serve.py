#!/usr/bin/env python3
"""`uffs serve` on the benchmark volume: HTTP search latency and the web page's time from keystroke to rows.

    python3 scripts/bench-serve.py /work/bench/bench.img [--runs 31] [--clients 64 --load-seconds 10] [--load-only]
    ($UFFS_PY, default /opt/uffs-py/bin/python, runs the browser part: it needs selenium; see scripts/setup.sh)

Starts a private daemon (its own cache and runtime folders) with the volume registered, and `uffs serve` on a
free loopback port in front of it. Then:
  1. HTTP: GET /api/search for targeted queries (as bench/queries.tsv's "targeted" class) and a few broader
     ones, on one kept-alive connection, from the request's first byte sent to the answer's last byte read;
     warm (the first answer of each is reported apart). Also a new connection per request.
  2. Load: --clients (default 64) clients at once, each on its own kept-alive connection, asking targeted and
     broader queries in turn for --load-seconds (and at most --load-requests each): queries per second, and
     the latency median, p99 and max, from the request's first byte to the answer's last. The clients run in
     4 processes of threads on the same machine as the server, so they take some of its cores.
  3. The page in headless Chromium: each query typed into the search box as keystrokes; the page records the
     milliseconds from the last keystroke to its rows on screen (window.uffsTimings). Medians per query.
Prints figures; asserts nothing about time (targets: HTTP median at most 3 ms for a targeted query; first rows
at most 100 ms after a keystroke). Needs a release build (cargo build --release).
"""

import argparse
import http.client
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

from benchlib import UFFS, PrivateDaemon, need_release_build
PY = os.environ.get("UFFS_PY", "/opt/uffs-py/bin/python")

TARGETED = ["kernel32.dll", "uiaclient*", "ext:vhdx", "79rhkp1fnd", "wholeword:catroot"]
BROADER = [("dll", {}), ("*.mui", {"sort": "size", "reverse": "true"}), ("system32/drivers", {"sort": "path"}),
           ("size:>1gb", {"sort": "size", "reverse": "true"})]
PAGE_QUERIES = ["kernel32.dll", "uiaclient", "ext:vhdx", "catroot", "system32/drivers", "img_"]

BROWSER = r'''
import json, sys, time
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait
url, queries, runs = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
o = webdriver.ChromeOptions()
o.binary_location = "/usr/bin/chromium"
for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,900", "--disable-gpu"):
    o.add_argument(a)
d = webdriver.Chrome(options=o, service=Service("/usr/bin/chromedriver"))
try:
    d.get(url)
    WebDriverWait(d, 60).until(lambda d: "match" in d.find_element(By.ID, "count").text)
    box = d.find_element(By.ID, "q")
    out = {}
    for q in queries:
        out[q] = []
        for _ in range(runs):
            box.send_keys(Keys.ESCAPE)  # clears the box (and searches everything)
            WebDriverWait(d, 60).until(lambda d: d.execute_script(
                "const t = window.uffsTimings; return t.length && t[t.length-1].query === ''"))
            d.execute_script("window.uffsTimings.length = 0")
            box.send_keys(q)
            WebDriverWait(d, 60, poll_frequency=0.02).until(lambda d: d.execute_script(
                "return window.uffsTimings.some(t => t.kind === 'type' && t.query === arguments[0])", q))
            t = d.execute_script(
                "return window.uffsTimings.filter(t => t.kind === 'type' && t.query === arguments[0])[0]", q)
            out[q].append(t)
    print(json.dumps(out))
finally:
    d.quit()
'''


def get(conn, path, token):
    t = time.perf_counter()
    conn.request("GET", path, headers={"Authorization": "Bearer " + token})
    r = conn.getresponse()
    body = r.read()
    ms = (time.perf_counter() - t) * 1000
    if r.status != 200:
        sys.exit(f"bench-serve: {path}: {r.status} {body[:200]!r}")
    return ms, json.loads(body)


def load_process(host, port, token, paths, threads, seconds, max_requests, results):
    """One process of load clients: `threads` threads, each on its own kept-alive connection, asking `paths` in
    turn until `seconds` have passed or it has asked `max_requests`; puts ([(path index, latency in ms)], errors)
    on `results`."""
    def client(k, out):
        conn = http.client.HTTPConnection(host, port, timeout=60)
        lat, errors = [], 0
        end = time.perf_counter() + seconds
        i = k
        while time.perf_counter() < end and len(lat) + errors < max_requests:
            j = i % len(paths)
            i += 1
            t = time.perf_counter()
            try:
                conn.request("GET", paths[j], headers={"Authorization": "Bearer " + token})
                r = conn.getresponse()
                r.read()
                if r.status == 200:
                    lat.append((j, (time.perf_counter() - t) * 1000))
                else:
                    errors += 1
            except (OSError, http.client.HTTPException):
                errors += 1
                conn.close()
                conn = http.client.HTTPConnection(host, port, timeout=60)
        conn.close()
        out.append((lat, errors))
    outs = []
    ts = [threading.Thread(target=client, args=(k, outs)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    results.put(([x for lat, _ in outs for x in lat], sum(e for _, e in outs)))


def load(u, token, clients, seconds, max_requests):
    """`clients` clients at once for `seconds`: queries per second and latency percentiles."""
    paths = ["/api/search?" + urllib.parse.urlencode(dict(q=q, limit=100)) for q in TARGETED]
    paths += ["/api/search?" + urllib.parse.urlencode(dict(q=q, limit=100, **extra)) for q, extra in BROADER]
    paths.append("/api/count?q=dll")
    procs_n = min(4, clients)
    per = [clients // procs_n + (1 if k < clients % procs_n else 0) for k in range(procs_n)]
    results = multiprocessing.Queue()
    t = time.perf_counter()
    procs = [multiprocessing.Process(target=load_process, args=(u.hostname, u.port, token, paths, n, seconds,
                                                                 max_requests, results)) for n in per]
    for p in procs:
        p.start()
    got = [results.get(timeout=seconds + 120) for _ in procs]
    for p in procs:
        p.join()
    wall = time.perf_counter() - t
    answers = [x for ls, _ in got for x in ls]
    errors = sum(e for _, e in got)
    if not answers:
        sys.exit(f"bench-serve: no answers under load ({errors} errors)")

    def pct(lat, q):
        return lat[min(len(lat) - 1, int(q * len(lat)))]
    lat = sorted(ms for _, ms in answers)
    print(f"  {clients} clients, {wall:.1f} s: {len(lat):,} answers, {errors} errors; "
          f"{len(lat) / wall:,.0f} queries/s")
    print(f"  latency: median {pct(lat, 0.5):.2f} ms   p90 {pct(lat, 0.9):.2f} ms   p99 {pct(lat, 0.99):.2f} ms   "
          f"max {lat[-1]:.2f} ms   ({os.cpu_count()} cores, shared with the clients)")
    for j, path in enumerate(paths):
        ms = sorted(m for k, m in answers if k == j)
        if ms:
            q = urllib.parse.unquote_plus(path.split("?", 1)[1])
            print(f"    {q:<58} {len(ms):6,} answers   median {pct(ms, 0.5):7.2f} ms   p99 {pct(ms, 0.99):7.2f} ms")


def line(name, first, times, found):
    print(f"{name:<52} first {first:7.2f} ms   median {statistics.median(times):6.2f} ms   "
          f"min {min(times):6.2f}   max {max(times):7.2f}   found {found:,}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("image")
    ap.add_argument("--runs", type=int, default=31)
    ap.add_argument("--page-runs", type=int, default=7)
    ap.add_argument("--clients", type=int, default=64, help="clients at once in the load part")
    ap.add_argument("--load-seconds", type=float, default=10)
    ap.add_argument("--load-requests", type=int, default=100_000, help="at most this many requests per client")
    ap.add_argument("--load-only", action="store_true", help="only the load part")
    a = ap.parse_args()
    need_release_build("bench-serve")
    with PrivateDaemon([(a.image, "B", "never")], prefix="uffs-bench-serve-") as d:
        measure(a, d.env)


def measure(a, env):
    """`uffs serve` in front of the daemon of `env`: the HTTP figures, the load, the page's."""
    server = None
    try:
        server = subprocess.Popen([UFFS, "serve", "--bind", "127.0.0.1:0"], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        url = server.stdout.readline().decode().strip()
        u = urllib.parse.urlparse(url)
        token = urllib.parse.parse_qs(u.query)["token"][0]
        print(f"volume: {a.image}; uffs serve at {u.scheme}://{u.netloc} through a private daemon; {a.runs} runs")
        if a.load_only:
            print(f"\nLoad: {a.clients} concurrent clients, targeted and broader queries (limit 100), kept-alive:")
            load(u, token, a.clients, a.load_seconds, a.load_requests)
            return

        print("\nHTTP /api/search, one kept-alive connection, request sent to last byte read (limit 100):")
        conn = http.client.HTTPConnection(u.hostname, u.port)
        medians = {}
        for q, extra in [(q, {}) for q in TARGETED] + BROADER:
            params = dict(q=q, limit=100, **extra)
            path = "/api/search?" + urllib.parse.urlencode(params)
            first, v = get(conn, path, token)
            times = [get(conn, path, token)[0] for _ in range(a.runs)]
            medians[q] = statistics.median(times)
            line(f"{q} {' '.join(f'{k}={v}' for k, v in extra.items())}", first, times, v["found"])
        targeted = [medians[q] for q in TARGETED]
        print(f"targeted queries: median of medians {statistics.median(targeted):.2f} ms "
              f"(target: at most 3 ms)")

        print("\nHTTP, a new connection per request:")
        for q in TARGETED[:2]:
            path = "/api/search?" + urllib.parse.urlencode(dict(q=q, limit=100))
            times = []
            for _ in range(a.runs):
                c = http.client.HTTPConnection(u.hostname, u.port)
                t = time.perf_counter()
                c.connect()
                ms, v = get(c, path, token)
                times.append((time.perf_counter() - t) * 1000)
                c.close()
            line(f"{q} (connect included)", times[0], times[1:], v["found"])
        for p in ["/api/count?q=dll", "/api/du?depth=1&limit=20"]:
            first, v = get(conn, p, token)
            times = [get(conn, p, token)[0] for _ in range(a.runs)]
            line(p, first, times, v.get("count", len(v.get("rows", []))))

        print(f"\nLoad: {a.clients} concurrent clients, targeted and broader queries (limit 100), kept-alive:")
        load(u, token, a.clients, a.load_seconds, a.load_requests)

        print(f"\nThe page in headless Chromium: last keystroke to rows on screen ({a.page_runs} runs each):")
        if not os.path.exists(PY):
            print(f"  skipped: {PY} is missing (scripts/setup.sh makes it)")
            return
        out = subprocess.run([PY, "-c", BROWSER, url, json.dumps(PAGE_QUERIES), str(a.page_runs)],
                             capture_output=True, timeout=900)
        if out.returncode != 0:
            sys.exit(f"bench-serve: browser: {out.stderr.decode(errors='replace')[-2000:]}")
        page = json.loads(out.stdout.decode().splitlines()[-1])
        all_ms = []
        for q, ts in page.items():
            ms = [t["ms"] for t in ts]
            all_ms += ms
            print(f"  {q:<30} median {statistics.median(ms):6.1f} ms   min {min(ms):6.1f}   max {max(ms):6.1f}"
                  f"   found {ts[-1]['found']:,}")
        print(f"  all queries: median {statistics.median(all_ms):.1f} ms (target: at most 100 ms; includes the "
              f"page's 20 ms debounce)")
    finally:
        if server:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
