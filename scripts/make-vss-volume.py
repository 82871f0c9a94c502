#!/usr/bin/env python3
"""Write Volume Shadow Copies into a raw NTFS volume, made from earlier states of the same volume.

    python3 scripts/make-vss-volume.py --states OLDEST.img [OLDER2.img ...] --present PRESENT.img

All images are raw NTFS volumes (no partition table) of the same size: the same volume at different times, e.g.
made by mkntfs and changed through an ntfs-3g mount between copies. This writes INTO PRESENT.img what Windows'
software shadow copy provider keeps on a volume: a VSS volume header at 0x1E00, a catalog and one store per state
(oldest first = store 1, `vss1`), so that reading store i through the chain (store i, then i + 1, ..., then the
volume, as libvshadow and uffs read) gives the bytes of state i, everywhere.

What goes where (the layout as libyal's public "Volume Shadow Snapshot (VSS) format" describes it, and as
crates/image/src/vss reads it; every structure one or more 16 KiB blocks, every number little-endian):

- Store i holds the 16 KiB blocks (aligned to the volume's start) whose content differs between state i and
  state i + 1 (PRESENT for the newest store), with state i's content copied to a data block of the store: the
  copy-on-write Windows does for blocks overwritten after a snapshot. The newest store also holds block 0 (the
  VSS header written at 0x1E00 changes it; PRESENT must not have one already).
- Every structure (catalog blocks, store headers, block lists, block range lists, bitmaps, copied data) lies in a
  16 KiB block that is free in PRESENT's $Bitmap, reads as zeros and is the same in every state (so no store has
  to hold it), taken from the volume's end first. The newest store maps each of those blocks to one of its data
  blocks that stays zero, so every store still reads zeros there, as the states have: the snapshots are
  byte-identical to the states everywhere, the blocks holding the VSS structures included.
- A store (its "file") is, in order: its header (type 4, with the store information: shadow copy and set ids,
  type 9, provider 1, --attributes, --machine twice), its block list (type 3, 32-byte descriptors sorted by
  volume offset, no forwarders or overlays), its block range list (type 5: its own blocks as runs), its bitmap
  (type 6: every block in use, no bit set, so no block reads as zeros by the bitmap; no previous bitmap) and its
  data blocks. The catalog (type 2 blocks) has a type-2 entry (volume size, store id, sequence number, flags
  0x40, creation time) and a type-3 entry (where the store's structures are) per store, oldest first.

With --storage STOR.img (another raw NTFS volume), the stores are kept on that volume instead, as Windows does
after `vssadmin add shadowstorage /for=D: /on=E:` (docs/research/vss-store-on-another-volume.md): PRESENT gets
the VSS header naming its own GUID and STOR's, and a catalog of type-2 entries only; STOR gets its own VSS header
(its GUID twice) and a catalog of the type-3 entries, and every store's structures and copied blocks lie in free,
zero blocks of STOR; a descriptor's third offset is then STOR's. libvshadow lists such stores as "Data stored
outside volume".

The blocks the structures take stay free in PRESENT's $Bitmap (Windows keeps them in files of `System Volume
Information`, which this does not make): mounting PRESENT read-write afterwards may overwrite them.

Ids (store, shadow copy, set, volume) are random GUIDs from --seed, so the output is reproducible given the same
images, seed and times. Creation times are --times (one per state) or the current hour minus N hours.

Bad input (sizes differ, not NTFS, no free room, a VSS header already there) is one line on stderr and exit 2.
Python 3 stdlib only.
"""

import argparse
import datetime as dt
import errno
import os
import random
import struct
import sys
import time
import uuid

