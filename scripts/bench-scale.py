#!/usr/bin/env python3
"""The scale workload: many volumes, tens of millions of entries, served by one daemon.

    scripts/bench-scale.py /work/bench/bench.img --volumes 22 [--runs 5] [--offline] [--json]

Uses its own cache and runtime directories beside the volume (VOLUME.scale/cache, VOLUME.scale/run), so it never
touches the user's daemon; each run starts from an empty registry there. The workload:

* sources: the volume's $MFT is extracted once into a raw $MFT capture beside it (`icat VOLUME 0 > VOLUME.mft`,
  The Sleuth Kit; again only when the volume is newer), then hard-linked N times (VOLUME.scale/src/vol01.mft ...),
  so that each link is a volume of its own, named from its file name (vol01 ... volNN; paths print as
  `vol01:/...`). Every volume holds the same entries: a query finds N times what it finds on one.
* registration: `uffs volumes add` of every source (all in one call, which builds the indexes in parallel, one
  thread each; --batch K makes calls of K sources), with --refresh never by default so that no background check
  (whose first one re-scans a whole source) competes with the measured queries; wall time, entries/s (entries
  from `uffs volumes list`), peak RSS of an add process, index bytes on disk;
* --offline: then each source's link is removed, so every volume is offline and answers from its index alone
  (`uffs volumes list` says "offline (source not found)", `uffs daemon status` the daemon's state): the way a
  hundred million entries are served without their disks. Nothing is restored;
* warm start: from spawning `uffs daemon run` to the first answered query (a client connects and asks
  `kernel32.dll --count` as soon as the socket exists), median of --runs after one run that warms the page cache
  (nothing is dropped from it); the count of that first answer is checked against the index files' own;
* end to end: the median wall time (one warm-up run, then --runs) of the whole `uffs QUERY` process (start to
  exit, its output read through a pipe and discarded) for every query of bench/queries.tsv, grouped by class, and
  of everything sorted by modified, newest 100 (`uffs --sort modified --reverse --limit 100`) and the count of
  everything (`uffs --count`);
* memory: the daemon's RSS (VmRSS = RssAnon heap + RssFile mapped index pages, from /proc/PID/status), in total
  and in bytes per entry, after loading, after the query mix, and after `uffs '*' --sort KEY` for every key (name,
  path, size, extension, created, modified, accessed; each run once, every path printed to a pipe, timed) with
  --full-sorts (the mix itself sorts everything by every key, newest or first 100).

Progress goes to stderr; the summary (a table, or JSON with --json) to stdout. --clean removes VOLUME.scale at the
end (VOLUME.mft is kept).
"""
import argparse, importlib.util, json, os, re, shutil, socket, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UFFS = os.path.join(ROOT, "target", "release", "uffs")
spec = importlib.util.spec_from_file_location("bench_daemon", os.path.join(ROOT, "scripts", "bench-daemon.py"))
bd = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bd)

SORT_KEYS = ["name", "path", "size", "extension", "created", "modified", "accessed"]


def say(*a):
    print(*a, file=sys.stderr, flush=True)


def mib(n):
    return n / 2**20


