#!/usr/bin/env python3
"""The fleet workload: a Parquet dataset of many volumes, queried by DuckDB, Spark and `uffs --dataset`, against
exporting the same volumes to CSV and grepping it.

    scripts/bench-dataset.py /work/bench/bench.img [--volumes 100] [--hosts 10] [--runs 3] [--no-spark] [--keep]

Work goes to VOLUME.dataset/ beside the volume (removed at the end unless --keep). The workload:

* one volume: `uffs index` of the image once; its dataset file written by `uffs export INDEX --dataset` (rows,
  bytes, bytes per row), and the same volume's `uffs export --format parquet -o F` and `--format csv -o F` times;
* writing from the daemon: a private daemon with the image registered; `uffs volumes export --dataset` (client
  start to exit: the daemon writes the file from the index it holds) against `uffs export INDEX --format parquet -o`
  of the same volume (median of --runs each);
* the dataset: that one file hard-linked as --volumes volumes over --hosts hosts (`host=hK/volume=vNNN`), every
  volume the same 1.2M entries, so a query finds --volumes times what it finds on one. The links share one inode,
  so the page cache holds one file's bytes: every figure is warm;
* three queries (a name substring, an extension, a size), each counted by: DuckDB (`count(*)` where the condition
  `uffs sql` writes, over `read_parquet(.../*/*/*.parquet, hive_partitioning=true)`; median of --runs in one
  connection, after one untimed run), Spark 4 (`local-cluster[2,1,1024]`, the same condition from `uffs sql --dialect
  spark`; median of --spark-runs (default 1) after one untimed run; the session's start reported apart), `uffs --dataset DIR QUERY
  --count` (the whole process, median of --runs; its first run, which reads every volume's file into the cache, is
  reported apart), and `grep -c` (on the name column) or `awk` (on the size column) over the CSV export
  hard-linked the same number of times (the whole process, once). Every engine's count must agree with uffs's (the script stops if not).

Prints a table and, with --json, the figures as JSON. Asserts nothing about time.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import UFFS, PrivateDaemon, median, need_release_build, print_table, run_timed  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = os.environ.get("UFFS_PY", "/opt/uffs-py/bin/python")

# (label, uffs query, the CSV peer's command over the files, given as {files}: grep on the name column (the CSV's
# columns are path,name,kind,size,...; a quoted name with a comma is missed), awk for the size)
QUERIES = [
    ("name substring", "kernel32", "LC_ALL=C grep -h -c -i -E '^[^,]*,[^,]*kernel32[^,]*,' {files} | awk '{{s += $1}} END {{print s}}'"),
    ("extension", "ext:dll", "LC_ALL=C grep -h -c -i -E '^[^,]*,[^,]*[.]dll,file,' {files} | awk '{{s += $1}} END {{print s}}'"),
    ("size", "size:>100mb", "LC_ALL=C awk -F, '$4 > 104857600' {files} | wc -l"),
]


def say(*a):
    print(*a, file=sys.stderr, flush=True)


def uffs_out(args, env=None):
    return subprocess.run([UFFS, *args], env=env, check=True, capture_output=True, text=True).stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("volume")
    ap.add_argument("--volumes", type=int, default=100)
    ap.add_argument("--hosts", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--spark-runs", type=int, default=1, help="timed Spark runs of each query (after an untimed one)")
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    need_release_build("bench-dataset.py")
    work = a.volume + ".dataset"
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, UFFS_CACHE_DIR=os.path.join(work, "cache"))
    fig = {"volumes": a.volumes, "hosts": a.hosts}
    try:
        idx = os.path.join(work, "bench.uffs")
        run_timed([UFFS, "index", a.volume, "-o", idx])
        entries = int(uffs_out(["--index", idx, "*", "--count"]).strip().replace(",", ""))
        # One volume's file, and the single-file exports.
        one = os.path.join(work, "one")
        t = run_timed([UFFS, "export", idx, "--dataset", one, "--host", "h"], env=env)
        f1 = os.path.join(one, "host=h", "volume=bench", "uffs.parquet")
        rows = int(subprocess.run([PY, "-c", f"import duckdb; print(duckdb.connect().execute(\"select count(*) from read_parquet('{f1}', hive_partitioning=false)\").fetchone()[0])"],
                                  check=True, capture_output=True, text=True).stdout)
        size = os.path.getsize(f1)
        fig.update(entries=entries, rows=rows, bytes=size, bytes_per_row=size / rows, export_dataset_s=t)
        say(f"one volume: {rows:,} rows, {size:,} bytes, {size / rows:.1f} B/row, export --dataset {t:.2f} s")
        pq, csv = os.path.join(work, "one.parquet"), os.path.join(work, "one.csv")
        fig["export_parquet_s"] = median([run_timed([UFFS, "export", idx, "--format", "parquet", "-o", pq]) for _ in range(a.runs)])
        fig["export_csv_s"] = median([run_timed([UFFS, "export", idx, "--format", "csv", "-o", csv]) for _ in range(a.runs)])
        fig["csv_bytes"] = os.path.getsize(csv)
        say(f"export --format parquet {fig['export_parquet_s']:.2f} s, csv {fig['export_csv_s']:.2f} s ({fig['csv_bytes']:,} bytes)")

        # The daemon writes the same volume from the index it holds.
        with PrivateDaemon([(a.volume, "bench", "never")], work=os.path.join(work, "daemon")) as d:
            dd = os.path.join(work, "from-daemon")
            fig["daemon_export_s"] = median([run_timed([UFFS, "volumes", "export", "--dataset", dd, "--host", "h"], env=d.env)
                                             for _ in range(a.runs)])
        fig["daemon_vs_export"] = fig["daemon_export_s"] / fig["export_parquet_s"]
        say(f"daemon: volumes export --dataset {fig['daemon_export_s']:.2f} s = {fig['daemon_vs_export']:.2f}x export --format parquet")

        # The dataset: the one file hard-linked as every volume; the CSV likewise.
        lake = os.path.join(work, "lake")
        csvs = []
        for k in range(a.volumes):
            folder = os.path.join(lake, f"host=h{k % a.hosts:02}", f"volume=v{k:03}")
            os.makedirs(folder)
            os.link(f1, os.path.join(folder, "uffs.parquet"))
            c = os.path.join(work, f"csv{k:03}.csv")
            os.link(csv, c)
            csvs.append(c)
        fig["dataset_rows"] = rows * a.volumes
        files = " ".join(csvs)

        # uffs --dataset: the first run reads every file into the cache.
        t = time.perf_counter()
        out = uffs_out(["--dataset", lake, "*", "--count"], env=env)
        fig["uffs_dataset_first_s"] = time.perf_counter() - t
        say(f"uffs --dataset first run (reads {a.volumes} files into the cache): {fig['uffs_dataset_first_s']:.1f} s, {out.strip()} entries")
        cache_bytes = sum(e.stat().st_size for e in os.scandir(os.path.join(work, "cache", "datasets")))
        fig["uffs_cache_bytes"] = cache_bytes

        conds = {q: {d: uffs_out(["sql", "--dialect", d, q]).strip() for d in ("duckdb", "spark")} for _, q, _ in QUERIES}
        results = {}
        for label, q, peer in QUERIES:
            counts = {}
            ts = []
            for i in range(a.runs + 1):
                t = time.perf_counter()
                n = int(uffs_out(["--dataset", lake, q, "--count"], env=env).strip().replace(",", ""))
                if i:
                    ts.append(time.perf_counter() - t)
            counts["uffs"] = n
            r = {"uffs_s": median(ts)}
            t = run_timed(["sh", "-c", peer.format(files=files) + f" > {work}/peer.out"], ok=(0, 1))
            counts["csv"] = int(open(f"{work}/peer.out").read().split()[0])
            r["csv_s"] = t
            results[label] = (r, counts)
            say(f"{label}: uffs --dataset {r['uffs_s']:.2f} s ({n:,}); csv {t:.2f} s ({counts['csv']:,})")

        glob = os.path.join(lake, "*", "*", "*.parquet")
        duck = subprocess.run([PY, "-c", f"""
