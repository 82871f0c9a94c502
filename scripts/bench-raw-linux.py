#!/usr/bin/env python3
"""`uffs index` of the benchmark volume's 1.2 million paths on XFS or Btrfs (scripts/make-ext-bench.py --fs xfs|btrfs)
read raw, against `find` and plocate's `updatedb` over a fresh mount of the same image, in one run, as a user runs
them (process start to exit, the index file written).

    sudo python3 scripts/bench-raw-linux.py [--fs xfs|btrfs] [--image /work/bench/FS-bench.img] [--runs 5]

Each figure is the median of --runs (peak RSS: the largest):
  uffs       `uffs index IMAGE -o X.uffs`, warm (after one run to warm the page cache) and cold (page cache dropped
             before each run)
  find       `find MNT -printf '%p %s %T@\\n' > /dev/null` over a `mount -o loop,ro` of the image made outside the
             timing, cold (caches dropped after mounting) and warm
  updatedb   `updatedb -U MNT -o DB --require-visibility no --prunepaths '' --prunefs '' --prunenames ''`, cold
             and warm
Targets (issue 58): uffs >= 5x faster than find cold, >= 1.2M entries/s warm, peak RSS <= 150 B/entry. Needs root
(mount, drop_caches), xfsprogs or btrfs-progs, plocate.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import entries_of, print_table  # noqa: E402
from benchlib import median_measured as med  # noqa: E402

UFFS = os.environ.get("UFFS_BIN") or benchlib.UFFS


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fs", choices=["xfs", "btrfs"], default="xfs")
    ap.add_argument("--image", help="default /work/bench/FS-bench.img")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    image = a.image or f"/work/bench/{a.fs}-bench.img"
    label = {"xfs": "XFS", "btrfs": "Btrfs"}[a.fs]
    benchlib.need_release_build("bench-raw-linux.py")
    if not os.path.exists(image):
        sys.exit(f"{image} is missing: make it with scripts/make-ext-bench.py --fs {a.fs}")
    work = tempfile.mkdtemp(prefix=f"uffs-bench-{a.fs}-")
    mnt = os.path.join(work, "mnt")
    os.mkdir(mnt)
    mounted = False
    try:
        x = os.path.join(work, "x.uffs")
        warm, rss, err = med([UFFS, "index", image, "-o", x], a.runs, fresh=x)
        n = entries_of(err)
        line = err.strip().splitlines()[-1]
        cold, _, _ = med([UFFS, "index", image, "-o", x], a.runs, cold=True, fresh=x)
        index_bytes = os.path.getsize(x)
        subprocess.run(["mount", "-o", "loop,ro", image, mnt], check=True)
        mounted = True
        find = ["find", mnt, "-printf", "%p %s %T@\\n"]
        find_cold, _, _ = med(find, a.runs, cold=True, stdout=os.devnull)
        find_warm, _, _ = med(find, a.runs, stdout=os.devnull)
        up_cold, up_warm, listed = benchlib.updatedb_over(mnt, work, a.runs)
    finally:
        if mounted:
            subprocess.run(["umount", mnt])
        shutil.rmtree(work, ignore_errors=True)
    print_table(
        ["run", "warm s", "cold s", "entries/s (warm)", "peak RSS B/entry"],
        [
            [f"uffs index {label}", f"{warm:.3f}", f"{cold:.3f}", f"{n / warm:,.0f}", f"{rss / n:,.0f}"],
            ["find (fresh mount)", f"{find_warm:.3f}", f"{find_cold:.3f}", f"{n / find_warm:,.0f}", ""],
            ["updatedb (fresh mount)", f"{up_warm:.3f}", f"{up_cold:.3f}", f"{n / up_warm:,.0f}", ""],
        ],
    )
    print(f"\n{label} {n:,} entries, index file {index_bytes / n:.0f} B/entry; plocate lists {listed} paths under the mount")
    print(f"find/uffs cold {find_cold / cold:.1f}x (target >= 5x), warm {find_warm / warm:.1f}x; "
          f"updatedb/uffs cold {up_cold / cold:.1f}x, warm {up_warm / warm:.1f}x")
    print(f"uffs's own line (warm): {line}")


if __name__ == "__main__":
    main()