BLOCK = 0x4000
HEADER_AT = 0x1E00
# 3808876b-c176-4e48-b7ae-04046e6cc752, as stored.
VSS_ID = uuid.UUID("3808876b-c176-4e48-b7ae-04046e6cc752").bytes_le
CATALOG_ENTRIES = BLOCK // 128 - 1  # 127 entries of 128 bytes after the block's header
DESCRIPTORS = (BLOCK - 128) // 32  # 508 block descriptors of 32 bytes
RANGES = (BLOCK - 128) // 24  # 677 block range entries of 24 bytes
BITMAP_BYTES = BLOCK - 128
CHUNK = 256 * BLOCK  # 4 MiB compared at once
FILETIME_EPOCH = 11644473600  # seconds from 1601-01-01 to 1970-01-01

REC_VOLUME, REC_CATALOG, REC_BLOCK_LIST, REC_STORE_HEADER, REC_RANGES, REC_BITMAP = 1, 2, 3, 4, 5, 6


class Bad(Exception):
    """Bad input: reported as one line and exit 2."""


# ---------------------------------------------------------------------------------------------------- NTFS


class Ntfs:
    """The few facts of an NTFS volume this needs: cluster size and count, and which clusters are free."""

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            boot = f.read(512)
            if len(boot) < 512 or boot[3:11] != b"NTFS    " or boot[510:512] != b"\x55\xaa":
                raise Bad(f"{path} is not an NTFS volume (no NTFS boot sector at its start)")
            bps = struct.unpack_from("<H", boot, 0x0B)[0]
            spc = boot[0x0D]
            spc = 1 << (256 - spc) if spc > 0x80 else spc
            if bps not in (512, 1024, 2048, 4096) or spc == 0:
                raise Bad(f"{path} has a damaged NTFS boot sector (sector size {bps}, {spc} sectors per cluster)")
            self.cluster = bps * spc
            total_sectors = struct.unpack_from("<Q", boot, 0x28)[0]
            self.clusters = total_sectors * bps // self.cluster
            mft_lcn = struct.unpack_from("<Q", boot, 0x30)[0]
            cpr = struct.unpack_from("<b", boot, 0x40)[0]
            self.record_size = 1 << -cpr if cpr < 0 else cpr * self.cluster
            self.bps = bps
            f.seek(mft_lcn * self.cluster + 6 * self.record_size)
            rec = bytearray(f.read(self.record_size))
            runs, size = self._data_runs(rec)
            bitmap = bytearray()
            for lcn, count in runs:
                f.seek(lcn * self.cluster)
                bitmap += f.read(count * self.cluster)
            self.bitmap = bytes(bitmap[:size])
        if len(self.bitmap) * 8 < self.clusters:
            raise Bad(f"{path}: $Bitmap is shorter ({len(self.bitmap)} bytes) than the volume's clusters need")

    def _data_runs(self, rec):
        """$Bitmap's (record 6) unnamed non-resident $DATA: its runs (lcn, clusters) and its size in bytes."""
        if rec[:4] != b"FILE":
            raise Bad(f"{self.path}: MFT record 6 ($Bitmap) is not a FILE record")
        usa_off, usa_n = struct.unpack_from("<HH", rec, 4)
        for i in range(1, usa_n):  # undo the update sequence (fixups)
            end = i * self.bps - 2
            if end + 2 > len(rec):
                break
            rec[end:end + 2] = rec[usa_off + 2 * i:usa_off + 2 * i + 2]
        at = struct.unpack_from("<H", rec, 0x14)[0]
        while at + 16 <= len(rec):
            kind, length = struct.unpack_from("<II", rec, at)
            if kind == 0xFFFFFFFF or length == 0:
                break
            if kind == 0x80 and rec[at + 9] == 0 and rec[at + 8] == 1:
                runs_at = at + struct.unpack_from("<H", rec, at + 0x20)[0]
                size = struct.unpack_from("<Q", rec, at + 0x30)[0]
                return self._decode_runs(rec, runs_at, at + length), size
            at += length
        raise Bad(f"{self.path}: $Bitmap has no non-resident $DATA attribute in its MFT record")

    def _decode_runs(self, rec, at, end):
        runs, lcn = [], 0
        while at < end and rec[at] != 0:
            h = rec[at]
            ln, lo = h & 0xF, h >> 4
            count = int.from_bytes(rec[at + 1:at + 1 + ln], "little")
            delta = int.from_bytes(rec[at + 1 + ln:at + 1 + ln + lo], "little", signed=True) if lo else None
            at += 1 + ln + lo
            if delta is None:
                raise Bad(f"{self.path}: $Bitmap is sparse, which NTFS never writes")
            lcn += delta
            runs.append((lcn, count))
        return runs

    def block_free(self, b):
        """Whether every cluster of 16 KiB block `b` lies in the volume and is free."""
        first = b * BLOCK // self.cluster
        last = ((b + 1) * BLOCK - 1) // self.cluster
        if last >= self.clusters:
            return False
        bm = self.bitmap
        for c in range(first, last + 1):
            if bm[c >> 3] & (1 << (c & 7)):
                return False
        return True


