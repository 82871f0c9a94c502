#!/usr/bin/env python3
"""Disk usage, facets, statistics and duplicates on the benchmark volume, end to end as a user runs them.

    python3 scripts/bench-usage.py /work/bench/bench.img [--runs 9]

Starts a private daemon (its own cache and runtime folders) with the volume registered, then times each command
from process start to exit, warm (the first run of each is reported apart: it derives the folder totals):
  uffs du /                         a volume's top folders
  uffs du FOLDER                    the folder with the most children
  uffs '*' --facet ext / --stats     over every entry
  uffs dupes --index F --by size    one-shot, no daemon
Then content hashing: a volume of random files (some duplicated) made with mkntfs and ntfs-3g, `uffs dupes
--by content` against the raw read of the same image (`cat IMG > /dev/null`, warm), as MB/s and a ratio.
Needs root (ntfs-3g mount) and a release build (cargo build --release).
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

from benchlib import UFFS, PrivateDaemon, need_release_build


def timed(cmd, env=None):
    t = time.perf_counter()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ms = (time.perf_counter() - t) * 1000
    if p.returncode not in (0, 1):
        sys.exit(f"bench-usage: {' '.join(cmd)} failed: {p.stderr.decode(errors='replace')}")
    return ms, p.stdout


def series(name, cmd, runs, env=None):
    first, _ = timed(cmd, env)
    times = [timed(cmd, env)[0] for _ in range(runs)]
    print(f"{name:<44} first {first:8.1f} ms   warm median {statistics.median(times):7.1f} ms"
          f"   min {min(times):7.1f}   max {max(times):7.1f}")
    return statistics.median(times)


def content_volume(work):
    """A 1 GiB NTFS volume with 48 random files of 8 MiB, 16 of them copies of others (different names)."""
    img = os.path.join(work, "content.img")
    subprocess.run(["truncate", "-s", "1200M", img], check=True)
    subprocess.run(["mkntfs", "-F", "-q", "-f", img], check=True)
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt)
    subprocess.run(["ntfs-3g", img, mnt], check=True)
    try:
        blobs = []
        for i in range(32):
            data = os.urandom(8 << 20)
            blobs.append(data)
            with open(os.path.join(mnt, f"file{i:02}.bin"), "wb") as f:
                f.write(data)
        os.makedirs(os.path.join(mnt, "copies"))
        for i in range(16):
            with open(os.path.join(mnt, "copies", f"copy{i:02}.bin"), "wb") as f:
                f.write(blobs[i])
    finally:
        subprocess.run(["umount", mnt], check=True)
        time.sleep(0.5)
    return img


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("image")
    ap.add_argument("--runs", type=int, default=9)
    a = ap.parse_args()
    need_release_build("bench-usage")
    with PrivateDaemon([(a.image, "B", "never")], prefix="uffs-bench-usage-") as d:
        env, work = d.env, d.work
        idx = os.path.join(work, "bench.uffs")
        subprocess.run([UFFS, "index", a.image, "-o", idx], check=True, stderr=subprocess.DEVNULL)
        _, out = timed([UFFS, "--index", idx, "childcount:>1000", "--columns", "path,children", "--format",
                        "tsv"])
        rows = [l.split("\t") for l in out.decode().splitlines()[1:]]
        big = max(rows, key=lambda r: int(r[1])) if rows else ["/", "0"]
        print(f"volume: {a.image}; the folder with the most children: {big[0]} ({int(big[1]):,} children)")
        series("uffs du / (daemon)", [UFFS, "du", "/"], a.runs, env)
        series(f"uffs du {big[0]} --limit 10 (daemon)", [UFFS, "du", big[0], "--limit", "10"], a.runs, env)
        series(f"uffs du {big[0]} (daemon, every row)", [UFFS, "du", big[0]], a.runs, env)
        series("uffs '*' --facet ext (daemon)", [UFFS, "*", "--facet", "ext"], a.runs, env)
        series("uffs '*' --facet year (daemon)", [UFFS, "*", "--facet", "year"], a.runs, env)
        series("uffs --stats (daemon)", [UFFS, "--stats"], a.runs, env)
        series("uffs 'treesize:>1gb' --count (daemon)", [UFFS, "treesize:>1gb", "--count"], a.runs, env)
        series("uffs dupes --index F --by size --limit 10", [UFFS, "dupes", "--index", idx, "--by", "size",
                                                            "--limit", "10"], a.runs)
        series("uffs dupes --index F --by size (every group)", [UFFS, "dupes", "--index", idx, "--by", "size",
                                                               "--format", "csv"], 3)
        subprocess.run([UFFS, "daemon", "stop"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        img = content_volume(work)
        size = os.path.getsize(img)
        raw, dup = [], []
        for _ in range(max(3, a.runs // 3)):
            raw.append(timed(["sh", "-c", f"cat '{img}' > /dev/null"])[0])
            ms, out = timed([UFFS, "dupes", "--source", img, "--by", "content", "--format", "csv"])
            dup.append(ms)
        groups = len({l.split(",")[0] for l in out.decode().splitlines()[1:]})
        hashed = 48 * (8 << 20)
        raw_rate = size / statistics.median(raw) / 1000
        hash_rate = hashed / statistics.median(dup) / 1000
        print(f"content: {groups} duplicate groups found (16 planted); {hashed / 2**20:.0f} MiB hashed")
        print(f"  cat of the image ({size / 2**20:.0f} MiB): median {statistics.median(raw):.0f} ms = {raw_rate:.0f} MB/s")
        print(f"  uffs dupes --by content (whole process): median {statistics.median(dup):.0f} ms = "
              f"{hash_rate:.0f} MB/s of file content")
        print(f"  ratio: {hash_rate / raw_rate:.2f}x the raw read rate")


if __name__ == "__main__":
    main()