def run_drained(cmd, env):
    """One whole process: wall time from spawn to exit, its output read through a pipe and discarded. Returns
    (seconds, lines printed, the last bytes printed)."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    fd, lines, tail = p.stdout.fileno(), 0, b""
    while chunk := os.read(fd, 1 << 20):
        lines += chunk.count(b"\n")
        tail = (tail + chunk)[-256:]
    p.stdout.close()
    p.wait()
    return time.perf_counter() - t, lines, tail


def median_run(cmd, env, runs):
    """Median wall time in ms (one warm-up run first) and the hits: the count printed, or the lines printed."""
    run_drained(cmd, env)
    ts = []
    for _ in range(runs):
        dt, lines, tail = run_drained(cmd, env)
        ts.append(dt)
    hits = int(tail.strip().replace(b",", b"") or 0) if "--count" in cmd else lines
    return statistics.median(ts) * 1e3, hits


def extract_mft(volume):
    """VOLUME.mft: the volume's $MFT (record 0's $DATA), extracted once with icat."""
    mft = volume + ".mft"
    if os.path.exists(mft) and os.path.getmtime(mft) >= os.path.getmtime(volume):
        return mft, None
    if not shutil.which("icat"):
        sys.exit("bench-scale: icat (The Sleuth Kit) is needed to extract the $MFT: apt-get install sleuthkit")
    say(f"extracting the $MFT of {volume} into {mft} (icat)")
    t = time.perf_counter()
    with open(mft + ".tmp", "wb") as f:
        subprocess.run(["icat", volume, "0"], stdout=f, check=True)
    os.replace(mft + ".tmp", mft)
    return mft, time.perf_counter() - t


def volumes_list(u):
    """(name, entries, offline, index file) per line of `uffs volumes list` (NAME<TAB>SOURCE<TAB>INFO<TAB>INDEX)."""
    out = []
    for line in u("volumes", "list", capture_output=True, text=True, check=True).stdout.splitlines():
        cols = line.split("\t")
        m = re.match(r"([\d,]+) entries", cols[2]) if len(cols) >= 3 else None
        if m:
            out.append((cols[0], int(m.group(1).replace(",", "")), "offline" in cols[2], cols[3]))
    return out


def memory(pid, entries):
    r = bd.rss(pid)
    return {k: r.get(k, 0) for k in ("VmRSS", "RssAnon", "RssFile")} | {
        "bytes_per_entry": r.get("VmRSS", 0) / max(entries, 1),
        "anon_bytes_per_entry": r.get("RssAnon", 0) / max(entries, 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("volume")
    ap.add_argument("--volumes", type=int, required=True, help="how many volumes (copies of the volume's $MFT)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--offline", action="store_true", help="remove every source after registration")
    ap.add_argument("--batch", type=int, default=0, help="sources per `uffs volumes add` call (0: all in one)")
    ap.add_argument("--refresh", default="never", help="the volumes' --refresh (default never; uffs's is 5s)")
    ap.add_argument("--full-sorts", action="store_true",
                    help="also print every path sorted by every key (minutes per key at tens of millions)")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    ap.add_argument("--clean", action="store_true", help="remove VOLUME.scale at the end (keeps VOLUME.mft)")
    a = ap.parse_args()
    if not os.path.exists(UFFS):
        sys.exit(f"bench-scale: {UFFS} is missing: cargo build --release")
    n = a.volumes
    res = {"volume": a.volume, "volumes": n, "runs": a.runs, "offline": a.offline, "refresh": a.refresh}

    # 1. The raw $MFT capture.
    mft, took = extract_mft(a.volume)
    res["mft"] = {"path": mft, "bytes": os.path.getsize(mft), "extract_s": took}

    # 2. N hard links, in a fresh private cache and runtime directory.
    base = a.volume + ".scale"
    env = dict(os.environ, UFFS_CACHE_DIR=os.path.join(base, "cache"), UFFS_RUNTIME_DIR=os.path.join(base, "run"),
               NO_COLOR="1")
    u = lambda *args, **kw: subprocess.run([UFFS, *args], env=env, **kw)
    if os.path.isdir(env["UFFS_CACHE_DIR"]):
        u("daemon", "stop", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for d in ("cache", "run", "src"):
        shutil.rmtree(os.path.join(base, d), ignore_errors=True)
    src = os.path.join(base, "src")
    os.makedirs(src)
    os.makedirs(env["UFFS_CACHE_DIR"])
    width = max(2, len(str(n)))
    sources = [os.path.join(src, f"vol{i:0{width}d}.mft") for i in range(1, n + 1)]
    for s in sources:
        os.link(mft, s)

    # 3. Registration.
    batch = a.batch or n
    say(f"registering {n} volumes ({-(-n // batch)} `uffs volumes add` call(s), --refresh {a.refresh})")
    peak = 0
    t = time.perf_counter()
    for i in range(0, n, batch):
        p = subprocess.Popen([UFFS, "volumes", "add", "--refresh", a.refresh, *sources[i:i + batch]], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        err = p.stderr.read()
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            sys.exit(f"bench-scale: uffs volumes add failed ({p.returncode}):\n{err.decode(errors='replace')}")
        peak = max(peak, ru.ru_maxrss * 1024)
    reg_s = time.perf_counter() - t
    listed = volumes_list(u)
    entries = sum(e for _, e, _, _ in listed)
    if len(listed) != n:
        sys.exit(f"bench-scale: {len(listed)} volumes registered, not {n}")
    index_bytes = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(env["UFFS_CACHE_DIR"])
                      for f in fs if not f.endswith(".log"))
    res["registration"] = {"wall_s": reg_s, "entries": entries, "entries_per_s": entries / reg_s,
                           "peak_rss_bytes": peak, "index_bytes": index_bytes, "calls": -(-n // batch)}
    say(f"  {entries:,} entries in {reg_s:.1f} s ({entries / reg_s / 1e6:.2f} M entries/s), "
        f"add peak RSS {mib(peak):.0f} MiB, index files {mib(index_bytes):.0f} MiB")

    # 7. Offline: every source vanishes.
    if a.offline:
        for s in sources:
            os.unlink(s)
        offline = sum(off for _, _, off, _ in volumes_list(u))
        say(f"  sources removed: `uffs volumes list` says {offline} of {n} offline")
        res["offline_listed"] = offline

    try:
        measure(a, res, env, u)
    finally:
        u("daemon", "stop", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if a.clean:
        shutil.rmtree(base, ignore_errors=True)
    if a.json:
        print(json.dumps(res, indent=2))
    else:
        report(res)
    return 0


def measure(a, res, env, u):
    """Steps 4 to 6, the daemon's: warm start, the query mix, memory."""
    # 4. Warm start.
    sock = os.path.join(env["UFFS_RUNTIME_DIR"], "daemon.sock")
    log = open(os.path.join(env["UFFS_CACHE_DIR"], "daemon.log"), "a")
    say(f"warm start, {a.runs} runs after one that warms the page cache")
    starts, founds = [], set()
    for i in range(a.runs + 1):
        dt, found, p = bd.warm_start(env, log, sock)
        founds.add(found)
        if i > 0:
            starts.append(dt * 1e3)
        u("daemon", "stop", stdout=subprocess.DEVNULL)
        p.wait()
    # What the first answer must count: the probe on each index file, summed.
    expected = sum(int(u("--index", path, "--count", "--", "kernel32.dll", capture_output=True, text=True,
                         check=True).stdout.strip().replace(",", "")) for _, _, _, path in volumes_list(u))
    res["warm_start"] = {"median_ms": statistics.median(starts), "min_ms": min(starts), "max_ms": max(starts),
                         "first_answer_found": sorted(founds), "expected_found": expected}
    if founds != {expected}:
        say(f"  warning: the first answers counted {sorted(founds)}, all volumes hold {expected}")

    # 5. The query mix, end to end.
    u("daemon", "start", stdout=subprocess.DEVNULL, check=True)
    pid = int(open(os.path.join(env["UFFS_RUNTIME_DIR"], "daemon.pid")).read())
    status = json.loads(u("daemon", "status", "--json", capture_output=True, text=True, check=True).stdout)
    served = sum(v["entries"] for v in status["volumes"])
    states = {}
    for v in status["volumes"]:  # grouped without the per-volume detail (the source's path)
        state = re.sub(r" \(source unavailable: .*\)$", "", v["state"])
        states[state] = states.get(state, 0) + 1
    res["daemon"] = {"entries": served, "states": states}
    mem = {"after_load": memory(pid, served)}
    mix = bd.read_mix() + [("everything", "", ["--sort", "modified", "--reverse", "--limit", "100"]),
                           ("everything", "", ["--count"])]
    say(f"{served:,} entries served; states: " + ", ".join(f"{c} {s}" for s, c in states.items()))
    say(f"query mix: {len(mix)} queries, median of {a.runs} after a warm-up run")
    queries = []
    for cls, q, args in mix:
        ms, hits = median_run([UFFS, *args] + (["--", q] if q else []), env, a.runs)
        queries.append({"class": cls, "query": q, "args": args, "median_ms": ms, "hits": hits})
        say(f"  {cls:<10} {(q or '(everything)') + ' ' + ' '.join(args):<50} {ms:9.2f} ms {hits:>12,}")
    mem["after_mix"] = memory(pid, served)

    # 6. Everything, sorted by every key (the mix already has the newest 100 by every key).
    sorts = []
    if a.full_sorts:
        say("`uffs '*' --sort KEY`, every path printed, once per key")
    for key in SORT_KEYS if a.full_sorts else []:
        dt, lines, _ = run_drained([UFFS, "--sort", key, "--", "*"], env)
        sorts.append({"key": key, "wall_ms": dt * 1e3, "lines": lines})
        say(f"  {key:<10} {dt * 1e3:9.1f} ms {lines:>12,} paths")
    if a.full_sorts:
        mem["after_sorts"] = memory(pid, served)
    res["queries"], res["sorts"], res["memory"] = queries, sorts, mem


