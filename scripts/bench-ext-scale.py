#!/usr/bin/env python3
"""`uffs index` of the benchmark volume's 1.2 million paths on ext4 (scripts/make-ext-bench.py) against the same
paths on NTFS (the benchmark volume, scripts/make-bench-volume.py) and against plocate's `updatedb` over a fresh
mount of the ext4 image, in one run, as a user runs them (process start to exit, the index file written).

    sudo python3 scripts/bench-ext-scale.py [--ext /work/bench/ext-bench.img] [--ntfs /work/bench/bench.img] [--runs 5]

Each figure is the median of --runs (peak RSS: the largest):
  uffs ext4   `uffs index EXT -o X.uffs`, warm (after one run to warm the page cache) and cold (page cache dropped
              before each run)
  uffs NTFS   `uffs index NTFS -o Y.uffs`, warm
  updatedb    `updatedb -U MNT -o DB --require-visibility no --prunepaths '' --prunefs '' --prunenames ''` over a
              `mount -o loop,ro` of the ext4 image made outside the timing, cold (caches dropped after mounting)
              and warm (its second run)
Targets (issue 55): ext4 >= 1.2M entries/s warm, within 1.25x of NTFS's time, peak RSS <= 150 B/entry; cold >= 4x
faster than updatedb cold. Needs root (mount, drop_caches), e2fsprogs, plocate.
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
    ap.add_argument("--ext", default="/work/bench/ext-bench.img")
    ap.add_argument("--ntfs", default="/work/bench/bench.img")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    benchlib.need_release_build("bench-ext-scale.py")
    for img, how in [(a.ext, "scripts/make-ext-bench.py"), (a.ntfs, "scripts/make-bench-volume.py")]:
        if not os.path.exists(img):
            sys.exit(f"{img} is missing: make it with {how}")
    work = tempfile.mkdtemp(prefix="uffs-bench-ext-scale-")
    mnt = os.path.join(work, "mnt")
    os.mkdir(mnt)
    mounted = False
    try:
        x = os.path.join(work, "x.uffs")
        ext_warm, ext_rss, err = med([UFFS, "index", a.ext, "-o", x], a.runs, fresh=x)
        n = entries_of(err)
        ext_line = err.strip().splitlines()[-1]
        ext_cold, _, _ = med([UFFS, "index", a.ext, "-o", x], a.runs, cold=True, fresh=x)
        y = os.path.join(work, "y.uffs")
        nt_warm, nt_rss, nt_err = med([UFFS, "index", a.ntfs, "-o", y], a.runs, fresh=y)
        nt_n = entries_of(nt_err)
        subprocess.run(["mount", "-o", "loop,ro", a.ext, mnt], check=True)
        mounted = True
        up_cold, up_warm, listed = benchlib.updatedb_over(mnt, work, a.runs)
    finally:
        if mounted:
            subprocess.run(["umount", mnt])
        shutil.rmtree(work, ignore_errors=True)
    print_table(
        ["run", "warm s", "cold s", "entries/s (warm)", "peak RSS B/entry"],
        [
            ["uffs index ext4", f"{ext_warm:.3f}", f"{ext_cold:.3f}", f"{n / ext_warm:,.0f}", f"{ext_rss / n:,.0f}"],
            ["uffs index NTFS", f"{nt_warm:.3f}", "", f"{nt_n / nt_warm:,.0f}", f"{nt_rss / nt_n:,.0f}"],
            ["updatedb (fresh mount)", f"{up_warm:.3f}", f"{up_cold:.3f}", f"{n / up_warm:,.0f}", ""],
        ],
    )
    print(f"\next4 {n:,} entries, NTFS {nt_n:,}; plocate lists {listed} paths under the mount")
    print(f"ext4/NTFS warm time {ext_warm / nt_warm:.2f}x (target <= 1.25x); updatedb/uffs cold "
          f"{up_cold / ext_cold:.1f}x (target >= 4x), warm {up_warm / ext_warm:.1f}x")
    print(f"uffs's own line (ext4, warm): {ext_line}")


if __name__ == "__main__":
    main()
