#!/usr/bin/env bash
# The Windows side of the test suite, run under Wine: cross-builds for x86_64-pc-windows-gnu and runs, as
# Windows programs, uffs-hash's unit and RDS tests, the named-pipe unit tests of crates/daemon, the daemon's
# end-to-end tests (crates/uffs/tests/daemon_windows.rs) and the live-drive tests
# (crates/uffs/tests/live_windows.rs, with drive D: of the Wine prefix mapped to a loop device), then checks
# that a user who may not read the drive gets one line and exit 2. scripts/setup.sh installs what it needs
# (wine64, the MinGW-w64 linker, the rustup target); scripts/test.sh calls it after the Linux tests. Needs
# root (loop devices, a second user).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
target=x86_64-pc-windows-gnu
wine=/usr/lib/wine/wine64

# Where the Windows side cannot run, it says so; under CI=true that fails the run (CI never passes by skipping).
cannot_run() {
    if [[ ${CI:-} == true ]]; then
        echo "test-windows: FAILED: CI=true and $*" >&2
        exit 1
    fi
    echo "test-windows: SKIPPED: $*" >&2
    exit 0
}
rustup target list --installed 2>/dev/null | grep -qx "$target" ||
    cannot_run "the rustup target $target is not installed (scripts/setup.sh could not add it)"
[[ -x $wine ]] || cannot_run "Wine ($wine) is not installed (scripts/setup.sh installs wine64)"
command -v x86_64-w64-mingw32-gcc >/dev/null ||
    cannot_run "the MinGW-w64 C compiler is not installed (scripts/setup.sh installs it)"

# A Wine prefix of the repository's own, made on first use.
export WINEPREFIX="$PWD/target/wine-prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
if [[ ! -d $WINEPREFIX/drive_c/windows/system32 ]]; then
    echo "test-windows: making the Wine prefix $WINEPREFIX"
    mkdir -p target
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

