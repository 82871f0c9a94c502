"""Spark's and DuckDB's view of a uffs Parquet dataset (`uffs export --dataset DIR`), for
crates/uffs/tests/dataset.rs. Prints one JSON object:

  {"columns": [name, ...],
   "volumes": {"HOST/VOLUME": [rows, sum(size), max(modified_filetime), max(modified) in us, distinct paths]},
   "executors": N}                                          (Spark only: executor processes that ran the query)

  dataset_check.py duckdb DIR
  dataset_check.py spark DIR     Spark 4 with its default settings on a local cluster: a driver and two executor
                                 processes (`local-cluster[2,1,1024]`), Java 17
"""

import json
import os
import sys

FIGURES = "count(*), sum(size), max(modified_filetime), {us}(max(modified)), count(distinct path)"


def duckdb_view(d):
    import duckdb

    c = duckdb.connect()
    src = f"read_parquet('{d}/*/*/*.parquet', hive_partitioning=true)"
    cols = [r[0] for r in c.execute(f"describe select * from {src}").fetchall()]
    rows = c.execute(
        f"select host, volume, {FIGURES.format(us='epoch_us')} from {src} group by all"
    ).fetchall()
    return {"columns": cols, "volumes": {f"{r[0]}/{r[1]}": [int(x) for x in r[2:]] for r in rows}}


def spark_view(d):
    jdk17 = "/usr/lib/jvm/java-17-openjdk-amd64"
    if os.path.isdir(jdk17):
        os.environ["JAVA_HOME"] = jdk17
    scratch = os.path.join(os.path.dirname(os.path.abspath(d)), "spark-work")
    os.makedirs(scratch, exist_ok=True)
    # Where the local cluster's workers keep their executors' files (else inside the pyspark package).
    os.environ["SPARK_WORKER_DIR"] = scratch
    from pyspark.sql import SparkSession

    s = (
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .config("spark.ui.enabled", "false")
        .config("spark.local.dir", scratch)
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    s.sparkContext.setLogLevel("ERROR")
    try:
        df = s.read.parquet(d)
        df.createOrReplaceTempView("t")
        rows = s.sql(
            f"select host, volume, {FIGURES.format(us='unix_micros')} from t group by host, volume"
        ).collect()
        executors = s.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
        return {
            "columns": df.columns,
            "volumes": {f"{r[0]}/{r[1]}": [int(x) for x in r[2:]] for r in rows},
            "executors": executors,
        }
    finally:
        s.stop()


def main():
    engine, d = sys.argv[1], sys.argv[2]
    out = {"duckdb": duckdb_view, "spark": spark_view}[engine](d)
    print(json.dumps(out))


main()
