#!/usr/bin/env python3
"""`uffs index` of an HFS+ volume against The Sleuth Kit's `fls -r -p` of the same image, in one run, as a user runs
them (process start to exit, the index file written; fls's listing to /dev/null).

    sudo python3 scripts/bench-hfs.py [--entries 200000] [--runs 5] [--keep /work/bench/hfs-bench.img]

No Linux tool writes a populated HFS+ volume, so the image is written by scripts/make-hfsplus.py from a generated
tree: folders of 100 files each (names of several lengths, a few Unicode), a file every 1,000 a few KiB, under
two levels of folders; the catalog is a B-tree of depth 3 or 4. Each figure is the median of --runs (peak RSS: the
largest), warm (after one run) and cold (page cache dropped before each run: root).
Targets (issue 57): uffs >= 10x faster than fls, >= 1M entries/s on a generated catalog of >= 100k entries.
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
WRITER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "make-hfsplus.py")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entries", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", help="keep (or reuse) the image at this path")
    a = ap.parse_args()
    benchlib.need_release_build("bench-hfs.py")
    work = tempfile.mkdtemp(prefix="uffs-bench-hfs-")
    try:
        image = a.keep or os.path.join(work, "hfs.img")
        if not os.path.exists(image):
            src = os.path.join(work, "src")
            benchlib.make_generated_tree(src, a.entries)
            size = max(256 << 20, a.entries * 6 << 10)
            subprocess.run([sys.executable, WRITER, src, image, "--size", str(size)], check=True,
                           stdout=subprocess.DEVNULL)
            shutil.rmtree(src)
        x = os.path.join(work, "x.uffs")
        warm, rss, err = med([UFFS, "index", image, "-o", x], a.runs, fresh=x)
        n = entries_of(err)
        line = err.strip().splitlines()[-1]
        cold, _, _ = med([UFFS, "index", image, "-o", x], a.runs, cold=True, fresh=x)
        fls = ["fls", "-r", "-p", image]
        fls_warm, fls_rss, _ = med(fls, a.runs, stdout=os.devnull)
        fls_cold, _, _ = med(fls, a.runs, cold=True, stdout=os.devnull)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_table(
        ["run", "warm s", "cold s", "entries/s (warm)", "peak RSS B/entry"],
        [
            ["uffs index HFS+", f"{warm:.3f}", f"{cold:.3f}", f"{n / warm:,.0f}", f"{rss / n:,.0f}"],
            ["fls -r -p", f"{fls_warm:.3f}", f"{fls_cold:.3f}", f"{n / fls_warm:,.0f}", f"{fls_rss / n:,.0f}"],
        ],
    )
    print(f"\nHFS+ {n:,} entries; fls/uffs warm {fls_warm / warm:.1f}x, cold {fls_cold / cold:.1f}x (target >= 10x), "
          f"uffs {n / warm / 1e6:.2f}M entries/s warm (target >= 1M)")
    print(f"uffs's own line (warm): {line}")


if __name__ == "__main__":
    main()
