#!/usr/bin/env bash
# make-fixtures.sh OUTDIR
#
# Builds small NTFS test volumes and disk images with the real ntfs-3g tools
# (mkntfs + the ntfs-3g FUSE driver). See scripts/FIXTURES.md for what each
# image contains and the facts tests may rely on.
#
#   basic.img       default geometry, the "everything" volume
#   sector4k.img    4096-byte sectors => 4096-byte MFT records
#   bigcluster.img  largest cluster size mkntfs accepts (2 MiB; TSK cannot read it)
#   bigcluster-64k.img  64 KiB clusters (classic maximum, TSK-readable)
#   fragmented.img  $MFT in many extents + $ATTRIBUTE_LIST in record 0
#   content.img     file contents for `uffs cat`: compressed, sparse, fragmented over extension records
#   disk-mbr.img    MBR disk: 3 NTFS (one logical in an EBR chain) + FAT + Linux
#   disk-gpt.img    GPT disk: MSR + 2 NTFS + Linux
#   raw-mft.bin     raw $MFT stream of basic.img (icat basic.img 0)
#
# Deterministic: fixed names/contents/serials; when libfaketime is present the
# clock is frozen at 2024-01-02 03:04:05 UTC for mkntfs and ntfs-3g, which makes
# the images byte-for-byte reproducible. Idempotent: NAME.stamp beside each
# output holds a sha256 of this script (+ ntfs-3g/sleuthkit/gdisk/fdisk
# versions); an output whose stamp matches is skipped. Needs root, /dev/fuse, ntfs-3g, sleuthkit, python3, sfdisk, sgdisk
# (scripts/setup.sh installs them). Never touches mounts it did not create.
set -euo pipefail
export LC_ALL=C.UTF-8 TZ=UTC

die() { echo "make-fixtures: error: $*" >&2; exit 1; }
log() { echo "make-fixtures: $*"; }

