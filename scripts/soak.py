#!/usr/bin/env python3
"""Soak: one daemon for a long run, its benchmark volume changed all the time, many clients, kills, checks.

    sudo python3 scripts/soak.py /work/bench/bench.img [--minutes 30] [--clients 16] [--kill-every 4]

Run by hand (root: ntfs-3g mounts), not in CI; it prints figures and asserts nothing about time. Needs a release
build (cargo build --release). Works on a sparse copy of the volume beside it (IMAGE.soak/), removed at the end.

- One private daemon (its own cache and runtime folders) with three volumes: the copy of the benchmark volume
  (B, checked for changes every 5 s), the Linux-made sample volume (L) and the Windows XP `$MFT` capture (X).
- A mutator changes B all the time through the real ntfs-3g driver: files created, deleted, renamed and moved,
  sizes changed (truncated, extended), times set, named streams written, small folders made, moved and removed,
  and a very large folder (the one with the most entries below the root) renamed, and back, every --big-every
  seconds.
- Clients (a third each): `uffs QUERY` processes, HTTP GETs to `uffs serve`, and MCP `search` calls to
  long-lived `uffs mcp` sessions, each a loop of queries.
- After every minute of changes the mutator pauses and the volume is unmounted (so the image holds every
  change), the daemon is asked to refresh B, a fresh index of the same state is built (`uffs index`), and the
  daemon's answer for every entry of B (path, size, allocated, modified) is compared with the fresh index's: any
  difference is a wrong answer. The run goes on until --minutes have passed (the checks' time included). Every
  --kill-every checks the daemon is killed (SIGKILL) and started again; the time until it answers B's count
  correctly is its recovery time.
- Each check prints (`min` counts the minutes of changes, `at` the minutes since the start): queries served and
  failed, wrong answers, p50 and p99 latency, the daemon's RSS after the minute, the files in its cache folder
  (a leaked delta, slot or temporary file shows there), and the times of the check. The summary at the end gives
  the totals and the RSS trend.
"""

import argparse
import csv
import http.client
import io
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

from benchlib import ROOT, UFFS, Mcp, PrivateDaemon, need_release_build

QUERIES = ["kernel32.dll", "uiaclient*", "ext:dll", "*.mui", "system32/drivers", "size:>100mb", "ext:txt soak",
           "soak_", "dm:today", "wholeword:catroot", "ext:jpg;png", "folder:node_modules"]


def pct(v, p):
    if not v:
        return 0.0
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100 * len(v)))]


class Stats:
    """Counters shared by the clients; swapped out once a minute."""

    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        self.ms, self.failed, self.unavailable = [], 0, 0

    def ok(self, ms):
        with self.lock:
            self.ms.append(ms)

    def fail(self, restarting, why):
        with self.lock:
            if restarting:
                self.unavailable += 1
            else:
                self.failed += 1
                if self.failed <= 3:
                    print(f"  client error: {why[:300]}", flush=True)

    def take(self):
        with self.lock:
            out = (self.ms, self.failed, self.unavailable)
            self.reset()
            return out


