"""What the benchmark and soak scripts share: where the release build is, a private daemon, an MCP session, and
timing helpers (a command's wall time, the median of runs, a cold page cache, a table).

    from benchlib import UFFS, PrivateDaemon, Mcp

    with PrivateDaemon([("/work/bench/bench.img", "B", "never")]) as d:   # its own cache and runtime folders
        subprocess.run([UFFS, "*", "--count"], env=d.env)
        m = Mcp(d.env)                      # `uffs mcp` on stdio, initialized
        ms, found = m.search("kernel32.dll")

    secs = median([run_timed(["rg", "x", "/mnt"], ok=(0, 1)) for _ in range(3)])
    drop_caches()                           # the next read comes from the disk (root)
    print_table(["tool", "s"], [["rg", f"{secs:.2f}"]])
"""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UFFS = os.path.join(ROOT, "target", "release", "uffs")


def need_release_build(script):
    if not os.path.exists(UFFS):
        sys.exit(f"{script}: build first: cargo build --release")


class PrivateDaemon:
    """A daemon with its own cache and runtime folders (under `work`, a new temporary folder by default), the
    volumes `(source, name, refresh)` registered, started and ready when the `with` block begins; stopped, and a
    temporary folder removed, when it ends. `env` runs uffs against it."""

    def __init__(self, volumes, work=None, prefix="uffs-bench-"):
        self.own_work = work is None
        self.work = work or tempfile.mkdtemp(prefix=prefix)
        self.env = dict(os.environ, UFFS_CACHE_DIR=os.path.join(self.work, "cache"),
                        UFFS_RUNTIME_DIR=os.path.join(self.work, "run"))
        self.volumes = volumes

    def __enter__(self):
        try:
            for source, name, refresh in self.volumes:
                subprocess.run([UFFS, "volumes", "add", source, "--name", name, "--refresh", refresh], env=self.env,
                               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def start(self):
        subprocess.run([UFFS, "daemon", "start"], env=self.env, check=True, stdout=subprocess.DEVNULL)
        self.wait_ready()

    def wait_ready(self, limit=600):
        """Waits until the daemon answers a count; returns the seconds it took."""
        t = time.perf_counter()
        while time.perf_counter() - t < limit:
            if subprocess.run([UFFS, "*", "--count"], env=self.env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0:
                return time.perf_counter() - t
            time.sleep(0.05)
        sys.exit("the daemon did not get ready")

    def pid(self):
        try:
            return int(open(os.path.join(self.work, "run", "daemon.pid")).read().strip())
        except (OSError, ValueError):
            return None

    def __exit__(self, *exc):
        subprocess.run([UFFS, "daemon", "stop"], env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if self.own_work:
            shutil.rmtree(self.work, ignore_errors=True)


class Mcp:
    """A `uffs mcp ARGS` session on stdio, spoken to in JSON-RPC directly (no SDK in the way), initialized."""

    def __init__(self, env, args=()):
        self.p = subprocess.Popen([UFFS, "mcp", *args], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.id = 0
        self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "uffs-scripts", "version": "1"}})
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
                raise RuntimeError("uffs mcp closed its output")
            msg = json.loads(line)
            if msg.get("id") == self.id:
                return msg

    def search(self, query, limit=50):
        """A `search` tool call: (milliseconds from request to answer, entries found). A query that matches
        nothing is an answer (found 0); an error raises."""
        t = time.perf_counter()
        r = self.call("tools/call", {"name": "search", "arguments": {"query": query, "limit": limit}})
        ms = (time.perf_counter() - t) * 1000
        res = r.get("result") or {}
        if "error" in r or res.get("isError"):
            raise RuntimeError(f"search {query!r}: {json.dumps(r)[:300]}")
        return ms, res["structuredContent"]["found"]

    def close(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.p.kill()


def run_timed(cmd, env=None, stdout=None, ok=(0,)):
    """Wall seconds of one run of `cmd` (an argv list, or a shell string run by sh), from start to exit. Output goes
    to the file `stdout` (a path), or nowhere. An exit code outside `ok` stops the script with the command's
    stderr."""
    shell = isinstance(cmd, str)
    out = open(stdout, "wb") if stdout else subprocess.DEVNULL
    try:
        t = time.perf_counter()
        p = subprocess.run(cmd, shell=shell, env=env, stdout=out, stderr=subprocess.PIPE)
        secs = time.perf_counter() - t
    finally:
        if stdout:
            out.close()
    if p.returncode not in ok:
        sys.exit(f"{cmd if shell else ' '.join(cmd)}: exit {p.returncode}: {p.stderr.decode(errors='replace')[:500]}")
    return secs


def run_measured(cmd, cold=False, fresh=None, stdout=None):
    """Wall seconds, peak RSS (bytes) and stderr of one run of `cmd` (an argv list), from start to exit; `cold`
    empties the page cache first (root), `fresh` is a file removed first (an output the run writes anew). Output
    goes to the file `stdout`, or nowhere. A failed run stops the script with its stderr."""
    if fresh and os.path.exists(fresh):
        os.unlink(fresh)
    if cold:
        drop_caches()
    out = open(stdout, "wb") if stdout else subprocess.DEVNULL
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    secs = time.perf_counter() - t
    if stdout:
        out.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)}: {err.decode(errors='replace')[:500]}")
    return secs, ru.ru_maxrss * 1024, err.decode(errors="replace")


