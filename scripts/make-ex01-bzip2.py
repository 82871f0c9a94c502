#!/usr/bin/env python3
"""Writes an EWF2 (Ex01) image of a raw disk image with bzip2-compressed chunks, one segment.

    scripts/make-ex01-bzip2.py RAW OUT.Ex01 [--description D] [--case C] [--evidence E] [--examiner X] [--notes N]

libewf's ewfacquire writes only deflate Ex01 images, though libewf reads bzip2 ones (EnCase 7 and later write
them); this writes one the way ewfacquire lays out its deflate images (tests/data/containers/testfs1-deflate.Ex01):
the 32-byte file header naming compression method 2 (bzip2), then sections, each its data padded to 16 bytes and
a 64-byte descriptor (type, flags, the previous descriptor's offset, the data's size with padding, 64, the padding's
size, 28 zero bytes, the Adler-32 of the 60 before): device information (1) and case data (2) (UTF-16 text,
bzip2-compressed like the chunks: libewf reads them with the file header's method), sector data (3), one
sector table (4), MD5 (8), SHA1 (9), done (15). Chunks are 64 sectors of 512 bytes; a chunk that is one 8-byte
pattern repeated is pattern-filled (flags 5, the pattern where the offset goes, as libewf does), the rest are
bzip2-compressed (flags 1), or stored with their Adler-32 (flags 2) if bzip2 does not make them smaller. The output
depends only on the input (fixed set identifier and times), so it can be made again byte for byte.

Python's standard library only (argparse, bz2, zlib, struct, hashlib).
"""

import argparse
import bz2
import hashlib
import struct
import sys
import zlib

SECTOR = 512
SECTORS_PER_CHUNK = 64
CHUNK = SECTOR * SECTORS_PER_CHUNK
SET_ID = b"uffs-ex01-bzip2!"  # fixed, so the output can be made again byte for byte
TIME = "1795695327"  # the acquisition time testfs1-deflate.Ex01 has


def adler(b):
    return zlib.adler32(b) & 0xFFFFFFFF


def text(t):
    """A device information or case data section's data: UTF-16LE with a byte order mark, compressed with the
    file header's method, here bzip2 (libewf decompresses these sections with it, as it does the chunks)."""
    return bz2.compress(("\ufeff" + t).encode("utf-16-le"), 9)


def main():
    ap = argparse.ArgumentParser(description="Write an Ex01 with bzip2-compressed chunks from a raw image.")
    ap.add_argument("raw")
    ap.add_argument("out")
    for opt in ("description", "case", "evidence", "examiner", "notes"):
        ap.add_argument("--" + opt, default="")
    a = ap.parse_args()
    for v in (a.description, a.case, a.evidence, a.examiner, a.notes):
        if "\t" in v or "\n" in v:
            sys.exit("case values may not hold tabs or line breaks")
    raw_path, out_path = a.raw, a.out
    raw = open(raw_path, "rb").read()
    if not raw or len(raw) % SECTOR:
        sys.exit(f"{raw_path}: its size is not a whole number of {SECTOR}-byte sectors")
    sectors = len(raw) // SECTOR
    chunks = (len(raw) + CHUNK - 1) // CHUNK

    # File header: signature, version 2.1, compression method 2 (bzip2), segment 1, the set identifier.
    out = bytearray(b"EVF2\r\n\x81\x00" + struct.pack("<BBHI", 2, 1, 2, 1) + SET_ID)
    prev = 0

    def section(kind, body):
        nonlocal prev
        pad = -len(body) % 16
        out.extend(body + bytes(pad))
        d = struct.pack("<IIQQII", kind, 0, prev, len(body) + pad, 64, pad) + bytes(28)
        prev = len(out)
        out.extend(d + struct.pack("<I", adler(d)))

    section(1, text(
        "1\nmain\nsn\tmd\tlb\tts\ths\tdc\tdt\tpid\trs\tls\tbp\tph\n"
        f"\t\t\t{sectors}\t\t\tf\t\t\t\t{SECTOR}\t1\n\n"))
    section(2, text(
        "1\nmain\nnm\tcn\ten\tex\tnt\tav\tos\ttt\tat\ttb\tcp\tsb\tgr\twb\n"
        f"{a.description}\t{a.case}\t{a.evidence}\t{a.examiner}\t{a.notes}\t20260924\tLinux\t{TIME}\t{TIME}\t{chunks}\t2\t{SECTORS_PER_CHUNK}\t{SECTORS_PER_CHUNK}\t\n\n"))

    # Sector data: each stored chunk at a 16-byte boundary (from the file's start), as ewfacquire lays them.
    data = bytearray()
    base = len(out)
    entries = []
    for i in range(chunks):
        c = raw[i * CHUNK:(i + 1) * CHUNK]
        if len(c) % 8 == 0 and c == c[:8] * (len(c) // 8):
            entries.append((struct.unpack("<Q", c[:8])[0], 8, 5))
            continue
        z = bz2.compress(c, 9)
        if len(z) < len(c):
            body, flags = z, 1
        else:
            body, flags = c + struct.pack("<I", adler(c)), 2
        data.extend(bytes(-(base + len(data)) % 16))
        entries.append((base + len(data), len(body), flags))
        data.extend(body)
    section(3, bytes(data))

    h = struct.pack("<QII", 0, chunks, 0)
    e = b"".join(struct.pack("<QII", *x) for x in entries)
    section(4, h + struct.pack("<I", adler(h)) + bytes(12) + e + struct.pack("<I", adler(e)) + bytes(12))
    md5 = hashlib.md5(raw).digest()
    section(8, md5 + struct.pack("<I", adler(md5)) + bytes(12))
    sha1 = hashlib.sha1(raw).digest()
    section(9, sha1 + struct.pack("<I", adler(sha1)) + bytes(8))
    section(15, b"")
    open(out_path, "wb").write(out)


if __name__ == "__main__":
    main()
