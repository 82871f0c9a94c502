#!/usr/bin/env bash
# Seeds each fuzz target's corpus from the real samples in tests/data (records, boot sectors, partition tables).
set -euo pipefail
cd "$(dirname "$0")"
data=../tests/data
python3 - "$data" <<'PY'
import os, sys, struct
data = sys.argv[1]
def put(target, name, b):
    d = os.path.join('corpus', target); os.makedirs(d, exist_ok=True)
    open(os.path.join(d, name), 'wb').write(b)
mft = open(os.path.join(data, 'windows-xp-mft/MFT'), 'rb').read()
# A spread of whole records (files, folders, deleted, extension records) and small runs of consecutive records.
for n in list(range(0, 40)) + list(range(100, 13088, 97)):
    rec = mft[n * 1024:(n + 1) * 1024]
    put('record', f'xp-{n}', rec)
    # The bytes after each non-resident attribute's runlist offset, as runlist seeds.
    off = struct.unpack_from('<H', rec, 0x14)[0] if rec[:4] == b'FILE' else 0
    while 0 < off < 1000:
        t, l = struct.unpack_from('<II', rec, off)
        if t == 0xFFFFFFFF or l < 24 or off + l > 1024: break
        if rec[off + 8]:
            ro = struct.unpack_from('<H', rec, off + 0x20)[0]
            put('runlist', f'xp-{n}-{off}', b'\0' + rec[off + ro:off + l])
        off += l
for n in range(0, 13088, 600):
    put('mft_index', f'xp-{n}', mft[n * 1024:(n + 24) * 1024])
put('mft_index', 'xp-head', mft[:64 * 1024])
for f in sorted(os.listdir(os.path.join(data, 'windows-xp-mft'))):
    if f.startswith('entry_'):
        put('record', f, open(os.path.join(data, 'windows-xp-mft', f), 'rb').read())
vol = open(os.path.join(data, 'linux-made/testfs1'), 'rb').read()
put('boot_sector', 'testfs1', vol[:512])
# The whole-source target: the start of a real volume (boot sector and the first MFT records) and a raw $MFT.
put('source', 'testfs1-head', vol[:64 * 1024])
put('source', 'xp-mft-head', mft[:32 * 1024])
# A minimal MBR with one NTFS partition, and a protective MBR + GPT header + entry.
mbr = bytearray(512); mbr[0x1BE + 4] = 7; mbr[0x1BE + 8:0x1BE + 12] = struct.pack('<I', 2048)
mbr[0x1BE + 12:0x1BE + 16] = struct.pack('<I', 4096); mbr[510:512] = b'\x55\xaa'
put('partition_table', 'mbr', bytes(mbr))
gpt = bytearray(b'EFI PART' + bytes(504)); struct.pack_into('<QII', gpt, 0x48, 2, 128, 128)
entry = bytearray(128); entry[:16] = bytes.fromhex('a2a0d0ebe5b9334487c068b6b72699c7')
struct.pack_into('<QQ', entry, 0x20, 2048, 6143)
put('partition_table', 'gpt', bytes(gpt) + bytes(entry))
# USN journal fragments written by Windows: whole, and a piece with a zero page tail.
for f in ['plaso-UsnJrnl.raw', 'go-ntfs-usn-sample.bin', 'usn-journal-parser-usnjrnl.bin']:
    j = open(os.path.join(data, 'usn', f), 'rb').read()
    put('usn', f, j[:8192])
# File contents: a head byte, 24 bytes of sizes, runlist pieces, a little volume. A plain stream of 3 runs (one a
# hole), and a compressed one whose first unit is an LZNT1 chunk of 4,096 repeats of 'a' in one cluster.
def content_seed(cs_shift, cu, size, runs, clusters, vol):
    hdr = bytes([cs_shift, cu, 0, 0, len(runs), len(runs), clusters, 0]) + struct.pack('<QQ', size, size)
    return b'\x00' + hdr + runs + vol
