#!/usr/bin/env python3
"""The system daemon answering another user: what a guest's view of a volume costs (issue 56, item 4), as users run
it (`uffs QUERY`, process start to exit), against root's answer from the same daemon in the same run.

    sudo python3 scripts/bench-system.py [--entries 1000000] [--runs 7] [--user uffs-ben]

A generated tree (folders `dNNNN/sM` of 100 files, scripts/benchlib.py) in /dev/shm, every tenth top folder mode
0700 so the guest sees nine tenths, registered with a system daemon whose directories are temporary; tmpfs is
walked and followed with fanotify. Figures, each the median of --runs: root's query; the guest's first query on a
new snapshot of the volume (after a change applied by `uffs volumes refresh --system`, so the guest's view, one
pass over the entries and the totals, is made in it); the guest's next queries; and the daemon's resident memory
before and after the guest's view. The user is one scripts/setup.sh makes. Needs root and a release build.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import median, print_table, run_timed  # noqa: E402

UFFS = os.environ.get("UFFS_BIN") or benchlib.UFFS


def rss_of(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--user", default="uffs-ben")
    a = ap.parse_args()
    benchlib.need_release_build("bench-system.py")
    if os.geteuid() != 0:
        sys.exit("bench-system.py: needs root (the system daemon, another user)")
    work = tempfile.mkdtemp(prefix="uffs-bench-system-")
    tree = tempfile.mkdtemp(prefix="uffs-bench-system-", dir="/dev/shm")
    os.chmod(work, 0o755)
    os.chmod(tree, 0o755)
    exe = os.path.join(work, "uffs")
    shutil.copy(UFFS, exe)
    os.chmod(exe, 0o755)
    users = os.path.join(work, "users")
    os.makedirs(users)
    os.chmod(users, 0o1777)
    env = dict(os.environ, UFFS_SYSTEM_CACHE_DIR=os.path.join(work, "cache"),
               UFFS_SYSTEM_RUNTIME_DIR=os.path.join(work, "run"))
    env.pop("XDG_RUNTIME_DIR", None)

    def as_user(user, *args):
        return ["runuser", "-u", user, "--", "env", "-u", "XDG_RUNTIME_DIR",
                f"UFFS_SYSTEM_RUNTIME_DIR={env['UFFS_SYSTEM_RUNTIME_DIR']}",
                f"UFFS_RUNTIME_DIR={os.path.join(users, user)}", exe, *args]

    def root(*args):
        subprocess.run([exe, *args], env=env, check=True, stdout=subprocess.DEVNULL)

    try:
        t = time.perf_counter()
        benchlib.make_generated_tree(tree, a.entries)
        tops = sorted(d for d in os.listdir(tree) if d.startswith("d"))
        for d in tops[::10]:
            os.chmod(os.path.join(tree, d), 0o700)
        print(f"tree of {a.entries:,} files in {time.perf_counter() - t:.1f} s")
        root("volumes", "add", "--system", tree, "--name", "tree")
        root("daemon", "start", "--system")
        pid = int(open(os.path.join(work, "run", "daemon.pid")).read())
        query = ["--count", "report"]
        rows = []
        for who in ["root", a.user]:
            run_timed(as_user(who, *query), ok=(0, 1))
        root_s = median([run_timed(as_user("root", *query), ok=(0, 1)) for _ in range(a.runs)])
        counts = {u: subprocess.run(as_user(u, *query), capture_output=True, text=True).stdout.strip()
                  for u in ["root", a.user]}
        rss_before = rss_of(pid)
        firsts = []
        for i in range(a.runs):
            # A change applied: a new snapshot of the volume, whose guest views are made anew.
            open(os.path.join(tree, tops[1], f"touch-{i}"), "w").close()
            root("volumes", "refresh", "--system")
            firsts.append(run_timed(as_user(a.user, *query), ok=(0, 1)))
        next_s = median([run_timed(as_user(a.user, *query), ok=(0, 1)) for _ in range(a.runs)])
        rss_after = rss_of(pid)
        # Root on the same snapshot as the guest's next queries, and what runuser itself costs.
        root_after = median([run_timed(as_user("root", *query), ok=(0, 1)) for _ in range(a.runs)])
        runuser = median([run_timed(as_user(a.user, "--version")) for _ in range(a.runs)])
        rows = [
            ["root", counts["root"], f"{root_s * 1e3:.1f}"],
            ["root, after the changes", counts["root"], f"{root_after * 1e3:.1f}"],
            [f"{a.user}, first on a snapshot", counts[a.user], f"{median(firsts) * 1e3:.1f}"],
            [f"{a.user}, next", counts[a.user], f"{next_s * 1e3:.1f}"],
            [f"{a.user}: `uffs --version` (runuser's and the process's start)", "", f"{runuser * 1e3:.1f}"],
        ]
        print_table(["`uffs --count report` as", "found", "ms (median)"], rows, right={1, 2})
        n = a.entries
        # The daemon gives freed memory back after each query, so the second figure can be the lower.
        print(f"daemon RSS {rss_before / n:.0f} B/entry after root's queries, {rss_after / n:.0f} after the guest's "
              f"{a.runs + 1} views ({(rss_after - rss_before) / 2**20:+.1f} MiB)")
    finally:
        subprocess.run([exe, "daemon", "stop", "--system"], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(tree, ignore_errors=True)


if __name__ == "__main__":
    main()
