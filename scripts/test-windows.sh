#!/usr/bin/env bash
# The Windows side of the test suite, run under Wine: cross-builds for x86_64-pc-windows-gnu and runs, as
# Windows programs, the named-pipe unit tests of crates/daemon and the daemon's end-to-end tests
# (crates/uffs/tests/daemon_windows.rs). scripts/setup.sh installs what it needs (wine64, the MinGW-w64
# linker, the rustup target); scripts/test.sh calls it after the Linux tests.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
target=x86_64-pc-windows-gnu
wine=/usr/lib/wine/wine64

if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
    echo "test-windows: SKIPPED: the rustup target $target is not installed (scripts/setup.sh could not add it)" >&2
    exit 0
fi

# A Wine prefix of the repository's own, made on first use.
export WINEPREFIX="$PWD/target/wine-prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
if [[ ! -d $WINEPREFIX/drive_c/windows/system32 ]]; then
    echo "test-windows: making the Wine prefix $WINEPREFIX"
    "$wine" wineboot --init >/dev/null 2>&1 || true
    /usr/lib/wine/wineserver -w
fi
# Rust's standard library draws random numbers with ProcessPrng from bcryptprimitives.dll (Windows 10 and
# later), which Wine 8 does not have: a small stand-in built from scripts/wine/.
dll=$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll
if [[ ! -f $dll ]]; then
    x86_64-w64-mingw32-gcc -shared -O2 -o "$dll" scripts/wine/bcryptprimitives.c \
        scripts/wine/bcryptprimitives.def -lbcrypt
fi

export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=$wine
cargo test --target "$target" -p uffs-daemon "$@"
cargo test --target "$target" -p uffs --test daemon_windows "$@"
