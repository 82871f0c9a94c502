#!/usr/bin/env python3
"""A mounted folder walked (issue 56): `uffs index MOUNT --walk` of the benchmark volume's 1.2 million paths on
ext4, XFS and Btrfs loop mounts, against `find -xdev` and plocate's `updatedb` over the same mounts, in one run,
as a user runs them (process start to exit, the index file written and synced).

    sudo python3 scripts/bench-walk.py [--work /work/bench/walk] [--fs ext4,xfs,btrfs] [--runs 3]

The images are made once (WORK/FS.img, sparse, 16 GiB; remade when WORK/FS.img.stamp differs): `mkfs.FS`, a loop
mount, and the tree `make-ext-bench.py` stages (the benchmark volume's folders, sparse files of its sizes,
junctions as symlinks, hard links) written through the kernel. Each figure is the median of --runs (peak RSS: the
largest):
  cold    the page cache, dentries and inodes dropped before each run
  warm    after one run to warm them
  uffs    `uffs index MNT --walk -o X.uffs --prune-names '' --prune-paths ''`
  find    `find MNT -xdev` (its output to /dev/null)
  updatedb  `updatedb -U MNT -o DB --require-visibility no --prunepaths '' --prunefs '' --prunenames ''`; its
          second run over an unchanged tree ("re-walk") reuses the database and lists only folders whose time moved
Targets (issue 56): first index cold >= 3x faster than updatedb; warm >= 1.5x faster than find; re-walk of the
unchanged tree >= 2x faster than updatedb's second run; peak RSS <= 150 B/entry. Needs root, e2fsprogs, xfsprogs,
btrfs-progs, plocate and a release build.
"""

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import entries_of, print_table  # noqa: E402
from benchlib import median_measured as med  # noqa: E402

CHURN = 60
HERE = os.path.dirname(os.path.abspath(__file__))
UFFS = os.environ.get("UFFS_BIN") or benchlib.UFFS
MKFS = {
    "ext4": lambda img, n: ["mkfs.ext4", "-q", "-F", "-b", "4096", "-N", str(n), img],
    "xfs": lambda img, n: ["mkfs.xfs", "-q", "-f", img],
    "btrfs": lambda img, n: ["mkfs.btrfs", "-q", "-f", img],
}


