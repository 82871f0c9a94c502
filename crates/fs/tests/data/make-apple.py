#!/usr/bin/env python3
"""Makes the LZVN and LZFSE test vectors of uffs-fs's `packed` module (src/packed.rs) in apple/ beside this
script, as macOS's decmpfs keeps them: for each, NAME.raw (the plain bytes) and NAME.lzvn or NAME.lzfse.
The encoder is Apple's reference one (lzfse, through PyPI's `lzfse` bindings): it writes inputs under 4 KiB as
one LZVN block (`bvxn`, its length fields, the LZVN stream, `bvx$`), of which a decmpfs LZVN chunk is the stream
alone; larger ones as LZFSE frames (`bvx2` blocks), which decmpfs keeps whole.

    python3 -m venv /tmp/v && /tmp/v/bin/pip install lzfse && /tmp/v/bin/python make-apple.py

The output is the same on every run (a seeded generator).
"""

import os
import random
import struct

import lzfse

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apple")
rng = random.Random(20261204)


def text(n):
    words = [b"decmpfs ", b"catalog ", b"the ", b"resource fork ", b"of ", b"HFS+ ", b"\n", b"LZVN ", b"block "]
    out = bytearray()
    while len(out) < n:
        out += rng.choice(words)
    return bytes(out[:n])


def lzvn_stream(data):
    """The LZVN stream of a one-block (bvxn) frame: after its magic and two u32 lengths, before `bvx$`."""
    frame = lzfse.compress(data)
    assert frame[:4] == b"bvxn" and frame[-4:] == b"bvx$", frame[:4]
    raw, payload = struct.unpack("<II", frame[4:12])
    assert raw == len(data)
    return frame[12:12 + payload]


def main():
    os.makedirs(OUT, exist_ok=True)
    cases = {
        "lzvn-text": (text(3000), "lzvn"),
        "lzvn-letters": (bytes(65 + rng.randrange(8) for _ in range(1500)), "lzvn"),
        "lzvn-runs": (b"a" * 2000 + b"b" * 1000 + text(500), "lzvn"),
        "lzfse-text": (text(65536), "lzfse"),
        "lzfse-mixed": (text(20000) + bytes(rng.randrange(256) for _ in range(5000)) + b"\0" * 30000, "lzfse"),
    }
    for name, (data, kind) in cases.items():
        packed = lzvn_stream(data) if kind == "lzvn" else lzfse.compress(data)
        if kind == "lzfse":
            assert packed[:4] == b"bvx2", packed[:4]
        open(os.path.join(OUT, name + ".raw"), "wb").write(data)
        open(os.path.join(OUT, f"{name}.{kind}"), "wb").write(packed)
        print(name, len(data), "->", len(packed))


if __name__ == "__main__":
    main()