vol = bytes(range(256)) * 16
put('content', 'plain', content_seed(0, 0, 3000, bytes([0x11, 2, 1, 0x01, 1, 0x11, 2, 3, 0]), 5, vol))
lz = bytes([0x03, 0xB0, 0b10, ord('a'), 0xFC, 0x0F, 0, 0])
put('content', 'compressed', content_seed(0, 4, 8192, bytes([0x11, 1, 1, 0x01, 15, 0]), 16, bytes(512) + lz.ljust(512, b'\0')))
PY
# Daemon requests: one of each kind, as the client sends them (a line each), and a few a client should not send.
mkdir -p corpus/daemon_request
python3 - <<'PY'
import json
reqs = {
    'ping': {"op": "ping"}, 'status': {"op": "status"}, 'reload': {"op": "reload"}, 'stop': {"op": "stop"},
    'refresh': {"op": "refresh"}, 'refresh-named': {"op": "refresh", "name": "C"},
    'query': {"op": "query", "args": {"query": ["ext:dll", "size:>1kb"], "limit": 10}, "terminal": False},
    'query-binary': {"op": "query", "args": {"query": ["*.txt | dm:today"]}, "terminal": True, "binary": True},
    'query-regex': {"op": "query", "args": {"query": ["regex:^IMG_\\d+ !tmp \"a b\" wholeword:x"]}},
    'unknown-field': {"op": "ping", "x": 1},
}
for name, r in reqs.items():
    open(f'corpus/daemon_request/{name}', 'w').write(json.dumps(r) + '\n')