def ext_bench():
    spec = importlib.util.spec_from_file_location("make_ext_bench", os.path.join(HERE, "make-ext-bench.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def make_image(fs, img, rows, params):
    stamp = img + ".stamp"
    try:
        if os.path.exists(img) and json.load(open(stamp)).get("params") == params:
            return
    except (OSError, ValueError):
        pass
    t = time.perf_counter()
    if os.path.exists(img):
        os.unlink(img)
    with open(img, "wb") as f:
        f.truncate(16 << 30)
    subprocess.run(MKFS[fs](img, int(len(rows) * 1.15) + 10_000), check=True)
    mnt = tempfile.mkdtemp(prefix=f"uffs-walk-{fs}-")
    subprocess.run(["mount", "-o", "loop", img, mnt], check=True)
    try:
        made, cut = ext_bench().stage(rows, mnt)
    finally:
        subprocess.run(["umount", mnt], check=True)
        os.rmdir(mnt)
    json.dump({"params": params, "names": made}, open(stamp, "w"))
    print(f"{img}: {made:,} names in {time.perf_counter() - t:.0f} s", flush=True)


def live(img):
    """The daemon following the 1.2M-entry ext4 tree, mounted read-write, walked (`volumes add MNT --walk`): how
    long after `close()` a new file is found through the daemon, and after `rename()` a folder of many entries,
    each the median of 5; then the daemon's answers against a fresh walk."""
    work = tempfile.mkdtemp(prefix="uffs-bench-walk-live-")
    mnt = os.path.join(work, "mnt")
    os.mkdir(mnt)
    env = dict(os.environ, UFFS_CACHE_DIR=os.path.join(work, "cache"), UFFS_RUNTIME_DIR=os.path.join(work, "run"))
    subprocess.run(["mount", "-o", "loop", img, mnt], check=True)
    try:
        run = lambda *args: subprocess.run([UFFS, *args], env=env, capture_output=True, text=True)
        t = time.perf_counter()
        r = run("volumes", "add", mnt, "--walk", "--name", "live", "--prune-names", "", "--prune-paths", "")
        if r.returncode != 0:
            sys.exit(r.stderr)
        print(f"volumes add (walk, index written): {time.perf_counter() - t:.2f} s")
        run("daemon", "start")
        log = os.path.join(work, "cache", "daemon.log")
        while "following" not in open(log).read():
            time.sleep(0.05)
        time.sleep(20)  # the first check, a whole walk (what changed between the index's walk and the watch)

        def found_after(make, query, want):
            t = time.perf_counter()
            make()
            while want not in run(query).stdout:
                time.sleep(0.002)
            return (time.perf_counter() - t) * 1e3

        tag = f"live-new-{os.getpid()}"
        new = [found_after(lambda i=i: open(os.path.join(mnt, f"{tag}-{i}.txt"), "w").close(),
                           f"{tag}-{i}.txt", f"{tag}-{i}.txt") for i in range(5)]
        # The largest top folder, renamed back and forth.
        tops = sorted(((sum(1 for _ in os.scandir(os.path.join(mnt, d))), d) for d in os.listdir(mnt)
                       if os.path.isdir(os.path.join(mnt, d)) and d != "lost+found"), reverse=True)
        big = tops[0][1]
        below = int(subprocess.run(f"find '{os.path.join(mnt, big)}' | wc -l", shell=True, capture_output=True,
                                   text=True).stdout) - 1
        renames = []
        for i in range(5):
            old, newname = (big, f"{big}-renamed") if i % 2 == 0 else (f"{big}-renamed", big)
            renames.append(found_after(lambda o=old, n=newname: os.rename(os.path.join(mnt, o), os.path.join(mnt, n)),
                                       f"wfn:{newname}", os.path.join(mnt, newname)))
        if len(renames) % 2:
            os.rename(os.path.join(mnt, f"{big}-renamed"), os.path.join(mnt, big))
        # Churn: 5,000 changes a second (files made, renamed and deleted in a few folders) for CHURN seconds.
        churn_dir = os.path.join(mnt, "churn")
        os.makedirs(churn_dir, exist_ok=True)
        t0, n, k = time.perf_counter(), 0, 0
        while time.perf_counter() - t0 < CHURN:
            sub = os.path.join(churn_dir, f"d{k % 20}")
            os.makedirs(sub, exist_ok=True)
            p = os.path.join(sub, f"f{k}.txt")
            with open(p, "w") as f:
                f.write("x" * (k % 100))
            n += 1
            if k % 3 == 0:
                os.rename(p, p + ".moved")
                n += 1
            if k % 5 == 0 and k > 10:
                old = os.path.join(churn_dir, f"d{(k - 10) % 20}", f"f{k - 10}.txt")
                if os.path.exists(old):
                    os.unlink(old)
                    n += 1
            k += 1
            ahead = n / 5000 - (time.perf_counter() - t0)
            if ahead > 0:
                time.sleep(ahead)
        rate = n / (time.perf_counter() - t0)
        t = time.perf_counter()
        fresh = set(subprocess.run([UFFS, "--source", mnt, "--walk", "--prune-names", "", "--prune-paths", "", "*"],
                                   capture_output=True, text=True).stdout.splitlines())
        while set(run("*").stdout.splitlines()) != fresh and time.perf_counter() - t < 30:
            time.sleep(0.2)
        print(f"churn: {n:,} changes in {CHURN} s ({rate:,.0f}/s)")
        daemon = set(run("*").stdout.splitlines())
        print(f"new file found after close(): median {benchlib.median(new):.0f} ms ({', '.join(f'{x:.0f}' for x in new)})")
        print(f"folder {big} ({below:,} entries below it) renamed, found after rename(): median "
              f"{benchlib.median(renames):.0f} ms ({', '.join(f'{x:.0f}' for x in renames)})")
        print(f"after it, the daemon's answers equal a fresh walk's: {daemon == fresh} ({len(daemon):,} paths; "
              f"only the daemon's: {len(daemon - fresh)}, only the walk's: {len(fresh - daemon)})")
        shutil.rmtree(churn_dir)
        for i in range(5):
            os.unlink(os.path.join(mnt, f"{tag}-{i}.txt"))
        print("log:", *[l for l in open(log).read().splitlines() if "applied" in l][-3:], sep="\n  ")
    finally:
        subprocess.run([UFFS, "daemon", "stop"], env=env, capture_output=True)
        subprocess.run(["umount", mnt])
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default="/work/bench/walk")
    ap.add_argument("--fs", default="ext4,xfs,btrfs")
    ap.add_argument("--entries", type=int, default=1_200_000)
    ap.add_argument("--seed", type=int, default=20240917)
    ap.add_argument("--runs", type=int, default=3, help="runs per figure; 0: only make the images")
    ap.add_argument("--live", action="store_true", help="only the daemon's following of the ext4 image's mount")
    a = ap.parse_args()
    benchlib.need_release_build("bench-walk.py")
    os.makedirs(a.work, exist_ok=True)
    filesystems = [f for f in a.fs.split(",") if f]
    params = {"entries": a.entries, "seed": a.seed}
    need = [fs for fs in filesystems if not os.path.exists(os.path.join(a.work, f"{fs}.img"))
            or not os.path.exists(os.path.join(a.work, f"{fs}.img.stamp"))
            or json.load(open(os.path.join(a.work, f"{fs}.img.stamp"))).get("params") != params]
    if need:
        eb = ext_bench()
        tmp = tempfile.mkdtemp(prefix="uffs-walk-manifest-")
        try:
            rows = eb.manifest(argparse.Namespace(entries=a.entries, seed=a.seed), tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        for fs in need:
            make_image(fs, os.path.join(a.work, f"{fs}.img"), rows, params)
    if a.runs == 0:
        return
    if a.live:
        live(os.path.join(a.work, "ext4.img"))
        return
    table = []
    notes = []
    for fs in filesystems:
        work = tempfile.mkdtemp(prefix=f"uffs-bench-walk-{fs}-")
        mnt = os.path.join(work, "mnt")
        os.mkdir(mnt)
        subprocess.run(["mount", "-o", "loop,ro", os.path.join(a.work, f"{fs}.img"), mnt], check=True)
        try:
            x = os.path.join(work, "x.uffs")
            uffs = [UFFS, "index", mnt, "--walk", "-o", x, "--prune-names", "", "--prune-paths", ""]
            u_cold, _, _ = med(uffs, a.runs, cold=True, fresh=x)
            u_warm, u_rss, err = med(uffs, a.runs, fresh=x)
            n = entries_of(err)
            find = ["find", mnt, "-xdev"]
            f_cold, _, _ = med(find, a.runs, cold=True)
            f_warm, _, _ = med(find, a.runs)
            db = os.path.join(work, "plocate.db")
            updatedb = ["updatedb", "-U", mnt, "-o", db, "--require-visibility", "no", "--prunepaths", "",
                        "--prunefs", "", "--prunenames", ""]
            up_cold, _, _ = med(updatedb, a.runs, cold=True, fresh=db)
            up_again, _, _ = med(updatedb, a.runs)
            found = int(subprocess.run(f"find {mnt} -xdev | wc -l", shell=True, capture_output=True,
                                       text=True).stdout)
        finally:
            subprocess.run(["umount", mnt])
            shutil.rmtree(work, ignore_errors=True)
        table.append([fs, f"{n:,}", f"{u_cold:.3f}", f"{u_warm:.3f}", f"{n / u_warm:,.0f}", f"{u_rss / n:,.0f}",
                      f"{f_cold:.3f}", f"{f_warm:.3f}", f"{up_cold:.3f}", f"{up_again:.3f}"])
        notes.append(f"{fs}: updatedb/uffs cold {up_cold / u_cold:.2f}x (target >= 3x); find/uffs warm "
                     f"{f_warm / u_warm:.2f}x (target >= 1.5x), cold {f_cold / u_cold:.2f}x; updatedb's re-walk/"
                     f"uffs warm {up_again / u_warm:.2f}x (target >= 2x); find lists {found:,}, uffs {n:,} "
                     f"(the root counted by both)")
    print_table(["file system", "entries", "uffs cold s", "uffs warm s", "entries/s", "B/entry",
                 "find cold s", "find warm s", "updatedb cold s", "updatedb again s"], table)
    print()
    for line in notes:
        print(line)


if __name__ == "__main__":
    main()
