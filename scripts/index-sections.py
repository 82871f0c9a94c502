#!/usr/bin/env python3
"""What each section of a uffs index file costs: bytes and bytes per entry, largest first.

    scripts/index-sections.py FILE.uffs [FILE2.uffs]   (two files: side by side, for a before/after table)

Reads only the 128-byte header and the section table (layout in crates/index/src/file.rs).
"""
import struct
import sys

NAMES = {
    1: "source text", 2: "names (folded from format 5)", 3: "name_start", 4: "parent", 5: "record", 6: "sequence", 7: "flags",
    8: "size (formats 3, 4)", 10: "created", 11: "modified", 12: "mft_changed", 13: "accessed",
    15: "tree_size (format 3)", 16: "descendants (format 3)", 32: "aids: folded names (formats 3, 4)",
    17: "size: low halves", 18: "size: 4 GiB or more (bits)", 19: "size: high halves, ids", 30: "size: high halves",
    24: "allocated: codes", 25: "allocated: unit", 26: "allocated apart: ids", 27: "allocated apart: sizes",
    28: "reparse tags: ids", 29: "reparse tags: tags", 9: "allocated (formats 3, 4)", 14: "reparse_tag (formats 3, 4)",
    20: "name upper-case bits", 21: "names apart: ids", 22: "names apart: offsets", 23: "names apart: text",
    34: "aids: name_order", 35: "aids: name_rank", 36: "aids: path_order", 37: "aids: path_rank",
    38: "aids: size_order", 39: "aids: created_order", 40: "aids: modified_order", 41: "aids: accessed_order",
    42: "aids: ext_id", 43: "aids: ext_text", 44: "aids: ext_starts", 45: "aids: trigrams", 50: "aids: ext_order", 51: "aids: name fence posts", 52: "aids: name fence offsets",
    60: "record hashes (whole records, before section 68)", 68: "record hashes", 66: "timeline", 67: "timeline blocks",
    70: "time frames", 82: "8.3 aliases: ids", 83: "8.3 aliases: offsets", 84: "8.3 aliases: text",
    85: "owners and modes: table", 86: "owners and modes: codes", 87: "link targets: ids", 88: "link targets: offsets",
    89: "link targets: text", 92: "exclusive apart: ids", 93: "exclusive apart: bytes",
    **{base + k: f"{t}{part}" for k, t in enumerate(("created", "modified", "mft_changed", "accessed"))
       for base, part in ((74, ": times apart, ids"), (78, ": times apart"))},
}


def read(path):
    with open(path, "rb") as f:
        head = f.read(128)
        if head[:8] != b"UFFSIDX\0":
            sys.exit(f"{path}: not a uffs index file")
        version, count = struct.unpack_from("<II", head, 8)
        entries = struct.unpack_from("<Q", head, 40)[0]
        table = f.read(32 * count)
    f_len = 0
    sections = {}
    for i in range(count):
        sid, _size, off, length, _ = struct.unpack_from("<IIQQQ", table, 32 * i)
        sections[sid] = length
        f_len = max(f_len, off + length)
    import os
    return version, entries, sections, os.path.getsize(path)


def main():
    files = sys.argv[1:]
    if not files or len(files) > 2:
        sys.exit(__doc__)
    data = [read(p) for p in files]
    ids = sorted({s for d in data for s in d[2]}, key=lambda s: -max(d[2].get(s, 0) for d in data))
    head = "".join(f" | {p.rsplit('/', 1)[-1]} (v{d[0]}, {d[1]:,} entries): B/entry" for p, d in zip(files, data))
    print(f"| section{head} |")
    print("|---" + "|---:" * len(data) + "|")
    for s in ids:
        cells = "".join(f" | {d[2][s] / d[1]:.2f}" if s in d[2] else " | –" for d in data)
        print(f"| {NAMES.get(s, f'section {s}')}{cells} |")
    total = "".join(f" | **{d[3] / d[1]:.2f}**" for d in data)
    print(f"| whole file (with header, tables, padding){total} |")


if __name__ == "__main__":
    main()
