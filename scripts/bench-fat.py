#!/usr/bin/env python3
"""`uffs index` of FAT32 and exFAT volumes against `fls -r -p` and against `find` over a fresh exFAT mount, in one
run, as a user runs them; with uffs's entries/s, the index file's bytes per entry and its peak RSS per entry, next
to the same figures for an NTFS `$MFT` of like size (the Windows XP sample in tests/data).

    sudo python3 scripts/bench-fat.py [--work DIR] [--runs 5] [--big 100000] [--only fat32,exfat,exfat-big,fat32-big]

Volumes, made once into --work (default /work/bench/fat; printed) and kept for the next run (delete one to remake
it); loop devices and mounts are removed again on the way out, also on an error:

  fat32      FAT32, mkfs.vfat -F 32, filled with mtools `mcopy -s` (no mount) from /usr/share/doc,
             /usr/share/locale and Python's standard library (/usr/lib/python3.X)
  exfat      exFAT, mkfs.exfat, the same folders copied in through mount.exfat-fuse on a loop device
  exfat-big  exFAT, 4 KiB clusters, --big generated files (1..2,000 bytes; 100 a folder, 3 levels) written through
             mount.exfat-fuse
  fat32-big  FAT32, 4 KiB clusters, the same --big generated files staged in /dev/shm and copied in with mtools
             (`mcopy -s`, no mount; far faster than exfat-fuse: a million files in a few minutes)

Each figure is the median of --runs, after one warm-up:
  uffs       `uffs index IMG -o X.uffs` (process start to exit, the file written; a new file each run), warm page
             cache; and cold (page cache dropped before each run)
  fls        `fls -r -p IMG > /dev/null`, warm
  find       exFAT only: `find MNT > /dev/null` over a fresh mount.exfat-fuse mount (mounted outside the timing; the
             mount's own time is shown too), cold (page cache dropped after mounting) and warm
Targets (docs/benchmarks.md): uffs >= 10x faster than fls on each; faster than find over a fresh mount of the exFAT
volumes; peak RSS and index bytes per entry no worse than NTFS's.
Needs root (losetup, mount, drop_caches), dosfstools, mtools, exfatprogs, exfat-fuse, sleuthkit.
"""

import argparse
import glob
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import drop_caches, entries_of, median, print_table  # noqa: E402
from benchlib import median_measured as med  # noqa: E402

ROOT = benchlib.ROOT
# The release build: $UFFS_BIN, else under $CARGO_TARGET_DIR, else target/release.
UFFS = os.environ.get("UFFS_BIN") or (
    os.path.join(os.environ["CARGO_TARGET_DIR"], "release", "uffs") if os.environ.get("CARGO_TARGET_DIR")
    else benchlib.UFFS)
NTFS_MFT = os.path.join(ROOT, "tests", "data", "windows-xp-mft", "MFT")
ENV = dict(os.environ, MTOOLS_SKIP_CHECK="1", LC_ALL="C.UTF-8")


def sources():
    py = sorted(glob.glob("/usr/lib/python3.[0-9]*"))
    return ["/usr/share/doc", "/usr/share/locale"] + [p for p in py if os.path.isdir(p)][-1:]


def du_bytes(paths):
    out = subprocess.run(["du", "-sbL", "--apparent-size", *paths], capture_output=True, text=True).stdout
    return sum(int(line.split()[0]) for line in out.splitlines() if line.split()[0].isdigit())


