#!/usr/bin/env bash
# The whole test suite: installs what the tests need (idempotent; needs root), then runs every test, built with
# the `suite` profile (release without its LTO: see Cargo.toml).
# Integration tests build their fixture volumes with mkntfs + ntfs-3g on first use (scripts/make-fixtures.sh).
# Then the Windows build's daemon tests, under Wine (scripts/test-windows.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ]; then
  scripts/setup.sh
else
  sudo scripts/setup.sh
fi
export PATH="$HOME/.cargo/bin:$PATH"
cargo test --profile suite --workspace "$@"
scripts/test-windows.sh
