#!/usr/bin/env python3
"""`uffs mcp` on the benchmark volume: a tool call's time from request to response over stdio.

    python3 scripts/bench-mcp.py /work/bench/bench.img [--runs 51]

Speaks JSON-RPC to `uffs mcp` on its pipes directly (no SDK in the way): `initialize`, then `tools/call` of
`search` for each targeted query of bench/queries.tsv (limit 50, the default), timed from writing the request
to reading its answer's line. Twice: through a private daemon (warm, the volume registered) and from an index
file (`uffs mcp --index F`, the file read and checked once at start). Prints medians; asserts nothing.
Needs a release build (cargo build --release).
"""

import argparse
import os
import statistics
import subprocess

from benchlib import ROOT, UFFS, Mcp, PrivateDaemon, need_release_build


def targeted_queries():
    out = []
    for line in open(os.path.join(ROOT, "bench", "queries.tsv")):
        if line.startswith("#") or not line.strip():
            continue
        cls, query, *_ = line.rstrip("\n").split("\t")
        if cls == "targeted":
            out.append(query)
    return out


def measure(label, mcp, queries, runs):
    print(label)
    all_ms = []
    for q in queries:
        mcp.search(q)  # warm
        times = []
        for _ in range(runs):
            ms, found = mcp.search(q)
            times.append(ms)
        all_ms += times
        print(f"  search {q!r:<24} found {found:>7,}   median {statistics.median(times):6.2f} ms"
              f"   min {min(times):6.2f}   max {max(times):6.2f}")
    print(f"  all targeted queries: median {statistics.median(all_ms):.2f} ms over {len(all_ms)} calls")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("image")
    ap.add_argument("--runs", type=int, default=51)
    a = ap.parse_args()
    need_release_build("bench-mcp")
    queries = targeted_queries()
    with PrivateDaemon([(a.image, "B", "never")], prefix="uffs-bench-mcp-") as d:
        m = Mcp(d.env)
        measure("uffs mcp (through the daemon, warm)", m, queries, a.runs)
        m.close()
        idx = os.path.join(d.work, "bench.uffs")
        subprocess.run([UFFS, "index", a.image, "-o", idx], check=True, stderr=subprocess.DEVNULL)
        m = Mcp(d.env, ["--index", idx])
        measure("uffs mcp --index F", m, queries, a.runs)
        m.close()

if __name__ == "__main__":
    main()
