#!/usr/bin/env python3
"""The benchmark volume's 1.2 million paths as an ext4, XFS or Btrfs image: the tree `make-bench-volume.py --dry-run
--list` predicts (the same seed, names, folders and sizes as the NTFS benchmark volume), staged in /dev/shm and
written by `mkfs.ext4 -d`, or for XFS and Btrfs written through the kernel into a fresh `mkfs.xfs` or `mkfs.btrfs`
volume on a loop mount (root), so that ext, XFS, Btrfs and NTFS are measured on the same paths (issues 55 and 58).

    sudo python3 scripts/make-ext-bench.py [--out /work/bench/ext-bench.img] [--entries 1200000]
    sudo python3 scripts/make-ext-bench.py --fs xfs --out /work/bench/xfs-bench.img
    sudo python3 scripts/make-ext-bench.py --fs btrfs --out /work/bench/btrfs-bench.img

Folders are folders, files are sparse files of their size (no data blocks, as most of the NTFS volume's are),
junctions are symlinks to their parent, and each extra hard-link name is a hard link to the file listed just
before it in its folder (or to the folder's first file). The image is made again only when its stamp
(`OUT.stamp`: entries, seed, this script's hash) differs; the staging folder is removed on the way out, also on an
error. Prints the names made and the seconds each phase took (on the development machine: manifest 20 s, staging
40 s, mkfs 340 s with a build beside it). Needs e2fsprogs and about 1.5 GB of /dev/shm; not root.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def stamp_of(args):
    me = hashlib.sha256(open(os.path.abspath(__file__), "rb").read()).hexdigest()
    return {"entries": args.entries, "seed": args.seed, "script": me, "fs": args.fs}


def manifest(args, work):
    """The (path, kind, size) rows of the benchmark volume's tree, from its generator's dry run."""
    out = os.path.join(work, "names.tsv")
    cmd = [sys.executable, os.path.join(ROOT, "scripts", "make-bench-volume.py"), "--dry-run", "--quiet",
           "--entries", str(args.entries), "--seed", str(args.seed), "--list", out]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    rows = []
    with open(out, encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            path, kind, size = line.rstrip("\n").split("\t")
            rows.append((path, kind, int(size)))
    return rows


def fit(name):
    """`name` cut to ext's 255 bytes (the NTFS volume allows 255 UTF-16 units, some long CJK names are longer in
    UTF-8), keeping its extension; the same name always gives the same cut."""
    b = os.fsencode(name)
    if len(b) <= 255:
        return name
    stem, dot, ext = name.rpartition(".")
    ext_b = os.fsencode(dot + ext) if dot and len(ext) < 16 else b""
    keep = os.fsencode(stem if ext_b else name)[: 255 - len(ext_b)]
    return os.fsdecode(keep.decode("utf-8", errors="ignore").encode()) + os.fsdecode(ext_b)


def stage(rows, top):
    """Makes the tree under `top`; returns how many names it made and how many were cut to 255 bytes."""
    made = cut = 0
    last_file = {}
    # Parents before children: a folder's row comes before its entries in the list, but sort to be sure.
    rows = sorted(rows, key=lambda r: r[0].count("/"))
    for path, kind, size in rows:
        parts = path.split("/")
        fitted = [fit(p) for p in parts]
        cut += fitted[-1] != parts[-1]
        full = os.path.join(top, *fitted)
        parent = os.path.dirname(full)
        if kind == "dir":
            os.makedirs(full, exist_ok=True)
        elif kind == "file":
            os.makedirs(parent, exist_ok=True)
            with open(full, "wb") as f:
                if size:
                    f.truncate(size)
            last_file[parent] = full
        elif kind == "junction":
            os.makedirs(parent, exist_ok=True)
            os.symlink(".", full)
        elif kind == "link":
            os.makedirs(parent, exist_ok=True)
            target = last_file.get(parent)
            if target is None:
                with open(full, "wb"):
                    pass
                last_file[parent] = full
            else:
                os.link(target, full)
        else:
            sys.exit(f"unknown kind {kind!r} for {path}")
        made += 1
    return made, cut


def kernel_image(fs, rows, img, size, work, times):
    """A fresh XFS or Btrfs volume in `img` holding the tree, written through the kernel on a loop mount (as a
    system's own volume is; mkfs.xfs has no `-d`); returns what `stage` does."""
    t = time.perf_counter()
    with open(img, "wb") as f:
        f.truncate(parse_size(size))
    subprocess.run([f"mkfs.{fs}", "-q", "-f", "-L", "uffs-bench", img], check=True)
    mnt = os.path.join(work, "mnt")
    os.mkdir(mnt)
    subprocess.run(["mount", "-o", "loop", img, mnt], check=True)
    try:
        made, cut = stage(rows, mnt)
        times["stage"] = time.perf_counter() - t
    finally:
        t = time.perf_counter()
        subprocess.run(["umount", mnt], check=True)
        times["unmount"] = time.perf_counter() - t
    return made, cut


def parse_size(text):
    """`24G` as bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="default /work/bench/ext-bench.img, xfs-bench.img or btrfs-bench.img: where the benchmarks look")
    ap.add_argument("--entries", type=int, default=1_200_000)
    ap.add_argument("--seed", type=int, default=20240917)
    ap.add_argument("--size", default="24G", help="the image's size (sparse); default 24G")
    ap.add_argument("--fs", choices=["ext4", "xfs", "btrfs"], default="ext4")
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    if args.out is None:
        args.out = "/work/bench/" + ("ext" if args.fs == "ext4" else args.fs) + "-bench.img"
    stamp_path = args.out + ".stamp"
    want = stamp_of(args)
    if not args.force and os.path.exists(args.out) and os.path.exists(stamp_path):
        try:
            if json.load(open(stamp_path)).get("params") == want:
                print(f"{args.out}: up to date")
                return
        except (OSError, ValueError):
            pass
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    work = tempfile.mkdtemp(prefix="uffs-ext-bench-", dir=base)
    times = {}
    try:
        t = time.perf_counter()
        rows = manifest(args, work)
        times["manifest"] = time.perf_counter() - t
        tmp = args.out + ".part"
        if os.path.exists(tmp):
            os.unlink(tmp)
        if args.fs in ("xfs", "btrfs"):
            made, cut = kernel_image(args.fs, rows, tmp, args.size, work, times)
        else:
            t = time.perf_counter()
            top = os.path.join(work, "tree")
            os.mkdir(top)
            made, cut = stage(rows, top)
            times["stage"] = time.perf_counter() - t
            t = time.perf_counter()
            inodes = int(made * 1.15) + 10_000
            subprocess.run(["mkfs.ext4", "-q", "-F", "-b", "4096", "-N", str(inodes), "-L", "uffs-bench",
                            "-E", "root_owner=0:0", "-d", top, tmp, args.size], check=True)
            times["mkfs"] = time.perf_counter() - t
        os.replace(tmp, args.out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if os.path.exists(args.out + ".part"):
            os.unlink(args.out + ".part")
    json.dump({"params": want, "names": made, "cut_to_255_bytes": cut, "seconds": times}, open(stamp_path, "w"),
              indent=1)
    print(f"{args.out}: {made:,} names ({cut} cut to ext's 255 bytes); " + ", ".join(f"{k} {v:.1f} s" for k, v in times.items()))


if __name__ == "__main__":
    main()