def median_measured(cmd, runs, cold=False, **kw):
    """[`run_measured`] `runs` times (after a warm-up run, skipped when `cold`): the median seconds, the largest
    peak RSS and the last run's stderr."""
    if not cold:
        run_measured(cmd, **kw)
    rs = [run_measured(cmd, cold=cold, **kw) for _ in range(runs)]
    return median([r[0] for r in rs]), max(r[1] for r in rs), rs[-1][2]


def updatedb_over(mnt, work, runs):
    """plocate's `updatedb` of mount `mnt` with nothing pruned, as the scale benchmarks run it: the median cold and
    warm seconds of `runs`, and the paths its database then lists under `mnt`."""
    db = os.path.join(work, "plocate.db")
    cmd = ["updatedb", "-U", mnt, "-o", db, "--require-visibility", "no", "--prunepaths", "",
           "--prunefs", "", "--prunenames", ""]
    cold, _, _ = median_measured(cmd, runs, cold=True)
    warm, _, _ = median_measured(cmd, runs)
    listed = subprocess.run(["plocate", "-d", db, "-c", mnt], capture_output=True, text=True).stdout.strip()
    return cold, warm, listed


def entries_of(err):
    """The entries `uffs index` says it wrote ("IMG: 11,842 entries from …")."""
    m = re.search(r"([\d,]+) entries", err)
    if not m:
        sys.exit(f"no entry count in: {err[:300]}")
    return int(m.group(1).replace(",", ""))


def median(values):
    return statistics.median(values)


def drop_caches():
    """Writes dirty pages back and empties the page cache, dentries and inodes, so the next read comes from the
    disk (`sync; echo 3 > /proc/sys/vm/drop_caches`). Needs root."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as fh:
        fh.write("3\n")


def print_table(headers, rows, right=None):
    """Prints rows (lists of strings) under headers, columns padded; columns after the first are right-aligned
    unless `right` (a set of column numbers) says otherwise."""
    right = set(range(1, len(headers))) if right is None else right
    widths = [max(len(str(r[i])) for r in [headers] + rows) for i in range(len(headers))]
    for r in [headers] + rows:
        print("  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                        for i, (c, w) in enumerate(zip(r, widths))).rstrip())


def make_generated_tree(root, entries):
    """The generated tree bench-hfs.py and bench-apfs.py write their images from: folders `dNNN/sM` of 100 files
    each (names of several lengths, a few Unicode; a file every 1,000 a few KiB) until `entries` files."""
    names = ["report", "IMG_", "notes-été", "a", "build.log.", "Ünïcødé", "data_export_2026_"]
    n = 0
    top = 0
    while n < entries:
        for s in range(10):
            d = os.path.join(root, f"d{top:04d}", f"s{s}")
            os.makedirs(d)
            for i in range(100):
                size = 3000 if n % 1000 == 0 else n % 37
                with open(os.path.join(d, f"{names[i % len(names)]}{n}.txt"), "wb") as f:
                    f.write(b"x" * size)
                n += 1
                if n >= entries:
                    return
        top += 1