def report(r):
    n, reg, ws, d = r["volumes"], r["registration"], r["warm_start"], r["daemon"]
    print(f"\nscale: {n} volumes of {r['volume']} ($MFT capture {mib(r['mft']['bytes']):.0f} MiB, hard-linked), "
          f"{d['entries']:,} entries, {'offline (sources removed)' if r['offline'] else 'sources present'}, "
          f"--refresh {r['refresh']}")
    if r["mft"]["extract_s"] is not None:
        print(f"  {'$MFT extraction (icat VOLUME 0)':<36} {r['mft']['extract_s']:9.1f} s")
    print(f"  {'registration (uffs volumes add)':<36} {reg['wall_s']:9.1f} s   {reg['entries_per_s'] / 1e6:.2f} M "
          f"entries/s, peak RSS {mib(reg['peak_rss_bytes']):.0f} MiB, index files {mib(reg['index_bytes']):.0f} MiB "
          f"({reg['index_bytes'] / max(reg['entries'], 1):.0f} B/entry)")
    print(f"  {'daemon states':<36} " + ", ".join(f"{c} {s}" for s, c in d["states"].items()))
    print(f"  {'warm start (spawn to first answer)':<36} {ws['median_ms']:9.1f} ms  (min {ws['min_ms']:.1f}, max "
          f"{ws['max_ms']:.1f}; first answer found {', '.join(map(str, ws['first_answer_found']))} of "
          f"{ws['expected_found']})")
    print(f"\n  `uffs QUERY` through the daemon, median of {r['runs']} (process start to exit, output to a pipe):")
    print(f"  {'class':<10} {'query':<52} {'median':>11} {'hits':>12}")
    by_class = {}
    for q in r["queries"]:
        by_class.setdefault(q["class"], []).append(q)
    for cls, qs in by_class.items():
        for q in qs:
            text = (q["query"] or "(everything)") + " " + " ".join(q["args"])
            print(f"  {cls:<10} {text:<52} {q['median_ms']:8.2f} ms {q['hits']:>12,}")
    print(f"\n  {'class':<10} {'queries':>7} {'median':>11} {'slowest':>11}")
    for cls, qs in by_class.items():
        ms = [q["median_ms"] for q in qs]
        print(f"  {cls:<10} {len(ms):>7} {statistics.median(ms):8.2f} ms {max(ms):8.2f} ms")
    if r["sorts"]:
        print("\n  `uffs '*' --sort KEY` (every path printed to a pipe, one run):")
        print("  " + "  ".join(f"{s['key']} {s['wall_ms'] / 1e3:.2f} s" for s in r["sorts"]))
    print(f"\n  daemon memory {'':<12} {'VmRSS':>10} {'RssAnon':>10} {'RssFile':>10} {'B/entry':>8} {'anon B/entry':>12}")
    for k, m in r["memory"].items():
        print(f"  {k.replace('_', ' '):<26} {mib(m['VmRSS']):6.0f} MiB {mib(m['RssAnon']):6.0f} MiB "
              f"{mib(m['RssFile']):6.0f} MiB {m['bytes_per_entry']:8.1f} {m['anon_bytes_per_entry']:12.1f}")


if __name__ == "__main__":
    sys.exit(main())
