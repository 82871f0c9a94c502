#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 300) with its seeded corpus; stops at the first crash.
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-300}
[ -d corpus/fat ] && [ -d corpus/exfat ] && [ -d corpus/ext ] && [ -d corpus/xfs ] && [ -d corpus/btrfs ] && [ -d corpus/hfs ] && [ -d corpus/container_udif ] && [ -d corpus/container_sparse ] && [ -d corpus/apfs ] || ./seed-corpus.sh
for t in record runlist boot_sector partition_table mft_index source usn index_file content daemon_request vss container_vmdk container_qcow2 container_ewf container_ewf2 container_vhdx container_udif container_sparse fat exfat ext xfs btrfs hfs apfs; do
  echo "== $t for ${secs}s"
  # -detect_leaks=0: LeakSanitizer counts the thread-exit records (`__cxa_thread_atexit_impl`) of rayon pool threads
  # still winding down after their pool is dropped as leaks; nothing of uffs's is in those reports.
  cargo +nightly fuzz run -O "$t" "corpus/$t" -- -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -detect_leaks=0 2>&1 |
    grep -E "^(#[0-9]+ +DONE|INFO: Running|==[0-9]+==|SUMMARY|Done)|panicked|Test unit written" || true
done
