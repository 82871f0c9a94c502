"""Spark's and DuckDB's view of a uffs Parquet dataset (`uffs export --dataset DIR`), for
crates/uffs/tests/dataset.rs. Prints one JSON object:

  {"columns": [name, ...],
   "volumes": {"HOST/VOLUME": [rows, sum(size), max(modified_filetime), max(modified) in us, distinct paths]},
   "executors": N}                                          (Spark only: executor processes that ran the query)

  dataset_check.py duckdb DIR
  dataset_check.py spark DIR     Spark 4 with its default settings on a local cluster: a driver and two executor
                                 processes (`local-cluster[2,1,1024]`), Java 17

  dataset_check.py trino DIR     a Trino server (from $UFFS_TRINO, default /opt/uffs-trino, which scripts/setup.sh
                                 installs, on the Java 25 at $UFFS_TRINO_JAVA) started for the run: the Hive
                                 connector with a file metastore over the local folder, the dataset an external
                                 table partitioned by host and volume

  dataset_check.py duckdb|spark|trino DIR QUERIES.json
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


TRINO_TYPES = {
    "VARCHAR": "varchar",
    "BIGINT": "bigint",
    "INTEGER": "integer",
    "BOOLEAN": "boolean",
    "TIMESTAMP WITH TIME ZONE": "timestamp(6)",
}


class Trino:
    """A Trino server of its own, on a free port, in a folder beside the dataset; stopped by `close`."""

    def __init__(self, d):
        import socket
        import subprocess
        import time

        home = os.environ.get("UFFS_TRINO", "/opt/uffs-trino")
        java = os.environ.get("UFFS_TRINO_JAVA", "/usr/lib/jvm/temurin-25-jdk-amd64")
        for need in (os.path.join(home, "bin/launcher"), os.path.join(java, "bin/java")):
            if not os.path.exists(need):
                raise SystemExit(f"{need} is missing; run `sudo scripts/setup.sh` (it installs Trino)")
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        base = os.path.join(os.path.dirname(os.path.abspath(d)), "trino")
        etc = os.path.join(base, "etc")
        os.makedirs(os.path.join(etc, "catalog"), exist_ok=True)
        files = {
            "node.properties": f"node.environment=uffs_test\nnode.id=uffs\nnode.data-dir={base}/data\n",
            "jvm.config": "-server\n-Xmx1G\n-XX:+UseG1GC\n-XX:+ExitOnOutOfMemoryError\n-Duser.timezone=UTC\n"
            "-Djdk.attach.allowAttachSelf=true\n",
            "config.properties": f"coordinator=true\nnode-scheduler.include-coordinator=true\n"
            f"http-server.http.port={self.port}\ndiscovery.uri=http://127.0.0.1:{self.port}\n"
            "query.max-memory=512MB\nquery.max-memory-per-node=512MB\n",
            # The dataset's parent folder is the local file system's root, `local:///`.
            "catalog/hive.properties": "connector.name=hive\nhive.metastore=file\n"
            "hive.metastore.catalog.dir=local:///trino/metastore\nfs.native-local.enabled=true\n"
            f"local.location={os.path.dirname(os.path.abspath(d))}\nhive.timestamp-precision=MICROSECONDS\n",
        }
        for name, text in files.items():
            with open(os.path.join(etc, name), "w") as f:
                f.write(text)
        env = dict(os.environ, JAVA_HOME=java, PATH=f"{java}/bin:" + os.environ["PATH"])
        self.log = open(os.path.join(base, "server.log"), "w")
        self.proc = subprocess.Popen(
            [os.path.join(home, "bin/launcher"), "run", "--etc-dir", etc], env=env, stdout=self.log, stderr=self.log
        )
        deadline = time.time() + 180
        while True:
            try:
                import urllib.request

                info = json.load(urllib.request.urlopen(f"http://127.0.0.1:{self.port}/v1/info", timeout=2))
                if not info.get("starting", True):
                    break
            except OSError:
                pass
            if self.proc.poll() is not None or time.time() > deadline:
                raise SystemExit(f"Trino did not start; see {base}/server.log")
            time.sleep(0.5)
        self.deadline = deadline

    def run(self, sql):
        import time

        # Started is not yet ready: the coordinator takes itself as a worker some seconds later.
        while True:
            try:
                return self.run_once(sql)
            except RuntimeError as e:
                if "No nodes available" not in str(e) or time.time() > self.deadline:
                    raise
                time.sleep(0.5)

    def run_once(self, sql):
        import urllib.request

        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/v1/statement",
            data=sql.encode(),
            headers={"X-Trino-User": "uffs", "X-Trino-Catalog": "hive", "X-Trino-Schema": "lake"},
        )
        r = json.load(urllib.request.urlopen(req))
        rows = []
        while True:
            rows += r.get("data", [])
            if "error" in r:
                raise RuntimeError(r["error"]["message"])
            if "nextUri" not in r:
                return rows
            r = json.load(urllib.request.urlopen(r["nextUri"]))

    def close(self):
        self.proc.terminate()
        self.proc.wait(30)
        self.log.close()


def trino_view(d, queries=None):
    import glob

    import duckdb

    # The table's columns as the files have them (Trino's Hive tables are declared), then the partitions.
    first = sorted(glob.glob(f"{d}/*/*/*.parquet"))[0]
    described = (
        duckdb.connect()
        .execute(f"describe select * from read_parquet('{first}', hive_partitioning=false)")
        .fetchall()
    )
    columns = ", ".join(f'"{name}" {TRINO_TYPES[ty]}' for name, ty, *_ in described)
    t = Trino(d)
    try:
        t.run("create schema hive.lake with (location = 'local:///trino/schema')")
        t.run(
            f"create table hive.lake.t ({columns}, host varchar, volume varchar) with (external_location = "
            f"'local:///{os.path.basename(os.path.abspath(d))}', format = 'PARQUET', "
            "partitioned_by = ARRAY['host', 'volume'])"
        )
        t.run("call system.sync_partition_metadata('lake', 't', 'FULL')")
        if queries is not None:
            return {k: select(t.run, sql) for k, sql in queries.items()}
        cols = [r[0] for r in t.run("describe t")]
        rows = t.run(
            "select host, volume, count(*), sum(size), max(modified_filetime), "
            "round(to_unixtime(max(modified)) * 1000000), count(distinct path) from t group by host, volume"
        )
        return {"columns": cols, "volumes": {f"{r[0]}/{r[1]}": [int(x) for x in r[2:]] for r in rows}}
    finally:
        t.close()


def main():
    engine, d = sys.argv[1], sys.argv[2]
    queries = None
    if len(sys.argv) > 3:
        with open(sys.argv[3], encoding="utf-8") as f:
            queries = json.load(f)
    out = {"duckdb": duckdb_view, "spark": spark_view, "trino": trino_view}[engine](d, queries)
    print(json.dumps(out))


main()