[[ $# -eq 1 ]] || die "usage: $0 OUTDIR"
[[ $(id -u) -eq 0 ]] || die "must run as root (FUSE mounts)"
for t in mkntfs ntfs-3g ntfslabel ntfsinfo ntfsls fls istat icat fsstat python3 sfdisk sgdisk mountpoint flock fallocate od; do
    command -v "$t" >/dev/null || die "missing tool: $t (run scripts/setup.sh)"
done

mkdir -p "$1"
OUT=$(cd "$1" && pwd)
SELF=$(readlink -f "${BASH_SOURCE[0]}")

# ---- frozen clock (optional) -------------------------------------------------
FAKETIME_LIB=""
for f in /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 \
         /usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1 \
         /usr/lib/faketime/libfaketime.so.1; do
    [[ -e $f ]] && { FAKETIME_LIB=$f; break; }
done
FIXED_TIME='2024-01-02 03:04:05'
frozen() { # run a command with the clock frozen (if libfaketime is available)
    if [[ -n $FAKETIME_LIB ]]; then
        env LD_PRELOAD="$FAKETIME_LIB" FAKETIME="$FIXED_TIME" FAKETIME_DONT_FAKE_MONOTONIC=1 "$@"
    else
        "$@"
    fi
}
[[ -n $FAKETIME_LIB ]] || log "warning: libfaketime not found; images get real timestamps (not byte-reproducible)"

# the stamp: this script + the tool versions that shape the output
HASH=$( { cat "$SELF"; dpkg-query -W -f '${Package} ${Version}\n' ntfs-3g sleuthkit gdisk fdisk 2>/dev/null || true
          echo "faketime=${FAKETIME_LIB:+yes}"; } | sha256sum | cut -c1-64)

# ---- lock, work dir, mounts, cleanup ---------------------------------------------
# one builder per OUTDIR at a time (parallel test processes may all call us)
exec 9>"$OUT/.lock"
flock 9
WORK=$(mktemp -d "$OUT/.work.XXXXXX")
declare -A MOUNT_PID=()   # mount dir -> pid of its ntfs-3g (run with no_detach)

alive() { [[ -e /proc/$1 && $(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) != Z ]]; }
cleanup() {
    local rc=$? m pid i
    set +e
    for m in "${!MOUNT_PID[@]}"; do
        pid=${MOUNT_PID[$m]}
        sync
        if mountpoint -q "$m"; then umount "$m" 2>/dev/null || umount -l "$m"; fi
        for i in $(seq 50); do alive "$pid" || break; sleep 0.1; done
        alive "$pid" && kill "$pid"
        wait "$pid" 2>/dev/null
    done
    if [[ ${FIXTURES_KEEP_WORK:-0} == 1 ]]; then echo "make-fixtures: work dir kept: $WORK" >&2; else rm -rf "$WORK"; fi
    [[ $rc -ne 0 ]] && echo "make-fixtures: FAILED (rc=$rc)" >&2
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

mount_ntfs() { # IMG DIR
    local img=$1 dir=$2 i
    mkdir -p "$dir"
    frozen ntfs-3g -o no_detach,streams_interface=windows "$img" "$dir" >>"$WORK/ntfs-3g.log" 2>&1 &
    MOUNT_PID[$dir]=$!
    for i in $(seq 200); do
        mountpoint -q "$dir" && return 0
        kill -0 "${MOUNT_PID[$dir]}" 2>/dev/null || break
        sleep 0.05
    done
    cat "$WORK/ntfs-3g.log" >&2
    die "ntfs-3g failed to mount $img"
}
umount_ntfs() { # DIR  -- returns once ntfs-3g has written everything and exited
    local dir=$1 pid=${MOUNT_PID[$1]}
    sync
    umount "$dir"
    wait "$pid" || die "ntfs-3g for $dir exited with an error"
    unset "MOUNT_PID[$dir]"
    rmdir "$dir"
}
mkvol() { # IMG SIZE LABEL SERIAL [mkntfs options...]
    local img=$1 size=$2 label=$3 serial=$4; shift 4
    rm -f "$img"; truncate -s "$size" "$img"
    local t=()
    [[ -n $FAKETIME_LIB ]] || t=(-T)
    if ! frozen mkntfs -F -Q -q "${t[@]}" -L "$label" "$@" "$img" >"$WORK/mkntfs.log" 2>&1; then
        echo "make-fixtures: mkntfs $* failed: $(grep -iv -e 'not a block device' -e 'forced anyway' -e 'not specified' -e 'set to' -e 'Windows' "$WORK/mkntfs.log" | head -3)" >&2
        return 1
    fi
    ntfslabel --new-serial="$serial" "$img" >/dev/null 2>&1 || die "ntfslabel --new-serial failed on $img"
}
fresh() { [[ -f $OUT/$1 && -f $OUT/$1.stamp && $(cat "$OUT/$1.stamp") == "$HASH" ]]; }
publish() { # NAME TMPFILE : re-sparsify, move into place, write stamp
    local name=$1 tmp=$2
    fallocate -d "$tmp" 2>/dev/null || true
    rm -f "$OUT/$name.stamp"
    mv -f "$tmp" "$OUT/$name"
    [[ -f $WORK/$name.facts ]] && mv -f "$WORK/$name.facts" "$OUT/$name.facts"
    echo "$HASH" >"$OUT/$name.stamp"
    log "built $name ($(du -k --apparent-size "$OUT/$name" | cut -f1) KiB apparent, $(du -k "$OUT/$name" | cut -f1) KiB on disk)"
}
fact() { echo "$2=$3" >>"$WORK/$1.facts"; }   # NAME KEY VALUE
count_paths() { fls -r -p "$1" | wc -l; }

# istat must show an $ATTRIBUTE_LIST (type 32) for inode $2 of image $1
# (grep reads all its input: grep -q under pipefail would race with SIGPIPE)
attrlist_line() { istat "$1" "$2" 2>/dev/null | grep '^Type: \$ATTRIBUTE_LIST (32-' || true; }
has_attrlist() { [[ -n $(attrlist_line "$1" "$2") ]]; }

# ---- python helper: populates mounted volumes ---------------------------------
PY=$WORK/populate.py
cat >"$PY" <<'PYEOF'
import hashlib, os, struct, sys

def blob(seed, n):
    """deterministic incompressible bytes"""
    return hashlib.shake_256(seed.encode()).digest(n) if n else b""

def text(seed, n):
    """deterministic compressible text"""
    line = ("%s: The quick brown fox jumps over the lazy dog. 0123456789\n" % seed).encode()
    return (line * (n // len(line) + 1))[:n]

def w(path, data=b"", mode="wb"):
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(path, mode) as f:
        f.write(data)

def attrib(path, value):
    os.setxattr(path, "system.ntfs_attrib_be", struct.pack(">I", value))

def get_attrib(path):
    return struct.unpack(">I", os.getxattr(path, "system.ntfs_attrib_be"))[0]

def reparse_mount_point(subst, printname):
    s, p = subst.encode("utf-16le"), printname.encode("utf-16le")
    body = struct.pack("<HHHH", 0, len(s), len(s) + 2, len(p)) + s + b"\0\0" + p + b"\0\0"
    return struct.pack("<IHH", 0xA0000003, len(body), 0) + body

def reparse_symlink(subst, printname, relative):
    s, p = subst.encode("utf-16le"), printname.encode("utf-16le")
    body = struct.pack("<HHHHI", 0, len(s), len(s), len(p), 1 if relative else 0) + s + p
    return struct.pack("<IHH", 0xA000000C, len(body), 0) + body

def ino(path):
    return os.lstat(path).st_ino

FACTS = {}

def basic(m):
    j = lambda *p: os.path.join(m, *p)
    # -- a realistic small tree ------------------------------------------------
    w(j("Windows/System32/drivers/etc/hosts"),
      "# Copyright (c) 1993-2009 Microsoft Corp.\r\n#\r\n127.0.0.1       localhost\r\n::1             localhost\r\n")
    w(j("Windows/System32/notepad.exe"), blob("notepad.exe", 201_216))
    w(j("Windows/System32/kernel32.dll"), blob("kernel32.dll", 1_048_576 + 4_096))
    w(j("Windows/Temp/~tmp0001.tmp"), b"")
    w(j("Program Files/Example App/app.exe"), blob("app.exe", 3 * 1_048_576 + 17))
    w(j("Program Files/Example App/readme.txt"), text("readme", 2_500))
    w(j("Program Files/Example App/config.ini"), "[main]\r\nenabled=1\r\n")
    os.makedirs(j("Program Files (x86)/Common Files"))
    w(j("Users/alice/Documents/report.docx"), blob("report.docx", 40_960 + 123))
    w(j("Users/alice/Documents/notes.txt"), "buy milk\r\n")
    w(j("Users/alice/Desktop/desktop.ini"), "[.ShellClassInfo]\r\n")
    w(j("Users/alice/Downloads/setup.exe"), blob("setup.exe", 102_400))
    w(j("Users/alice/Downloads/setup.exe:Zone.Identifier"),
      "[ZoneTransfer]\r\nZoneId=3\r\nHostUrl=https://example.com/setup.exe\r\n")
    w(j("Users/alice/Pictures/photo.jpg"), blob("photo.jpg", 250_000))
    w(j("Users/alice/AppData/Local/Temp/log.txt"), text("log", 12_000))
    w(j("Users/bob/Music/song.mp3"), blob("song.mp3", 512_000))
    os.makedirs(j("Users/bob/Desktop"))
    os.makedirs(j("Users/Public/Documents"))
    os.makedirs(j("System Volume Information"))
    # old timestamps on a couple of files (mtime, atime)
    os.utime(j("Users/alice/Documents/notes.txt"), (1_000_000_000, 1_000_000_000))
    os.utime(j("Windows/System32/drivers/etc/hosts"), (1_234_567_890, 1_234_567_890))

    # -- hard links: one file, three names in three folders -----------------
    w(j("Users/alice/Documents/budget.xlsx"), blob("budget.xlsx", 30_000))
    os.link(j("Users/alice/Documents/budget.xlsx"), j("Users/bob/Desktop/budget (link).xlsx"))
    os.link(j("Users/alice/Documents/budget.xlsx"), j("Users/Public/Documents/budget.xlsx"))
    FACTS["hardlink3_inode"] = ino(j("Users/alice/Documents/budget.xlsx"))

    # -- sizes: resident / non-resident boundaries ---------------------------
    for n in (0, 1, 100, 500, 600, 700, 800, 900, 1000, 4095, 4096, 4097, 65536, 65537, 1_048_576):
        w(j("sizes", "size-%07d.bin" % n), blob("size-%d" % n, n))
    FACTS["resident_inode_size600"] = ino(j("sizes/size-0000600.bin"))
    FACTS["nonresident_inode_size4097"] = ino(j("sizes/size-0004097.bin"))

    # -- alternate data streams ---------------------------------------------
    p = j("streams/multi.txt")
    w(p, "main stream\n")
    w(p + ":small", "small resident stream\n")
    w(p + ":big", blob("big-ads", 100_000))          # non-resident ADS
    w(p + ":empty", b"")                             # empty named stream
    w(p + ":ストリーム", "unicode stream name\n")
    FACTS["ads_multi_inode"] = ino(p)
    os.makedirs(j("streams/folder-with-stream"))
    w(j("streams/folder-with-stream") + ":dirstream", "stream on a directory\n")
    FACTS["ads_dir_inode"] = ino(j("streams/folder-with-stream"))
    w(j("streams/folder-with-stream/inside.txt"), "inside\n")
    w(j("streams/only-stream.txt"), b"")
    w(j("streams/only-stream.txt:data"), "the unnamed stream is empty\n")
    w(j("streams/linked-with-stream.txt"), "hardlinked file with ADS\n")
    w(j("streams/linked-with-stream.txt:tag"), "tagged\n")
    os.link(j("streams/linked-with-stream.txt"), j("streams/linked-with-stream (2).txt"))
    w(j("Users/alice/Pictures/photo.jpg:thumbnail"), blob("thumb", 20_000))
    w(j("Users/alice/Pictures/photo.jpg:Zone.Identifier"), "[ZoneTransfer]\r\nZoneId=3\r\n")

    # -- unicode names -----------------------------------------------------
    u = j("unicode")
    for name in ("café résumé naïve.txt", "Ærøskøbing Å.txt", "Straße.txt",
                 "日本語のファイル.txt", "中文文件名.txt", "한국어.txt",
                 "emoji 😀🎉🚀.txt", "שלום עולם.txt", "مرحبا بالعالم.txt",
                 "Ελληνικά.txt", "Кириллица.txt", "हिन्दी.txt",
                 "combining e\u0301 vs \u00e9.txt", "zero\u200bwidth.txt",
                 "name with  two  spaces.txt", "trailing.dot.", "#hash;semi$dollar%pct&amp'quote.txt",
                 "file with (parens) [brackets] {braces}.txt"):
        w(os.path.join(u, name), name + "\n")
    w(os.path.join(u, "目录 папка 📁", "😀 inside.txt"), "nested unicode\n")
    w(os.path.join(u, "עברית", "קובץ.txt"), "rtl folder\n")

    # -- names that differ only by case (POSIX namespace) ----------------------
    w(j("case/Readme.txt"), "mixed case\n")
    w(j("case/README.TXT"), "upper case\n")
    w(j("case/readme.txt"), "lower case\n")

    # -- 255-character names --------------------------------------------------
    name255 = ("long-name-" + "x" * 255)[:251] + ".txt"
    assert len(name255) == 255
    w(j("longnames", name255), "255 chars\n")
    dir255 = ("long-dir-" + "d" * 255)[:255]
    w(j("longnames", dir255, "short.txt"), "inside a 255-char dir\n")
    FACTS["name255_inode"] = ino(j("longnames", name255))

    # -- deep path (30 directory levels) ------------------------------------
    parts = ["deep"] + ["level-%02d" % i for i in range(1, 31)]
    w(j(*parts, "bottom.txt"), "30 levels down\n")
    FACTS["deep_bottom_inode"] = ino(j(*parts, "bottom.txt"))

    # -- a folder with exactly 10,000 files -------------------------------
    big = j("many-files")
    os.makedirs(big)
    for i in range(10_000):
        with open(os.path.join(big, "file-%05d.txt" % i), "wb") as f:
            f.write(b"file %05d\n" % i)
    FACTS["many_files_dir_inode"] = ino(big)

    # -- sparse files ----------------------------------------------------------
    os.makedirs(j("sparse"))
    with open(j("sparse/huge-5GiB.vhdx"), "wb") as f:
        f.truncate(5 << 30)                     # all hole, larger than the volume
    with open(j("sparse/head-and-tail-3GiB.bin"), "wb") as f:
        f.write(b"HEAD" * 1024)
        f.seek(3 << 30)
        f.write(b"TAIL" * 4)                    # data at 3 GiB, holes between
    with open(j("sparse/within-volume-100MiB.bin"), "wb") as f:
        for off in (0, 10 << 20, 50 << 20):
            f.seek(off)
            f.write(blob("sparse-%d" % off, 65536))
        f.truncate(100 << 20)
    FACTS["sparse_5GiB_inode"] = ino(j("sparse/huge-5GiB.vhdx"))
    FACTS["sparse_100MiB_inode"] = ino(j("sparse/within-volume-100MiB.bin"))

    # -- compression (FILE_ATTRIBUTE_COMPRESSED on the folder is inherited) -----
    c = j("compressed")
    os.makedirs(c)
    attrib(c, 0x10 | 0x800)
    w(os.path.join(c, "compressible.txt"), text("compress", 300_000))
    w(os.path.join(c, "incompressible.bin"), blob("incompressible", 70_000))
    w(os.path.join(c, "tiny.txt"), "tiny\n")
    FACTS["compressed_inode"] = ino(os.path.join(c, "compressible.txt"))
    FACTS["compressed_attrib"] = "0x%08x" % get_attrib(os.path.join(c, "compressible.txt"))

    # -- symlinks and reparse points ---------------------------------------------
    r = j("links")
    os.makedirs(os.path.join(r, "target-dir"))
    w(os.path.join(r, "target-dir", "target.txt"), "link target\n")
    os.symlink("target-dir/target.txt", os.path.join(r, "interix-symlink"))   # ntfs-3g default: Interix
    FACTS["interix_symlink_inode"] = ino(os.path.join(r, "interix-symlink"))
    # (ntfs-3g cannot stat these once they carry reparse data: take inodes first)
    os.makedirs(os.path.join(r, "junction"))
    FACTS["junction_inode"] = ino(os.path.join(r, "junction"))
    os.setxattr(os.path.join(r, "junction"), "system.ntfs_reparse_data",
                reparse_mount_point(r"\??\C:\links\target-dir", r"C:\links\target-dir"))
    w(os.path.join(r, "symlink-file"), b"")
    FACTS["reparse_symlink_file_inode"] = ino(os.path.join(r, "symlink-file"))
    os.setxattr(os.path.join(r, "symlink-file"), "system.ntfs_reparse_data",
                reparse_symlink(r"target-dir\target.txt", r"target-dir\target.txt", True))
    os.makedirs(os.path.join(r, "symlink-dir"))
    FACTS["reparse_symlink_dir_inode"] = ino(os.path.join(r, "symlink-dir"))
    os.setxattr(os.path.join(r, "symlink-dir"), "system.ntfs_reparse_data",
                reparse_symlink(r"\??\C:\Windows", r"C:\Windows", False))

    # -- DOS attributes and 8.3 names ------------------------------------------
    a = j("attrs")
    w(os.path.join(a, "readonly.txt"), "read only\n"); attrib(os.path.join(a, "readonly.txt"), 0x01)
    w(os.path.join(a, "hidden.txt"), "hidden\n"); attrib(os.path.join(a, "hidden.txt"), 0x02)
    w(os.path.join(a, "system-hidden.sys"), "sys\n"); attrib(os.path.join(a, "system-hidden.sys"), 0x06)
    os.makedirs(os.path.join(a, "hidden-folder"))
    attrib(os.path.join(a, "hidden-folder"), 0x12)
    w(os.path.join(a, "hidden-folder", "visible.txt"), "in hidden folder\n")
    w(os.path.join(a, "Long File Name Document.txt"), "has an 8.3 name\n")
    os.setxattr(os.path.join(a, "Long File Name Document.txt"), "system.ntfs_dos_name", b"LONGFI~1.TXT")
    os.makedirs(os.path.join(a, "Program Files Folder"))
    os.setxattr(os.path.join(a, "Program Files Folder"), "system.ntfs_dos_name", b"PROGRA~1")
    # 8.3-compatible names: ntfs-3g turns them into one WIN32_AND_DOS (namespace 3) name
    for k, dos in (("UPPER.TXT", b"UPPER.TXT"), ("Mixed.txt", b"MIXED.TXT")):
        w(os.path.join(a, k), k + "\n")
        os.setxattr(os.path.join(a, k), "system.ntfs_dos_name", dos)
    FACTS["attrs_win32dos_inode"] = ino(os.path.join(a, "UPPER.TXT"))
    for k in ("readonly.txt", "hidden.txt", "system-hidden.sys", "Long File Name Document.txt"):
        FACTS["attrs_%s_inode" % k.split(".")[0].replace(" ", "_")] = ino(os.path.join(a, k))

    # -- $ATTRIBUTE_LIST through many hard links ---------------------------------
    h = j("hardlinks")
    os.makedirs(os.path.join(h, "more"))
    w(os.path.join(h, "many-links.dat"), "one file, 31 names\n")
    for i in range(1, 31):
        d = h if i % 2 else os.path.join(h, "more")
        name = ("link-%02d-" % i) + ("L" * 255)
        os.link(os.path.join(h, "many-links.dat"), os.path.join(d, name[:255]))
    FACTS["attrlist_inode"] = ino(os.path.join(h, "many-links.dat"))
    # a smaller case where ntfs-3g keeps the attribute list resident
    # (sizes found by experiment: 1-byte data, 5 extra names of 123 characters)
    w(os.path.join(h, "al"), "x")
    for i in range(5):
        os.link(os.path.join(h, "al"), os.path.join(h, "al-" + ("n%d" % i) * 60))
    FACTS["attrlist_small_inode"] = ino(os.path.join(h, "al"))

    # -- files to delete (last, so their MFT records are not reused) ---------------
    t = j("trash")
    w(os.path.join(t, "deleted-resident.txt"), "deleted, was resident\n")
    w(os.path.join(t, "deleted-nonresident.bin"), blob("deleted-nr", 20_000))
    w(os.path.join(t, "kept.txt"), "not deleted\n")
    df = os.path.join(t, "deleted-folder")
    w(os.path.join(df, "a.txt"), "a\n")
    w(os.path.join(df, "b.bin"), blob("deleted-b", 9_000))
    w(os.path.join(df, "sub", "c.txt"), "c\n")
    FACTS["deleted_resident_inode"] = ino(os.path.join(t, "deleted-resident.txt"))
    FACTS["deleted_nonresident_inode"] = ino(os.path.join(t, "deleted-nonresident.bin"))
    FACTS["deleted_folder_inode"] = ino(df)
    FACTS["deleted_folder_a_inode"] = ino(os.path.join(df, "a.txt"))
    os.sync()
    os.unlink(os.path.join(t, "deleted-resident.txt"))
    os.unlink(os.path.join(t, "deleted-nonresident.bin"))
    os.unlink(os.path.join(df, "sub", "c.txt")); os.rmdir(os.path.join(df, "sub"))
    os.unlink(os.path.join(df, "a.txt")); os.unlink(os.path.join(df, "b.bin")); os.rmdir(df)

def small(m, tag):
    """small tree used on several volumes: dirs, resident + non-resident data,
    a hard link, an ADS, unicode, and one deleted file"""
    j = lambda *p: os.path.join(m, *p)
    w(j("docs", "readme-%s.txt" % tag), "volume %s\n" % tag)
    w(j("docs", "data-%s.bin" % tag), blob("data-" + tag, 150_000))
    w(j("docs", "tiny.txt"), "tiny\n")
    w(j("docs", "empty.txt"), b"")
    os.makedirs(j("linked"))
    os.link(j("docs", "tiny.txt"), j("linked", "tiny-hardlink.txt"))
    w(j("docs", "tiny.txt:extra"), "named stream\n")
    w(j("ünïcødé", "日本語.txt"), "unicode\n")
    w(j("trash", "to-be-deleted.txt"), "deleted\n")
    w(j("trash", "to-be-deleted-big.bin"), blob("del-" + tag, 50_000))
    FACTS["hardlink_inode"] = ino(j("docs", "tiny.txt"))
    FACTS["deleted_inode"] = ino(j("trash", "to-be-deleted.txt"))
    FACTS["deleted_big_inode"] = ino(j("trash", "to-be-deleted-big.bin"))
    os.sync()
    os.unlink(j("trash", "to-be-deleted.txt"))
    os.unlink(j("trash", "to-be-deleted-big.bin"))

FILL_MAGIC = b"UFFSFILL"

def fragment_fill(m):
    """fill every free cluster with 1-cluster files whose data starts with
    FILL_MAGIC + their number, so their LCNs can be read back from the image"""
    cl = os.statvfs(m).f_bsize
    d = os.path.join(m, "fill")
    os.makedirs(d)
    i = 0
    while True:
        p = os.path.join(d, "f%05d" % i)
        try:
            with open(p, "wb") as f:
                f.write((FILL_MAGIC + b"%08d" % i).ljust(cl, b"\0"))
        except OSError:
            if os.path.exists(p):
                os.unlink(p)
            break
        i += 1
    # data cannot go into the MFT zone: fill it with $MFT itself (empty files)
    z = os.path.join(m, "zone")
    os.makedirs(z)
    k = 0
    while True:
        try:
            open(os.path.join(z, "e%05d" % k), "wb").close()
        except OSError:
            break
        k += 1
    FACTS["fill_files"] = i
    FACTS["zone_files"] = k
    FACTS["cluster_size"] = cl

def punch_even_holes(m, image):
    """delete the fill files (see fragment_fill) that sit on even LCNs of the
    unmounted snapshot `image`: isolated 1-cluster holes; -> their numbers"""
    cl = os.statvfs(m).f_bsize
    victims = []
    with open(image, "rb") as img:
        lcn = 0
        while True:
            head = img.read(cl)[:16]
            if not head:
                break
            if head.startswith(FILL_MAGIC) and lcn % 2 == 0:
                victims.append(int(head[8:16]))
            lcn += 1
    for n in victims:
        os.unlink(os.path.join(m, "fill", "f%05d" % n))
    os.sync()
    return victims

def fragment_holes(m, image, files):
    """delete the fill files that sit on even LCNs (isolated 1-cluster holes),
    then create `files` tiny files: $MFT has to grow into the holes"""
    victims = punch_even_holes(m, image)
    d = os.path.join(m, "many")
    os.makedirs(d)
    for i in range(files):
        with open(os.path.join(d, "f%05d" % i), "wb") as f:
            f.write(b"%05d" % i)
    FACTS["holes"] = len(victims)
    FACTS["new_files"] = files

def content(m):
    """file contents for `uffs cat`: compressed streams (LZNT1 units, stored
    units, sparse units), sparse files, data past the initialized size"""
    j = lambda *p: os.path.join(m, *p)
    c = j("compressed")
    os.makedirs(c)
    attrib(c, 0x10 | 0x800)
    w(j("compressed/text-1MiB.txt"), text("lznt1", 1_048_576 + 123))
    w(j("compressed/text-1MiB.txt") + ":ads", text("compressed-ads", 100_000))
    # 64 KiB units alternately compressible and not: compressed and stored units in one stream
    w(j("compressed/mixed.bin"), b"".join(
        text("mixed-%d" % i, 65536) if i % 2 == 0 else blob("mixed-%d" % i, 65536) for i in range(10)) + text("end", 1000))
    with open(j("compressed/holes.bin"), "wb") as f:   # sparse units inside a compressed stream
        f.write(text("holes-a", 70_000))
        f.seek(320 << 10)
        f.write(text("holes-b", 5_000))
        f.truncate(1 << 20)
    w(j("compressed/zeros.bin"), bytes(200_000))
    w(j("compressed/small.txt"), text("small", 5_000))
    w(j("compressed/incompressible.bin"), blob("incompressible", 150_000))
    w(j("compressed/deleted.txt"), text("deleted-compressed", 200_000))
    FACTS["compressed_text_inode"] = ino(j("compressed/text-1MiB.txt"))
    FACTS["compressed_mixed_inode"] = ino(j("compressed/mixed.bin"))
    FACTS["compressed_holes_inode"] = ino(j("compressed/holes.bin"))
    FACTS["compressed_deleted_inode"] = ino(j("compressed/deleted.txt"))
    s = j("sparse")
    os.makedirs(s)
    with open(j("sparse/holes.bin"), "wb") as f:
        for off in (0, 1 << 20, 5 << 20):
            f.seek(off)
            f.write(blob("sparse-%d" % off, 12_345))
        f.truncate(8 << 20)                      # past the last write: beyond the initialized size
    with open(j("sparse/uninitialized-tail.bin"), "wb") as f:
        f.write(blob("uninit", 100_000))
        f.truncate(3 << 20)
    FACTS["sparse_holes_inode"] = ino(j("sparse/holes.bin"))
    FACTS["uninitialized_tail_inode"] = ino(j("sparse/uninitialized-tail.bin"))
    w(j("plain/resident.txt"), "resident data\n")
    w(j("plain/empty.bin"), b"")
    w(j("plain/one-cluster.bin"), blob("one", 4096))
    w(j("plain/streams.txt"), "main\n")
    w(j("plain/streams.txt") + ":resident", "a resident named stream\n")
    w(j("plain/streams.txt") + ":large", blob("large-ads", 300_000))

def content_fragments(m, image):
    """after fragment_fill: punch 1-cluster holes and write files that must
    take hundreds of them, so their runlists spill over extension records
    through an $ATTRIBUTE_LIST; then delete a few files. (ntfs-3g will not
    write a compressed file into 1-cluster holes: ENOSPC.) Deleting a file
    whose runlist spans extension records leaves only the base record's
    runs: the rest of the data is no longer mapped"""
    j = lambda *p: os.path.join(m, *p)
    FACTS["holes"] = len(punch_even_holes(m, image))
    os.makedirs(j("fragmented"))
    w(j("fragmented/big.bin"), blob("fragmented-big", 2_600_000))
    w(j("fragmented/with-stream.txt"), "the stream is fragmented\n")
    w(j("fragmented/with-stream.txt") + ":frag", blob("fragmented-ads", 1_200_000))
    w(j("fragmented/deleted.bin"), blob("fragmented-deleted", 1_300_000))
    FACTS["fragmented_inode"] = ino(j("fragmented/big.bin"))
    FACTS["fragmented_stream_inode"] = ino(j("fragmented/with-stream.txt"))
    FACTS["deleted_fragmented_inode"] = ino(j("fragmented/deleted.bin"))
    os.sync()
    os.unlink(j("fragmented/deleted.bin"))
    os.unlink(j("compressed/deleted.txt"))

# -- a tiny independent $MFT reader, used to check the fragmented volume -------
def u16(b, o): return int.from_bytes(b[o:o + 2], "little")
def u32(b, o): return int.from_bytes(b[o:o + 4], "little")
def u64(b, o): return int.from_bytes(b[o:o + 8], "little")

def mft_extents(image):
    """-> (record numbers holding $MFT's unnamed $DATA, [(vcn, lcn, len)...])"""
    f = open(image, "rb")
    bs = f.read(512)
    bps = u16(bs, 0x0B)
    spc = bs[0x0D] if bs[0x0D] <= 0x80 else 1 << (256 - bs[0x0D])
    cs = bps * spc
    c = bs[0x40] if bs[0x40] < 0x80 else bs[0x40] - 256
    rs = c * cs if c > 0 else 1 << -c

    def record_at(off):
        f.seek(off)
        r = bytearray(f.read(rs))
        assert r[:4] == b"FILE", "bad record at %d" % off
        uo, un = u16(r, 4), u16(r, 6)
        stride = rs // (un - 1)
        for i in range(1, un):
            r[i * stride - 2:i * stride] = r[uo + 2 * i:uo + 2 * i + 2]
        return r

    def attrs(r):
        o = u16(r, 0x14)
        while u32(r, o) != 0xFFFFFFFF:
            yield o, u32(r, o)
            o += u32(r, o + 4)

    def runs(r, o):
        vcn, lcn, out = u64(r, o + 0x10), 0, []
        p = o + u16(r, o + 0x20)
        while r[p]:
            ln, lo = r[p] & 15, r[p] >> 4
            length = int.from_bytes(r[p + 1:p + 1 + ln], "little")
            if lo:
                lcn += int.from_bytes(r[p + 1 + ln:p + 1 + ln + lo], "little", signed=True)
                out.append((vcn, lcn, length))
            vcn += length
            p += 1 + ln + lo
        return out

    rec0 = record_at(u64(bs, 0x30) * cs)
    first = [runs(rec0, o) for o, t in attrs(rec0) if t == 0x80 and rec0[o + 8] and rec0[o + 9] == 0][0]

    def record(n):                      # record n via the runs known so far
        off = n * rs
        for vcn, lcn, ln in first:
            if vcn * cs <= off < (vcn + ln) * cs:
                return record_at(lcn * cs + off - vcn * cs)
        raise ValueError("record %d not mapped" % n)

    holders, extents = [], []
    al = [(o, t) for o, t in attrs(rec0) if t == 0x20]
    if al:
        o = al[0][0]
        if rec0[o + 8]:                 # non-resident attribute list
            data = b""
            for vcn, lcn, ln in runs(rec0, o):
                f.seek(lcn * cs); data += f.read(ln * cs)
            data = data[:u64(rec0, o + 0x30)]
        else:
            data = rec0[o + u16(rec0, o + 0x14):o + u16(rec0, o + 0x14) + u32(rec0, o + 0x10)]
        p = 0
        while p < len(data):
            t, ln, nl = u32(data, p), u16(data, p + 4), data[p + 6]
            if t == 0x80 and nl == 0:
                holders.append(u64(data, p + 0x10) & 0xFFFFFFFFFFFF)
            p += ln
    else:
        holders = [0]
    for n in holders:
        r = rec0 if n == 0 else record(n)
        for o, t in attrs(r):
            if t == 0x80 and r[o + 9] == 0:
                extents += runs(r, o)
    return holders, sorted(extents)

if __name__ == "__main__" and sys.argv[1] == "mft-extents":
    holders, ext = mft_extents(sys.argv[2])
    print("records=%s extents=%d" % (",".join(map(str, holders)), len(ext)))
    sys.exit(0)

if __name__ == "__main__":
    what, mnt, factfile = sys.argv[1], sys.argv[2], sys.argv[3]
    if what == "basic":
        basic(mnt)
    elif what == "small":
        small(mnt, sys.argv[4])
    elif what == "fragment-fill":
        fragment_fill(mnt)
    elif what == "fragment-holes":
        fragment_holes(mnt, sys.argv[4], int(sys.argv[5]))
    elif what == "content":
        content(mnt)
    elif what == "content-fragments":
        content_fragments(mnt, sys.argv[4])
    else:
        sys.exit("unknown populate step " + what)
    with open(factfile, "a") as f:
        for k, v in FACTS.items():
            f.write("%s=%s\n" % (k, v))
PYEOF
populate() { python3 "$PY" "$@"; }

# ---- 1. basic.img ----------------------------------------------------------------
build_basic() {
    local img=$WORK/basic.img mnt=$WORK/mnt-basic
    mkvol "$img" 512M uffs-basic 0x0BA51C0000000001 || die "mkntfs failed"
    mount_ntfs "$img" "$mnt"
    populate basic "$mnt" "$WORK/basic.img.facts"
    umount_ntfs "$mnt"
    local f=$WORK/basic.img.facts al al2
    al=$(sed -n 's/^attrlist_inode=//p' "$f"); al2=$(sed -n 's/^attrlist_small_inode=//p' "$f")
    has_attrlist "$img" "$al" || die "basic.img: inode $al has no \$ATTRIBUTE_LIST"
    [[ $(attrlist_line "$img" "$al") == *Non-Resident* ]] || die "basic.img: attribute list of $al is not non-resident"
    [[ $(attrlist_line "$img" "$al2") == *" Resident"* ]] || die "basic.img: attribute list of $al2 is not resident"
    fact basic.img attrlist_extension_records "$(istat "$img" "$al" | sed -n '/^\$ATTRIBUTE_LIST Attr/,/^$/p' | awk '$5 != '"$al"' && /MFT Entry/ {print $5}' | sort -u | wc -l)"
    fact basic.img attrlist_small_extension_records "$(istat "$img" "$al2" | sed -n '/^\$ATTRIBUTE_LIST Attr/,/^$/p' | awk '$5 != '"$al2"' && /MFT Entry/ {print $5}' | sort -u | wc -l)"
    local del
    del=$(fls -r -p -d "$img")
    for n in deleted-resident.txt deleted-nonresident.bin deleted-folder; do
        grep -q "$n" <<<"$del" || die "basic.img: fls -d does not list $n"
    done
    fact basic.img mft_record_size "$(fsstat "$img" | sed -n 's/^Size of MFT Entries: \([0-9]*\).*/\1/p')"
    fact basic.img cluster_size "$(fsstat "$img" | sed -n 's/^Cluster Size: //p')"
    fact basic.img fls_paths "$(count_paths "$img")"
    fact basic.img fls_deleted_paths "$(fls -r -p -d "$img" | wc -l)"
    publish basic.img "$img"
}

# ---- 2. sector4k.img ----------------------------------------------------------------
build_sector4k() {
    local img=$WORK/sector4k.img mnt=$WORK/mnt-4k
    mkvol "$img" 64M uffs-4k 0x0BA51C0000000002 -s 4096 || die "mkntfs failed"
    mount_ntfs "$img" "$mnt"
    populate small "$mnt" "$WORK/sector4k.img.facts" sector4k
    umount_ntfs "$mnt"
    local rec sec
    rec=$(fsstat "$img" | sed -n 's/^Size of MFT Entries: \([0-9]*\).*/\1/p')
    sec=$(fsstat "$img" | sed -n 's/^Sector Size: //p')
    [[ $rec == 4096 && $sec == 4096 ]] || die "sector4k.img: sector $sec, MFT record $rec (want 4096/4096)"
    fact sector4k.img sector_size "$sec"
    fact sector4k.img mft_record_size "$rec"
    fact sector4k.img cluster_size "$(fsstat "$img" | sed -n 's/^Cluster Size: //p')"
    fact sector4k.img fls_paths "$(count_paths "$img")"
    publish sector4k.img "$img"
}

# ---- 3. bigcluster.img / bigcluster-64k.img -----------------------------------------------
# mkntfs (2022.10.3) accepts clusters up to 2 MiB, encoded in the boot sector as a
# negative power of two (0x0D = 0xF4 -> 2^12 sectors), like Windows 10 1903+.
# Sleuthkit 4.11 cannot open such volumes, so the biggest one is checked with
# ntfs-3g's own tools, and a 64 KiB volume (the classic maximum) is added for TSK.
build_bigcluster() {
    local img=$WORK/bigcluster.img mnt=$WORK/mnt-big c ok=""
    for c in 2097152 1048576 524288 262144 131072 65536; do
        if mkvol "$img" 1G uffs-bigcl 0x0BA51C0000000003 -c "$c" 2>/dev/null; then ok=$c; break; fi
    done
    [[ -n $ok ]] || die "bigcluster.img: mkntfs accepted none of the cluster sizes"
    mount_ntfs "$img" "$mnt"
    populate small "$mnt" "$WORK/bigcluster.img.facts" bigcluster
    umount_ntfs "$mnt"
    local cs
    cs=$(ntfsinfo -m "$img" 2>/dev/null | sed -n 's/^[[:space:]]*Cluster Size: //p')
    [[ $cs == "$ok" ]] || die "bigcluster.img: ntfsinfo says cluster size $cs, asked for $ok"
    fact bigcluster.img cluster_size "$cs"
    fact bigcluster.img boot_sectors_per_cluster_byte "0x$(od -An -tx1 -j13 -N1 "$img" | tr -d " ")"
    fact bigcluster.img mft_record_size "$(ntfsinfo -m "$img" 2>/dev/null | sed -n 's/^[[:space:]]*MFT Record Size: //p')"
    fact bigcluster.img tsk_readable "$(fsstat "$img" >/dev/null 2>&1 && echo yes || echo no)"
    # path count by ntfs-3g's ntfsls (same set fls -r -p lists for allocated files,
    # without "." and "..", without $Extend's children, without streams)
    fact bigcluster.img ntfsls_paths "$(ntfsls -R -a -s "$img" 2>/dev/null | grep -v -e '^$' -e '^\.$' -e '^\.\.$' -e ':$' | wc -l)"
    publish bigcluster.img "$img"
}
build_bigcluster64k() {
    local img=$WORK/bigcluster-64k.img mnt=$WORK/mnt-64k
    mkvol "$img" 256M uffs-64k 0x0BA51C0000000007 -c 65536 || die "mkntfs -c 65536 failed"
    mount_ntfs "$img" "$mnt"
    populate small "$mnt" "$WORK/bigcluster-64k.img.facts" bigcluster64k
    umount_ntfs "$mnt"
    local cs
    cs=$(fsstat "$img" | sed -n 's/^Cluster Size: //p')
    [[ $cs == 65536 ]] || die "bigcluster-64k.img: cluster size $cs"
    fact bigcluster-64k.img cluster_size "$cs"
    fact bigcluster-64k.img mft_record_size "$(fsstat "$img" | sed -n 's/^Size of MFT Entries: \([0-9]*\).*/\1/p')"
    fact bigcluster-64k.img fls_paths "$(count_paths "$img")"
    publish bigcluster-64k.img "$img"
}

# ---- 4. fragmented.img ---------------------------------------------------------------
FRAG_FILES=${FRAG_FILES:-3000}
build_fragmented() {
    local img=$WORK/fragmented.img mnt=$WORK/mnt-frag
    mkvol "$img" 16M uffs-frag 0x0BA51C0000000004 || die "mkntfs failed"
    # 1. fill every cluster with numbered 1-cluster files
    mount_ntfs "$img" "$mnt"
    populate fragment-fill "$mnt" "$WORK/fragmented.img.facts"
    umount_ntfs "$mnt"
    # 2. find them in the image, delete those on even LCNs, grow $MFT into the holes
    cp --sparse=always "$img" "$WORK/frag-snapshot.img"
    mount_ntfs "$img" "$mnt"
    populate fragment-holes "$mnt" "$WORK/fragmented.img.facts" "$WORK/frag-snapshot.img" "$FRAG_FILES"
    umount_ntfs "$mnt"
    rm -f "$WORK/frag-snapshot.img"
    has_attrlist "$img" 0 || die "fragmented.img: \$MFT record 0 has no \$ATTRIBUTE_LIST"
    local out recs runs
    out=$(python3 "$PY" mft-extents "$img")          # records=0,15 extents=N
    recs=$(sed -n 's/^records=\([^ ]*\) .*/\1/p' <<<"$out"); runs=${out##*extents=}
    (( runs >= 200 )) || die "fragmented.img: \$MFT has only $runs extents"
    [[ $recs == *,* ]] || die "fragmented.img: \$MFT \$DATA is not split over several records ($recs)"
    [[ $(ntfsinfo -v -i 0 "$img" 2>/dev/null | sed -n 's/^Total runs: .*(fragments: \([0-9]*\))/\1/p') -ge 200 ]] \
        || die "fragmented.img: ntfsinfo disagrees about the \$MFT fragments"
    fact fragmented.img mft_extents "$runs"
    fact fragmented.img mft_data_records "$recs"
    fact fragmented.img mft_attrlist_entries "$(istat "$img" 0 | sed -n '/^\$ATTRIBUTE_LIST/,/^$/p' | grep -c '^Type: ')"
    fact fragmented.img mft_bytes "$(istat "$img" 0 | sed -n 's/.*\$DATA (128-[0-9]*).*size: \([0-9]*\).*/\1/p' | head -1)"
    fact fragmented.img fls_paths "$(count_paths "$img")"
    publish fragmented.img "$img"
}

# ---- 4b. content.img ----------------------------------------------------------------
# later_pieces IMG INODE : how many pieces of $DATA attributes of INODE start past VCN 0 (in extension records,
# through the attribute list), from istat
later_pieces() { istat "$1" "$2" | sed -n '/^\$ATTRIBUTE_LIST Attr/,/^$/p' | grep -c 'Type: 128-.*VCN: [1-9]' || true; }
build_content() {
    local img=$WORK/content.img mnt=$WORK/mnt-content f=$WORK/content.img.facts
    mkvol "$img" 24M uffs-content 0x0BA51C0000000008 || die "mkntfs failed"
    mount_ntfs "$img" "$mnt"
    populate content "$mnt" "$f"
    populate fragment-fill "$mnt" "$f"
    umount_ntfs "$mnt"
    cp --sparse=always "$img" "$WORK/content-snapshot.img"
    mount_ntfs "$img" "$mnt"
    populate content-fragments "$mnt" "$f" "$WORK/content-snapshot.img"
    umount_ntfs "$mnt"
    rm -f "$WORK/content-snapshot.img"
    local k n
    for k in fragmented_inode fragmented_stream_inode deleted_fragmented_inode; do
        n=$(sed -n "s/^$k=//p" "$f")
        has_attrlist "$img" "$n" || die "content.img: inode $n ($k) has no \$ATTRIBUTE_LIST"
        fact content.img "${k%_inode}_later_pieces" "$(later_pieces "$img" "$n")"
    done
    for k in fragmented_inode fragmented_stream_inode; do
        n=$(sed -n "s/^$k=//p" "$f")
        (( $(later_pieces "$img" "$n") >= 1 )) || die "content.img: the \$DATA of inode $n ($k) is in one piece"
    done
    n=$(sed -n 's/^compressed_text_inode=//p' "$f")
    istat "$img" "$n" | grep -q 'Compressed' || die "content.img: inode $n is not compressed"
    fact content.img fls_paths "$(count_paths "$img")"
    fact content.img fls_deleted_paths "$(fls -r -p -d "$img" | wc -l)"
    publish content.img "$img"
}

# ---- 5./6. partitioned disks ---------------------------------------------------------
# put_vol DISK START_SECTOR SIZE_SECTORS LABEL SERIAL TAG : NTFS volume with the small tree
put_vol() {
    local disk=$1 start=$2 sectors=$3 label=$4 serial=$5 tag=$6
    local vol=$WORK/part-$tag.img mnt=$WORK/mnt-$tag
    mkvol "$vol" $((sectors * 512)) "$label" "$serial" -p "$start" -H 255 -S 63 || die "mkntfs failed"
    mount_ntfs "$vol" "$mnt"
    mkdir -p "$mnt/$tag"
    python3 - "$mnt/$tag" "$tag" <<'EOF'
import sys, os, hashlib
d, tag = sys.argv[1], sys.argv[2]
open(os.path.join(d, "partition-%s.txt" % tag), "w").write("this is partition %s\n" % tag)
open(os.path.join(d, "payload-%s.bin" % tag), "wb").write(hashlib.shake_256(tag.encode()).digest(70_000))
EOF
    populate small "$mnt" "$WORK/$tag.facts" "$tag"
    umount_ntfs "$mnt"
    dd if="$vol" of="$disk" bs=1M seek=$((start * 512)) oflag=seek_bytes conv=notrunc,sparse status=none
    rm -f "$vol"
    echo "fls_paths=$(fls -r -p -o "$start" "$disk" | wc -l)" >>"$WORK/$tag.facts"
}

build_mbr() {
    local img=$WORK/disk-mbr.img f=$WORK/disk-mbr.img.facts
    rm -f "$img"; truncate -s 128M "$img"
    # p1 NTFS | p2 FAT16 | p3 NTFS | p4 extended { p5 NTFS (logical), p6 Linux (zeros) }
    sfdisk -q --no-reread --no-tell-kernel "$img" >/dev/null <<'EOF'
label: dos
label-id: 0x0ba51c05
unit: sectors

start=2048, size=65536, type=7, bootable
start=67584, size=32768, type=6
start=100352, size=65536, type=7
start=165888, size=96256, type=5
start=167936, size=49152, type=7
start=219136, size=40960, type=83
EOF
    put_vol "$img" 2048 65536 uffs-mbr-p1 0x0BA51C0000000051 mbr-p1
    put_vol "$img" 100352 65536 uffs-mbr-p3 0x0BA51C0000000053 mbr-p3
    put_vol "$img" 167936 49152 uffs-mbr-p5 0x0BA51C0000000055 mbr-p5
    if command -v mkfs.vfat >/dev/null; then
        local fat=$WORK/fat.img
        rm -f "$fat"; truncate -s $((32768 * 512)) "$fat"
        frozen mkfs.vfat --invariant -F 16 -i 0ba51c06 -n UFFSFAT -h 67584 "$fat" >/dev/null
        dd if="$fat" of="$img" bs=1M seek=$((67584 * 512)) oflag=seek_bytes conv=notrunc,sparse status=none
        rm -f "$fat"
        fact disk-mbr.img p2_content fat16
    else
        fact disk-mbr.img p2_content zeros
    fi
    # p6 stays zero-filled (sparse)
    sfdisk -d "$img" | tr -d ' ' | awk -F'[:,=]' '/^\/.*img[0-9]+:/ {
        match($1, /[0-9]+$/); p = substr($1, RSTART)
        for (i = 2; i < NF; i += 2) if ($i == "start" || $i == "size" || $i == "type") print "p" p "_" $i "=" $(i + 1) }' >>"$f"
    for t in mbr-p1 mbr-p3 mbr-p5; do
        sed "s/^/${t}_/" "$WORK/$t.facts" >>"$f"
    done
    publish disk-mbr.img "$img"
}

build_gpt() {
    local img=$WORK/disk-gpt.img f=$WORK/disk-gpt.img.facts
    rm -f "$img"; truncate -s 128M "$img"
    # p1 MSR 16 MiB | p2 NTFS 40 MiB | p3 NTFS 32 MiB | p4 Linux 8 MiB (zeros)
    sgdisk -U 0BA51C00-0000-4000-8000-000000000600 \
        -n 1:2048:+16M  -t 1:0C01 -c 1:"Microsoft reserved partition" -u 1:0BA51C00-0000-4000-8000-000000000601 \
        -n 2:0:+40M     -t 2:0700 -c 2:"Basic data partition"         -u 2:0BA51C00-0000-4000-8000-000000000602 \
        -n 3:0:+32M     -t 3:0700 -c 3:"Data two"                     -u 3:0BA51C00-0000-4000-8000-000000000603 \
        -n 4:0:+8M      -t 4:8300 -c 4:"linux"                        -u 4:0BA51C00-0000-4000-8000-000000000604 \
        "$img" >/dev/null
    [[ $(sgdisk -p "$img" | grep -c '^ *[0-9]  ') == 4 ]] || die "disk-gpt.img: sgdisk did not create 4 partitions"
    local p2s p2n p3s p3n
    read -r p2s p2n < <(sgdisk -i 2 "$img" | awk '/^First sector/{s=$3} /^Partition size/{n=$3} END{print s, n}')
    read -r p3s p3n < <(sgdisk -i 3 "$img" | awk '/^First sector/{s=$3} /^Partition size/{n=$3} END{print s, n}')
    put_vol "$img" "$p2s" "$p2n" uffs-gpt-p2 0x0BA51C0000000062 gpt-p2
    put_vol "$img" "$p3s" "$p3n" uffs-gpt-p3 0x0BA51C0000000063 gpt-p3
    sgdisk -v "$img" | grep -q 'No problems found' || die "disk-gpt.img: sgdisk -v reports problems"
    local i
    for i in 1 2 3 4; do
        sgdisk -i "$i" "$img" | awk -v p="p$i" '/^First sector/{print p "_start=" $3} /^Partition size/{print p "_sectors=" $3}' >>"$f"
    done
    for t in gpt-p2 gpt-p3; do
        sed "s/^/${t}_/" "$WORK/$t.facts" >>"$f"
    done
    publish disk-gpt.img "$img"
}

# ---- 7. raw-mft.bin -------------------------------------------------------------------
build_rawmft() {
    local tmp=$WORK/raw-mft.bin
    icat "$OUT/basic.img" 0 >"$tmp"
    [[ $(head -c 4 "$tmp") == FILE ]] || die "raw-mft.bin does not start with FILE"
    echo "bytes=$(stat -c %s "$tmp")" >"$WORK/raw-mft.bin.facts"
    echo "records=$(( $(stat -c %s "$tmp") / 1024 ))" >>"$WORK/raw-mft.bin.facts"
    publish raw-mft.bin "$tmp"
}

# ---- main -----------------------------------------------------------------------------
start=$SECONDS
basic_rebuilt=0
run() { # NAME FUNC
    if fresh "$1"; then log "up to date: $1"; return; fi
    log "building $1 ..."
    "$2"
    [[ $1 == basic.img ]] && basic_rebuilt=1
    return 0
}
run basic.img build_basic
run sector4k.img build_sector4k
run bigcluster.img build_bigcluster
run bigcluster-64k.img build_bigcluster64k
run fragmented.img build_fragmented
run content.img build_content
run disk-mbr.img build_mbr
run disk-gpt.img build_gpt
if (( basic_rebuilt )); then rm -f "$OUT/raw-mft.bin.stamp"; fi
run raw-mft.bin build_rawmft
log "done in $((SECONDS - start))s -> $OUT"