# Live drives: D: is a read-only loop device over a copy of a fixture volume. Wine opens \\.\D: as the device
# that dosdevices/d:: points to, and lists D: (GetLogicalDrives, GetDriveTypeW) through dosdevices/d:.
live_img=$PWD/target/live-d.img
cp tests/data/linux-made/testfs1 "$live_img"
loop=$(losetup --find --show --read-only "$live_img")
# E: is a writable one, which ntfs-3g changes below while the Windows daemon follows it.
live_rw_img=$PWD/target/live-e.img
cp tests/data/linux-made/testfs1 "$live_rw_img"
loop_rw=$(losetup --find --show "$live_rw_img")
# F: is a FAT32 drive (a USB stick), made by mkfs.vfat and mtools, read-only: read raw as \\.\F: like D:.
live_fat_img=$PWD/target/live-f.img
rm -f "$live_fat_img"
mkfs.vfat -C -F 32 -n USBSTICK "$live_fat_img" 65536 >/dev/null
live_fat_src=$(mktemp -d /tmp/uffs-wine-fat.XXXXXX)
mkdir -p "$live_fat_src/Program Files/Common Files" "$live_fat_src/DCIM/100CANON"
echo "a file on a USB stick" >"$live_fat_src/Program Files/Common Files/a long file name.txt"
echo "short" >"$live_fat_src/README.TXT"
head -c 100000 /dev/urandom >"$live_fat_src/DCIM/100CANON/IMG_0001.JPG"
MTOOLS_SKIP_CHECK=1 mcopy -s -i "$live_fat_img" "$live_fat_src"/* ::/
rm -rf "$live_fat_src"
loop_fat=$(losetup --find --show --read-only "$live_fat_img")
user_prefix=$(mktemp -d /tmp/uffs-wine-unprivileged.XXXXXX)
state=$(mktemp -d /tmp/uffs-wine-daemon.XXXXXX)
cleanup() {
    umount "$state/mnt" 2>/dev/null || true
    losetup -d "$loop" 2>/dev/null || true
    losetup -d "$loop_rw" 2>/dev/null || true
    losetup -d "$loop_fat" 2>/dev/null || true
    rm -f "$WINEPREFIX/dosdevices/f:" "$WINEPREFIX/dosdevices/f::"
    rm -f "$WINEPREFIX/dosdevices/d:" "$WINEPREFIX/dosdevices/d::"
    rm -f "$WINEPREFIX/dosdevices/e:" "$WINEPREFIX/dosdevices/e::"
    rm -rf "$user_prefix" "$state"
}
trap cleanup EXIT
mkdir -p target/live-d target/live-e target/live-f
ln -sfn "$PWD/target/live-f" "$WINEPREFIX/dosdevices/f:"
ln -sfn "$loop_fat" "$WINEPREFIX/dosdevices/f::"
ln -sfn "$PWD/target/live-d" "$WINEPREFIX/dosdevices/d:"
ln -sfn "$loop" "$WINEPREFIX/dosdevices/d::"
ln -sfn "$PWD/target/live-e" "$WINEPREFIX/dosdevices/e:"
ln -sfn "$loop_rw" "$WINEPREFIX/dosdevices/e::"
# Wine's mount manager reads the drives when it starts: a server still running from before would not see D:.
/usr/lib/wine/wineserver -k 2>/dev/null || true
/usr/lib/wine/wineserver -w
cargo build --profile suite -q -p uffs
target/suite/uffs export "$loop" --format csv -o target/live-d.csv
target/suite/uffs export "$loop_fat" --format csv -o target/live-f.csv
export UFFS_TEST_LIVE_DRIVE=D: UFFS_TEST_LIVE_EXPORT="Z:${PWD//\//\\}\\target\\live-d.csv"
export UFFS_TEST_LIVE_FAT_DRIVE=F: UFFS_TEST_LIVE_FAT_EXPORT="Z:${PWD//\//\\}\\target\\live-f.csv"
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=$wine
# As Windows programs: uffs-hash's unit tests (hashdeep's prompt, formats, known sets) and RDS tests (SQLite),
# uffs-daemon's unit tests, the daemon's end-to-end tests and the live-drive tests. One cargo call for the three
# packages: called one package at a time, cargo unifies features anew for each and rebuilds most dependencies
# (about 6 minutes each on 2 cores).
cargo test --target "$target" -p uffs-hash -p uffs-daemon -p uffs \
    --lib --test rds --test daemon_windows --test live_windows "$@"

# Following a live drive that another driver writes: the Windows daemon serves E:, ntfs-3g (on Linux) makes a
# file on the same device, and `uffs.exe volumes refresh E` finds it (by a re-scan: Wine answers no change
# journal call). One persistent Wine server for the block, started with its output nowhere: a server or service
# started by a command whose output is captured would hold that pipe open.
/usr/lib/wine/wineserver -w
/usr/lib/wine/wineserver -p >/dev/null 2>&1
uffsw() {
    UFFS_CACHE_DIR="Z:${state//\//\\}\\cache" UFFS_RUNTIME_DIR="Z:${state//\//\\}\\run" \
        "$wine" "target/$target/debug/uffs.exe" "$@"
}
# What a failed start printed and the daemon's log, for a failure that explains itself. To a file, not $(…):
# the daemon's Wine process could hold a captured pipe open.
said() {
    cat "$state/said" 2>/dev/null
    echo "daemon.log: $(tail -n 5 "$state/cache/daemon.log" 2>/dev/null)"
}
fail() {
    echo "test-windows: FAILED: $*" >&2
    uffsw daemon stop >/dev/null 2>&1 || true
    exit 1
}
uffsw volumes add E: --refresh never >/dev/null 2>&1 || fail "volumes add E:"
uffsw daemon start >"$state/said" 2>&1 || fail "daemon start: $(said)"
echo "test-windows: $(tr -d '\r' <"$state/said")"
for _ in $(seq 100); do
    uffsw many_subdirs >/dev/null 2>&1 && break
    sleep 0.3
done
found=$(uffsw made-by-linux 2>&1) && fail "made-by-linux found before it was made: $found"
mkdir -p "$state/mnt"
ntfs-3g "$loop_rw" "$state/mnt"
echo "made while the Windows daemon served the drive" > "$state/mnt/made-by-linux.txt"
umount "$state/mnt"
refreshed=$(uffsw volumes refresh E 2>&1) || fail "volumes refresh E: $refreshed"
found=$(uffsw made-by-linux 2>&1) || fail "made-by-linux not found after the refresh ($refreshed): $found"
[[ ${found%$'\r'} == 'E:\made-by-linux.txt' ]] || fail "made-by-linux answered as: $found"
echo "test-windows: a file made on the live drive E: by another driver is found after volumes refresh: $refreshed"

# By itself: E: checked every second. Wine answers no change-journal call, so the journal watcher ends at once
# and the interval's re-scan follows the drive: a second file made by ntfs-3g is found without a refresh asked.
# Then `daemon stop` ends the daemon and its threads: the process is gone, and status says it is not running.
uffsw daemon stop >/dev/null 2>&1 || fail "daemon stop"
uffsw volumes remove E >/dev/null 2>&1 || fail "volumes remove E"
uffsw volumes add E: --refresh 1s >/dev/null 2>&1 || fail "volumes add E: --refresh 1s"
uffsw daemon start >"$state/said" 2>&1 || fail "daemon start (interval): $(said)"
ntfs-3g "$loop_rw" "$state/mnt"
echo "made while the daemon checked the drive every second" > "$state/mnt/made-by-linux-2.txt"
umount "$state/mnt"
found=""
for _ in $(seq 60); do
    found=$(uffsw made-by-linux-2 2>/dev/null) && break
    sleep 0.5
done
[[ ${found%$'\r'} == 'E:\made-by-linux-2.txt' ]] || fail "made-by-linux-2 not found by the interval's re-scan: $found"
uffsw daemon stop >/dev/null 2>&1 || fail "daemon stop (interval)"
for _ in $(seq 40); do
    pgrep -f 'uffs.exe daemon' >/dev/null || break
    sleep 0.25
done
pgrep -f 'uffs.exe daemon' >/dev/null && fail "the daemon process is still running 10 s after daemon stop"
status=$(uffsw daemon status 2>&1) && fail "daemon status answered after daemon stop: $status"
[[ $status == *"not running"* ]] || fail "daemon status after stop: $status"
/usr/lib/wine/wineserver -k
echo "test-windows: the interval's re-scan found a file made by ntfs-3g by itself; daemon stop ended the daemon"

# A folder of any file system (a share, ReFS, a stick mounted as a folder; here a Linux folder, which Wine shows
# under Z:): walked from its listings, every entry with its file id (the inode under Wine), size, allocated bytes
# and path as find sees them; then the daemon follows it with ReadDirectoryChangesW (its interval an hour, so
# only the reports can find a change): files made, a folder renamed and a file deleted on Linux are found, and the
# daemon's answers equal a fresh walk's.
tree=$state/tree
wtree="Z:${tree//\//\\}"
rm -rf "$tree"
mkdir -p "$tree/sub/deeper" "$tree/Ünïcødé"
echo hello >"$tree/a.txt"
echo x >"$tree/sub/b.log"
head -c 10000 /dev/zero >"$tree/sub/deeper/c.bin"
echo u >"$tree/Ünïcødé/ö.txt"
ln "$tree/a.txt" "$tree/sub/a-link.txt"
/usr/lib/wine/wineserver -p >/dev/null 2>&1
uffsw volumes remove E >/dev/null 2>&1 || fail "volumes remove E (before the folder)"
listing() { tr -d '\r' | tail -n +2 | sort; }
uffsw index "$wtree" -o "Z:${state//\//\\}\\tree.uffs" >/dev/null 2>&1 || fail "index $wtree"
got=$(uffsw --index "Z:${state//\//\\}\\tree.uffs" '*' --columns record,size,allocated,path --format csv | listing)
# find's view: folders have no size or allocation in a listing; paths as Windows writes them.
want=$(find "$tree" -mindepth 1 -printf '%i,%s,%b,%y,%P\n' | TOP="$wtree" awk -F, '{ top = ENVIRON["TOP"]
    size = $2; alloc = $3 * 512; if ($4 == "d") { size = 0; alloc = 0 }
    p = $5; gsub("/", "\\\\", p); print $1 "," size "," alloc "," top "\\" p }' | sort)
[[ $got == "$want" ]] || fail "the walked folder differs from find's view: $(diff <(echo "$want") <(echo "$got"))"
uffsw volumes add "$wtree" --refresh 1h >/dev/null 2>&1 || fail "volumes add $wtree"
uffsw daemon start >"$state/said" 2>&1 || fail "daemon start (folder): $(said)"
for _ in $(seq 100); do
    grep -qF "following $wtree with ReadDirectoryChangesW" "$state/cache/daemon.log" 2>/dev/null && break
    sleep 0.2
done
grep -qF "following $wtree with ReadDirectoryChangesW" "$state/cache/daemon.log" || fail "the folder is not followed: $(said)"
echo new >"$tree/sub/deeper/made-on-linux.txt"
mv "$tree/sub" "$tree/moved"
rm "$tree/Ünïcødé/ö.txt"
found=""
for _ in $(seq 60); do
    found=$(uffsw made-on-linux 2>/dev/null) && [[ ${found%$'\r'} == "$wtree\\moved\\deeper\\made-on-linux.txt" ]] && break
    sleep 0.5
done
[[ ${found%$'\r'} == "$wtree\\moved\\deeper\\made-on-linux.txt" ]] || fail "a change below $wtree not followed: $found; $(said)"
uffsw index "$wtree" -o "Z:${state//\//\\}\\fresh.uffs" >/dev/null 2>&1 || fail "index $wtree again"
fresh=$(uffsw --index "Z:${state//\//\\}\\fresh.uffs" '*' --columns record,size,path --format csv | listing)
served=$(uffsw '*' --columns record,size,path --format csv | listing)
[[ $served == "$fresh" ]] || fail "the daemon's folder differs from a fresh walk: $(diff <(echo "$fresh") <(echo "$served"))"
uffsw daemon stop >/dev/null 2>&1 || fail "daemon stop (folder)"
/usr/lib/wine/wineserver -k
echo "test-windows: a folder walked from its listings equals find's view ($(echo "$got" | wc -l) entries); the daemon followed it with ReadDirectoryChangesW, equal to a fresh walk"

# The release a user downloads: built, unpacked, and run on the live drive.
scripts/build-windows.sh
unpacked=$(mktemp -d)
python3 -m zipfile -e target/dist/uffs-*-windows-x86_64.zip "$unpacked"
"$wine" "$unpacked"/uffs-*/uffs.exe info D: | grep "FILE (the MFT was found)" >/dev/null
echo "test-windows: the release's uffs.exe reads the live drive D:"
rm -rf "$unpacked"

