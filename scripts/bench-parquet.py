#!/usr/bin/env python3
"""bench-parquet.py [--image IMG] [--runs R] [--uffs PATH] [--python PY]

`uffs export IDX --format parquet -o F` against `--format csv -o F` on the benchmark volume (`/work/bench/bench.img`,
1.22 M entries, made by scripts/make-bench-volume.py), indexed once to a temporary file with `uffs index`; then
DuckDB's `select count(*) from 'F' where ext='dll'` on the Parquet file. Prints times (best and median of R, warm page cache),
file sizes and their ratios (the aims: Parquet in at most 1.5x CSV's time and a third of its bytes); asserts nothing
about time. Uses hyperfine when it is installed, else its own timer. DuckDB runs in --python (default $UFFS_PY, else
/opt/uffs-py/bin/python).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
ap = argparse.ArgumentParser()
ap.add_argument("--image", default="/work/bench/bench.img")
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--uffs", default=os.path.join(ROOT, "target", "release", "uffs"))
ap.add_argument("--python", default=os.environ.get("UFFS_PY", "/opt/uffs-py/bin/python"))
a = ap.parse_args()

tmp = tempfile.mkdtemp(prefix="uffs-bench-parquet-")
idx = os.path.join(tmp, "bench.uffs")
out = {"csv": os.path.join(tmp, "bench.csv"), "parquet": os.path.join(tmp, "bench.parquet")}
try:
    subprocess.run([a.uffs, "index", a.image, "-o", idx], check=True, stderr=subprocess.DEVNULL)
    times, medians = {}, {}
    for fmt, f in out.items():
        cmd = [a.uffs, "export", idx, "--format", fmt, "-o", f]
        if shutil.which("hyperfine"):
            j = os.path.join(tmp, "h.json")
            subprocess.run(["hyperfine", "-N", "-w", "1", "-r", str(a.runs), "--export-json", j, " ".join(cmd)],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            runs = sorted(json.load(open(j))["results"][0]["times"])
            times[fmt] = runs[0]
            medians[fmt] = runs[len(runs) // 2]
        else:
            best = None
            for _ in range(a.runs + 1):
                t = time.perf_counter()
                subprocess.run(cmd, check=True)
                best = min(best or 1e9, time.perf_counter() - t)
            times[fmt] = best
            medians[fmt] = best
    sizes = {k: os.path.getsize(f) for k, f in out.items()}
    rows = subprocess.run([a.python, "-c", f"""
import duckdb, time
c = duckdb.connect()
best = None
for _ in range({a.runs} + 1):
    t = time.perf_counter()
    n = c.execute("select count(*) from '{out['parquet']}' where ext='dll'").fetchone()[0]
    best = min(best or 1e9, time.perf_counter() - t)
print(n, best, c.execute("select count(*) from '{out['parquet']}'").fetchone()[0])
"""], check=True, capture_output=True, text=True).stdout.split()
    dll, dtime, total = int(rows[0]), float(rows[1]), int(rows[2])
    print(f"entries exported:        {total:,}")
    for k in out:
        print(f"export --format {k:8} best {times[k]:7.3f} s  median {medians[k]:7.3f} s  {sizes[k] / 1e6:9.1f} MB")
    print(f"parquet / csv time:      best {times['parquet'] / times['csv']:.2f}x, median "
          f"{medians['parquet'] / medians['csv']:.2f}x  (aim: <= 1.5x)")
    print(f"parquet / csv bytes:     {sizes['parquet'] / sizes['csv']:.3f}  (aim: <= 0.333)")
    print(f"duckdb count(*) where ext='dll': {dll:,} in {dtime * 1e3:.1f} ms")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
