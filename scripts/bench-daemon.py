#!/usr/bin/env python3
"""The daemon on the benchmark volume: warm start, memory after the query mix, and `uffs QUERY` end to end
against plocate.

    scripts/bench-daemon.py /work/bench/bench.img [--runs 9]

Uses its own cache and runtime directories beside the volume (VOLUME.daemon/), so it never touches the user's
daemon. Registers the volume once (`uffs volumes add`, which builds the index), then measures:

* warm start: from spawning `uffs daemon run` to the first answered query (a client connects and asks
  `kernel32.dll --count` as soon as the socket exists); index file in the page cache;
* memory: the daemon's RSS (anonymous and file-backed) after it answered every query of bench/queries.tsv,
  each run as a user would run it (`uffs QUERY` printing paths, or counting where the mix says so), per entry;
* end to end: the median wall time of the whole `uffs QUERY` process (start to exit, output read through a
  pipe) for every query of the mix, and of `plocate` for the queries it can express (the same list as
  scripts/bench-plocate.py), printing paths, and counting (`-c` / `--count`).
"""
import argparse, importlib.util, json, os, socket, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UFFS = os.path.join(ROOT, "target", "release", "uffs")
spec = importlib.util.spec_from_file_location("bench_plocate", os.path.join(ROOT, "scripts", "bench-plocate.py"))
bp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bp)


def mix_args(opts):
    args = []
    for o in opts.split():
        if o.startswith("sort="):
            args += ["--sort", o[5:]]
        elif o == "desc":
            args.append("--reverse")
        elif o.startswith("limit="):
            args += ["--limit", o[6:]]
        elif o == "count":
            args.append("--count")
        elif o == "glob":
            args.append("--glob")
    return args


def read_mix():
    out = []
    for line in open(os.path.join(ROOT, "bench", "queries.tsv")):
        if line.startswith("#") or not line.strip():
            continue
        cls, q, opts = (line.rstrip("\n").split("\t") + ["", ""])[:3]
        out.append((cls, q, mix_args(opts)))
    return out


def rss(pid):
    f = {}
    for l in open(f"/proc/{pid}/status"):
        k, _, v = l.partition(":")
        if k in ("VmRSS", "RssAnon", "RssFile"):
            f[k] = int(v.split()[0]) * 1024
    return f


PROBE = b'{"op":"query","request":{"query":"kernel32.dll","count":true}}\n'


def warm_start(env, log, sock):
    """Spawn `uffs daemon run`, ask the probe as soon as the socket answers; returns (seconds, found, process)."""
    t = time.perf_counter()
    p = subprocess.Popen([UFFS, "daemon", "run"], env=env, stdout=subprocess.DEVNULL, stderr=log)
    while True:
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect(sock)
            s.sendall(PROBE)
            answer = b""
            while b'"done"' not in answer and b'"error"' not in answer:
                chunk = s.recv(65536)
                if not chunk:
                    break
                answer += chunk
            s.close()
            if b'"done"' in answer:
                dt = time.perf_counter() - t
                found = json.loads(answer.strip().splitlines()[-1])["done"]["found"]
                return dt, found, p
        except OSError:
            pass
        if p.poll() is not None:
            sys.exit(f"the daemon exited ({p.returncode}); see {log.name}")
        time.sleep(0.0005)


