"""Spark's and DuckDB's view of a uffs Parquet dataset (`uffs export --dataset DIR`), for
crates/uffs/tests/dataset.rs. Prints one JSON object:

  {"columns": [name, ...],
   "volumes": {"HOST/VOLUME": [rows, sum(size), max(modified_filetime), max(modified) in us, distinct paths]},
   "executors": N}                                          (Spark only: executor processes that ran the query)

  dataset_check.py duckdb DIR
  dataset_check.py spark DIR     Spark 4 with its default settings on a local cluster: a driver and two executor
                                 processes (`local-cluster[2,1,1024]`), Java 17

  dataset_check.py duckdb DIR QUERIES.json / spark DIR QUERIES.json
        QUERIES.json is {"id": "SQL condition", ...}: prints {"id": [[volume, path], ...]}, the rows each selects
        (or {"id": "error: ..."} where the engine refused the SQL)
"""

import json
import os
import sys

FIGURES = "count(*), sum(size), max(modified_filetime), {us}(max(modified)), count(distinct path)"


def duckdb_view(d, queries=None):
    import duckdb

    c = duckdb.connect()
    src = f"read_parquet('{d}/*/*/*.parquet', hive_partitioning=true)"
    if queries is not None:
        c.execute(f"create view t as select * from {src}")
        return {k: select(lambda q: c.execute(q).fetchall(), sql) for k, sql in queries.items()}
    cols = [r[0] for r in c.execute(f"describe select * from {src}").fetchall()]
    rows = c.execute(
        f"select host, volume, {FIGURES.format(us='epoch_us')} from {src} group by all"
    ).fetchall()
    return {"columns": cols, "volumes": {f"{r[0]}/{r[1]}": [int(x) for x in r[2:]] for r in rows}}


def select(run, sql):
    try:
        return sorted([r[0], r[1]] for r in run(f"select volume, path from t where {sql}"))
    except Exception as e:  # the engine refused the SQL: the test shows which and why
        return f"error: {str(e).splitlines()[0]}"


def spark_view(d, queries=None):
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
        if queries is not None:
            return {k: select(lambda q: s.sql(q).collect(), sql) for k, sql in queries.items()}
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
    queries = None
    if len(sys.argv) > 3:
        with open(sys.argv[3], encoding="utf-8") as f:
            queries = json.load(f)
    out = {"duckdb": duckdb_view, "spark": spark_view}[engine](d, queries)
    print(json.dumps(out))


main()
