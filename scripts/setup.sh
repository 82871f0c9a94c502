#!/usr/bin/env bash
# setup.sh -- idempotent system setup for uffs development / CI (Debian 12, root).
#
# Installs the NTFS tooling that scripts/make-fixtures.sh and the tests use:
#   ntfs-3g (mkntfs, ntfs-3g FUSE driver, ntfsinfo, ntfslabel), sleuthkit (fls,
#   istat, icat, fsstat, mmls), fdisk (sfdisk), gdisk (sgdisk), attr
#   (getfattr/setfattr), dosfstools (FAT partition in disk-mbr.img; FAT volumes), mtools and
#   exfatprogs + exfat-fuse (FAT and exFAT volumes written by their real tools), libfaketime
#   (frozen clock => byte-reproducible images), fuse3, xz-utils (unpacks the
#   forensic sample), qemu-utils (qemu-img opens the qcow2 Windows volumes), bsdutils (`script`, a terminal for the escaping test), plus
#   python3-fusepy (the fault tests' FUSE file system that fails chosen reads with EIO),
#   forensics-samples-ntfs, plocate, libfsntfs-utils, hyperfine; wine64 and the MinGW-w64 C compiler, and
#   the rustup target x86_64-pc-windows-gnu, for the Windows build's tests (scripts/test-windows.sh).
# Then `cargo install mft --locked` (mft_dump) unless mft_dump is on PATH
# (set UFFS_SETUP_SKIP_CARGO=1 to skip that step).
# apt is skipped entirely when every package is already installed.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

step() { echo "setup: $*"; }

[[ $(id -u) -eq 0 ]] || { echo "setup: must run as root" >&2; exit 1; }

PKGS=(ntfs-3g sleuthkit forensics-samples-ntfs plocate libfsntfs-utils hyperfine
      fuse3 fdisk gdisk attr dosfstools libfaketime util-linux coreutils xz-utils bsdutils
      qemu-utils  # qemu-img: the Windows volumes in tests/data/windows-volumes are qcow2 containers
      python3  # /usr/bin/python3: the daemon test runs it as another user (setpriv, from util-linux)
      python3-fusepy  # the FUSE file system of read errors (crates/uffs/tests/eio_fs.py) for the fault tests
      wine64 gcc-mingw-w64-x86-64-posix  # the Windows build's tests, under Wine (scripts/test-windows.sh)
      chromium chromium-driver python3-venv  # the web page's browser test; the venv of the Python clients below
      ripgrep hashdeep file gzip bzip2 zstd  # contents (rg -z runs gzip, bzip2, xz, zstd): uffs grep against rg, uffs hash against hashdeep, types against file(1)
      xxhash  # xxhsum: uffs-hash's XXH3 lines against xxhsum -H3
      mtools exfatprogs exfat-fuse e2fsprogs
      xfsprogs btrfs-progs fd-find  # mounted folders walked on XFS and Btrfs loop mounts (tests, scripts/bench-walk.py); fd as a walking peer
      openjdk-17-jre-headless curl  # Java 17 for Spark (pyspark below); curl fetches Trino from Maven Central
      parted  # Apple partition maps (mklabel mac) for the APM test; mmls (sleuthkit) reads them back
      ewf-tools libvshadow-utils)  # ewfacquire/ewfinfo make and read E01 test images; vshadowinfo/vshadowmount read shadow copies  # FAT (mkfs.vfat, mcopy, fsck.fat) and exFAT volumes written by their real tools

missing=()
for p in "${PKGS[@]}"; do
    dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed' || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
    step "apt: all ${#PKGS[@]} packages already installed, skipping apt-get"
else
    step "apt-get update"
    apt-get update -qq
    step "apt-get install ${missing[*]}"
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Real users for the system daemon's test (each user is answered only what they may reach): uffs-ana, in the
# group uffs-team, and uffs-ben, in no group but his own. No home, no login.
getent group uffs-team >/dev/null || groupadd --system uffs-team
for u in uffs-ana uffs-ben; do
    id "$u" >/dev/null 2>&1 || useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$u"
done
id -nG uffs-ana | grep -qw uffs-team || usermod -a -G uffs-team uffs-ana
step "users uffs-ana (group uffs-team) and uffs-ben present"

