#!/usr/bin/env python3
"""Live indexes on the benchmark volume: what following N changes costs, against a fresh build.

    scripts/bench-live.py /work/bench/bench.img [--changes 1000,100000] [--runs 5]   (--changes '' skips step 1-4)

Works on a sparse copy of the volume (VOLUME.live/live.img), never on the volume itself. For each N:

1. builds a fresh index of the copy (`uffs index`), then changes N files through the real ntfs-3g driver (a
   quarter each: created, renamed or moved to another folder, deleted, their times set), and unmounts;
2. times the whole `uffs index COPY -o FILE --update` process (start to exit: the journal-less copy is
   re-scanned, the changed records read again and a delta written beside the index), and prints its own line
   (records found, read, the delta's make time, the write);
3. times the same with `--compact` on a copy of the index before the update (the delta merged into a whole
   index), and a fresh `uffs index` for comparison;
4. runs the query mix (bench/queries.tsv, `uffs bench --queries`) on the updated index (index and delta
   searched together), on the merged one and on the fresh one, and prints the per-class ratios.

Then the unchanged re-scan against the raw MFT read (`uffs bench --read-only`); the largest top folder
renamed, then moved into a new folder (`uffs index --update` and queries on the path it has now); and through the
daemon (own
cache and runtime directories beside the copy): the time from `uffs volumes refresh` starting to a `uffs QUERY`
that finds a file created on the volume, and one that finds a renamed top folder's subtree under its new name, and
the daemon's memory after N changes against after a fresh start.

UFFS_COMPACT_AT (entries) overrides when a delta is merged (default: past a sixteenth of the index), so the
layered index can be measured past that point: step 4 sets it high.
"""
import argparse, json, os, random, shutil, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UFFS = os.path.join(ROOT, "target", "release", "uffs")


def run(cmd, env=None, **kw):
    return subprocess.run(cmd, env=env, check=True, **kw)


def timed(cmd, env=None):
    t = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed: {p.stderr}")
    return dt, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""


class Mounted:
    def __init__(self, img, mnt):
        self.img, self.mnt = img, mnt

    def __enter__(self):
        os.makedirs(self.mnt, exist_ok=True)
        run(["ntfs-3g", "-o", "big_writes", self.img, self.mnt])
        return self.mnt

    def __exit__(self, *a):
        run(["umount", self.mnt])


def files_of(index):
    """Paths of the regular files and folders of an index (from `uffs export`)."""
    out = subprocess.run([UFFS, "export", index, "--format", "jsonl"], capture_output=True, text=True,
                         check=True).stdout
    files, dirs = [], []
    for line in out.splitlines():
        r = json.loads(line)
        p = r["path"]
        if p.startswith("/$") or "/$" in p:
            continue
        (dirs if r["kind"] in ("folder", "dir") else files).append(p)
    return files, dirs


def change(mnt, files, dirs, n, rng):
    """N changes through ntfs-3g: a quarter each created, renamed or moved, deleted, times set."""
    picked = rng.sample(files, min(len(files), n))
    done = 0
    for i, p in enumerate(picked):
        what = i % 4
        full = mnt + p
        try:
            if what == 0:
                d = mnt + rng.choice(dirs)
                with open(os.path.join(d, f"live-{i}.txt"), "w") as f:
                    f.write("x")
            elif what == 1:
                d = mnt + rng.choice(dirs)
                os.rename(full, os.path.join(d, f"moved-{i}-" + os.path.basename(p)))
            elif what == 2:
                os.unlink(full)
            else:
                os.utime(full, (1_600_000_000 + i, 1_600_000_000 + i))
            done += 1
        except OSError:
            pass
    return done


def mix_ratio(updated, fresh, runs, env):
    def bench(index):
        out = subprocess.run([UFFS, "bench", index, "--queries", os.path.join(ROOT, "bench", "queries.tsv"),
                              "--runs", str(runs), "--json"], capture_output=True, text=True, check=True,
                             env=env).stdout
        return json.loads(out)["queries"]
    a, b = bench(updated), bench(fresh)
    per_class = {}
    for qa, qb in zip(a, b):
        per_class.setdefault(qa["class"], []).append((qa["median_ms"], qb["median_ms"]))
    worst = 0
    for cls, pairs in per_class.items():
        ua, fb = sum(p[0] for p in pairs), sum(p[1] for p in pairs)
        ratio = ua / fb if fb else 1
        worst = max(worst, ratio)
        print(f"    {cls:<10} updated {ua:8.2f} ms, fresh {fb:8.2f} ms: {ratio:.2f}x")
    print(f"    worst class: {worst:.2f}x")


