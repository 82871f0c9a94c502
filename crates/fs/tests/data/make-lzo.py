#!/usr/bin/env python3
"""Makes the LZO1X test vectors of uffs-fs's `packed` module (src/packed.rs) in lzo/ beside this script:
for each, NAME.raw (the plain bytes; none for far and farther, which the test makes) and NAME.lzo (what liblzo2
compresses them to, through python-lzo: `lzo.compress(data, level, False)`, raw LZO1X without python-lzo's
header). framed-*.lzo are streams framed as Btrfs frames them (Linux, fs/btrfs/lzo.c): the total length
(u32 LE, itself included), then per sector of data its segment's length (u32 LE) and bytes, zeros to the
next 4 KiB boundary when fewer than 4 bytes are left before it. framed-pad needs that padding after its
first segment; framed-fit has exactly 4 bytes left there.

    pip install python-lzo   # needs liblzo2-dev to build
    python3 make-lzo.py

The output is the same on every run (a seeded generator).
"""

import os
import random
import struct

import lzo

SECTOR = 4096
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lzo")
rng = random.Random(20240611)


def text(n):
    words = [b"btrfs ", b"extent ", b"the ", b"compressed ", b"of ", b"data ", b"sector ", b"zlib ",
             b"segment ", b"\n", b"LZO1X ", b"match "]
    out = bytearray()
    while len(out) < n:
        out += rng.choice(words)
    return bytes(out[:n])


def write(name, raw, packed):
    with open(os.path.join(OUT, name + ".raw"), "wb") as f:
        f.write(raw)
    with open(os.path.join(OUT, name + ".lzo"), "wb") as f:
        f.write(packed)


def btrfs_frame(chunks):
    """The Btrfs framing of `chunks` (each at most a sector), as lzo_compress_folios writes it."""
    out = bytearray(4)
    for c in chunks:
        seg = lzo.compress(c, 1, False)
        out += struct.pack("<I", len(seg)) + seg
        left = -len(out) % SECTOR
        if 0 < left < 4:
            out += bytes(left)
    out[0:4] = struct.pack("<I", len(out))
    return bytes(out)


def first_segment(room):
    """A sector of data whose segment leaves `room` bytes before the first sector boundary (zeros, then
    random bytes: more zeros, a shorter segment)."""
    noise = rng.randbytes(SECTOR)
    for zeros in range(SECTOR):
        data = bytes(zeros) + noise[: SECTOR - zeros]
        if SECTOR - (8 + len(lzo.compress(data, 1, False))) == room:
            return data
    raise SystemExit(f"no first segment leaves {room} bytes")


os.makedirs(OUT, exist_ok=True)
write("empty", b"", lzo.compress(b"", 1, False))
# Three bytes: the first opcode is a run of fewer than 4 literals.
write("short", b"abc", lzo.compress(b"abc", 1, False))
t = text(3000)
write("text-1", t, lzo.compress(t, 1, False))
# lzo1x_999 finds more and shorter matches (M1 and M2 of every kind).
write("text-999", t, lzo.compress(t, 9, False))
write("zeros", bytes(SECTOR), lzo.compress(bytes(SECTOR), 1, False))
r = rng.randbytes(1500)
write("random", r, lzo.compress(r, 1, False))
# lzo1x_999 on 64 symbols: short M1 matches after each count of trailing literals, and right after a run.
mixed = bytes(rng.choice(range(64)) for _ in range(SECTOR))
write("mixed-999", mixed, lzo.compress(mixed, 9, False))
# Matches more than 16 and 32 KiB back (M4, without and with its high distance bit). Their plain bytes are
# left for the test to make.
for name, zeros in [("far", 16384), ("farther", 32768)]:
    with open(os.path.join(OUT, name + ".lzo"), "wb") as f:
        f.write(lzo.compress(bytes(range(256)) + bytes(zeros) + bytes(range(256)), 9, False))
sector = text(2000) + rng.randbytes(96) + text(2000)
write("sector", sector, lzo.compress(sector, 1, False))
for name, room in [("framed-pad", 2), ("framed-fit", 4)]:
    chunks = [first_segment(room), text(SECTOR), text(1000)]
    write(name, b"".join(chunks), btrfs_frame(chunks))
