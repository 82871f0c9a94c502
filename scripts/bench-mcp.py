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
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UFFS = os.path.join(ROOT, "target", "release", "uffs")


def targeted_queries():
    out = []
    for line in open(os.path.join(ROOT, "bench", "queries.tsv")):
        if line.startswith("#") or not line.strip():
            continue
        cls, query, *_ = line.rstrip("\n").split("\t")
        if cls == "targeted":
            out.append(query)
    return out


class Mcp:
    def __init__(self, args, env):
        self.p = subprocess.Popen([UFFS, "mcp", *args], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.id = 0
        self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "bench-mcp", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def call(self, method, params):
        self.id += 1
        self.send({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
        while True:
            line = self.p.stdout.readline()
            if not line:
                sys.exit("bench-mcp: uffs mcp closed its output")
            msg = json.loads(line)
            if msg.get("id") == self.id:
                return msg

    def search_ms(self, query):
        t = time.perf_counter()
        r = self.call("tools/call", {"name": "search", "arguments": {"query": query}})
        ms = (time.perf_counter() - t) * 1000
        res = r.get("result") or {}
        if "error" in r or res.get("isError"):
            sys.exit(f"bench-mcp: {query!r} failed: {r}")
        return ms, res["structuredContent"]["found"]

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=10)


def measure(label, mcp, queries, runs):
    print(label)
    all_ms = []
    for q in queries:
        mcp.search_ms(q)  # warm
        times = []
        for _ in range(runs):
            ms, found = mcp.search_ms(q)
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
    if not os.path.exists(UFFS):
        sys.exit("bench-mcp: build first: cargo build --release")
    queries = targeted_queries()
    work = tempfile.mkdtemp(prefix="uffs-bench-mcp-")
    env = dict(os.environ, UFFS_CACHE_DIR=os.path.join(work, "cache"), UFFS_RUNTIME_DIR=os.path.join(work, "run"))
    try:
        idx = os.path.join(work, "bench.uffs")
        subprocess.run([UFFS, "index", a.image, "-o", idx], check=True, stderr=subprocess.DEVNULL)
        subprocess.run([UFFS, "volumes", "add", a.image, "--name", "B", "--refresh", "never"], env=env, check=True,
                       stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        subprocess.run([UFFS, "daemon", "start"], env=env, check=True, stdout=subprocess.DEVNULL)
        try:
            for _ in range(300):
                if subprocess.run([UFFS, "*", "--count"], env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL).returncode == 0:
                    break
                time.sleep(0.1)
            m = Mcp([], env)
            measure("uffs mcp (through the daemon, warm)", m, queries, a.runs)
            m.close()
        finally:
            subprocess.run([UFFS, "daemon", "stop"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        m = Mcp(["--index", idx], env)
        measure("uffs mcp --index F", m, queries, a.runs)
        m.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
