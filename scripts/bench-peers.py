#!/usr/bin/env python3
"""Measures uffs against its peers on one NTFS volume, in one run, warm page cache, and prints the ratios.

    scripts/bench-peers.py /work/bench/bench.img [--runs 5] [--only build,read,export,fls,bodyfile]

Compared, each the median of --runs:
  build      `uffs bench VOLUME --json`            entries/s and peak RSS per entry (targets: >= 2.5 M/s, <= 150 B)
  read       `uffs bench VOLUME --read-only`        against `cat MFT > /dev/null` of the same bytes (target <= 1.5x)
  export     `uffs export MFT --format csv -o F`    against `mft_dump -o csv MFT > F` (target >= 6x faster)
  fls        `uffs export VOLUME -o F`              against `fls -r -p VOLUME > F` (for reference)
  bodyfile   `uffs export VOLUME --format bodyfile --deleted --streams -o F` against `fls -m / -r VOLUME > F`, the
             same timeline (deleted entries and streams, as fls lists them by default) (target >= 10x faster)
The raw $MFT is extracted once with `icat VOLUME 0` next to the volume (VOLUME.mft).
Timings on a shared machine are noisy: compare the ratios, which are measured side by side.
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def uffs_bin():
    b = os.path.join(ROOT, "target", "release", "uffs")
    if not os.path.exists(b):
        subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
    return b


def timed(cmd, runs, stdout_path=None, fresh=None):
    """Median wall time of `cmd` (a list, or a shell string) over `runs` runs, after one warm-up.

    `stdout_path`: stdout goes to this file. `fresh`: this output file is deleted before each run (outside the
    timing), so no run pays for truncating the previous run's output: every tool writes a new file."""
    shell = isinstance(cmd, str)

    def once():
        for p in (fresh, stdout_path):
            if p and os.path.exists(p):
                os.unlink(p)
        out = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
        try:
            t = time.perf_counter()
            subprocess.run(cmd, shell=shell, check=True, stdout=out, stderr=subprocess.DEVNULL)
            return time.perf_counter() - t
        finally:
            if stdout_path:
                out.close()

    once()
    return statistics.median(once() for _ in range(runs))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("volume")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default="build,read,export,fls,bodyfile",
                    help="comma-separated comparisons to run (default: all)")
    a = ap.parse_args()
    only = set(a.only.split(","))
    uffs = uffs_bin()
    vol = a.volume
    mft = vol + ".mft"
    if only & {"read", "export"} and (not os.path.exists(mft) or os.path.getmtime(mft) < os.path.getmtime(vol)):
        with open(mft + ".tmp", "wb") as f:
            subprocess.run(["icat", vol, "0"], stdout=f, check=True)
        os.replace(mft + ".tmp", mft)
    mft_dump = shutil.which("mft_dump") or os.path.expanduser("~/.cargo/bin/mft_dump")
    tmp = tempfile.mkdtemp(prefix="uffs-bench-")
    out = os.path.join(tmp, "out")
    rows = []

    if "build" in only:
        build = json.loads(subprocess.run([uffs, "bench", vol, "--runs", str(a.runs), "--json"],
                                          check=True, capture_output=True, text=True).stdout)
        m = build["median"]
        per_entry = build["peak_rss_bytes"] / max(m["entries"], 1)
        rows.append(("build: entries/s", f"{m['entries_per_s'] / 1e6:.2f} M/s", ">= 2.50 M/s",
                     f"{m['entries']:,} entries, {m['records_read']:,} records in {m['ms']['total']:.0f} ms"))
        rows.append(("build: peak RSS/entry", f"{per_entry:.0f} B", "<= 150 B",
                     f"peak RSS {build['peak_rss_bytes'] / 2**20:.1f} MiB"))

    if "read" in only:
        ro = json.loads(subprocess.run([uffs, "bench", vol, "--runs", str(a.runs), "--json", "--read-only"],
                                       check=True, capture_output=True, text=True).stdout)["median"]
        t_cat = timed(f"cat '{mft}' > /dev/null", a.runs)
        t_ro = ro["ms"]["total"] / 1e3
        rows.append(("read-only vs cat", f"{t_ro / t_cat:.2f}x", "<= 1.50x",
                     f"uffs {t_ro * 1e3:.0f} ms, cat {t_cat * 1e3:.0f} ms, {os.path.getsize(mft) / 2**20:.0f} MiB"))

    if "export" in only:
        t_ux = timed([uffs, "export", mft, "--format", "csv", "-o", out], a.runs, fresh=out)
        t_md = timed([mft_dump, "-o", "csv", mft], max(1, min(a.runs, 3)), stdout_path=out)
        rows.append(("export csv vs mft_dump", f"{t_md / t_ux:.1f}x faster", ">= 6x",
                     f"uffs {t_ux * 1e3:.0f} ms, mft_dump {t_md * 1e3:.0f} ms"))

    if "fls" in only:
        t_ux_vol = timed([uffs, "export", vol, "--format", "csv", "-o", out], a.runs, fresh=out)
        t_fls = timed(["fls", "-r", "-p", vol], 1, stdout_path=out)
        rows.append(("export vs fls -r -p", f"{t_fls / t_ux_vol:.1f}x faster", "(reference)",
                     f"uffs {t_ux_vol * 1e3:.0f} ms, fls {t_fls * 1e3:.0f} ms"))

    if "bodyfile" in only:
        # The whole timeline both ways: every name's SI and $FILE_NAME rows, streams and deleted entries.
        t_ub = timed([uffs, "export", vol, "--format", "bodyfile", "--deleted", "--streams", "-o", out],
                     a.runs, fresh=out)
        ub_rows = sum(1 for _ in open(out, "rb"))
        t_flm = timed(["fls", "-m", "/", "-r", vol], 1, stdout_path=out)
        fl_rows = sum(1 for _ in open(out, "rb"))
        rows.append(("bodyfile vs fls -m / -r", f"{t_flm / t_ub:.1f}x faster", ">= 10x",
                     f"uffs {t_ub * 1e3:.0f} ms ({ub_rows:,} rows), fls {t_flm * 1e3:.0f} ms ({fl_rows:,} rows)"))
    shutil.rmtree(tmp, ignore_errors=True)

    print(f"volume {vol}, {os.cpu_count()} cores, median of {a.runs} runs (mft_dump and fls: fewer)")
    w = max(len(r[0]) for r in rows)
    for name, value, target, detail in rows:
        print(f"  {name:<{w}}  {value:>14}  target {target:<12} {detail}")


if __name__ == "__main__":
    sys.exit(main())