class Soak:
    def __init__(self, a):
        self.a = a
        self.work = a.image + ".soak"
        self.img = os.path.join(self.work, "live.img")
        self.mnt = os.path.join(self.work, "mnt")
        self.daemon = None
        self.env = None
        self.stop = threading.Event()
        self.paused = threading.Event()
        self.idle = threading.Event()
        self.restarting = threading.Event()
        self.stats = Stats()
        self.rng = random.Random(a.seed)
        self.serve = None
        self.url = None
        self.ops = 0
        self.refresh_failures = 0

    def uffs(self, *args, check=True, capture=True, timeout=600):
        p = subprocess.run([UFFS, *args], env=self.env, capture_output=capture, timeout=timeout)
        if check and p.returncode != 0:
            raise RuntimeError(f"uffs {' '.join(args)}: exit {p.returncode}: {p.stderr.decode(errors='replace')}")
        return p

    # -- the volume and its mount --------------------------------------------------------------------------
    def mount(self):
        os.makedirs(self.mnt, exist_ok=True)
        subprocess.run(["ntfs-3g", "-o", "big_writes,streams_interface=windows", self.img, self.mnt], check=True)

    def unmount(self):
        for _ in range(50):
            if subprocess.run(["umount", self.mnt], stderr=subprocess.DEVNULL).returncode == 0:
                break
            time.sleep(0.2)
        # umount returns before ntfs-3g has written everything: wait for the driver to exit.
        for _ in range(100):
            if subprocess.run(["pgrep", "-f", f"ntfs-3g.*{self.img}"], stdout=subprocess.DEVNULL).returncode != 0:
                return
            time.sleep(0.1)

    # -- the daemon -----------------------------------------------------------------------------------------
    def rss_mb(self):
        pid = self.daemon.pid()
        try:
            for line in open(f"/proc/{pid}/status"):
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except (OSError, TypeError):
            pass
        return 0.0

    def wait_count(self, want=None, limit=600):
        t = time.perf_counter()
        while time.perf_counter() - t < limit:
            p = self.uffs("*", "--volume", "B", "--count", check=False)
            if p.returncode == 0 and (want is None or int(p.stdout.decode().strip()) == want):
                return time.perf_counter() - t
            time.sleep(0.05)
        raise RuntimeError("the daemon did not answer B's count in time")

    def start_serve(self):
        self.serve = subprocess.Popen([UFFS, "serve", "--bind", "127.0.0.1:0"], env=self.env,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.url = urllib.parse.urlparse(self.serve.stdout.readline().decode().strip())
        self.token = urllib.parse.parse_qs(self.url.query)["token"][0]

    # -- the mutator ----------------------------------------------------------------------------------------
    def largest_folder(self):
        p = self.uffs("du", "B:\\", "--sort", "count", "--limit", "1", "--format", "csv")
        row = next(csv.DictReader(io.StringIO(p.stdout.decode())))
        return row["path"].split(":", 1)[-1].replace("\\", "/").strip("/")

    def mutate(self):
        rng = random.Random(self.a.seed + 1)
        base = os.path.join(self.mnt, "soak")
        os.makedirs(base, exist_ok=True)
        dirs = [base]
        files = []
        big, big_moved, big_at = self.big, False, time.time() + self.a.big_every
        n = 0
        while not self.stop.is_set():
            if self.paused.is_set():
                self.idle.set()
                time.sleep(0.05)
                continue
            self.idle.clear()
            n += 1
            try:
                k = rng.randrange(100)
                if k < 30 or not files:
                    f = os.path.join(rng.choice(dirs), f"soak_{n}.{rng.choice(['txt', 'dat', 'log'])}")
                    with open(f, "wb") as o:
                        o.write(os.urandom(rng.choice([0, 100, 3000, 70000, 400000])))
                    files.append(f)
                elif k < 45:
                    f = files.pop(rng.randrange(len(files)))
                    os.remove(f)
                elif k < 55:
                    i = rng.randrange(len(files))
                    new = os.path.join(os.path.dirname(files[i]), f"soak_ren_{n}.txt")
                    os.rename(files[i], new)
                    files[i] = new
                elif k < 63:
                    i = rng.randrange(len(files))
                    new = os.path.join(rng.choice(dirs), os.path.basename(files[i]))
                    if not os.path.exists(new):
                        os.rename(files[i], new)
                        files[i] = new
                elif k < 71:
                    os.truncate(rng.choice(files), rng.choice([0, 10, 5000, 250000, 2 << 20]))
                elif k < 79:
                    t = time.time() - rng.randrange(10 ** 8)
                    os.utime(rng.choice(files), (t, t))
                elif k < 85:
                    with open(rng.choice(files) + ":soakstream", "wb") as o:
                        o.write(b"s" * rng.choice([10, 5000, 100000]))
                elif k < 92:
                    d = os.path.join(rng.choice(dirs), f"soakdir_{n}")
                    os.mkdir(d)
                    dirs.append(d)
                elif big and time.time() >= big_at:
                    # The very large folder: renamed, and back the next time.
                    src, dst = (big + "_soak", big) if big_moved else (big, big + "_soak")
                    os.rename(os.path.join(self.mnt, src), os.path.join(self.mnt, dst))
                    big_moved = not big_moved
                    big_at = time.time() + self.a.big_every
                elif len(dirs) > 1:
                    # A small folder moved with what it holds (not into itself or below it).
                    d = rng.choice(dirs[1:])
                    to = rng.choice([x for x in dirs if not (x + "/").startswith(d + "/")])
                    new = os.path.join(to, f"soakmv_{n}")
                    os.rename(d, new)
                    dirs = [new + x[len(d):] if (x + "/").startswith(d + "/") else x for x in dirs]
                    files = [new + x[len(d):] if x.startswith(d + "/") else x for x in files]
                self.ops += 1
            except OSError:
                pass
            time.sleep(self.a.op_pause)
        self.idle.set()

    # -- the clients ----------------------------------------------------------------------------------------
    def client(self, i):
        rng = random.Random(self.a.seed * 100 + i)
        kind = ["cli", "http", "mcp"][i % 3]
        conn, mcp = None, None
        while not self.stop.is_set():
            q = rng.choice(QUERIES)
            restarting = self.restarting.is_set()
            t = time.perf_counter()
            try:
                if kind == "cli":
                    p = subprocess.run([UFFS, q, "--limit", "50"], env=self.env, capture_output=True, timeout=120)
                    if p.returncode not in (0, 1):
                        raise RuntimeError(p.stderr.decode(errors="replace"))
                elif kind == "http":
                    if conn is None:
                        conn = http.client.HTTPConnection(self.url.hostname, self.url.port, timeout=120)
                    conn.request("GET", "/api/search?" + urllib.parse.urlencode(dict(q=q, limit=50)),
                                 headers={"Authorization": "Bearer " + self.token})
                    r = conn.getresponse()
                    body = r.read()
                    if r.status != 200:
                        raise RuntimeError(f"HTTP {r.status} {body[:200]!r}")
                    json.loads(body)["found"]
                else:
                    if mcp is None:
                        mcp = Mcp(self.env)
                    mcp.search(q, limit=50)
                self.stats.ok((time.perf_counter() - t) * 1000)
            except Exception as e:  # noqa: BLE001 -- every failure is counted and the client goes on
                self.stats.fail(restarting or self.restarting.is_set(), f"{kind} {q!r}: {e}")
                if conn is not None:
                    conn.close()
                    conn = None
                if mcp is not None:
                    mcp.close()
                    mcp = None
                time.sleep(0.2)
        if mcp is not None:
            mcp.close()

    # -- the minute's check ---------------------------------------------------------------------------------
    def entries(self, args, daemon):
        """Every entry of B as (path, size, allocated, modified): the daemon's paths read `B:\\...`."""
        out = self.uffs("*", *args, "--format", "csv", "--columns", "path,size,allocated,modified").stdout
        rows = set()
        for r in csv.reader(io.StringIO(out.decode(errors="surrogateescape"))):
            if r[0] == "path":
                continue
            if daemon:
                r[0] = r[0].split(":", 1)[-1].replace("\\", "/")
            rows.add(tuple(r))
        return rows

    def check(self, minute, kill):
        self.paused.set()
        self.idle.wait(60)
        self.unmount()
        t = time.perf_counter()
        p = self.uffs("volumes", "refresh", "B", check=False)
        refresh = time.perf_counter() - t
        if p.returncode != 0:
            print(f"  refresh failed: {p.stderr.decode(errors='replace').strip()}", flush=True)
            self.refresh_failures += 1
        fresh = os.path.join(self.work, "fresh.uffs")
        t = time.perf_counter()
        self.uffs("index", self.img, "-o", fresh)
        build = time.perf_counter() - t
        want = self.entries(["--index", fresh], False)
        got = self.entries(["--volume", "B"], True)
        wrong = len(want ^ got)
        if wrong:
            print(f"  WRONG: {len(want - got)} rows of the fresh index missing from the daemon's, "
                  f"{len(got - want)} extra; e.g. {sorted(want - got)[:2]} {sorted(got - want)[:2]}", flush=True)
        rss = self.rss_mb()  # before a kill: the daemon after a minute of work
        recover = None
        if kill:
            self.restarting.set()
            pid = self.daemon.pid()
            os.kill(pid, signal.SIGKILL)
            while os.path.exists(f"/proc/{pid}") and open(f"/proc/{pid}/stat").read().split()[2] != "Z":
                time.sleep(0.01)
            t = time.perf_counter()
            self.uffs("daemon", "start")
            self.wait_count(len(want))
            recover = time.perf_counter() - t
            self.restarting.clear()
        os.remove(fresh)
        cache = sorted(os.listdir(os.path.join(self.work, "cache")))
        self.mount()
        self.paused.clear()
        return dict(minute=minute, wrong=wrong, entries=len(want), refresh=refresh, build=build, recover=recover,
                    rss=rss, cache=cache)

    def run(self):
        a = self.a
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        print(f"soak: copying {a.image} (sparse) ...", flush=True)
        subprocess.run(["cp", "--sparse=always", a.image, self.img], check=True)
        for src in [os.path.join(ROOT, "tests/data/linux-made/testfs1"), os.path.join(ROOT, "tests/data/windows-xp-mft/MFT")]:
            shutil.copy(src, self.work)
        self.daemon = PrivateDaemon([(self.img, "B", "5s"), (os.path.join(self.work, "testfs1"), "L", "5s"),
                                     (os.path.join(self.work, "MFT"), "X", "never")], work=self.work).__enter__()
        self.env = dict(self.daemon.env, NO_COLOR="1")
        self.start_serve()
        self.big = self.largest_folder()
        self.mount()
        print(f"soak: {a.minutes} minutes, {a.clients} clients (uffs QUERY, HTTP, MCP), daemon killed every "
              f"{a.kill_every} minutes; the large folder moved: /{self.big}", flush=True)
        print(f"{'min':>3} {'at':>5} {'served':>7} {'failed':>6} {'unavail':>7} {'wrong':>5} {'p50 ms':>7} {'p99 ms':>8} "
              f"{'RSS MB':>7} {'cache files':>11} {'ops':>6} {'refresh s':>9} {'fresh s':>7} {'recover s':>9}",
              flush=True)
        threads = [threading.Thread(target=self.mutate, daemon=True)]
        threads += [threading.Thread(target=self.client, args=(i,), daemon=True) for i in range(a.clients)]
        for t in threads:
            t.start()
        minutes, all_ms = [], []
        t0 = time.time()
        try:
            m = 0
            while time.time() - t0 < 60 * a.minutes:
                # A minute of changes, then the check (which pauses them): its time is not taken from the changes.
                time.sleep(60)
                m += 1
                ops = self.ops
                c = self.check(m, a.kill_every and m % a.kill_every == 0)
                ms, failed, unavailable = self.stats.take()
                all_ms += ms
                c.update(served=len(ms), failed=failed, unavailable=unavailable, p50=pct(ms, 50), p99=pct(ms, 99),
                         ops=ops)
                minutes.append(c)
                rec = f"{c['recover']:9.2f}" if c["recover"] is not None else f"{'':>9}"
                print(f"{m:>3} {(time.time() - t0) / 60:>5.1f} {c['served']:>7} {failed:>6} {unavailable:>7} {c['wrong']:>5} {c['p50']:>7.1f} "
                      f"{c['p99']:>8.1f} {c['rss']:>7.1f} {len(c['cache']):>11} {ops:>6} {c['refresh']:>9.2f} "
                      f"{c['build']:>7.2f} {rec}", flush=True)
        finally:
            self.stop.set()
            for t in threads:
                t.join(timeout=30)
            self.unmount()
            if self.serve:
                self.serve.terminate()
                self.serve.wait()
            self.daemon.__exit__()
            shutil.rmtree(self.work, ignore_errors=True)
        rss = [c["rss"] for c in minutes]
        print("\nsummary:")
        print(f"  minutes {len(minutes)}; queries served {sum(c['served'] for c in minutes):,}, failed "
              f"{sum(c['failed'] for c in minutes)}, unavailable while the daemon restarted "
              f"{sum(c['unavailable'] for c in minutes)}")
        print(f"  wrong answers (daemon against a fresh index, every entry of B, each minute): "
              f"{sum(c['wrong'] for c in minutes)}")
        print(f"  latency over the run: p50 {pct(all_ms, 50):.1f} ms, p99 {pct(all_ms, 99):.1f} ms")
        if rss:
            half = len(rss) // 2 or 1
            print(f"  daemon RSS: first {rss[0]:.1f} MB, min {min(rss):.1f}, max {max(rss):.1f}, last {rss[-1]:.1f}; "
                  f"mean of the first half {statistics.mean(rss[:half]):.1f}, of the second "
                  f"{statistics.mean(rss[half:]):.1f}")
        rec = [c["recover"] for c in minutes if c["recover"] is not None]
        if rec:
            print(f"  kills {len(rec)}; recovery (start to B's correct count): "
                  f"{', '.join(f'{r:.2f}' for r in rec)} s")
        print(f"  refreshes asked that failed: {self.refresh_failures}")
        print(f"  changes made through ntfs-3g: {self.ops:,}; cache folder at the end: "
              f"{minutes[-1]['cache'] if minutes else []}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("image")
    ap.add_argument("--minutes", type=int, default=30)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--kill-every", type=int, default=4, help="checks between SIGKILLs of the daemon (0: never)")
    ap.add_argument("--op-pause", type=float, default=0.05, help="seconds between two changes")
    ap.add_argument("--big-every", type=float, default=60, help="seconds between two renames of the large folder")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("soak: needs root (ntfs-3g mounts)")
    need_release_build("soak")
    Soak(a).run()


if __name__ == "__main__":
    main()