def rss(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def largest_top_folder(index):
    """The folder in the root with the most entries below it, and that count (itself included)."""
    out = subprocess.run([UFFS, "--index", index, "parent:/", "folder:", "--columns", "name,descendants",
                          "--format", "csv"], capture_output=True, text=True, check=True).stdout
    rows = [line.rsplit(",", 1) for line in out.strip().splitlines()[1:]]
    name, below = max(rows, key=lambda r: int(r[1]))
    return name.strip('"'), int(below) + 1


def renames(a, img, mnt, index, fresh, env, high):
    """A top folder renamed, then moved into another: each one changed record, whatever its subtree holds."""
    print("\n== a large folder renamed, then moved")
    run([UFFS, "index", img, "-o", index, "--update", "--compact"], env, stderr=subprocess.DEVNULL)
    top, size = largest_top_folder(index)
    steps = [("rename", top, f"{top}-renamed"), ("move", f"{top}-renamed", f"moved-here/{top}")]
    for what, old, new in steps:
        with Mounted(img, mnt) as m:
            os.makedirs(os.path.join(m, "moved-here"), exist_ok=True)
            os.rename(os.path.join(m, old), os.path.join(m, new))
        t, line = timed([UFFS, "index", img, "-o", index, "--update"], high)
        print(f"  {what} /{old} ({size - 1:,} entries below it) to /{new}: uffs index --update, whole process "
              f"{t * 1e3:.0f} ms\n    {line}")
        qs = [[f"path:/{new}/", "--count"], ["*", "--sort", "path", "--limit", "100"],
              [f"path:{new.split('/')[-1]}/", "--sort", "path", "--limit", "100"]]
        for q in qs:
            ts = []
            for _ in range(a.runs):
                t0 = time.perf_counter()
                p = subprocess.run([UFFS, "--index", index, *q], env=env, capture_output=True, text=True)
                ts.append(time.perf_counter() - t0)
            first = p.stdout.strip().splitlines()[:1]
            print(f"    uffs {' '.join(q)}: median {statistics.median(ts) * 1e3:.1f} ms ({first})")
    run([UFFS, "index", img, "-o", fresh], env, stderr=subprocess.DEVNULL)
    print("  query mix, index + delta after the rename and the move against a fresh build, median per class:")
    mix_ratio(index, fresh, a.runs, env)
    with Mounted(img, mnt) as m:
        os.rename(os.path.join(m, steps[-1][2]), os.path.join(m, top))
        os.rmdir(os.path.join(m, "moved-here"))
    run([UFFS, "index", img, "-o", index, "--update", "--compact"], env, stderr=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("volume")
    ap.add_argument("--changes", default="1000,100000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    run(["cargo", "build", "--release", "-q"], cwd=ROOT)
    work = a.volume + ".live"
    os.makedirs(work, exist_ok=True)
    img, mnt = os.path.join(work, "live.img"), os.path.join(work, "mnt")
    index, fresh = os.path.join(work, "live.uffs"), os.path.join(work, "fresh.uffs")
    rng = random.Random(a.seed)
    print(f"copying {a.volume} to {img} (sparse)")
    run(["cp", "--sparse=always", a.volume, img])
    env = dict(os.environ, NO_COLOR="1")
    high = dict(env, UFFS_COMPACT_AT=str(10**9))

    for n in [int(x) for x in a.changes.split(",") if x]:
        print(f"\n== {n:,} changes")
        for stale in (index + ".delta",):
            if os.path.exists(stale):
                os.remove(stale)
        run([UFFS, "index", img, "-o", index], env, stderr=subprocess.DEVNULL)
        files, dirs = files_of(index)
        with Mounted(img, mnt) as m:
            t0 = time.perf_counter()
            done = change(m, files, dirs, n, rng)
            print(f"  {done:,} changes made through ntfs-3g in {time.perf_counter() - t0:.1f} s")
        shutil.copyfile(index, index + ".before")
        t, line = timed([UFFS, "index", img, "-o", index, "--update"], high)
        print(f"  uffs index --update (delta), whole process: {t * 1e3:.0f} ms\n    {line}")
        shutil.copyfile(index + ".before", index + ".compact")
        t, line = timed([UFFS, "index", img, "-o", index + ".compact", "--update", "--compact"], env)
        print(f"  uffs index --update --compact (whole index), whole process: {t * 1e3:.0f} ms\n    {line}")
        t, line = timed([UFFS, "index", img, "-o", fresh], env)
        print(f"  uffs index (fresh build), whole process: {t * 1e3:.0f} ms")
        print("  query mix, updated (index + delta) against fresh, median per class:")
        mix_ratio(index, fresh, a.runs, env)
        print("  query mix, updated and merged (--compact) against fresh, median per class:")
        mix_ratio(index + ".compact", fresh, a.runs, env)
        for p in (index + ".before", index + ".compact", index + ".compact.delta"):
            if os.path.exists(p):
                os.remove(p)

    print("\n== unchanged volume")
    run([UFFS, "index", img, "-o", index, "--update", "--compact"], env, stderr=subprocess.DEVNULL)
    ts, scans = [], []
    for _ in range(a.runs):
        t, line = timed([UFFS, "index", img, "-o", index, "--update"], env)
        ts.append(t)
        scans.append(float(line.split(" in ")[1].split(" ms")[0]))
    rd = []
    for _ in range(a.runs):
        out = subprocess.run([UFFS, "bench", img, "--read-only", "--runs", "3", "--json"], env=env,
                             capture_output=True, text=True, check=True).stdout
        rd.append(json.loads(out)["median"]["ms"]["total"] / 1e3)
    scan, read = statistics.median(scans) / 1e3, statistics.median(rd)
    print(f"  re-scan that finds nothing: {scan * 1e3:.0f} ms; raw MFT read (uffs bench --read-only): "
          f"{read * 1e3:.0f} ms: {scan / read:.2f}x; the whole `uffs index --update` process (opening the index "
          f"included): median {statistics.median(ts) * 1e3:.0f} ms = {statistics.median(ts) / read:.2f}x")

    renames(a, img, mnt, index, fresh, env, high)

    print("\n== through the daemon")
    d = os.path.join(work, "daemon")
    shutil.rmtree(d, ignore_errors=True)
    denv = dict(env, UFFS_CACHE_DIR=os.path.join(d, "cache"), UFFS_RUNTIME_DIR=os.path.join(d, "run"))
    u = lambda *args, **kw: subprocess.run([UFFS, *args], env=denv, **kw)
    u("volumes", "add", img, "--name", "live", "--refresh", "never", check=True, stderr=subprocess.DEVNULL)
    u("daemon", "start", check=True, stdout=subprocess.DEVNULL)
    pid = int(open(os.path.join(denv["UFFS_RUNTIME_DIR"], "daemon.pid")).read())
    for cls_q in ["kernel32.dll", "*.txt --count", "* --sort size --limit 100"]:
        u(*cls_q.split(), stdout=subprocess.DEVNULL)
    fresh_rss = rss(pid)
    lat = []
    for i in range(a.runs):
        with Mounted(img, mnt) as m:
            open(os.path.join(m, f"found-{i}.marker"), "w").close()
        t = time.perf_counter()
        u("volumes", "refresh", "live", check=True, stdout=subprocess.DEVNULL)
        hits = u(f"found-{i}.marker", "--count", capture_output=True, text=True).stdout.strip()
        lat.append(time.perf_counter() - t)
        if hits != "1":
            print(f"  found-{i}.marker not found after the refresh (count {hits!r})")
    print(f"  created file: `uffs volumes refresh` start to `uffs QUERY` finding it, median "
          f"{statistics.median(lat) * 1e3:.0f} ms (min {min(lat) * 1e3:.0f}, max {max(lat) * 1e3:.0f})")
    files, dirs = files_of(index)
    with Mounted(img, mnt) as m:
        done = change(m, files, dirs, 50_000, rng)
    u("volumes", "refresh", "live", check=True, stdout=subprocess.DEVNULL)
    for cls_q in ["kernel32.dll", "*.txt --count", "* --sort size --limit 100"]:
        u(*cls_q.split(), stdout=subprocess.DEVNULL)
    print(f"  daemon RSS: {fresh_rss / 2**20:.1f} MiB after start; {rss(pid) / 2**20:.1f} MiB after "
          f"{done:,} more changes applied")
    # A top folder renamed, again and again: the time until a query sees its subtree under the new name.
    run([UFFS, "index", img, "-o", index, "--update", "--compact"], env, stderr=subprocess.DEVNULL)
    top, size = largest_top_folder(index)
    below = u(f"path:/{top}/", "--count", capture_output=True, text=True).stdout.strip()
    lat, name = [], top
    for i in range(a.runs):
        new = f"{top}-r{i}"
        with Mounted(img, mnt) as m:
            os.rename(os.path.join(m, name), os.path.join(m, new))
        t = time.perf_counter()
        u("volumes", "refresh", "live", check=True, stdout=subprocess.DEVNULL)
        hits = u(f"path:/{new}/", "--count", capture_output=True, text=True).stdout.strip()
        lat.append(time.perf_counter() - t)
        if hits != below:
            print(f"  {new}: {hits} entries found below it, {below} before the rename")
        name = new
    with Mounted(img, mnt) as m:
        os.rename(os.path.join(m, name), os.path.join(m, top))
    u("volumes", "refresh", "live", check=True, stdout=subprocess.DEVNULL)
    print(f"  folder renamed ({top}, {size - 1:,} entries below it): `uffs volumes refresh` start to "
          f"`uffs QUERY` finding them under the new name, median {statistics.median(lat) * 1e3:.0f} ms "
          f"(min {min(lat) * 1e3:.0f}, max {max(lat) * 1e3:.0f})")
    u("daemon", "stop", stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