import duckdb, json, statistics, time
c = duckdb.connect()
c.execute("set enable_progress_bar = false")
out = {{}}
for q, cond in {json.dumps({q: c['duckdb'] for q, c in conds.items()})}.items():
    sql = "select count(*) from read_parquet('{glob}', hive_partitioning=true) where " + cond
    n = c.execute(sql).fetchone()[0]
    ts = []
    for _ in range({a.runs}):
        t = time.perf_counter(); c.execute(sql).fetchone(); ts.append(time.perf_counter() - t)
    out[q] = [n, statistics.median(ts)]
print(json.dumps(out))
"""], check=True, capture_output=True, text=True)
        duck = json.loads(duck.stdout.strip().splitlines()[-1])
        spark = {}
        if not a.no_spark:
            sp = subprocess.run([PY, "-c", f"""
import json, os, statistics, time
t0 = time.perf_counter()
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local-cluster[2,1,1024]").appName("uffs-bench")
         .config("spark.ui.enabled", "false").getOrCreate())
spark.read.parquet("{lake}").createOrReplaceTempView("files")
start = time.perf_counter() - t0
out = {{"_start": start}}
for q, cond in {json.dumps({q: c['spark'] for q, c in conds.items()})}.items():
    sql = "select count(*) from files where " + cond
    n = spark.sql(sql).collect()[0][0]
    ts = []
    for _ in range({a.spark_runs}):
        t = time.perf_counter(); spark.sql(sql).collect(); ts.append(time.perf_counter() - t)
    out[q] = [n, statistics.median(ts)]
