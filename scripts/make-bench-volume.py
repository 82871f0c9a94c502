#!/usr/bin/env python3
"""Build the uffs standard benchmark workload: a real NTFS image with >= 1M entries.

The volume is formatted by mkntfs and populated through the ntfs-3g FUSE driver
(the real on-disk structures: B+tree directory indexes, $ATTRIBUTE_LIST
extension records, hard links, named streams, sparse runs, reparse points,
DOS 8.3 names, deleted-but-still-present MFT records).

The tree is a deterministic function of (--seed, --entries, knobs): a
Windows-like system volume (Windows/System32, WinSxS, Program Files, ProgramData,
Users/<name>/..., source trees with deep node_modules, photo folders, ...).
Names come from word lists embedded below; nothing is downloaded.

Python 3 stdlib only.  Needs root, /dev/fuse, mkntfs and ntfs-3g.

    sudo python3 scripts/make-bench-volume.py --out /work/bench/bench.img
    python3 scripts/make-bench-volume.py --dry-run            # tree stats only

With --jobs > 1 several client processes feed the (single-threaded) ntfs-3g
daemon concurrently; this roughly triples throughput but makes MFT record
numbers vary between builds.  --jobs 1 gives a reproducible creation order.
See docs/benchmarks.md.

The code is in scripts/benchvol/: words (knobs, word lists, extension sizes), model (the Tree and name
generators), system, users and generate (the parts of the volume, generate(), tree_stats()) and build (mkntfs and
ntfs-3g). This file is the command line.
"""

import argparse
import hashlib
import json
import os
import shutil
import signal
import sys
import time

from benchvol.words import DEFAULT_DRIVER, DEFAULT_ENTRIES, DEFAULT_JOBS, DEFAULT_OUT, DEFAULT_SEED, GIB
from benchvol.generate import generate, tree_stats
from benchvol.build import build_image


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------

def script_hash():
    """The hash of this script and of every module of benchvol/ (a change to any of them makes a new volume)."""
    here = os.path.dirname(os.path.abspath(__file__))
    pkg = os.path.join(here, "benchvol")
    h = hashlib.sha256()
    for path in [os.path.abspath(__file__)] + sorted(
            os.path.join(pkg, n) for n in os.listdir(pkg) if n.endswith(".py")):
        with open(path, "rb") as fh:
            h.update(os.path.basename(path).encode() + b"\0" + fh.read())
    return h.hexdigest()