# ---------------------------------------------------------------------------------------------------- diffs


def data_extents(fd, size):
    """The (start, end) ranges of a file that hold data (the rest are holes, zeros); all of it when unknown."""
    out, at = [], 0
    try:
        while at < size:
            start = os.lseek(fd, at, os.SEEK_DATA)
            end = os.lseek(fd, start, os.SEEK_HOLE)
            out.append((start, min(end, size)))
            at = end
    except OSError as e:
        if e.errno == errno.ENXIO:  # no data past `at`
            return out
        return [(0, size)]  # SEEK_DATA not supported: read it all
    return out


def in_hole(extents, start, end):
    """Whether [start, end) lies wholly outside the data extents (sorted)."""
    for s, e in extents:
        if s >= end:
            return True
        if e > start:
            return False
    return True


def changed_blocks(paths, size):
    """For each consecutive pair (paths[i], paths[i + 1]), the sorted 16 KiB block numbers whose bytes differ.
    Reads each file once; holes of sparse files are not read."""
    fds = [os.open(p, os.O_RDONLY) for p in paths]
    try:
        extents = [data_extents(fd, size) for fd in fds]
        zeros = bytes(CHUNK)
        diffs = [[] for _ in range(len(paths) - 1)]
        for at in range(0, size, CHUNK):
            n = min(CHUNK, size - at)
            chunks = []
            for fd, ext in zip(fds, extents):
                if in_hole(ext, at, at + n):
                    chunks.append(zeros[:n] if n < CHUNK else zeros)
                else:
                    chunks.append(os.pread(fd, n, at))
            for i in range(len(paths) - 1):
                a, b = chunks[i], chunks[i + 1]
                if a is b or a == b:
                    continue
                ma, mb = memoryview(a), memoryview(b)
                for off in range(0, n, BLOCK):
                    if ma[off:off + BLOCK] != mb[off:off + BLOCK]:
                        diffs[i].append((at + off) // BLOCK)
        return diffs
    finally:
        for fd in fds:
            os.close(fd)


# ---------------------------------------------------------------------------------------------------- layout


def guid(rng):
    return uuid.UUID(int=rng.getrandbits(128), version=4)


def block_header(kind, relative, current, nxt, info_size=0):
    """The 128-byte header of every VSS block after the volume header."""
    h = bytearray(128)
    h[0:16] = VSS_ID
    struct.pack_into("<IIQQQQ", h, 16, 1, kind, relative, current, nxt, info_size)
    return h


def filetime(t):
    return int(round((t + FILETIME_EPOCH) * 10_000_000))


def parse_time(text):
    try:
        t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise Bad(f"--times: {text!r} is not an ISO 8601 time (e.g. 2026-11-26T09:00:00Z)")
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return t.timestamp()


def ranges_of(blocks):
    """Runs of consecutive block numbers in `blocks` (in store order): (first block, count, index in store)."""
    runs = []
    for i, b in enumerate(blocks):
        if runs and runs[-1][0] + runs[-1][1] == b:
            runs[-1][1] += 1
        else:
            runs.append([b, 1, i])
    return runs


def plan(n_states, diffs, bitmap_bits, reserve, elsewhere=False):
    """Block counts of every structure, settled: the newest store's block list names every block the VSS
    structures take on the volume (so it grows with them; `elsewhere`: only the catalog is on it), and a store's
    range list grows with its runs (`reserve`)."""
    bitmap_blocks = -(-(-(-bitmap_bits // 8)) // BITMAP_BYTES)
    catalog_blocks = max(1, -(-(2 * n_states) // CATALOG_ENTRIES))
    total = 0
    while True:
        stores = []
        for i in range(n_states):
            last = i == n_states - 1
            data = len(diffs[i]) + (1 if last else 0)
            in_volume = catalog_blocks if elsewhere else total
            descriptors = len(diffs[i]) + (in_volume if last else 0)
            lists = max(1, -(-descriptors // DESCRIPTORS))
            stores.append(dict(data=data, lists=lists, ranges=reserve[i], bitmaps=bitmap_blocks))
        new_total = catalog_blocks + sum(1 + s["lists"] + s["ranges"] + s["bitmaps"] + s["data"] for s in stores)
        if new_total == total:
            return catalog_blocks, stores, total
        total = new_total


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Write Volume Shadow Copies (one store per earlier state) into a raw NTFS volume.",
        epilog="Example: make-vss-volume.py --states a.img b.img --present c.img  (vss1 reads as a.img, vss2 as b.img)",
    )
    ap.add_argument("--states", nargs="+", required=True, metavar="IMG",
                    help="earlier states of the volume, oldest first (store 1 = the first)")
    ap.add_argument("--present", required=True, metavar="IMG", help="the volume as it is now: written into")
    ap.add_argument("--storage", metavar="IMG",
                    help="another NTFS volume that keeps the stores (written into; the volume keeps the catalog)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the random GUIDs (default 1)")
    ap.add_argument("--times", nargs="+", metavar="ISO",
                    help="creation time of each store, oldest first (default: the current hour minus N hours)")
    ap.add_argument("--machine", default="uffs-test", help="operating and service machine name (default uffs-test)")
    ap.add_argument("--attributes", type=lambda s: int(s, 0), default=0x00420009,
                    help="VSS_VOLUME_SNAPSHOT_ATTRIBUTES of every store (default 0x00420009, as Windows 7 writes)")
    ap.add_argument("--quiet", action="store_true", help="print nothing but errors")
    args = ap.parse_args(argv)
    try:
        return run(args)
    except Bad as e:
        print(f"make-vss-volume: {e}", file=sys.stderr)
        return 2


def run(args):
    t0 = time.monotonic()
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True))
    paths = list(args.states) + [args.present]
    for p in paths + ([args.storage] if args.storage else []):
        if not os.path.isfile(p):
            raise Bad(f"{p}: no such file")
    every = paths + ([args.storage] if args.storage else [])
    if len(set(os.path.realpath(p) for p in every)) != len(every):
        raise Bad("every image must be a different file")
    size = os.path.getsize(args.present)
    for p in args.states:
        if os.path.getsize(p) != size:
            raise Bad(f"sizes differ: {p} is {os.path.getsize(p)} bytes, {args.present} is {size}")
    if size < 16 * BLOCK:
        raise Bad(f"{args.present} is too small ({size} bytes) for a volume with shadow copies")
    for p in args.states:
        Ntfs(p)  # every state an NTFS volume too
    vol = Ntfs(args.present)
    stor = Ntfs(args.storage) if args.storage else None
    for p in [args.present] + ([args.storage] if args.storage else []):
        with open(p, "rb") as f:
            f.seek(HEADER_AT)
            if f.read(16) == VSS_ID:
                raise Bad(f"{p} already has a VSS volume header at 0x1E00 (start again from a copy)")
    n = len(args.states)
    if args.times:
        if len(args.times) != n:
            raise Bad(f"--times gives {len(args.times)} times for {n} states")
        times = [parse_time(t) for t in args.times]
        if any(b <= a for a, b in zip(times, times[1:])):
            raise Bad("--times must increase, oldest first")
    else:
        hour = int(time.time()) // 3600 * 3600
        times = [hour - 3600 * (n - i) for i in range(n)]
    rng = random.Random(args.seed)
    volume_id = guid(rng)
    set_unknown = guid(rng)
    ids = [dict(store=guid(rng), shadow=guid(rng), set=guid(rng)) for _ in range(n)]
    storage_id = guid(rng) if stor else volume_id

    # 1. What changed between each state and the next, before anything is written.
    volume_blocks = size // BLOCK  # whole blocks: the ones a structure may take
    bitmap_bits = -(-size // BLOCK)  # a bit for every block, a last partial one too
    diffs = changed_blocks(paths, size)
    t_diff = time.monotonic() - t0
    changed = set()
    for d in diffs:
        changed.update(d)

    # Block 0 holds 0x1E00: once the VSS header is written there it differs from the newest state's block 0 (which
    # has no VSS header: PRESENT had none), so the newest store holds the newest state's block 0.
    if 0 not in diffs[-1]:
        diffs[-1].insert(0, 0)

    # 2. Where the structures go: free in PRESENT, zero, the same in every state; from the end.
    def candidates():
        for b in range(volume_blocks - 1, 0, -1):
            if b in changed or not vol.block_free(b):
                continue
            yield b

    def storage_candidates():
        for b in range(stor.clusters * stor.cluster // BLOCK - 1, 0, -1):
            if stor.block_free(b):
                yield b

    def take(path, cand, pool, count, what):
        """`count` blocks of `pool`, topped up from `cand` with blocks of `path` that read as zeros."""
        with open(path, "rb") as f:
            for b in cand:
                if len(pool) >= count:
                    break
                f.seek(b * BLOCK)
                if not any(f.read(BLOCK)):
                    pool.append(b)
        if len(pool) < count:
            raise Bad(f"not enough free space in {path}: the shadow copies need {count} free, zero-filled "
                      f"16 KiB blocks{what}, and it has {len(pool)}")
        return sorted(pool[:count])

    reserve = [1] * n
    pool, stor_pool = [], []
    cand = candidates()
    stor_cand = storage_candidates() if stor else None
    volume_catalog = None
    while True:
        catalog_blocks, stores, total = plan(n, diffs, bitmap_bits, reserve, elsewhere=bool(stor))
        if stor:
            # The volume keeps only its catalog; the storage volume its own catalog and every store.
            volume_catalog = take(args.present, cand, pool, catalog_blocks, " unchanged in every state")
            blocks = take(args.storage, stor_cand, stor_pool, total, "")
        else:
            blocks = take(args.present, cand, pool, total, " unchanged in every state")
        # Hand out: catalog, then each store's header, block lists, range lists, bitmaps and data blocks.
        at = 0
        catalog = blocks[at:at + catalog_blocks]
        at += catalog_blocks
        for s in stores:
            k = 1 + s["lists"] + s["ranges"] + s["bitmaps"] + s["data"]
            s["blocks"] = blocks[at:at + k]
            at += k
        grow = False
        for i, s in enumerate(stores):
            need = max(1, -(-len(ranges_of(s["blocks"])) // RANGES))
            if need > reserve[i]:
                reserve[i], grow = need, True
        if not grow:
            break
    # The volume's blocks the structures take (the newest store reads them as zeros, as the states have them).
    used = volume_catalog if stor else blocks

    # 3. The structures.
    def volume_header(catalog_at, this, storage):
        h = bytearray(512)
        h[0:16] = VSS_ID
        # version, record type, current offset, next offset, unknown, catalog offset, maximum size (0: unbounded)
        struct.pack_into("<IIQQQQQ", h, 16, 1, REC_VOLUME, HEADER_AT, HEADER_AT, 0, catalog_at, 0)
        h[64:80] = this.bytes_le
        h[80:96] = storage.bytes_le
        return h

    catalog_at = (volume_catalog or catalog)[0] * BLOCK
    vol_header = volume_header(catalog_at, volume_id, storage_id)
    assert sum(s["data"] for s in stores) == sum(len(d) for d in diffs) + 1

    writes = {}  # block (of the storage volume with --storage) -> 16 KiB of content
    entries, volume_entries = [], []
    for i, s in enumerate(stores):
        last = i == n - 1
        b = s["blocks"]
        header_b = b[0]
        lists_b = b[1:1 + s["lists"]]
        ranges_b = b[1 + s["lists"]:1 + s["lists"] + s["ranges"]]
        bitmaps_b = b[1 + s["lists"] + s["ranges"]:1 + s["lists"] + s["ranges"] + s["bitmaps"]]
        data_b = b[1 + s["lists"] + s["ranges"] + s["bitmaps"]:]
        rel = {blk: j * BLOCK for j, blk in enumerate(b)}  # offset in the store (its file)
        # Block descriptors: each changed block -> its copy; for the newest, each VSS block -> a zero data block.
        descriptors = []
        copies = []  # (state index, block copied, data block)
        for j, orig in enumerate(diffs[i]):
            d = data_b[j]
            descriptors.append((orig * BLOCK, rel[d], d * BLOCK))
            copies.append((i, orig, d))
        if last:
            zero = data_b[len(diffs[i])]
            for u in used:
                descriptors.append((u * BLOCK, rel[zero], zero * BLOCK))
        descriptors.sort()
        s["descriptors"] = len(descriptors)
        s["copies"] = copies
        for k, lb in enumerate(lists_b):
            blk = bytearray(BLOCK)
            nxt = lists_b[k + 1] * BLOCK if k + 1 < len(lists_b) else 0
            blk[:128] = block_header(REC_BLOCK_LIST, rel[lb], lb * BLOCK, nxt)
            for m, (orig, r, st) in enumerate(descriptors[k * DESCRIPTORS:(k + 1) * DESCRIPTORS]):
                struct.pack_into("<QQQII", blk, 128 + 32 * m, orig, r, st, 0, 0)
            writes[lb] = blk
        runs = ranges_of(b)
        for k, rb in enumerate(ranges_b):
            blk = bytearray(BLOCK)
            nxt = ranges_b[k + 1] * BLOCK if k + 1 < len(ranges_b) else 0
            blk[:128] = block_header(REC_RANGES, rel[rb], rb * BLOCK, nxt)
            for m, (first, count, idx) in enumerate(runs[k * RANGES:(k + 1) * RANGES]):
                struct.pack_into("<QQQ", blk, 128 + 24 * m, first * BLOCK, idx * BLOCK, count * BLOCK)
            writes[rb] = blk
        for k, bb in enumerate(bitmaps_b):
            blk = bytearray(BLOCK)  # no bit set: every block in use
            nxt = bitmaps_b[k + 1] * BLOCK if k + 1 < len(bitmaps_b) else 0
            blk[:128] = block_header(REC_BITMAP, rel[bb], bb * BLOCK, nxt)
            writes[bb] = blk
        if last:
            writes[zero] = bytes(BLOCK)  # already zero; named so the plan is complete
        # Store header and store information.
        machine = args.machine.encode("utf-16-le")
        info = bytearray()
        info += set_unknown.bytes_le + ids[i]["shadow"].bytes_le + ids[i]["set"].bytes_le
        info += struct.pack("<IIII", 9, 1, args.attributes, 0)
        info += struct.pack("<H", len(machine)) + machine + struct.pack("<H", len(machine)) + machine
        blk = bytearray(BLOCK)
        blk[:128] = block_header(REC_STORE_HEADER, 0, header_b * BLOCK, 0, len(info))
        blk[128:128 + len(info)] = info
        writes[header_b] = blk
        store_id = ids[i]["store"].bytes_le
        e2 = bytearray(128)
        struct.pack_into("<QQ", e2, 0, 2, size)
        e2[16:32] = store_id
        struct.pack_into("<QQQ", e2, 32, i + 1, 0x40, filetime(times[i]))
        e3 = bytearray(128)
        struct.pack_into("<QQ", e3, 0, 3, lists_b[0] * BLOCK)
        e3[16:32] = store_id
        struct.pack_into("<QQQQQQ", e3, 32, header_b * BLOCK, ranges_b[0] * BLOCK, bitmaps_b[0] * BLOCK, 0,
                         len(b) * BLOCK, 0)
        if stor:
            volume_entries.append(e2)
            entries.append(e3)
        else:
            entries += [e2, e3]

    def catalog_blocks_of(blocks, entries, out):
        for k, cb in enumerate(blocks):
            blk = bytearray(BLOCK)
            nxt = blocks[k + 1] * BLOCK if k + 1 < len(blocks) else 0
            blk[:128] = block_header(REC_CATALOG, k * BLOCK, cb * BLOCK, nxt)
            for m, e in enumerate(entries[k * CATALOG_ENTRIES:(k + 1) * CATALOG_ENTRIES]):
                blk[128 + 128 * m:256 + 128 * m] = e
            out[cb] = blk

    catalog_blocks_of(catalog, entries, writes)
    volume_writes = {}
    if stor:
        catalog_blocks_of(volume_catalog, volume_entries, volume_writes)

    # 4. Copies of the changed blocks (read before anything is written), then every structure, then the header.
    state_fds = [os.open(p, os.O_RDONLY) for p in args.states]
    try:
        for s in stores:
            for i, orig, d in s["copies"]:
                content = os.pread(state_fds[i], BLOCK, orig * BLOCK)
                if len(content) != BLOCK:
                    raise Bad(f"{args.states[i]}: short read at block {orig}")
                writes[d] = content
    finally:
        for fd in state_fds:
            os.close(fd)
    assert sorted(writes) == blocks, "every block the plan took is written once"
    if stor:
        assert sorted(volume_writes) == used
        write_blocks(args.storage, writes, volume_header(catalog[0] * BLOCK, storage_id, storage_id))
        write_blocks(args.present, volume_writes, vol_header)
    else:
        write_blocks(args.present, writes, vol_header)

    t_all = time.monotonic() - t0
    say(f"{args.present}: {n} shadow copies written, {len(used)} blocks of 16 KiB ({len(used) * BLOCK} bytes) "
        f"in {t_all:.2f} s (comparing the images {t_diff:.2f} s)")
    for i, s in enumerate(stores):
        when = dt.datetime.fromtimestamp(times[i], dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        say(f"  vss{i + 1}  {when}  store {ids[i]['store']}  shadow copy {ids[i]['shadow']}  set {ids[i]['set']}  "
            f"reads as {args.states[i]}: {len(diffs[i])} changed blocks held, {s['descriptors']} descriptors")
    spans = ranges_of(used)
    say("  VSS structures in blocks (16 KiB, from the volume's start; every store reads them as zeros, as the "
        "states have them): " + ", ".join(f"{a}" if c == 1 else f"{a}-{a + c - 1}" for a, c, _ in spans))
    say(f"  VSS volume header at 0x{HEADER_AT:X}, catalog at {catalog_at}")
    if stor:
        say(f"  stores kept on {args.storage}: volume {storage_id} (this volume is {volume_id}); its catalog at "
            f"{catalog[0] * BLOCK}, the stores in its blocks "
            + ", ".join(f"{a}" if c == 1 else f"{a}-{a + c - 1}" for a, c, _ in ranges_of(blocks)))
    return 0


def write_blocks(path, writes, header):
    """Writes each 16 KiB block of `writes` into `path`, then the VSS volume header, and syncs."""
    fd = os.open(path, os.O_RDWR)
    try:
        for blk_no in sorted(writes):
            os.pwrite(fd, bytes(writes[blk_no]), blk_no * BLOCK)
        os.pwrite(fd, bytes(header), HEADER_AT)
        os.fsync(fd)
    finally:
        os.close(fd)


if __name__ == "__main__":
    sys.exit(main())