class Mounted:
    """`img` on a new loop device (`losetup -f --show`), mounted by mount.exfat-fuse on `mnt`; both undone on exit,
    also after an error."""

    def __init__(self, img, mnt):
        self.img, self.mnt, self.dev, self.mounted = img, mnt, None, False

    def __enter__(self):
        os.makedirs(self.mnt, exist_ok=True)
        self.dev = subprocess.run(["losetup", "-f", "--show", self.img], check=True, capture_output=True,
                                  text=True).stdout.strip()
        try:
            t = time.perf_counter()
            subprocess.run(["mount.exfat-fuse", self.dev, self.mnt], check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            self.mount_s = time.perf_counter() - t
            self.mounted = True
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        if self.mounted:
            for _ in range(50):
                if subprocess.run(["umount", self.mnt], stderr=subprocess.DEVNULL).returncode == 0:
                    break
                time.sleep(0.1)
            else:
                subprocess.run(["fusermount", "-u", "-z", self.mnt], stderr=subprocess.DEVNULL)
            self.mounted = False
        if self.dev:
            for _ in range(50):  # exfat-fuse lets go of the device a moment after umount returns
                if subprocess.run(["losetup", "-d", self.dev], stderr=subprocess.DEVNULL).returncode == 0:
                    break
                time.sleep(0.1)
            self.dev = None


def make_fat32(path, work):
    srcs = sources()
    size_mib = max(256, int(du_bytes(srcs) * 2.2 / 2**20))
    tmp = path + ".partial"
    if os.path.exists(tmp):
        os.unlink(tmp)
    subprocess.run(["mkfs.vfat", "-F", "32", "-n", "BENCHFAT", "-C", tmp, str(size_mib * 1024)], check=True,
                   stdout=subprocess.DEVNULL, env=ENV)
    for s in srcs:
        name = os.path.basename(s.rstrip("/"))
        print(f"  mcopy -s {s} (slow on big folders)", flush=True)
        # mtools refuses names FAT cannot hold and says so on stderr; the rest is copied.
        subprocess.run(["mcopy", "-s", "-Q", "-i", tmp, s, f"::/{name}"], env=ENV, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    os.replace(tmp, path)


def make_fat32_generated(path, count):
    size_mib = max(1024, count * 4096 * 2 >> 20)
    tmp = path + ".partial"
    if os.path.exists(tmp):
        os.unlink(tmp)
    subprocess.run(["mkfs.vfat", "-F", "32", "-s", "8", "-n", "BENCHFAT", "-C", tmp, str(size_mib * 1024)],
                   check=True, stdout=subprocess.DEVNULL, env=ENV)
    stage = tempfile.mkdtemp(prefix="uffs-fat-stage-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        fill_generated(count)(stage)
        print("  mcopy -s", flush=True)
        for top in sorted(os.listdir(stage)):
            subprocess.run(["mcopy", "-s", "-Q", "-i", tmp, os.path.join(stage, top), f"::/{top}"], env=ENV,
                           stdout=subprocess.DEVNULL, check=True)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    os.replace(tmp, path)


def make_exfat(path, work, fill, size_mib, cluster=None):
    tmp = path + ".partial"
    if os.path.exists(tmp):
        os.unlink(tmp)
    with open(tmp, "wb") as f:
        f.truncate(size_mib << 20)
    subprocess.run(["mkfs.exfat", "-L", "BENCHEX", *(["-c", str(cluster)] if cluster else []), tmp], check=True,
                   stdout=subprocess.DEVNULL)
    with Mounted(tmp, os.path.join(work, "mnt-make")) as m:
        fill(m.mnt)
    os.replace(tmp, path)


def fill_sources(mnt):
    for s in sources():
        print(f"  cp -rL {s}", flush=True)
        # exFAT holds no symbolic links: -L copies what they point at; dangling ones are skipped (cp says so).
        subprocess.run(["cp", "-rL", "--no-preserve=all", s, os.path.join(mnt, os.path.basename(s))],
                       stderr=subprocess.DEVNULL)


def fill_generated(count):
    def fill(mnt):
        rng = random.Random(20261127)
        exts = ["txt", "jpg", "dll", "log", "json", "py", "mo", "html", "png", "c"]
        made = 0
        t = time.perf_counter()
        top = 0
        while made < count:
            for mid in range(10):
                d = os.path.join(mnt, f"top{top:03d}", f"sub {mid:02d}")
                os.makedirs(d, exist_ok=True)
                for i in range(100):
                    name = f"file_{made:07d}_{rng.randrange(1 << 30):x}.{rng.choice(exts)}"
                    with open(os.path.join(d, name), "wb") as fh:
                        fh.write(b"x" * rng.randrange(1, 2001))
                    made += 1
                if made >= count:
                    break
            top += 1
            if top % 10 == 0:
                print(f"  {made:,} files, {made / (time.perf_counter() - t):,.0f}/s", flush=True)
    return fill


def find_fresh(img, work, runs, cold):
    """Median seconds of `find MNT` over a fresh mount each run, and the median mount time."""
    times, mounts = [], []
    for i in range(runs + (0 if cold else 1)):
        with Mounted(img, os.path.join(work, "mnt-find")) as m:
            if cold:
                drop_caches()
            t = time.perf_counter()
            subprocess.run(["find", m.mnt], stdout=subprocess.DEVNULL, check=True)
            secs = time.perf_counter() - t
        if cold or i > 0:
            times.append(secs)
            mounts.append(m.mount_s)
    return median(times), median(mounts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/work/bench/fat")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--big", type=int, default=100_000, help="files in the generated volumes")
    ap.add_argument("--only", default="fat32,exfat,exfat-big,fat32-big")
    ap.add_argument("--make-only", action="store_true", help="make the volumes, measure nothing")
    a = ap.parse_args()
    if not a.make_only and not os.path.exists(UFFS):
        sys.exit(f"no release build at {UFFS}: cargo build --release -p uffs (or set UFFS_BIN)")
    if os.geteuid() != 0:
        sys.exit("needs root: losetup, mount.exfat-fuse, drop_caches")
    os.makedirs(a.work, exist_ok=True)
    print(f"work dir: {a.work}   uffs: {UFFS}   sources: {', '.join(sources())}")
    only = a.only.split(",")
    src_mib = du_bytes(sources()) / 2**20
    vols = {
        "fat32": ("FAT32, doc+locale+python", lambda p: make_fat32(p, a.work)),
        "exfat": ("exFAT, doc+locale+python",
                  lambda p: make_exfat(p, a.work, fill_sources, max(512, int(src_mib * 2.5)))),
        "exfat-big": (f"exFAT, {a.big:,} generated files",
                      lambda p: make_exfat(p, a.work, fill_generated(a.big), max(1024, a.big * 4096 * 2 >> 20),
                                           cluster=4096)),
        "fat32-big": (f"FAT32, {a.big:,} generated files", lambda p: make_fat32_generated(p, a.big)),
    }
    tmp = tempfile.mkdtemp(prefix="uffs-bench-fat-")
    out = os.path.join(tmp, "X.uffs")
    rows, per = [], []
    try:
        for key in only:
            what, make = vols[key]
            img = os.path.join(a.work, f"{key}.img")
            if not os.path.exists(img):
                print(f"making {img} ({what})", flush=True)
                t = time.perf_counter()
                make(img)
                print(f"  made in {time.perf_counter() - t:.0f} s", flush=True)
            if a.make_only:
                continue
            print(f"measuring {key}", flush=True)
            u_warm, rss, err = med([UFFS, "index", img, "-o", out], a.runs, fresh=out)
            n = entries_of(err)
            size = os.path.getsize(out)
            u_cold, _, _ = med([UFFS, "index", img, "-o", out], a.runs, fresh=out, cold=True)
            fls, _, _ = med(["fls", "-r", "-p", img], a.runs)
            fls_lines = int(subprocess.run(f"fls -r -p {img} | wc -l", shell=True, capture_output=True,
                                           text=True).stdout)
            row = [key, f"{n:,}", f"{fls_lines:,}", f"{u_warm * 1000:.0f}", f"{u_cold * 1000:.0f}",
                   f"{fls * 1000:.0f}", f"{fls / u_warm:.1f}x"]
            if key.startswith("exfat"):
                fc, mount = find_fresh(img, a.work, a.runs, cold=True)
                fw, _ = find_fresh(img, a.work, a.runs, cold=False)
                row += [f"{fc * 1000:.0f}", f"{fc / u_cold:.1f}x", f"{fw * 1000:.0f}", f"{fw / u_warm:.1f}x",
                        f"{mount * 1000:.0f}"]
            else:
                row += ["-"] * 5
            rows.append(row)
            per.append([key, f"{n / u_warm / 1e6:.2f} M/s", f"{size / n:.1f}", f"{rss / n:.0f}",
                        f"{rss / 2**20:.1f} MiB", f"{size:,}"])
        if not a.make_only and os.path.exists(NTFS_MFT):
            u, rss, err = med([UFFS, "index", NTFS_MFT, "-o", out], a.runs, fresh=out)
            n = entries_of(err)
            size = os.path.getsize(out)
            per.append(["NTFS XP $MFT", f"{n / u / 1e6:.2f} M/s", f"{size / n:.1f}", f"{rss / n:.0f}",
                        f"{rss / 2**20:.1f} MiB", f"{size:,}"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print()
    print_table(["volume", "entries", "fls lines", "uffs ms", "uffs cold ms", "fls ms", "fls/uffs", "find cold ms",
                 "find/uffs cold", "find warm ms", "find/uffs warm", "mount ms"], rows)
    print()
    print_table(["volume", "uffs entries/s", "index B/entry", "peak RSS B/entry", "peak RSS", "index bytes"], per)


if __name__ == "__main__":
    main()
