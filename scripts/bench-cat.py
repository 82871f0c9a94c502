#!/usr/bin/env python3
"""bench-cat.py [--dir DIR] [--mib N] [--runs R] [--uffs PATH]

`uffs cat` throughput against `icat` and against reading the same bytes raw (4 MiB preads of the file's extents,
what `cat` or `dd` of them reads), in one
run, on a volume made here (needs root, mkntfs and the ntfs-3g FUSE driver, The Sleuth Kit): a plain file of N MiB
of random bytes, and a compressed text file of N/2 MiB (a folder with FILE_ATTRIBUTE_COMPRESSED, so ntfs-3g writes
LZNT1 units). Every command writes to /dev/null from a warm page cache; each is run R times and the best time is
kept. Prints MB/s of data written (the file's size over the time) and the ratios. Timings are noisy on a shared
machine: compare the ratios, not the figures.
"""
import argparse
import os
import re
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--dir", default="/tmp/uffs-bench-cat")
ap.add_argument("--mib", type=int, default=512)
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--uffs", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "uffs"))
a = ap.parse_args()

os.makedirs(a.dir, exist_ok=True)
img = os.path.join(a.dir, "cat-bench-%d.img" % a.mib)
if not os.path.exists(img):
    tmp = img + ".tmp"
    mnt = os.path.join(a.dir, "mnt")
    os.makedirs(mnt, exist_ok=True)
    subprocess.run(["truncate", "-s", "%dM" % (a.mib * 2 + 256), tmp], check=True)
    subprocess.run(["mkntfs", "-F", "-Q", "-q", "-L", "catbench", tmp], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    p = subprocess.Popen(["ntfs-3g", "-o", "no_detach", tmp, mnt])
    while not os.path.ismount(mnt):
        time.sleep(0.05)
    try:
        with open(os.path.join(mnt, "big.bin"), "wb") as f:
            for _ in range(a.mib):
                f.write(os.urandom(1 << 20))
        os.mkdir(os.path.join(mnt, "c"))
        os.setxattr(os.path.join(mnt, "c"), "system.ntfs_attrib_be", (0x810).to_bytes(4, "big"))
        line = b"The quick brown fox jumps over the lazy dog. 0123456789 abcdefghijklmnopqrstuvwxyz\n"
        with open(os.path.join(mnt, "c", "text.txt"), "wb") as f:
            block = b"".join(line[:10] + b"%08d" % i + line[18:] for i in range(12_000))
            for _ in range(a.mib // 2 * (1 << 20) // len(block)):
                f.write(block)
    finally:
        subprocess.run(["umount", mnt], check=True)
        p.wait()
    os.rename(tmp, img)


def inode(name):
    out = subprocess.run(["fls", "-r", "-p", img], capture_output=True, text=True, check=True).stdout
    for l in out.splitlines():
        head, path = l.split("\t", 1)
        if path == name:
            return int(head.split()[-1].rstrip(":").split("-")[0])
    sys.exit("no %s in %s" % (name, img))


def extents(ino):
    """(byte offset, length) of the clusters istat lists for the file's $DATA, contiguous ones merged; the size"""
    out = subprocess.run(["istat", img, str(ino)], capture_output=True, text=True, check=True).stdout
    cs = int(re.search(r"Cluster Size: (\d+)", subprocess.run(["fsstat", img], capture_output=True, text=True,
                                                               check=True).stdout).group(1))
    m = re.search(r"Type: \$DATA \(128-\d+\)   Name: N/A.*size: (\d+)", out)
    size = int(m.group(1))
    nums = [int(x) for x in out[m.end():].split() if x.isdigit()]
    runs = []
    for c in nums:
        if c == 0:
            continue
        if runs and runs[-1][0] + runs[-1][1] == c:
            runs[-1][1] += 1
        else:
            runs.append([c, 1])
    return [(c * cs, n * cs) for c, n in runs], size


def best(cmds):
    """best wall time of running the commands (a list of argv) one after the other"""
    times = []
    for _ in range(a.runs):
        t = time.perf_counter()
        for c in cmds:
            subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t)
    return min(times)


def raw(ext):
    """reads the extents' bytes with 4 MiB preads in this process (what `cat` of them would read)"""
    buf = bytearray(4 << 20)
    fd = os.open(img, os.O_RDONLY)
    try:
        for o, n in ext:
            while n > 0:
                k = os.preadv(fd, [memoryview(buf)[:min(n, len(buf))]], o)
                o += k
                n -= k
    finally:
        os.close(fd)


def best_raw(ext):
    times = []
    for _ in range(a.runs):
        t = time.perf_counter()
        raw(ext)
        times.append(time.perf_counter() - t)
    return min(times)


print("volume: %s" % img)
for name, what in (("big.bin", "plain, random"), ("c/text.txt", "compressed (LZNT1), text")):
    ino = inode(name)
    ext, size = extents(ino)
    stored = sum(n for _, n in ext)
    raw(ext)  # a warm page cache for every reader
    cmds = {
        "uffs cat": [[a.uffs, "cat", img, str(ino)]],
        "icat": [["icat", "-f", "ntfs", "-i", "raw", img, str(ino)]],
    }
    t = {k: best(v) for k, v in cmds.items()}
    t["raw read"] = best_raw(ext)
    print("%s (%s): %d bytes, %d bytes stored in %d extents" % (name, what, size, stored, len(ext)))
    # (the raw read is timed in this process, with no process start: it favours the raw read)
    for k, v in t.items():
        print("  %-18s %7.3f s  %8.0f MB/s of file data" % (k, v, size / v / 1e6))
    print("  uffs cat / icat time: %.2f;  uffs cat / raw read of the stored bytes: %.2f" % (
        t["uffs cat"] / t["icat"], t["uffs cat"] / t["raw read"]))
