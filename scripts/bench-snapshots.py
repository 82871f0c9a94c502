#!/usr/bin/env python3
"""A volume with shadow copies that change little (issue 28's third speed target): `uffs index --snapshots`, which
keeps every store as a delta over the present's index, against `uffs index` of the volume alone, in time (start to
the files written) and in the bytes written; and, to show what the deltas save, each store built whole.

    sudo python3 scripts/bench-snapshots.py /work/bench/bench.img [--runs 5] [--stores 2] [--changes 300]
        [--work DIR] [--cold]

No Windows here makes shadow copies, so the states are made as Windows would see them: the image is copied, a few
hundred changes are made through ntfs-3g (files created, deleted, renamed, appended to, a folder moved), and that
again for each store; `scripts/make-vss-volume.py` then writes into the last state a VSS catalog and one store per
earlier state holding the 16 KiB blocks that changed (what Windows' copy-on-write keeps). The script checks that
each store reads as its state (`uffs export IMG@vssN` has the sha256 of `uffs export STATE`, and libvshadow's
`vshadowinfo` lists the stores) before timing anything, so a fast wrong answer cannot pass.

The states are kept in --work (default IMAGE.snapshots/) for the next run; delete the folder to remake them.
Target: with every store, at most 1.5x the index time and file size of the volume alone. See docs/benchmarks.md.
"""

import argparse
import glob
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import UFFS, drop_caches, median, need_release_build, print_table, run_timed  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def paths(image, query, limit, seed):
    """Up to `limit` paths of files in `image` that `query` matches, picked by `seed`."""
    out = subprocess.run([UFFS, "--source", image, query, "!$*", "!path:*/$*"], check=True,
                         capture_output=True, text=True).stdout.splitlines()
    random.Random(seed).shuffle(out)
    return out[:limit]


def change(image, n, seed):
    """About `n` changes to `image` through ntfs-3g: a new folder of n/3 files, n/6 files deleted, n/6 renamed,
    n/6 appended to, and one folder moved into the new one."""
    victims = paths(image, "file: size:<1mb", n, seed)
    folders = paths(image, "folder:", 50, seed)
    mnt = tempfile.mkdtemp(prefix="uffs-snap-")
    run(["ntfs-3g", image, mnt])
    try:
        new = os.path.join(mnt, f"new-{seed}")
        os.makedirs(new, exist_ok=True)
        for i in range(n // 3):
            with open(os.path.join(new, f"file-{i}.txt"), "w") as f:
                f.write(f"made for state {seed}, file {i}\n" * (i % 7 + 1))
        k = n // 6
        for p in victims[:k]:
            os.remove(mnt + p)
        for p in victims[k:2 * k]:
            os.rename(mnt + p, mnt + p + ".renamed")
        for p in victims[2 * k:3 * k]:
            with open(mnt + p, "a") as f:
                f.write("appended\n")
        for d in folders:
            # A folder that holds no victim and is not a parent of the new folder.
            if d.count("/") > 2 and not any(v.startswith(d + "/") for v in victims[:3 * k]):
                os.rename(mnt + d, os.path.join(new, os.path.basename(d)))
                break
    finally:
        run(["umount", mnt])
        os.rmdir(mnt)


def export_sha(spec):
    p = subprocess.run([UFFS, "export", spec, "--format", "csv"], check=True, capture_output=True)
    return hashlib.sha256(p.stdout).hexdigest()


def make_states(image, work, stores, changes):
    """The states (oldest first) and the present with the stores written in, made unless there already."""
    states = [os.path.join(work, f"state{i}.img") for i in range(1, stores + 1)]
    present = os.path.join(work, "present.img")
    written = present + ".stores-written"
    if os.path.exists(written):
        return states, present
    os.makedirs(work, exist_ok=True)
    t = time.perf_counter()
    src = image
    for i, s in enumerate(states + [present]):
        if not os.path.exists(s + ".made"):
            run(["cp", "--sparse=always", src, s])
            if i > 0:
                change(s, changes, seed=i)
            open(s + ".made", "w").close()
        src = s
    run([sys.executable, os.path.join(HERE, "make-vss-volume.py"), "--states", *states, "--present", present])
    open(written, "w").close()
    print(f"made {stores} states and the present in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    return states, present


def sizes(path):
    files = [path] + sorted(glob.glob(path + ".vss*"))
    return sum(os.path.getsize(f) for f in files), len(files)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("image")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--stores", type=int, default=2)
    ap.add_argument("--changes", type=int, default=300, help="changes between two states (default %(default)s)")
    ap.add_argument("--work", help="where the states are kept (default IMAGE.snapshots/)")
    ap.add_argument("--cold", action="store_true", help="drop the page cache before each run")
    a = ap.parse_args()
    need_release_build(__file__)
    work = a.work or a.image + ".snapshots"
    states, present = make_states(a.image, work, a.stores, a.changes)

    # Correct before fast: each store reads as its state, for libvshadow and for uffs.
    info = subprocess.run(["vshadowinfo", present], capture_output=True, text=True).stdout
    listed = info.count("Store: ")
    print(f"vshadowinfo lists {listed} stores", file=sys.stderr)
    if listed != len(states):
        sys.exit(f"vshadowinfo lists {listed} stores, not {len(states)}:\n{info}")
    for i, s in enumerate(states, 1):
        if export_sha(f"{present}@vss{i}") != export_sha(s):
            sys.exit(f"{present}@vss{i} does not export as {s}")
    print("each store exports as its state", file=sys.stderr)

    out = tempfile.mkdtemp(prefix="uffs-bench-snap-")
    alone, every = os.path.join(out, "alone.uffs"), os.path.join(out, "every.uffs")
    cmds = {
        "alone": [UFFS, "index", present, "-o", alone],
        "every": [UFFS, "index", present, "--snapshots", "-o", every],
    }
    for i in range(1, len(states) + 1):
        cmds[f"vss{i} whole"] = [UFFS, "index", f"{present}@vss{i}", "-o", os.path.join(out, f"whole{i}.uffs")]
    times = {k: [] for k in cmds}
    for _ in range(a.runs):
        for k, c in cmds.items():
            if a.cold:
                drop_caches()
            times[k].append(run_timed(c))
    base_t = median(times["alone"])
    base_b, _ = sizes(alone)
    every_b, n_files = sizes(every)
    rows = [
        ["uffs index (the volume alone)", f"{base_t:.3f}", "1.00", f"{base_b:,}", "1.00"],
        [f"uffs index --snapshots ({len(states)} stores, {n_files} files)", f"{median(times['every']):.3f}",
         f"{median(times['every']) / base_t:.2f}", f"{every_b:,}", f"{every_b / base_b:.2f}"],
    ]
    for i in range(1, len(states) + 1):
        b = os.path.getsize(os.path.join(out, f"whole{i}.uffs"))
        t = median(times[f"vss{i} whole"])
        rows.append([f"uffs index IMG@vss{i} (the store built whole)", f"{t:.3f}", f"{t / base_t:.2f}", f"{b:,}",
                     f"{b / base_b:.2f}"])
    print(f"\n{present}: {'cold' if a.cold else 'warm'}, median of {a.runs}")
    print_table(["", "seconds", "x alone", "bytes", "x alone"], rows)
    p = subprocess.run([UFFS, "index", present, "--snapshots", "-o", every], capture_output=True, text=True)
    print("\n" + p.stderr.strip())
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
