#!/usr/bin/env python3
"""`uffs index` of one volume held raw and in each container format (issue 28's speed targets): the time from start
to the index file written, median of N, warm and (with --cold) with the page cache dropped before each run, and each
container's ratio to the raw image measured in the same run. Also checks that every container's index exports the
same CSV as the raw image's (sha256), so a fast wrong answer cannot pass.

    sudo python3 scripts/bench-containers.py /work/bench/bench.img [--runs 3] [--cold] [--only e01,vhdx]
        [--work DIR] [--fls]

The containers are made once into --work (default: beside the image, IMAGE.containers/) by the real tools and kept
for the next run (delete the folder to remake them):

  e01         ewfacquire -c none (ewfacquire's default), 1.4 GiB segments
  e01-fast    ewfacquire -c deflate:fast (compressed chunks)
  qcow2       qemu-img convert -O qcow2
  qcow2-z     qemu-img convert -O qcow2 -c (zlib clusters)
  vhdx        qemu-img convert -O vhdx (dynamic)
  vhd         qemu-img convert -O vpc (dynamic)
  vmdk        qemu-img convert -O vmdk (monolithicSparse)
  vmdk-stream qemu-img convert -O vmdk -o subformat=streamOptimized (deflated grains)

--fls also times `fls -r -p -i ewf` on the E01, once (it took 430 s on the benchmark volume), for the 10x target.
Targets: E01 at most 1.5x the raw image and 10x faster than fls on it; VHDX, VMDK and qcow2 uncompressed at most
1.2x. See docs/benchmarks.md.
"""

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import UFFS, drop_caches, median, need_release_build, print_table, run_timed  # noqa: E402

FORMATS = {
    "e01": ("E01, ewfacquire -c none", "E01"),
    "e01-fast": ("E01, ewfacquire -c deflate:fast", "E01"),
    "qcow2": ("qcow2", "qcow2"),
    "qcow2-z": ("qcow2, compressed (-c)", "qcow2"),
    "vhdx": ("VHDX, dynamic", "vhdx"),
    "vhd": ("VHD, dynamic", "vhd"),
    "vmdk": ("VMDK, monolithicSparse", "vmdk"),
    "vmdk-stream": ("VMDK, streamOptimized", "vmdk"),
}
TARGET = {"e01": 1.5, "e01-fast": 1.5, "qcow2": 1.2, "vhdx": 1.2, "vmdk": 1.2}


def make(kind, image, work):
    """The container `kind` of `image` in `work`, made unless there already; its path and the seconds making took."""
    ext = FORMATS[kind][1]
    path = os.path.join(work, f"{kind}.{ext}")
    if os.path.exists(path):
        return path, None
    t = time.perf_counter()
    tmp = os.path.join(work, f"{kind}.partial")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    if kind.startswith("e01"):
        comp = "none" if kind == "e01" else "deflate:fast"
        subprocess.run(["ewfacquire", "-u", "-q", "-c", comp, "-S", "1.4GiB", "-t", os.path.join(tmp, kind), image],
                       check=True, stdout=subprocess.DEVNULL)
        for f in os.listdir(tmp):
            os.rename(os.path.join(tmp, f), os.path.join(work, f))
    else:
        fmt = {"qcow2": "qcow2", "qcow2-z": "qcow2", "vhdx": "vhdx", "vhd": "vpc", "vmdk": "vmdk",
               "vmdk-stream": "vmdk"}[kind]
        args = ["qemu-img", "convert", "-O", fmt]
        if kind == "qcow2-z":
            args.append("-c")
        if kind == "vmdk-stream":
            args += ["-o", "subformat=streamOptimized"]
        if kind == "vhd":
            args += ["-o", "subformat=dynamic"]
        out = os.path.join(tmp, os.path.basename(path))
        subprocess.run(args + ["-f", "raw", image, out], check=True)
        os.rename(out, path)
    shutil.rmtree(tmp, ignore_errors=True)
    return path, time.perf_counter() - t


def stored(path):
    """Bytes the container's files take (every segment of an E01)."""
    d, base = os.path.split(path)
    stem = base.rsplit(".", 1)[0]
    if path.endswith(".E01"):
        return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
                   if f.startswith(stem + ".E") and not f.endswith(".partial"))
    return os.path.getsize(path)


def export_sha(source, tmp):
    out = os.path.join(tmp, "export.csv")
    subprocess.run([UFFS, "export", source, "--format", "csv", "-o", out], check=True, stderr=subprocess.DEVNULL)
    h = hashlib.sha256()
    with open(out, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    os.unlink(out)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("image")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cold", action="store_true", help="drop the page cache before every run (root)")
    ap.add_argument("--only", default=",".join(FORMATS), help="comma-separated formats (default: all)")
    ap.add_argument("--work", help="where the containers are kept (default: IMAGE.containers)")
    ap.add_argument("--fls", action="store_true", help="also time fls -r -p on the E01 once (minutes)")
    a = ap.parse_args()
    need_release_build("bench-containers.py")
    only = [k for k in a.only.split(",") if k]
    unknown = [k for k in only if k not in FORMATS]
    if unknown:
        sys.exit(f"unknown format(s) {unknown}; known: {', '.join(FORMATS)}")
    work = a.work or a.image + ".containers"
    os.makedirs(work, exist_ok=True)

    sources = [("raw", "raw image", a.image)]
    for k in only:
        path, secs = make(k, a.image, work)
        if secs is not None:
            print(f"made {path} in {secs:.0f} s", file=sys.stderr)
        sources.append((k, FORMATS[k][0], path))

    tmp = tempfile.mkdtemp(prefix="uffs-bench-containers-")
    try:
        idx = os.path.join(tmp, "x.uffs")
        raw_sha = export_sha(a.image, tmp)
        times = {}
        # The runs of every source interleave, so that a change in the machine's load falls on all of them.
        for r in range(a.runs):
            for key, _, path in sources:
                if a.cold:
                    drop_caches()
                times.setdefault(key, []).append(run_timed([UFFS, "index", path, "-o", idx]))
                print(f"  run {r + 1}: {key} {times[key][-1]:.2f} s", file=sys.stderr)
        same = {key: export_sha(path, tmp) == raw_sha for key, _, path in sources}
        fls = None
        if a.fls and "e01" in only:
            if a.cold:
                drop_caches()
            fls = run_timed(["fls", "-r", "-p", "-i", "ewf", dict((k, p) for k, _, p in sources)["e01"]])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    raw = median(times["raw"])
    print(f"\n{a.image}: {os.path.getsize(a.image) / 1e9:.2f} GB; {os.cpu_count()} cores; `uffs index SOURCE -o F`, "
          f"median of {a.runs}, {'cold (page cache dropped before each run)' if a.cold else 'warm'}")
    rows = []
    for key, label, path in sources:
        m = median(times[key])
        target = TARGET.get(key)
        verdict = "" if target is None else ("met" if m / raw <= target else "missed")
        rows.append([label, f"{stored(path) / 1e9:.2f}", f"{m:.2f}", f"{m / raw:.2f}x",
                     f"<= {target}x {verdict}" if target else "", "same" if same[key] else "DIFFERS"])
    print_table(["source", "GB stored", "index s", "/ raw", "target", "export vs raw"], rows, right={1, 2, 3})
    if fls is not None:
        e01 = median(times["e01"])
        print(f"\nfls -r -p -i ewf on the E01: {fls:.1f} s, {fls / e01:.0f}x uffs index of it (target >= 10x)")
    return 0 if all(same.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