# Wanting rights: a user who may not read the device (brw-rw---- root disk) runs uffs.exe info D: in a copy of
# the prefix (Wine refuses a prefix its user does not own; the copy's `wineserver` file names root's server
# directory, so it goes).
id uffs-unprivileged >/dev/null 2>&1 || useradd --no-create-home --home-dir /nonexistent uffs-unprivileged
/usr/lib/wine/wineserver -w
cp -a "$WINEPREFIX/." "$user_prefix/"
rm -f "$user_prefix/wineserver"
cp "target/$target/debug/uffs.exe" "$user_prefix/drive_c/uffs.exe"
chown -R uffs-unprivileged: "$user_prefix"
set +e
err=$(runuser -u uffs-unprivileged -- env HOME="$user_prefix" WINEPREFIX="$user_prefix" WINEDEBUG=-all \
    WINEDLLOVERRIDES="mscoree,mshtml=" "$wine" 'C:\uffs.exe' info D: 2>&1 >/dev/null)
code=$?
set -e
WINEPREFIX="$user_prefix" runuser -u uffs-unprivileged -- /usr/lib/wine/wineserver -k 2>/dev/null || true
lines=$(printf '%s\n' "$err" | grep -c . || true)
if [[ $code -eq 2 && $lines -eq 1 && $err == *"needs an elevated process"* ]]; then
    echo "test-windows: a user without rights to D: gets one line and exit 2: $err"
else
    echo "test-windows: FAILED: a user without rights to D: got exit $code and:" >&2
    printf '%s\n' "$err" >&2
    exit 1
fi
