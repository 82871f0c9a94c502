#!/usr/bin/env python3
"""uffs against plocate on the same volume's path list, for the queries both understand.

    scripts/bench-plocate.py /work/bench/bench.img [--runs 7]

Builds (once, beside the volume) the uffs index (`uffs index`) and a plocate database from the volume's path list
(`uffs --index ... > paths`, `plocate-build -p`). For each query it prints the median wall time of the whole
process (start to exit; counts only, so printing does not dominate) for plocate and for uffs, and uffs's
engine-side median from `uffs bench --queries`. plocate is `-i` (case-insensitive) and, for name queries, `-b`
(basename), which is what the uffs query means.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UFFS = os.path.join(ROOT, "target", "release", "uffs")

# (class, uffs query, plocate arguments)
QUERIES = [
    ("targeted", "kernel32.dll", ["-b", "kernel32.dll"]),
    ("targeted", "79rhkp1fnd", ["-b", "79rhkp1fnd"]),
    ("targeted", "uiaclient*", ["-b", "uiaclient*"]),
    ("substring", "dll", ["-b", "dll"]),
    ("substring", "microsoft-windows-shell32", ["-b", "microsoft-windows-shell32"]),
    ("wildcard", "*.mui", ["-b", "*.mui"]),
    ("wildcard", "img_????.jpg", ["-b", "img_????.jpg"]),
    ("regex", "regex:^IMG_\\d{4}\\.JPG$", ["-b", "--regex", "^IMG_[0-9]{4}\\.JPG$"]),
    ("path", "system32/drivers", ["system32/drivers"]),
    ("path", "appdata/local/temp", ["appdata/local/temp"]),
    ("boolean", "report docx", ["-b", "report", "docx"]),
]


def median_time(cmd, runs, env=None):
    """Median wall time of the whole process (one warm-up run first), and what it printed last."""
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ts = []
    out = b""
    for _ in range(runs):
        t = time.perf_counter()
        out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
        ts.append(time.perf_counter() - t)
    return statistics.median(ts), out.decode().strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("volume")
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    if not os.path.exists(UFFS):
        subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
    index, paths, db = a.volume + ".uffs", a.volume + ".paths", a.volume + ".plocate.db"
    if not os.path.exists(index) or os.path.getmtime(index) < os.path.getmtime(a.volume):
        subprocess.run([UFFS, "index", a.volume, "-o", index], check=True)
    if not os.path.exists(db) or os.path.getmtime(db) < os.path.getmtime(index):
        with open(paths, "wb") as f:
            subprocess.run([UFFS, "--index", index, "--color", "never"], stdout=f, check=True)
        # The paths exist only inside the image: visibility checks on this machine would hide them all.
        subprocess.run(["plocate-build", "-l", "no", "-p", paths, db], check=True)
    with tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False) as f:
        for cls, q, _ in QUERIES:
            f.write(f"{cls}\t{q}\tcount\n")
        mix = f.name
    eng = json.loads(subprocess.run([UFFS, "bench", index, "--queries", mix, "--runs", str(a.runs), "--json"],
                                    check=True, capture_output=True, text=True).stdout)
    os.unlink(mix)
    print(f"{eng['entries']:,} entries; median of {a.runs} runs; process times include start-up and index loading")
    print(f"  {'query':<28} {'uffs hits':>10} {'plocate hits':>12} {'uffs engine':>12} {'uffs process':>13} {'plocate':>10}")
    for (cls, q, pargs), e in zip(QUERIES, eng["queries"]):
        t_p, out_p = median_time(["plocate", "-d", db, "-i", "-c"] + pargs, a.runs)
        t_u, out_u = median_time([UFFS, "--index", index, q, "--count"], a.runs)
        print(f"  {q:<28} {out_u:>10} {out_p:>12} {e['median_ms']:>9.2f} ms {t_u * 1e3:>10.1f} ms {t_p * 1e3:>7.1f} ms")


if __name__ == "__main__":
    sys.exit(main())
