"""DuckDB's view of uffs's Parquet files, and the same figures from `uffs export --format csv`, for
crates/uffs/tests/parquet.rs. Prints one JSON object.

  parquet_check.py summary CSV PARQUET     figures of one export, both ways: {"csv": {...}, "parquet": {...}}
  parquet_check.py describe PARQUET        DuckDB's DESCRIBE: [[name, type], ...]
  parquet_check.py join CSV1 CSV2 PQ1 PQ2  files of two volumes with the same name and size, and the rows per
                                           volume of the two files read as one
  parquet_check.py rows PARQUET            [[volume, path, size], ...] in file order
  parquet_check.py meta PARQUET            the footer's key-value metadata: {key: value}
"""

import csv
import datetime
import json
import sys
from collections import Counter

import duckdb

TIMES = [
    "created",
    "modified",
    "mft_changed",
    "accessed",
    "fn_created",
    "fn_modified",
    "fn_mft_changed",
    "fn_accessed",
]
FILETIME_EPOCH = datetime.date(1601, 1, 1)
UNIX_EPOCH_TICKS = 116_444_736_000_000_000


def ticks(iso):
    """`2024-05-01T12:34:56.1234567Z` as a FILETIME (100 ns since 1601); None when empty."""
    if not iso:
        return None
    date, clock = iso.rstrip("Z").split("T")
    y, m, d = (int(x) for x in date.rsplit("-", 2))
    hms, frac = clock.split(".")
    hh, mm, ss = (int(x) for x in hms.split(":"))
    days = (datetime.date(y, m, d) - FILETIME_EPOCH).days
    return (days * 86400 + hh * 3600 + mm * 60 + ss) * 10**7 + int(frac)


def micros(ft):
    """A FILETIME as microseconds since 1970, rounded down, as the schema's timestamps hold it."""
    return None if ft is None else (ft - UNIX_EPOCH_TICKS) // 10


def csv_rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def csv_summary(path):
    rows = csv_rows(path)
    s = {
        "count": len(rows),
        "sum_size": sum(int(r["size"]) for r in rows),
        "sum_allocated": sum(int(r["allocated"]) for r in rows),
        "sum_record": sum(int(r["record"]) for r in rows),
        "sum_sequence": sum(int(r["sequence"]) for r in rows),
        "sum_parent": sum(int(r["parent_record"] or 0) for r in rows),
        "no_parent": sum(1 for r in rows if not r["parent_record"]),
        "deleted": sum(1 for r in rows if r["deleted"] == "true"),
        "hidden": sum(1 for r in rows if "h" in r["attributes"]),
        "reparse": sum(1 for r in rows if r["reparse_tag"]),
        "kinds": dict(Counter(r["kind"] for r in rows)),
        "paths": len({r["path"] for r in rows}),
        "dll": sum(1 for r in rows if r["kind"] == "file" and r["name"].rsplit(".", 1)[-1] == "dll" and "." in r["name"]),
    }
    for t in TIMES:
        v = [ticks(r[t]) for r in rows]
        known = [x for x in v if x is not None]
        lo, hi = min(known, default=None), max(known, default=None)
        s[t] = [micros(lo), micros(hi), lo, hi, sum(1 for x in v if x is None)]
    return s


def parquet_summary(path):
    c = duckdb.connect()
    q = lambda sql: c.execute(sql.replace("F", f"read_parquet('{path}')")).fetchall()
    (count, ss, sa, sr, sq, sp, np, de, hi, rp, pa, dll) = q(
        "select count(*), sum(size), sum(allocated), sum(record), sum(sequence), coalesce(sum(parent_record), 0), "
        "count(*) - count(parent_record), count(*) filter (deleted), "
        "count(*) filter (attributes_mask & 2 <> 0 and attributes like '%h%'), count(*) filter (reparse_tag <> 0), "
        "count(distinct path), count(*) filter (ext = 'dll') from F"
    )[0]
    s = {
        "count": count,
        "sum_size": int(ss or 0),
        "sum_allocated": int(sa or 0),
        "sum_record": int(sr or 0),
        "sum_sequence": int(sq or 0),
        "sum_parent": int(sp or 0),
        "no_parent": np,
        "deleted": de,
        "hidden": hi,
        "reparse": rp,
        "kinds": {k: n for k, n in q("select kind, count(*) from F group by kind")},
        "paths": pa,
        "dll": dll,
    }
    for t in TIMES:
        s[t] = list(
            q(
                f"select epoch_us(min({t})), epoch_us(max({t})), min({t}_filetime), max({t}_filetime), "
                f"count(*) - count({t}) from F"
            )[0]
        )
    return s


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "summary":
        out = {"csv": csv_summary(args[0]), "parquet": parquet_summary(args[1])}
    elif cmd == "describe":
        rows = duckdb.connect().execute(f"describe select * from read_parquet('{args[0]}')").fetchall()
        out = [[r[0], r[1]] for r in rows]
    elif cmd == "join":
        a, b = csv_rows(args[0]), csv_rows(args[1])
        ka = Counter((r["name"], r["size"]) for r in a if r["kind"] == "file")
        kb = Counter((r["name"], r["size"]) for r in b if r["kind"] == "file")
        c = duckdb.connect()
        pj = c.execute(
            f"select count(*) from read_parquet('{args[2]}') x join read_parquet('{args[3]}') y "
            "on x.name = y.name and x.size = y.size where x.kind = 'file' and y.kind = 'file'"
        ).fetchone()[0]
        per = c.execute(
            f"select source, volume_serial, count(*) from read_parquet(['{args[2]}', '{args[3]}']) "
            "group by all order by 3"
        ).fetchall()
        out = {
            "csv_join": sum(n * kb[k] for k, n in ka.items()),
            "parquet_join": pj,
            "csv_counts": sorted([len(a), len(b)]),
            "parquet_counts": [r[2] for r in per],
            "volumes": [[r[0], str(r[1])] for r in per],
        }
    elif cmd == "rows":
        rows = duckdb.connect().execute(f"select volume, path, size from read_parquet('{args[0]}')").fetchall()
        out = [list(r) for r in rows]
    elif cmd == "meta":
        rows = duckdb.connect().execute(f"select key, value from parquet_kv_metadata('{args[0]}')").fetchall()
        out = {bytes(k).decode(): bytes(v).decode() for k, v in rows if bytes(k) != b"ARROW:schema"}
    else:
        raise SystemExit(f"unknown command {cmd}")
    print(json.dumps(out))


main()