def median_ms(cmd, env, runs):
    return bp.median_time(cmd, runs, env)[0] * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("volume")
    ap.add_argument("--runs", type=int, default=9)
    a = ap.parse_args()
    if not os.path.exists(UFFS):
        subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
    base = a.volume + ".daemon"
    env = dict(os.environ, UFFS_CACHE_DIR=os.path.join(base, "cache"), UFFS_RUNTIME_DIR=os.path.join(base, "run"),
               NO_COLOR="1")
    u = lambda *args, **kw: subprocess.run([UFFS, *args], env=env, **kw)
    u("daemon", "stop", stdout=subprocess.DEVNULL)
    listed = u("volumes", "list", "--json", capture_output=True, text=True, check=True).stdout
    if not json.loads(listed):
        u("volumes", "add", a.volume, "--name", "bench", check=True)
    sock = os.path.join(env["UFFS_RUNTIME_DIR"], "daemon.sock")
    log = open(os.path.join(env["UFFS_CACHE_DIR"], "daemon.log"), "a")

    # Warm start: spawn to first answer.
    starts = []
    for i in range(a.runs + 1):
        dt, _, p = warm_start(env, log, sock)
        if i > 0:  # the first run warms the page cache
            starts.append(dt * 1e3)
        u("daemon", "stop", stdout=subprocess.DEVNULL)
        p.wait()
    print(f"warm start (spawn to first answered query), {a.runs} runs: median {statistics.median(starts):.1f} ms, "
          f"min {min(starts):.1f}, max {max(starts):.1f}")

    # Memory after the query mix.
    u("daemon", "start", stdout=subprocess.DEVNULL, check=True)
    pid = int(open(os.path.join(env["UFFS_RUNTIME_DIR"], "daemon.pid")).read())
    status = json.loads(u("daemon", "status", "--json", capture_output=True, text=True, check=True).stdout)
    entries = sum(v["entries"] for v in status["volumes"])
    before = rss(pid)
    mix = read_mix()
    for cls, q, args in mix:
        u(*(args + (["--", q] if q else [])), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = rss(pid)
    per = lambda r: r["VmRSS"] / entries
    print(f"{entries:,} entries; daemon RSS after loading: {before['VmRSS'] / 2**20:.1f} MiB ({per(before):.1f} B/entry)")
    print(f"daemon RSS after the query mix ({len(mix)} queries, paths printed): {after['VmRSS'] / 2**20:.1f} MiB "
          f"= {per(after):.1f} B/entry (mapped index pages {after['RssFile'] / 2**20:.1f} MiB, "
          f"heap {after['RssAnon'] / 2**20:.1f} MiB)")

    # End to end, every query of the mix.
    print(f"\n`uffs QUERY` end to end through the daemon, median of {a.runs} (process start to exit):")
    per_class = {}
    for cls, q, args in mix:
        t = median_ms([UFFS, *args] + (["--", q] if q else []), env, a.runs)
        per_class.setdefault(cls, []).append(t)
        print(f"  {cls:<10} {(q or '(everything)') + ' ' + ' '.join(args):<50} {t:7.2f} ms")
    print("  per class, slowest median: " + ", ".join(f"{c} {max(v):.2f} ms" for c, v in per_class.items()))

    # Against plocate.
    db, paths = a.volume + ".plocate.db", a.volume + ".paths"
    if not os.path.exists(db):
        with open(paths, "wb") as f:
            u("--color", "never", stdout=f, check=True)
        subprocess.run(["plocate-build", "-l", "no", "-p", paths, db], check=True)
    print(f"\nagainst plocate on the same volume's path list, median of {a.runs}, whole processes:")
    print(f"  {'class':<10} {'query':<28} {'hits':>9} {'uffs print':>11} {'plocate print':>14} {'ratio':>6}"
          f" {'uffs count':>11} {'plocate -c':>11} {'ratio':>6}")
    for cls, q, pargs in bp.QUERIES:
        hits = u(q, "--count", capture_output=True, text=True).stdout.strip()
        up = median_ms([UFFS, q], env, a.runs)
        pp = median_ms(["plocate", "-d", db, "-i"] + pargs, env, a.runs)
        uc = median_ms([UFFS, q, "--count"], env, a.runs)
        pc = median_ms(["plocate", "-d", db, "-i", "-c"] + pargs, env, a.runs)
        print(f"  {cls:<10} {q:<28} {hits:>9} {up:8.2f} ms {pp:11.2f} ms {pp / up:5.1f}x {uc:8.2f} ms {pc:8.2f} ms "
              f"{pc / uc:5.1f}x")
    u("daemon", "stop", stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    sys.exit(main())