def write_list(b, path):
    """Every live name as path<TAB>kind<TAB>size (links listed under their own path)."""
    with open(path, "w", encoding="utf-8") as out:
        for op in b.order:
            if op < 0:
                d = -op
                if d not in b.deleted_d:
                    out.write(f"{b.dpath(d)}\t{'junction' if d in b.reparse_d else 'dir'}\t0\n")
            elif op not in b.deleted_f:
                dp = b.dpath(b.f_dir[op])
                out.write(f"{dp + '/' if dp else ''}{b.f_name[op]}\tfile\t{b.f_size[op]}\n")
        for t, d, name in b.links:
            dp = b.dpath(d)
            out.write(f"{dp + '/' if dp else ''}{name}\tlink\t{b.f_size[t]}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=DEFAULT_ENTRIES,
                    help="live names: files + folders + extra hard-link names (default %(default)s)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help="tree seed (default %(default)s)")
    ap.add_argument("--out", default=DEFAULT_OUT, help="image file (default %(default)s)")
    ap.add_argument("--jobs", type=int, default=DEFAULT_JOBS,
                    help="concurrent FUSE client processes; 1 = reproducible record order (default %(default)s)")
    ap.add_argument("--driver", default=DEFAULT_DRIVER, choices=["ntfs-3g", "lowntfs-3g"])
    ap.add_argument("--mount-opts", default="", help="extra ntfs-3g -o options")
    ap.add_argument("--stage-dir", default="auto",
                    help="build the image in this dir, then sparse-copy to --out; 'auto' = /dev/shm "
                         "when RAM allows, 'none' = build in place (default %(default)s)")
    ap.add_argument("--size-gib", type=int, default=0, help="volume size (default: ~3x estimated use, >= 4)")
    ap.add_argument("--links", type=int, default=-1, help="extra hard-link names (default 0.7%% of entries)")
    ap.add_argument("--deleted", type=int, default=-1, help="deleted entries left in the MFT (default 0.5%% of entries)")
    ap.add_argument("--big", type=int, default=40, help="multi-GiB sparse files (default %(default)s)")
    ap.add_argument("--times", type=float, default=1.0, help="fraction of entries given realistic timestamps")
    ap.add_argument("--dos-names", type=float, default=0.5,
                    help="probability of an 8.3 alias for long names under Windows/Program Files (half that in Users)")
    ap.add_argument("--real-data", type=float, default=0.02,
                    help="fraction of 600B..64KiB files written with real (non-sparse) data")
    ap.add_argument("--list", metavar="PATH", help="also write the expected name list (TSV)")
    ap.add_argument("--dry-run", action="store_true", help="generate the tree and print stats only")
    ap.add_argument("--force", action="store_true", help="rebuild even if the stamp matches")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()

    params = {k: getattr(args, k) for k in ("entries", "seed", "jobs", "driver", "mount_opts", "size_gib",
                                            "links", "deleted", "big", "times", "dos_names", "real_data")}
    params["script_sha256"] = script_hash()
    out = os.path.abspath(args.out)
    stamp = out + ".stamp"
    if not args.dry_run and not args.force and os.path.exists(out) and os.path.exists(stamp):
        try:
            with open(stamp) as fh:
                old = json.load(fh)
            if old.get("params") == params:
                print(f"{out}: up to date (stamp matches); use --force to rebuild", file=sys.stderr)
                return 0
        except (OSError, ValueError):
            pass

    log = (lambda *a: None) if args.quiet else (lambda *a: print(*a, file=sys.stderr, flush=True))
    t_start = time.time()
    log(f"generating tree: entries={args.entries:,} seed={args.seed} ...")
    b = generate(args)
    st = tree_stats(b)
    log(f"tree generated in {st['generate_seconds']}s: {st['directories']:,} dirs, {st['files']:,} files, "
        f"{st['hard_links_extra_names']:,} links, {st['named_streams']:,} streams, "
        f"{st['deleted_files'] + st['deleted_dirs']:,} to delete, max depth {st['max_depth']}")
    if args.list:
        write_list(b, args.list)
        log(f"wrote {args.list}")
    if args.dry_run:
        print(json.dumps(st, indent=1, ensure_ascii=False))
        return 0

    if os.geteuid() != 0:
        print("needs root (FUSE mount with allow_other, mkntfs on an image)", file=sys.stderr)
        return 2
    for tool in ("mkntfs", args.driver):
        if not shutil.which(tool):
            print(f"missing tool: {tool}", file=sys.stderr)
            return 2
    os.makedirs(os.path.dirname(out), exist_ok=True)
    partial = out + ".partial"
    for p in (stamp,):
        if os.path.exists(p):
            os.unlink(p)

    def on_term(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)

    ok = False
    try:
        t_gen_end = time.time()
        vol_size, timings = build_image(args, b, partial)
        timings["prepare"] = t_gen_end - t_start - b.gen_seconds
        os.replace(partial, out)
        ok = True
    finally:
        if not ok and os.path.exists(partial):
            os.unlink(partial)
    total = time.time() - t_start
    fs_ops = st["entries_total"] + st["deleted_files"] + st["deleted_dirs"]
    du = os.stat(out).st_blocks * 512
    summary = {"params": params, "stats": st, "timings_s": {k: round(v, 1) for k, v in timings.items()},
               "total_seconds": round(total, 1),
               "entries_per_second": round(fs_ops / max(1e-6, total - st["generate_seconds"])),
               "volume_bytes": vol_size, "image_allocated_bytes": du,
               "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    with open(stamp, "w") as fh:
        json.dump(summary, fh, indent=1, ensure_ascii=False)
    log(f"done: {out}  volume {vol_size / GIB:.0f} GiB, on disk {du / GIB:.2f} GiB, "
        f"{st['entries_total']:,} entries in {total:.0f}s ({summary['entries_per_second']:,}/s through FUSE)")
    log("phases: " + ", ".join(f"{k} {v:.1f}s" for k, v in summary["timings_s"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