print(json.dumps(out))
spark.stop()
"""], check=True, capture_output=True, text=True,
                                env=dict(os.environ, SPARK_WORKER_DIR=os.path.join(work, "spark-work")))
            spark = json.loads(sp.stdout.strip().splitlines()[-1])
            fig["spark_start_s"] = spark["_start"]
        table = []
        fig["queries"] = {}
        for label, q, _ in QUERIES:
            r, counts = results[label]
            r["duckdb_s"] = duck[q][1]
            counts["duckdb"] = duck[q][0]
            if spark:
                r["spark_s"] = spark[q][1]
                counts["spark"] = spark[q][0]
            engines = {k: v for k, v in counts.items() if k != "csv"}
            if len(set(engines.values())) != 1:
                sys.exit(f"{label} ({q}): the engines disagree: {counts}")
            r["counts"] = counts
            fig["queries"][label] = {"query": q, **r}
            table.append([f"{label} ({q})", f"{counts['uffs']:,}", f"{r['uffs_s']:.2f}", f"{r['duckdb_s']:.2f}",
                          f"{r['spark_s']:.2f}" if spark else "-", f"{r['csv_s']:.2f} ({counts['csv']:,})"])
        if a.json:
            print(json.dumps(fig, indent=1))
        else:
            print(f"{a.volumes} volumes of {rows:,} rows ({fig['dataset_rows']:,} rows) on {a.hosts} hosts; "
                  f"{fig['bytes_per_row']:.1f} bytes/row; uffs cache {cache_bytes / 2**30:.2f} GiB after a first "
                  f"run of {fig['uffs_dataset_first_s']:.1f} s" + (f"; Spark session start {fig['spark_start_s']:.1f} s" if spark else ""))
            print_table(["query", "found", "uffs --dataset s", "DuckDB s", "Spark s", "CSV + grep s (found)"], table)
            print(f"writing one volume: daemon {fig['daemon_export_s']:.2f} s, uffs export --format parquet "
                  f"{fig['export_parquet_s']:.2f} s ({fig['daemon_vs_export']:.2f}x), --format csv {fig['export_csv_s']:.2f} s")
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
