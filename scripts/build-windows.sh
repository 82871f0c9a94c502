#!/usr/bin/env bash
# The Windows release, built on this Linux machine: uffs.exe for x86_64-pc-windows-gnu (one file; it needs only
# the DLLs every Windows has), packed with the README and docs/ into target/dist/uffs-VERSION-windows-x86_64.zip
# with its SHA-256. scripts/setup.sh installs the cross toolchain (the MinGW-w64 linker and the rustup target).
# docs/windows.md says how to install and start it.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
target=x86_64-pc-windows-gnu
if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
    echo "build-windows: the rustup target $target is not installed: run scripts/setup.sh" >&2
    exit 1
fi
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
cargo build --release --target "$target" -p uffs
exe=target/$target/release/uffs.exe
# Only system DLLs: a DLL from MinGW here would be missing on the user's PC.
if x86_64-w64-mingw32-objdump -p "$exe" | sed -n 's/.*DLL Name: //p' | grep -viE \
    '^(kernel32|ntdll|msvcrt|advapi32|bcryptprimitives|ws2_32|userenv|api-ms-win-[a-z0-9-]+)\.dll$'; then
    echo "build-windows: $exe needs the DLLs above, which Windows does not have" >&2
    exit 1
fi
name=uffs-$version-windows-x86_64
dist=target/dist/$name
rm -rf "$dist" "$dist.zip"
mkdir -p "$dist"
cp "$exe" README.md "$dist/"
cp -r docs "$dist/"
# The release profile keeps line tables for profiling here; the user's copy goes without.
x86_64-w64-mingw32-strip "$dist/uffs.exe"
(cd target/dist && python3 -m zipfile -c "$name.zip" "$name" && sha256sum "$name.zip" > "$name.zip.sha256")
echo "build-windows: target/dist/$name.zip ($(du -h "target/dist/$name.zip" | cut -f1)): $(cut -d' ' -f1 "target/dist/$name.zip.sha256")"