if [[ -c /dev/fuse ]]; then
    step "/dev/fuse present"
else
    step "WARNING: /dev/fuse missing; trying modprobe fuse"
    modprobe fuse 2>/dev/null || step "WARNING: modprobe fuse failed; ntfs-3g mounts will not work"
fi

if command -v mft_dump >/dev/null; then
    step "mft_dump already on PATH ($(command -v mft_dump)), skipping cargo install"
elif [[ ${UFFS_SETUP_SKIP_CARGO:-0} == 1 ]]; then
    step "UFFS_SETUP_SKIP_CARGO=1: skipping cargo install mft"
else
    command -v cargo >/dev/null || { echo "setup: cargo not found on PATH" >&2; exit 1; }
    step "cargo install mft --locked (provides mft_dump)"
    cargo install mft --locked
fi

if rustup target list --installed 2>/dev/null | grep -qx x86_64-pc-windows-gnu; then
    step "rustup target x86_64-pc-windows-gnu already installed"
elif command -v rustup >/dev/null; then
    step "rustup target add x86_64-pc-windows-gnu (the Windows build, tested under Wine)"
    rustup target add x86_64-pc-windows-gnu || step "WARNING: could not add the target; the Windows tests will be skipped (and fail under CI=true)"
fi

# The real clients of uffs's front ends, from PyPI, in a venv of Debian's Python (pinned, so a run is
# repeatable): DuckDB and Spark read the Parquet files and datasets, the official MCP SDK talks to `uffs mcp`,
# selenium drives Chromium for the web page. Tests find it at $UFFS_PY (default /opt/uffs-py/bin/python).
# pyspark 4.0 runs on the machine's Java 17 (4.3 starts executors with options Java 17 refuses).
PY_PKGS=(duckdb==1.5.6 mcp==2.3.0 selenium==4.38.0 pyspark==4.0.5)
VENV=/opt/uffs-py
if [[ -x $VENV/bin/python && $(cat "$VENV/.uffs-packages" 2>/dev/null) == "${PY_PKGS[*]}" ]]; then
    step "python clients already in $VENV (${PY_PKGS[*]})"
else
    step "python venv $VENV: pip install ${PY_PKGS[*]}"
    rm -rf "$VENV"
    /usr/bin/python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${PY_PKGS[@]}"
    echo "${PY_PKGS[*]}" > "$VENV/.uffs-packages"
fi

# Trino, the third fleet engine of the dataset tests: its server from Maven Central, with only the Hive
# connector kept (the tests read the dataset through it, as a table over local files; without the other
# plugins it starts in about 10 s). Trino 476 needs Java 24 or later: the Temurin 25 beside Debian's Java
# (UFFS_TRINO_JAVA, default /usr/lib/jvm/temurin-25-jdk-amd64).
TRINO_VERSION=476
TRINO=/opt/uffs-trino-$TRINO_VERSION
if [[ -x $TRINO/bin/launcher ]]; then
    step "Trino $TRINO_VERSION already in $TRINO"
else
    step "Trino $TRINO_VERSION server from Maven Central into $TRINO"
    tmp=$(mktemp -d)
    curl -fsSL -o "$tmp/trino.tar.gz" \
        "https://repo1.maven.org/maven2/io/trino/trino-server/$TRINO_VERSION/trino-server-$TRINO_VERSION.tar.gz"
    tar -xzf "$tmp/trino.tar.gz" -C "$tmp"
    find "$tmp/trino-server-$TRINO_VERSION/plugin" -mindepth 1 -maxdepth 1 ! -name hive -exec rm -rf {} +
    rm -rf "$TRINO"
    mv "$tmp/trino-server-$TRINO_VERSION" "$TRINO"
    rm -rf "$tmp"
fi
ln -sfn "$TRINO" /opt/uffs-trino
java25=${UFFS_TRINO_JAVA:-/usr/lib/jvm/temurin-25-jdk-amd64}
[[ -x $java25/bin/java ]] || step "WARNING: no Java 25 at $java25 for Trino; the Trino tests will fail (set UFFS_TRINO_JAVA)"

step "done"