open('corpus/daemon_request/unterminated', 'w').write('{"op":"ping"}')
open('corpus/daemon_request/two-lines', 'w').write('{"op":"ping"}\n{"op":"stop"}\n')
PY
# Index files: a real one (the Linux-made volume's, built by uffs) and damaged copies of it (flips in the data,
# a run of garbage, a cut), each resealed by the target.
mkdir -p corpus/index_file
(cd .. && cargo run --release -q -- index tests/data/linux-made/testfs1 -o fuzz/corpus/index_file/testfs1.uffs)
python3 - <<'PY'
import random
good = open('corpus/index_file/testfs1.uffs', 'rb').read()
rng = random.Random(7)
for i in range(12):
    b = bytearray(good)
    for _ in range(1 + i % 4):
        b[rng.randrange(4096, len(b))] ^= 1 << rng.randrange(8)
    if i % 3 == 1:
        at = rng.randrange(4096, len(b) - 512)
        b[at:at + 512] = bytes(rng.randrange(256) for _ in range(512))
    open(f'corpus/index_file/damaged-{i}', 'wb').write(bytes(b if i % 6 else b[:len(b) * 3 // 4]))
PY
# VMDK: a small sparse extent (header, grain directory, one grain table, two grains, one compressed with a
# marker) and descriptor files of sparse, flat and zero extents; the target writes disk-s001.vmdk and
# disk-flat.vmdk beside the input.
mkdir -p corpus/container_vmdk
python3 - <<'PY'
import struct, zlib
def extent(compressed):
    h = bytearray(2048)
    flags = 1 | (0x30000 if compressed else 0)
    struct.pack_into('<4sIIQQQQIQQQ', h, 0, b'KDMV', 1, flags, 64, 8, 0, 0, 512, 0, 1, 4)
    h[73:77] = b'\n \r\n'; struct.pack_into('<H', h, 77, 1)
    struct.pack_into('<I', h, 512, 2)
    grains = bytearray()
    for g in (0, 3):
        data = bytes((i * 7 + g) & 255 for i in range(4096))
        sector = (2048 + len(grains)) // 512
        struct.pack_into('<I', h, 1024 + 4 * g, sector)
        if compressed:
            z = zlib.compress(data)
            grains += struct.pack('<QI', g * 8, len(z)) + z
            grains += bytes(-len(grains) % 512)
        else:
            grains += data
    return bytes(h + grains)
open('corpus/container_vmdk/sparse', 'wb').write(extent(False))
open('corpus/container_vmdk/stream', 'wb').write(extent(True))
d = '# Disk DescriptorFile\nversion=1\nCID=12345678\nparentCID=ffffffff\ncreateType="custom"\n\n'
open('corpus/container_vmdk/descriptor', 'w').write(
    d + 'RW 8 FLAT "disk-flat.vmdk" 0\nRW 16 SPARSE "disk-s001.vmdk"\nRW 4 ZERO\n')
PY
# EWF2 (Ex01): libewf ewfacquire's compressed segment of testfs1 (tests/data/containers) whole, the bzip2 one
# scripts/make-ex01-bzip2.py makes of testfs1 (bzip2 chunks and text sections), and a small
# one made from it: the file header, its device information and case data sections, one sector table of two
# chunks (a pattern-filled one, a stored one with its Adler-32), MD5 and SHA1 sections, done. Each section is
# its data, then a 64-byte descriptor pointing back to the one before.
mkdir -p corpus/container_ewf2
cp "$data/containers/testfs1-deflate.Ex01" corpus/container_ewf2/testfs1-deflate
cp "$data/containers/testfs1-bzip2.Ex01" corpus/container_ewf2/testfs1-bzip2
python3 - "$data" <<'PY'
import os, struct, sys, zlib
data = sys.argv[1]
src = open(os.path.join(data, 'containers/testfs1-deflate.Ex01'), 'rb').read()
def sections(b):
    out, at = [], len(b) - 64
    while True:
        kind, _, prev, size = struct.unpack_from('<IIQQ', b, at)
        out.append((kind, b[at - size:at]))
        if prev == 0: return out[::-1]
        at = prev
found = dict(sections(src))
def text(t): return zlib.compress(('\ufeff' + t).encode('utf-16-le'))
device = text('1\nmain\nts\tbp\n128\t512\n\n')
case = text('1\nmain\ncn\ten\tsb\ttb\nC\tE\t64\t2\n\n')
adler = lambda b: zlib.adler32(b) & 0xffffffff
chunk = bytes(range(256)) * 128
out = bytearray(src[:32])
prev = 0
def section(kind, body):
    global prev
    body = body + bytes(-len(body) % 16)
    out.extend(body)
    d = struct.pack('<IIQQII', kind, 0, prev, len(body), 64, 0) + bytes(28)
    prev = len(out)
    out.extend(d + struct.pack('<I', adler(d)))
section(1, device)
section(2, case)
at = len(out)
section(3, chunk + struct.pack('<I', adler(chunk)))
h = struct.pack('<QII', 0, 2, 0)
entries = struct.pack('<QII', 0, 8, 5) + struct.pack('<QII', at, len(chunk) + 4, 2)
section(4, h + struct.pack('<I', adler(h)) + bytes(12) + entries + struct.pack('<I', adler(entries)))
section(8, found[8])
section(9, found[9])
section(15, b'')
open('corpus/container_ewf2/small', 'wb').write(bytes(out))
PY
echo "corpus seeded: $(find corpus -type f | wc -l) files"

# vss: a VSS header and, laid from 0x4000 on, a catalog with one store (type-2 and type-3 entries), its header,
# a block list with a whole, a forwarder and an overlay descriptor, and a bitmap.
mkdir -p corpus/vss
python3 - <<'PY'
import struct
VSS = bytes([0x6b,0x87,0x08,0x38,0x76,0xc1,0x48,0x4e,0xb7,0xae,0x04,0x04,0x6e,0x6c,0xc7,0x52])
B = 0x4000
def block(kind, at, nxt=0):
    return (VSS + struct.pack('<IIQQQ', 1, kind, 0, at, nxt)).ljust(128, b'\0')
header = (VSS + struct.pack('<IIQQQQ', 1, 1, 0x1E00, 0x1E00, 0, B)).ljust(128, b'\0')
sid = bytes(range(16))
cat = block(2, B)
cat += struct.pack('<QQ', 2, 32 << 20) + sid + struct.pack('<QQQ', 1, 0x40, 130_000_000_000_000_000).ljust(80, b'\0')
cat += struct.pack('<QQ', 3, 3 * B) + sid + struct.pack('<QQQQQQ', 2 * B, 0, 4 * B, 0, 0, 0).ljust(96, b'\0')
cat = cat.ljust(B, b'\0')
store = (block(4, 2 * B) + bytes(16) + bytes(range(16, 32)) + bytes(range(32, 48)) + struct.pack('<I', 0x420009)).ljust(B, b'\0')
lst = block(3, 3 * B)
lst += struct.pack('<QQQII', 5 * B, 0, 6 * B, 0, 0)
lst += struct.pack('<QQQII', 7 * B, 8 * B, 0, 1, 0)
lst += struct.pack('<QQQII', 9 * B, 1, 10 * B, 2, 0xff00)
lst = lst.ljust(B, b'\0')
bitmap = (block(6, 4 * B) + b'\x0f' * 256).ljust(B, b'\0')
# The target lays bytes 128.. at 0x4000: the catalog first.
open('corpus/vss/one-store', 'wb').write(header + cat + store + lst + bitmap)
PY

# fat, exfat: volume images made by dosfstools and mtools (FAT12 256 KiB, FAT16 2.5 MiB, FAT32 33 MiB with 512-byte
# clusters, the fewest FAT32 allows) and by mkfs.exfat -b 4096 (aligned to 4 KiB, not 1 MiB, so the seeds stay small; filled through exfat-fuse on a loop device when run as
# root, else empty), each with folders, long names, a fragmented file and deleted names; cut after their last
# non-zero byte to an even length, which the targets zero-extend to the size the boot sector claims.
mkdir -p corpus/fat corpus/exfat
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cut_into() {  # cut_into IMAGE TARGET NAME
  python3 - "$1" "corpus/$2/$3" <<'PY'
import sys
b = open(sys.argv[1], 'rb').read()
n = len(b.rstrip(b'\0'))
n += -n % 512
open(sys.argv[2], 'wb').write(b[:max(n, 512)])
PY
}
fill_tree() {  # fill_tree DIR: the files every seed holds
  mkdir -p "$1/docs/deep/er" "$1/Photos 2024"
  printf 'hello\n' > "$1/hello.txt"
  head -c 3000 /dev/zero | tr '\0' 'a' > "$1/docs/a.txt"
  head -c 5000 /dev/zero | tr '\0' 'b' > "$1/docs/deep/er/a long file name.text"
  printf 'x' > "$1/Photos 2024/IMG_0001.JPG"
  printf 'gone\n' > "$1/deleted.txt"
  for i in 1 2 3 4 5 6 7 8; do printf "$i" > "$1/docs/n$i.dat"; done
}
if command -v mkfs.vfat >/dev/null && command -v mcopy >/dev/null; then
  export MTOOLS_SKIP_CHECK=1
  mkdir -p "$tmp/tree"; fill_tree "$tmp/tree"
  for spec in "12 256 4" "16 2560 1" "32 33800 1"; do
    set -- $spec
    img="$tmp/fat$1.img"
    mkfs.vfat -F "$1" -s "$3" -n SEED -i 1234ABCD -C "$img" "$2" >/dev/null 2>&1
    mcopy -s -i "$img" "$tmp/tree/"* ::/
    # A fragmented file: two files written alternately, one of them deleted between.
    printf 'frag1' | mcopy -i "$img" - ::/frag.bin
    mdel -i "$img" ::/deleted.txt ::/docs/n3.dat
    head -c 9000 /dev/zero | tr '\0' 'f' | mcopy -o -i "$img" - ::/docs/frag-long.bin
    cut_into "$img" fat "fat$1"
  done
fi
if command -v mkfs.exfat >/dev/null; then
  img="$tmp/exfat.img"
  truncate -s 4M "$img"
  mkfs.exfat -b 4096 -L SEED "$img" >/dev/null
  cut_into "$img" exfat empty
  if [ "$(id -u)" = 0 ] && command -v mount.exfat-fuse >/dev/null; then
    dev=$(losetup -f --show "$img")
    mkdir -p "$tmp/mnt"
    if mount.exfat-fuse "$dev" "$tmp/mnt" >/dev/null 2>&1; then
      fill_tree "$tmp/mnt"
      rm "$tmp/mnt/deleted.txt" "$tmp/mnt/docs/n3.dat"
      umount "$tmp/mnt"
      cut_into "$img" exfat files
    fi
    losetup -d "$dev"
  fi
  truncate -s 1M "$tmp/exfat-s.img"
  mkfs.exfat -b 4096 -c 512 -L SMALLCL "$tmp/exfat-s.img" >/dev/null && cut_into "$tmp/exfat-s.img" exfat empty-512
fi
echo "fat/exfat seeds: $(ls corpus/fat corpus/exfat | wc -l) files, $(du -sk corpus/fat corpus/exfat | awk '{s+=$1} END {print s}') KiB"

# ext: mkfs.ext2, ext3 and ext4 (extents, inline data, 64bit) images of the same tree, 1 MiB with 1 KiB blocks.
mkdir -p corpus/ext
if command -v mkfs.ext4 >/dev/null; then
  mkdir -p "$tmp/etree"; fill_tree "$tmp/etree"; ln -s hello.txt "$tmp/etree/link"
  ln "$tmp/etree/hello.txt" "$tmp/etree/docs/hard"
  for spec in "ext2 -" "ext3 -" "ext4 -" "ext4 inline_data" "ext4 64bit"; do
    set -- $spec
    img="$tmp/$1-$2.img"
    if [ "$2" = - ]; then opts=(); else opts=(-O "$2" -I 256); fi
    "mkfs.$1" -q -F -b 1024 "${opts[@]}" -d "$tmp/etree" "$img" 1M >/dev/null 2>&1 && cut_into "$img" ext "$1-$2"
  done
fi
echo "ext seeds: $(ls corpus/ext | wc -l) files"

# xfs: 16 MiB mkfs.xfs images (1 KiB blocks, one allocation group, the smallest log; the size checks mkfs makes
# for real volumes are off under fstests' variables), v5 and v4, filled through the kernel on a loop mount when run
# as root, their logs zeroed (the reader never looks there) and cut as the others.
mkdir -p corpus/xfs
if command -v mkfs.xfs >/dev/null; then
  for v in 5 4; do
    img="$tmp/xfs$v.img"; truncate -s 16M "$img"
    if [ $v = 5 ]; then opts=(); else opts=(-m crc=0); fi
    TEST_DIR=1 TEST_DEV=1 QA_CHECK_FS=1 mkfs.xfs -q -f -b size=1024 -d agcount=1 -l size=4m "${opts[@]}" "$img" >/dev/null 2>&1 || continue
    if [ "$(id -u)" = 0 ] && mkdir -p "$tmp/xmnt" && mount -o loop "$img" "$tmp/xmnt" 2>/dev/null; then
      fill_tree "$tmp/xmnt"; ln -s hello.txt "$tmp/xmnt/link"; ln "$tmp/xmnt/hello.txt" "$tmp/xmnt/docs/hard"
      mkdir "$tmp/xmnt/many"; for i in $(seq 1 300); do : > "$tmp/xmnt/many/entry-$i"; done
      umount "$tmp/xmnt"
    fi
    python3 - "$img" <<'PY'
import struct, sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
bs, = struct.unpack_from('>I', b, 4)
logstart, = struct.unpack_from('>Q', b, 48)
logblocks, = struct.unpack_from('>I', b, 96)
b[logstart * bs:(logstart + logblocks) * bs] = bytes(logblocks * bs)
open(p, 'wb').write(b)
PY
    cut_into "$img" xfs "v$v"
  done
fi
echo "xfs seeds: $(ls corpus/xfs | wc -l) files"

sparse_blocks() {  # sparse_blocks IMAGE DST: each non-zero 4 KiB block as its number (u32 LE) and its bytes
  python3 - "$1" "$2" <<'PY'
import struct, sys
src, dst = sys.argv[1], sys.argv[2]
BLOCK = 4096
out = bytearray()
with open(src, 'rb') as f:
    n = 0
    while True:
        b = f.read(BLOCK)
        if not b:
            break
        if any(b):
            out += struct.pack('<I', n) + b.ljust(BLOCK, b'\0')
        n += 1
open(dst, 'wb').write(out)
PY
}

# btrfs: 128 MiB mkfs.btrfs images (metadata single and DUP), filled through the kernel with zlib, LZO and zstd
# compression, a subvolume and a snapshot when run as root, then written sparse as the target reads them: each
# non-zero 4 KiB block as its number (u32 LE) and its bytes, some 150 blocks instead of the 30 MB the trees span.
mkdir -p corpus/btrfs
if command -v mkfs.btrfs >/dev/null; then
  for m in single dup; do
    img="$tmp/btrfs-$m.img"; truncate -s 128M "$img"
    mkfs.btrfs -q -f -m "$m" "$img" >/dev/null 2>&1 || continue
    if [ "$(id -u)" = 0 ] && mkdir -p "$tmp/bmnt" && mount -o loop "$img" "$tmp/bmnt" 2>/dev/null; then
      fill_tree "$tmp/bmnt"; ln -s hello.txt "$tmp/bmnt/link"; ln "$tmp/bmnt/hello.txt" "$tmp/bmnt/docs/hard"
      for c in zlib lzo zstd; do
        mkdir "$tmp/bmnt/$c"; btrfs property set "$tmp/bmnt/$c" compression $c
        seq 1 20000 > "$tmp/bmnt/$c/big.txt"; seq 1 300 > "$tmp/bmnt/$c/small.txt"
      done
      btrfs -q subvolume create "$tmp/bmnt/sub" && echo in-sub > "$tmp/bmnt/sub/f"
      btrfs -q subvolume snapshot "$tmp/bmnt/sub" "$tmp/bmnt/snap" >/dev/null
      umount "$tmp/bmnt"
    fi
    sparse_blocks "$img" "corpus/btrfs/$m"
  done
fi
echo "btrfs seeds: $(ls corpus/btrfs | wc -l) files"

# hfs: the HFS+ volume macOS made (dfvfs, tests/data/mac-public) and HFS+ and HFSX images make-hfsplus.py writes
# (hard links, a fragmented file, compressed files, deleted records), sparse as the target reads them.
mkdir -p corpus/hfs
sparse_blocks ../tests/data/mac-public/dfvfs-hfsplus.raw corpus/hfs/dfvfs
mkdir -p "$tmp/hfs-src/docs/deep" && fill_tree "$tmp/hfs-src" && ln -s hello.txt "$tmp/hfs-src/link" &&
  ln "$tmp/hfs-src/hello.txt" "$tmp/hfs-src/docs/hard" && seq 1 30000 > "$tmp/hfs-src/docs/frag.txt" &&
  seq 1 20000 > "$tmp/hfs-src/docs/packed.txt"
for v in hfsplus hfsx; do
  flag=(); [ $v = hfsx ] && flag=(--hfsx)
  python3 ../scripts/make-hfsplus.py "$tmp/hfs-src" "$tmp/$v.img" --size 8M "${flag[@]}" \
    --fragment docs/frag.txt --compress docs/packed.txt --deleted docs/a.txt >/dev/null && sparse_blocks "$tmp/$v.img" "corpus/hfs/$v"
done
echo "hfs seeds: $(ls corpus/hfs | wc -l) files"

# container_udif: keramics' five .dmg images macOS made (tests/data/mac-public), one per chunk method.
mkdir -p corpus/container_udif
cp ../tests/data/mac-public/keramics-hfsplus_*.dmg corpus/container_udif/
echo "container_udif seeds: $(ls corpus/container_udif | wc -l) files"

# container_sparse: dfvfs's HFS+ volume laid out as a .sparseimage (keramics' format document), bands of 64 KiB
# stored last first, those all zeros left out.
mkdir -p corpus/container_sparse
python3 - ../tests/data/mac-public/dfvfs-hfsplus.raw corpus/container_sparse/hfsplus.sparseimage <<'PY'
import struct, sys
disk = open(sys.argv[1], 'rb').read()
band = 64 * 1024
bands = [b for b in range((len(disk) + band - 1) // band) if any(disk[b * band:(b + 1) * band])][::-1]
head = bytearray(4096)
head[0:20] = b'sprs' + struct.pack('>IIII', 3, band // 512, 1, len(disk) // 512)
for i, b in enumerate(bands):
    head[64 + 4 * i:68 + 4 * i] = struct.pack('>I', b + 1)
body = b''.join(disk[b * band:(b + 1) * band].ljust(band, b'\0') for b in bands)
open(sys.argv[2], 'wb').write(bytes(head) + body)
PY
echo "container_sparse seeds: $(ls corpus/container_sparse | wc -l) files"

# apfs: the APFS container macOS made (dfvfs, tests/data/mac-public) and containers make-apfs.py writes (two
# volumes, a snapshot, hard links, compressed, sparse and cloned files), sparse as the target reads them.
mkdir -p corpus/apfs
sparse_blocks ../tests/data/mac-public/dfvfs-apfs.raw corpus/apfs/dfvfs
mkdir -p "$tmp/apfs-src/docs" "$tmp/apfs-old" && fill_tree "$tmp/apfs-src" && ln -s hello.txt "$tmp/apfs-src/link" &&
  ln "$tmp/apfs-src/hello.txt" "$tmp/apfs-src/docs/hard" && seq 1 20000 > "$tmp/apfs-src/docs/packed.txt" &&
  seq 1 30000 > "$tmp/apfs-src/docs/copy.txt" && seq 1 30000 > "$tmp/apfs-src/docs/clone.txt" &&
  echo earlier > "$tmp/apfs-old/hello.txt"
for method in zlib lzvn; do
  python3 ../scripts/make-apfs.py "$tmp/apfs-$method.img" --volume "Mac=$tmp/apfs-src" \
    --volume "Data=$tmp/apfs-old" --snapshot "Mac=before=$tmp/apfs-old" --compress docs/packed.txt \
    --compress-method $method --clone docs/clone.txt=docs/copy.txt >/dev/null &&
    sparse_blocks "$tmp/apfs-$method.img" "corpus/apfs/$method"
done
echo "apfs seeds: $(ls corpus/apfs | wc -l) files"

# Inputs the targets once found wrong (crashes, timeouts), fixed since: replayed first by every run, so a
# regression shows at once (with -timeout, a slow one too). Each target's are in regressions/TARGET/.
for d in regressions/*/; do
  t=$(basename "$d")
  mkdir -p "corpus/$t"
  cp "$d"* "corpus/$t/"
done
echo "regression inputs: $(ls regressions/*/* | wc -l) files"
