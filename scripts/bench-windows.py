#!/usr/bin/env python3
"""The live-volume read path on Windows, measured under Wine against the same device on Linux.

Attaches IMAGE (an NTFS volume image; default the benchmark volume of scripts/make-bench-volume.py) as a
read-only loop device, maps it as drive D: of the repository's Wine prefix (Wine opens \\\\.\\D: as the device
that dosdevices/d:: points to), then alternates, ROUNDS times:

    uffs bench /dev/loopN --read-only          (Linux: the device as a file, 1 read of 1 MiB at a time)
    uffs.exe bench D: --read-only               (Windows, under Wine: the live-volume path, overlapped reads
                                                 sized to the device; Wine answers no storage query, so the
                                                 unknown-device profile: 8 reads of 1 MiB)
    uffs.exe bench D: --read-only --concurrency 1 --io-size 1M   (the same read shape as Linux)

and prints each one's median time and its ratio to Linux's, measured in the same run. With --build, the whole
index build (`uffs bench` without --read-only) is compared the same way.

Needs root (losetup), the Linux and Windows release builds (it builds them) and scripts/test-windows.sh's
Wine prefix (it makes it on first use).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET = "x86_64-pc-windows-gnu"
WINE = "/usr/lib/wine/wine64"


def run_json(cmd, env=None):
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("image", nargs="?", default="/work/bench/bench.img")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=5, help="runs per `uffs bench` (its median is taken)")
    ap.add_argument("--build", action="store_true", help="compare whole index builds, not the raw read")
    a = ap.parse_args()

    subprocess.run(["cargo", "build", "--release", "-q", "-p", "uffs"], cwd=REPO, check=True)
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "uffs", "--target", TARGET], cwd=REPO, check=True)
    prefix = REPO / "target/wine-prefix"
    env = dict(os.environ, WINEPREFIX=str(prefix), WINEDEBUG="-all", WINEDLLOVERRIDES="mscoree,mshtml=")
    if not (prefix / "drive_c/windows/system32").is_dir():
        sys.exit("no Wine prefix yet: run scripts/test-windows.sh once (it makes target/wine-prefix)")
    loop = subprocess.run(["losetup", "--find", "--show", "--read-only", a.image], check=True,
                          capture_output=True, text=True).stdout.strip()
    mount = REPO / "target/live-d"
    mount.mkdir(exist_ok=True)
    links = [prefix / "dosdevices/d:", prefix / "dosdevices/d::"]
    try:
        for link, to in zip(links, [mount, Path(loop)]):
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(to)
        linux = [str(REPO / "target/release/uffs")]
        windows = [WINE, str(REPO / f"target/{TARGET}/release/uffs.exe")]
        mode = [] if a.build else ["--read-only"]
        common = ["--runs", str(a.runs), "--json"] + mode
        cases = [
            ("linux  /dev/loop (1 x 1 MiB)", linux + ["bench", loop] + common, None),
            ("wine   D: (device profile)", windows + ["bench", "D:"] + common, env),
            ("wine   D: (1 x 1 MiB)", windows + ["bench", "D:", "--concurrency", "1", "--io-size", "1M"] + common,
             env),
        ]
        # One wineserver (and Wine's own services) for the whole run, started and settled before anything is
        # timed: otherwise each uffs.exe may start them anew while it measures, on the same two cores.
        # (Their output goes nowhere: they outlive the command that starts them, and would hold its pipes.)
        quiet = {"env": env, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        server = WINE.replace("wine64", "wineserver")
        subprocess.run([server, "-w"], check=True, **quiet)  # one still running from before ends first
        subprocess.run([server, "-p"], check=True, **quiet)
        subprocess.run(windows + ["info", "D:"], check=True, **quiet)
        # A new loop device starts with an empty cache of its own: read it once, untimed, from both sides.
        for _, cmd, e in cases[:2]:
            run_json([c if c != str(a.runs) else "1" for c in cmd], e)
        times = {name: [] for name, _, _ in cases}
        shape = {}
        for r in range(a.rounds):
            for name, cmd, e in cases:
                out = run_json(cmd, e)
                m = out["median"]
                times[name].append(m["ms"]["total"])
                shape[name] = (m["concurrency"], m["io_size"], m["bytes_read"])
                print(f"round {r + 1}: {name}: {m['ms']['total']:.1f} ms", flush=True)
        base = statistics.median(times[cases[0][0]])
        what = "index build" if a.build else "raw MFT read"
        print(f"\n{what} of {a.image} ({shape[cases[0][0]][2]:,} bytes), median of {a.rounds} rounds "
              f"x {a.runs} runs:")
        for name, _, _ in cases:
            t = statistics.median(times[name])
            c, io, n = shape[name]
            print(f"  {name:<30} {t:8.1f} ms  {n / t / 1e3:7.0f} MB/s  {c} x {io >> 10} KiB in flight  "
                  f"{t / base:5.2f}x Linux")
    finally:
        subprocess.run([WINE.replace("wine64", "wineserver"), "-k"], env=env, check=False)
        for link in links:
            if link.is_symlink():
                link.unlink()
        subprocess.run(["losetup", "-d", loop], check=False)


if __name__ == "__main__":
    main()
