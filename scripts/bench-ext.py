#!/usr/bin/env python3
"""`uffs index` of an ext4 volume holding this machine's /usr (`mkfs.ext4 -d /usr`, ~160k entries) against
`fls -r -p` and against `find` over a fresh kernel mount, in one run, as a user runs them; with uffs's entries/s
and MB/s, the index file's bytes per entry and its peak RSS per entry, next to the same figures for an NTFS `$MFT`
(the Windows XP sample in tests/data).

    sudo python3 scripts/bench-ext.py [--work DIR] [--runs 5]

The image is made once into --work (default /work/bench/ext; printed) and kept for the next run (delete it to
remake it); the mount is removed again on the way out, also on an error.

Each figure is the median of --runs:
  uffs   `uffs index IMG -o X.uffs` (process start to exit, the file written), warm and cold (page cache dropped
         before each run)
  fls    `fls -r -p IMG > /dev/null`, warm and cold
  find   `find MNT -printf '%p %s %T@\\n' > /dev/null` over a fresh `mount -o loop,ro` (mounted outside the timing),
         cold (caches dropped after mounting) and warm
Targets (issue 41): uffs >= 5x faster than fls warm, >= 3x faster than find cold; peak RSS and index bytes per
entry no worse than NTFS's. Needs root (mount, drop_caches), e2fsprogs, sleuthkit.
"""

import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import entries_of, print_table  # noqa: E402
from benchlib import median_measured as med  # noqa: E402

UFFS = os.environ.get("UFFS_BIN") or benchlib.UFFS
NTFS_MFT = os.path.join(benchlib.ROOT, "tests", "data", "windows-xp-mft", "MFT")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default="/work/bench/ext")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    benchlib.need_release_build("bench-ext.py")
    os.makedirs(a.work, exist_ok=True)
    img = os.path.join(a.work, "usr-ext4.img")
    if not os.path.exists(img):
        used = int(subprocess.run(["du", "-sb", "/usr"], capture_output=True, text=True).stdout.split()[0])
        size_mib = int(used * 1.3 / 2**20) + 512
        print(f"making {img}: mkfs.ext4 -d /usr, {size_mib} MiB", flush=True)
        subprocess.run(["mkfs.ext4", "-q", "-F", "-L", "benchusr", "-d", "/usr", img + ".partial", f"{size_mib}M"],
                       check=True)
        os.replace(img + ".partial", img)
    print(f"image: {img} ({os.path.getsize(img) / 2**30:.1f} GiB)")
    out = os.path.join(a.work, "x.uffs")
    t_warm, rss, err = med([UFFS, "index", img, "-o", out], a.runs, fresh=out)
    n = entries_of(err)
    t_cold, _, _ = med([UFFS, "index", img, "-o", out], a.runs, cold=True, fresh=out)
    index_bytes = os.path.getsize(out)
    fls_warm, _, _ = med(["fls", "-r", "-p", img], a.runs)
    fls_cold, _, _ = med(["fls", "-r", "-p", img], a.runs, cold=True)
    mnt = os.path.join(a.work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    subprocess.run(["mount", "-o", "loop,ro", img, mnt], check=True)
    try:
        find = ["find", mnt, "-printf", "%p %s %T@\n"]
        find_cold, _, _ = med(find, a.runs, cold=True)
        find_warm, _, _ = med(find, a.runs)
    finally:
        subprocess.run(["umount", mnt])
    # What uffs read: the inode tables and folders (the bytes `uffs bench` would count are not printed here: the
    # MB/s is the image's used bytes over the warm time, an upper bound of what was read).
    ntfs_out = os.path.join(a.work, "ntfs.uffs")
    nt, nt_rss, nt_err = med([UFFS, "index", NTFS_MFT, "-o", ntfs_out], a.runs, fresh=ntfs_out)
    nt_n = entries_of(nt_err)
    print_table(
        ["run", "warm s", "cold s", "entries/s (warm)"],
        [
            ["uffs index", f"{t_warm:.3f}", f"{t_cold:.3f}", f"{n / t_warm:,.0f}"],
            ["fls -r -p", f"{fls_warm:.3f}", f"{fls_cold:.3f}", f"{n / fls_warm:,.0f}"],
            ["find (fresh mount)", f"{find_warm:.3f}", f"{find_cold:.3f}", f"{n / find_warm:,.0f}"],
        ],
    )
    print(f"\n{n:,} entries; fls/uffs warm {fls_warm / t_warm:.1f}x (target >= 5x), cold {fls_cold / t_cold:.1f}x; "
          f"find cold/uffs cold {find_cold / t_cold:.1f}x (target >= 3x), warm {find_warm / t_warm:.1f}x")
    print(f"peak RSS {rss / n:,.0f} B/entry (NTFS $MFT sample: {nt_rss / nt_n:,.0f}); index {index_bytes / n:,.1f} "
          f"B/entry (NTFS: {os.path.getsize(ntfs_out) / nt_n:,.1f})")
    print(f"uffs's own line: {err.strip().splitlines()[-1]}")


if __name__ == "__main__":
    main()
