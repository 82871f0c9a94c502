#!/usr/bin/env python3
"""Hashing and content search over the content workload: uffs against hashdeep, sha256sum and rg on an ntfs-3g
mount, and against the physical limit, reading the same extents raw in one sorted pass (issue 29).

    sudo python3 scripts/bench-content.py /work/bench/content.img [--runs 3] [--only hash,grep,raw,uffs]

The image is made by scripts/make-content-volume.py; its manifest (IMG.manifest.json) gives the data bytes and
the planted literal and regex. Each command is timed cold (remounted, `sync; echo 3 > /proc/sys/vm/drop_caches`
before every run) and warm (after one untimed run), --runs times each; the median is reported.

  hashdeep     hashdeep -c sha256 -r MOUNT
  sha256sum    find MOUNT -type f -print0 | xargs -0 sha256sum
  rg literal   rg -uuu --no-mmap -c LITERAL MOUNT
  rg regex     rg -uuu --no-mmap -c REGEX MOUNT
  raw read     every file's data extents (TSK: fls -r -p, then istat -r per file; cached in IMG.extents.json),
               nearby ones merged, read with 8 MiB preads in ascending order, in this process
  uffs ...     uffs hash --source IMG --algo sha256 [--hashdeep]; uffs index IMG -o F then
               uffs hash --index F; uffs grep --binary -c LITERAL|REGEX --source IMG (--binary: binary files
               searched too, as rg -uuu does): each skipped with a message while the command is not there yet

The mount is read-only with streams_interface=xattr: the peers read files' unnamed data only (named streams are
not files to them). MB/s is the volume's data bytes (the files' sizes, sparse holes included) over the time; the
raw read also gives its own bytes. Ratios are of medians measured in this one run. Timings on a shared machine are
noisy: compare the ratios.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from benchlib import UFFS, drop_caches, median, print_table, run_timed
from benchvol.build import mount, unmount

MOUNT_OPTS = "ro,streams_interface=xattr"
READ_CHUNK = 8 << 20
MERGE_GAP = 256 << 10          # extents closer than this are read as one (the gap is read too)


# ---------------------------------------------------------------------------
# Extents with The Sleuth Kit
# ---------------------------------------------------------------------------

def cluster_size(img):
    out = subprocess.run(["fsstat", img], capture_output=True, text=True, check=True).stdout
    return int(re.search(r"Cluster Size: (\d+)", out).group(1))


def file_inodes(img):
    """The inode of every allocated file (fls -r -p -u), metafiles at the root ($MFT, ...) left out."""
    out = subprocess.run(["fls", "-r", "-p", "-u", img], capture_output=True, text=True, check=True).stdout
    inodes = set()
    for line in out.splitlines():
        head, _, path = line.partition("\t")
        if head.startswith("r/r") and not path.startswith("$"):
            inodes.add(int(head.split()[-1].rstrip(":").split("-")[0]))
    return sorted(inodes)


def data_runs(img, inum):
    """(first cluster, clusters) of every stored run of every $DATA attribute of the file, named streams too
    (istat -r); sparse runs and resident data have none."""
    out = subprocess.run(["istat", "-r", img, str(inum)], capture_output=True, text=True, check=True).stdout
    runs, in_data = [], False
    for line in out.splitlines():
        if line.startswith("Type:"):
            in_data = line.startswith("Type: $DATA")
        elif in_data:
            m = re.match(r"\s+Starting address: (\d+), length: (\d+)", line)
            if m:
                runs.append((int(m.group(1)), int(m.group(2))))
    return runs


def extents(img, cache, gap):
    """Byte extents to read, sorted and merged, from the cache when it matches the image."""
    st = os.stat(img)
    key = {"image": os.path.abspath(img), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "gap": gap}
    try:
        with open(cache) as fh:
            c = json.load(fh)
        if c["key"] == key:
            return c
    except (OSError, ValueError, KeyError):
        pass
    t = time.time()
    cs = cluster_size(img)
    inodes = file_inodes(img)
    print(f"extents: istat -r of {len(inodes):,} files (once; cached in {cache}) ...", file=sys.stderr, flush=True)
    with ThreadPoolExecutor(os.cpu_count() or 2) as ex:
        runs = [r for rs in ex.map(lambda i: data_runs(img, i), inodes, chunksize=64) for r in rs]
    stored = sum(n for _, n in runs) * cs
    merged = []
    for c0, n in sorted(runs):
        a, b = c0 * cs, (c0 + n) * cs
        if merged and a - merged[-1][1] <= gap:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    c = {"key": key, "cluster": cs, "files": len(inodes), "runs": len(runs), "stored_bytes": stored,
         "extents": [[a, b - a] for a, b in merged], "read_bytes": sum(b - a for a, b in merged),
         "seconds": round(time.time() - t, 1)}
    with open(cache + ".tmp", "w") as fh:
        json.dump(c, fh)
    os.replace(cache + ".tmp", cache)
    return c


def raw_read(img, ext):
    """Reads the extents in ascending order with large preads; returns the seconds."""
    buf = bytearray(READ_CHUNK)
    mv = memoryview(buf)
    fd = os.open(img, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
        t = time.perf_counter()
        for off, n in ext:
            while n > 0:
                k = os.preadv(fd, [mv[:min(n, READ_CHUNK)]], off)
                if k <= 0:
                    raise OSError(f"short read at {off}")
                off += k
                n -= k
        return time.perf_counter() - t
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------

class Mount:
    """The image mounted read-only with ntfs-3g; `cold()` remounts it with the caches dropped in between."""

    def __init__(self, img):
        self.img = img
        self.dir = tempfile.mkdtemp(prefix="uffs-bench-content-")
        self.proc = None

    def up(self):
        if self.proc is None:
            self.proc = mount("ntfs-3g", self.img, self.dir, MOUNT_OPTS)

    def down(self):
        if self.proc is not None:
            unmount(self.dir, self.proc, True)
            self.proc = None

    def cold(self):
        self.down()
        drop_caches()
        self.up()

    def close(self):
        self.down()
        os.rmdir(self.dir)


def measure(name, fn, runs, cold):
    """(cold median, warm median) of fn() (which returns seconds): cold runs each after cold(), warm runs after
    one untimed run."""
    c = []
    for _ in range(runs):
        cold()
        c.append(fn())
    fn()
    w = [fn() for _ in range(runs)]
    print(f"  {name}: cold {', '.join(f'{x:.2f}' for x in c)} s; warm {', '.join(f'{x:.2f}' for x in w)} s",
          file=sys.stderr, flush=True)
    return median(c), median(w)


def uffs_has(cmd):
    """Whether `uffs CMD --help` is the command's own help (without the command, clap takes CMD for a query and
    prints the top-level help, exit 0)."""
    p = subprocess.run([UFFS, cmd, "--help"], capture_output=True, text=True)
    return p.returncode == 0 and re.search(rf"^Usage: uffs\S* {cmd}\b", p.stdout, re.M) is not None


def count_lines(path):
    with open(path, "rb") as fh:
        return sum(1 for _ in fh)


def rg_total(path):
    """Matching lines and files in `rg -c` output."""
    n = files = 0
    with open(path, "rb") as fh:
        for line in fh:
            files += 1
            n += int(line.rsplit(b":", 1)[1])
    return n, files


def main():
    global UFFS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("image")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default="hash,grep,raw,uffs", help="comma-separated groups (default: all)")
    ap.add_argument("--literal", help="the literal to search (default: the manifest's ASCII needle)")
    ap.add_argument("--regex", help="the regex to search (default: the manifest's regex)")
    ap.add_argument("--uffs", default=UFFS, help="the uffs binary (default %(default)s)")
    ap.add_argument("--extents-cache", help="default: IMAGE.extents.json")
    ap.add_argument("--gap", type=int, default=MERGE_GAP, help="merge extents closer than this many bytes")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench-content: needs root (ntfs-3g mount, drop_caches)")
    UFFS = a.uffs
    only = set(a.only.split(","))
    img = os.path.abspath(a.image)
    try:
        with open(img + ".manifest.json") as fh:
            man = json.load(fh)
    except OSError:
        man = None
    literal = a.literal or (man["needles"]["ascii"] if man else sys.exit("--literal: no manifest"))
    regex = a.regex or (man["needles"]["regex"] if man else sys.exit("--regex: no manifest"))
    tmp = tempfile.mkdtemp(prefix="uffs-bench-content-")
    out = os.path.join(tmp, "out")
    m = Mount(img)
    rows, t, notes = [], {}, []

    def add(key, label, cmd_text, fn, cold=drop_caches):
        print(f"{label}: {cmd_text}", file=sys.stderr, flush=True)
        t[key] = measure(label, fn, a.runs, cold)
        rows.append((key, label, cmd_text))

    try:
        m.up()
        data_bytes = man["totals"]["data_bytes"] if man else None
        if data_bytes is None:
            data_bytes = sum(os.lstat(os.path.join(d, f)).st_size for d, _, fs in os.walk(m.dir) for f in fs)
        mnt = m.dir
        if "hash" in only:
            add("hashdeep", "hashdeep", "hashdeep -c sha256 -r MOUNT",
                lambda: run_timed(["hashdeep", "-c", "sha256", "-r", mnt], stdout=out, ok=(0, 1, 2)), m.cold)
            notes.append(f"hashdeep: {count_lines(out) - 5:,} files hashed")
            add("sha256sum", "sha256sum", "find MOUNT -type f -print0 | xargs -0 sha256sum",
                lambda: run_timed(f"find '{mnt}' -type f -print0 | xargs -0 sha256sum", stdout=out), m.cold)
            notes.append(f"sha256sum: {count_lines(out):,} files hashed")
        if "grep" in only:
            for key, pat in (("rg", literal), ("rg-re", regex)):
                add(key, f"rg {'literal' if key == 'rg' else 'regex'}", f"rg -uuu --no-mmap -c '{pat}' MOUNT",
                    lambda pat=pat: run_timed(["rg", "-uuu", "--no-mmap", "-c", pat, mnt], stdout=out, ok=(0, 1)),
                    m.cold)
                n, f = rg_total(out)
                notes.append(f"rg {pat!r}: {n} lines in {f} files")
        m.down()
        raw = None
        if "raw" in only:
            raw = extents(img, a.extents_cache or img + ".extents.json", a.gap)
            ext = raw["extents"]
            add("raw", "raw read", f"{len(ext):,} sorted preads of <= 8 MiB over {raw['read_bytes'] / 1e9:.3f} GB",
                lambda: raw_read(img, ext))
            notes.append(f"raw read: {raw['files']:,} files, {raw['runs']:,} runs, {raw['stored_bytes'] / 1e9:.3f} GB "
                         f"stored, {len(ext):,} extents after merging gaps <= {a.gap // 1024} KiB, "
                         f"{raw['read_bytes'] / 1e9:.3f} GB read")
        if "uffs" in only:
            if not os.path.exists(UFFS):
                print(f"uffs: no binary at {UFFS} (cargo build --release)", file=sys.stderr)
            elif not uffs_has("hash"):
                print("uffs hash not available yet", file=sys.stderr)
            else:
                add("uffs-hash", "uffs hash", "uffs hash --source IMG --algo sha256",
                    lambda: run_timed([UFFS, "hash", "--source", img, "--algo", "sha256"], stdout=out))
                notes.append(f"uffs hash: {count_lines(out):,} lines")
                add("uffs-hashdeep", "uffs hash (hashdeep)", "uffs hash --source IMG --algo sha256 --hashdeep",
                    lambda: run_timed([UFFS, "hash", "--source", img, "--algo", "sha256", "--hashdeep"],
                                      stdout=out))
                idx = os.path.join(tmp, "content.uffs")
                subprocess.run([UFFS, "index", img, "-o", idx], check=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
                add("uffs-hash-index", "uffs hash --index", "uffs index IMG -o F; uffs hash --index F --algo sha256",
                    lambda: run_timed([UFFS, "hash", "--index", idx, "--algo", "sha256"], stdout=out))
            if os.path.exists(UFFS) and not uffs_has("grep"):
                print("uffs grep not available yet", file=sys.stderr)
            elif os.path.exists(UFFS):
                for key, pat in (("uffs-grep", literal), ("uffs-grep-re", regex)):
                    add(key, f"uffs grep {'literal' if key == 'uffs-grep' else 'regex'}",
                        f"uffs grep --binary -c '{pat}' --source IMG",
                        lambda pat=pat: run_timed([UFFS, "grep", "--binary", "-c", pat, "--source", img], stdout=out,
                                                  ok=(0, 1)))
                    notes.append(f"uffs grep {pat!r}: {count_lines(out)} lines of output")
    finally:
        m.close()
        for p in os.listdir(tmp):
            os.unlink(os.path.join(tmp, p))
        os.rmdir(tmp)

    print(f"\n{img}: {data_bytes / 1e9:.3f} GB of file data; {os.cpu_count()} cores; median of {a.runs} runs, "
          f"cold (caches dropped, peers remounted) and warm")
    table = []
    for key, label, cmd in rows:
        c, w = t[key]
        table.append([label, f"{c:.2f}", f"{w:.2f}", f"{data_bytes / c / 1e6:.0f}", f"{data_bytes / w / 1e6:.0f}",
                      cmd])
    print_table(["tool", "cold s", "warm s", "cold MB/s", "warm MB/s", "command"], table, right={1, 2, 3, 4})
    if raw:
        c, w = t["raw"]
        print(f"  raw read as its own bytes: cold {raw['read_bytes'] / c / 1e6:.0f} MB/s, "
              f"warm {raw['read_bytes'] / w / 1e6:.0f} MB/s")
    for n in notes:
        print("  " + n)
    ratios = []
    for num, den, label in (("hashdeep", "uffs-hash", "hashdeep / uffs hash"),
                            ("sha256sum", "uffs-hash", "sha256sum / uffs hash"),
                            ("rg", "uffs-grep", "rg / uffs grep (literal)"),
                            ("rg-re", "uffs-grep-re", "rg / uffs grep (regex)"),
                            ("uffs-hash", "raw", "uffs hash / raw read"),
                            ("hashdeep", "raw", "hashdeep / raw read"),
                            ("rg", "raw", "rg literal / raw read")):
        if num in t and den in t:
            ratios.append([label, f"{t[num][0] / t[den][0]:.2f}x", f"{t[num][1] / t[den][1]:.2f}x"])
    if ratios:
        print("\nratios (of this run's medians)")
        print_table(["", "cold", "warm"], ratios)
    missing = [c for c, k in (("uffs hash", "uffs-hash"), ("uffs grep", "uffs-grep")) if k not in t]
    if "uffs" in only and missing:
        print(f"  not measured: {', '.join(missing)} (not available yet)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
