#!/usr/bin/env python3
"""Build an HFS+ (or, with --hfsx, case-sensitive HFSX) volume image from a folder tree.

No Linux tool writes a populated HFS+ volume, so this lays one out byte by byte:
  bytes 0..1023   boot blocks (zero); byte 1024: the volume header ('H+' v4 / 'HX' v5,
                  unmounted, no journal), copied at size-1024; the last 512 bytes zero
  from block 1    allocation file (1 bit per block, MSB first; the blocks holding bytes
                  0..1535 and the last 1024 bytes are used), extents overflow B-tree
                  (node 4096), attributes B-tree (node 8192), catalog B-tree (node
                  --node-size), then the files' data and resource forks in path order.
Each B-tree has a header node (header record, 128-byte user record, map record), leaf
nodes chained by fLink/bLink and index levels up to one root once records overflow a
node.  The catalog holds folder, file and thread records keyed (parentID, nodeName),
names decomposed and ordered by FastUnicodeCompare (HFS+, 0xCF) or binary (HFSX, 0xBC).
Hard links become iNode<CNID> in "\0\0\0\0HFS+ Private Data" plus 'hlnk' files;
NAME.rsrc beside NAME becomes NAME's resource fork; source user.* xattrs become
attributes (user.NAME -> NAME); --compress stores decmpfs: zlib (type 3 or 4), or with --compress-method
lzvn (7 or 8) or lzfse (11 or 12).

Facts come from Apple's TN1150 "HFS Plus Volume Format" (structures, key order,
decomposition exceptions, hard and symbolic links, reserved areas); from xnu's
hfs_format.h, hfs_xattr.c, hfs_link.c and hfs_vfsutils.c (hard-link chain fields, the
3802-byte inline attribute limit, attribute key order, folder counts on HFSX, the
private folders); from libfshfs's format notes and The Sleuth Kit's reader (decmpfs
and the compressed resource fork); and from a volume made by macOS (dfvfs
test_data/hfsplus.raw): header-node offsets, lastMountedVersion '10.0', attribute
bit 31, kHFSHasDateAddedMask/date_added, linkCount 1 in 'special'.  The case-folding
table is not copied: fold() rebuilds it from Unicode 3.2 data plus _NOT_FOLDED, and
matches Apple's gLowerCaseTable on all 65536 code units.

Exit status 2 with a one-line message when the tree cannot be written.
"""
import argparse
import json
import os
import stat
import struct
import sys
import unicodedata
import zlib

HFS_EPOCH = 2082844800              # seconds from 1904-01-01 to 1970-01-01 (UTC)
U32 = 0xFFFFFFFF
FOLDER_REC, FILE_REC, FOLDER_THREAD, FILE_THREAD = 1, 2, 3, 4
# catalog record flags (TN1150 and xnu hfs_format.h)
THREAD_EXISTS, HAS_ATTRS, HAS_FOLDER_COUNT, HAS_LINK_CHAIN, HAS_DATE_ADDED = 0x2, 0x4, 0x10, 0x20, 0x80
UF_IMMUTABLE, UF_COMPRESSED = 0x02, 0x20
VOL_UNMOUNTED, VOL_UNUSED_NODES_ZEROED = 0x100, 0x80000000   # bit 8; bit 31 as macOS sets it
PRIVATE_DATA = '\0\0\0\0HFS+ Private Data'
PRIVATE_DIRS = '.HFS+ Private Directory Data\r'
INODE_KEY = '\0iNode/'              # --ids key of an indirect node: prefix + its first path
EXT_NODE, ATTR_NODE = 4096, 8192    # extents / attributes node sizes as Mac OS X uses
FRAGMENTS = 28                      # extents of a --fragment file (8 in the record, 20 overflow)
MAX_INLINE_ATTR = ((ATTR_NODE - 14 - 3 * 2) // 2 - 268 - 16) & ~1      # 3802, as xnu computes it
CHUNK = 65536                       # decmpfs compression unit


class Fail(Exception):
    """A condition that makes the image impossible; reported in one line, exit 2."""


# ---------------------------------------------------------------- names ----------

def _nfd(text):
    """Canonical decomposition as Mac OS X 10.3+ stores names (Unicode 3.2), leaving
    U+2000-U+2FFF, U+F900-U+FAFF and U+2F800-U+2FAFF as they are (TN1150)."""
    if text.isascii():
        return text
    out, run = [], []
    for ch in text:
        o = ord(ch)
        if 0x2000 <= o <= 0x2FFF or 0xF900 <= o <= 0xFAFF or 0x2F800 <= o <= 0x2FAFF:
            out += [unicodedata.ucd_3_2_0.normalize('NFD', ''.join(run)), ch]
            run = []
        else:
            run.append(ch)
    out.append(unicodedata.ucd_3_2_0.normalize('NFD', ''.join(run)))
    return ''.join(out)


def hfs_name(posix_name, where):
    """The catalog name for a POSIX name: decomposed, ':' stored as '/' (as macOS does)."""
    try:
        posix_name.encode('utf-8')
    except UnicodeEncodeError:
        raise Fail(f'{where}: name is not valid UTF-8')
    name = _nfd(posix_name).replace(':', '/')
    if len(name.encode('utf-16-be')) // 2 > 255:
        raise Fail(f'{where}: name is longer than 255 UTF-16 units once decomposed')
    return name


def units(name):
    u = name.encode('utf-16-be')
    return struct.unpack(f'>{len(u) // 2}H', u)


# FastUnicodeCompare folding (TN1150).  Apple's table maps u+0000 to 0xFFFF, the
# ignorable format characters below to 0 (skipped), and within the high bytes
# _FOLD_PAGES maps a character without canonical decomposition to its simple
# lowercase letter; _NOT_FOLDED lists the letters the table leaves alone although
# Unicode pairs them today.  Georgian capitals fold to Mkhedruli (U+10D0...).
_IGNORABLE = set(range(0x200C, 0x2010)) | set(range(0x202A, 0x202F)) | set(range(0x206A, 0x2070)) | {0xFEFF}
_FOLD_PAGES = {0x00, 0x01, 0x03, 0x04, 0x05, 0x10, 0x20, 0x21, 0xFE, 0xFF}
_NOT_FOLDED = ({0x1A6, 0x1F6, 0x1F7, 0x3D8, 0x3DA, 0x3DC, 0x3DE, 0x3E0, 0x3F4, 0x48A, 0x48C, 0x48E,
                0x4C5, 0x4C9, 0x4CD, 0x4D4, 0x4D8, 0x4E0, 0x4E8} | set(range(0x500, 0x510, 2)))
_fold_cache = {}


def fold(u):
    if u not in _fold_cache:
        ucd, ch, r = unicodedata.ucd_3_2_0, chr(u), u
        if u == 0:
            r = 0xFFFF
        elif u in _IGNORABLE:
            r = 0
        elif 0x10A0 <= u <= 0x10C5:
            r = u + 0x30
        elif (u >> 8) in _FOLD_PAGES and u not in _NOT_FOLDED and not (0xD800 <= u < 0xE000):
            dec, low = ucd.decomposition(ch), ch.lower()
            if (not dec or dec.startswith('<')) and len(low) == 1 and low != ch \
                    and ucd.category(ch) != 'Cn' and ucd.category(low) != 'Cn':
                r = ord(low)
        _fold_cache[u] = r
    return _fold_cache[u]


def name_order(name, binary):
    """Sort key of a catalog nodeName: its UTF-16 code units (HFSX, kHFSBinaryCompare) or
    folded code units with ignorables dropped (HFS+, kHFSCaseFolding), as big-endian
    bytes, which compare like the unit sequences (a prefix sorts first)."""
    if binary:
        return name.encode('utf-16-be')
    if name.isascii() and '\0' not in name:                  # folding ASCII is lower-casing
        return name.lower().encode('utf-16-be')
    folded = [f for f in map(fold, units(name)) if f]
    return struct.pack(f'>{len(folded)}H', *folded)


def text_encoding(name):
    """Mac text encoding hint for a name (TN1150 numbering): MacRoman when it fits."""
    s = unicodedata.normalize('NFC', name.replace('/', ':'))
    try:
        s.encode('mac_roman')
        return 0
    except UnicodeEncodeError:
        pass
    for lo, hi, enc in ((0x3040, 0x30FF, 1), (0x4E00, 0x9FFF, 1), (0x1100, 0x11FF, 3), (0xAC00, 0xD7A3, 3),
                        (0x0600, 0x06FF, 4), (0x0590, 0x05FF, 5), (0x0370, 0x03FF, 6), (0x0400, 0x04FF, 7),
                        (0x0E00, 0x0E7F, 21), (0x0100, 0x017F, 29)):
        if any(lo <= ord(c) <= hi for c in s):
            return enc
    return 0


# ---------------------------------------------------------------- source tree ----

class Entry:
    """One catalog object: 'dir', 'file', 'symlink', 'special', 'link' (hard-link
    name) or 'inode' (indirect node holding a hard-linked file's content)."""
    __slots__ = ('rel', 'name', 'kind', 'st', 'parent', 'path', 'children', 'cnid', 'deleted', 'group', 'links',
                 'rsrc_path', 'xattrs', 'compress', 'fragment', 'data', 'rsrc', 'data_len', 'rsrc_len',
                 'data_ext', 'rsrc_ext', 'data_plan', 'rsrc_plan', 'decmpfs', 'order', 'enc')

    def __init__(self, rel, name, kind, st, parent, path=None):
        self.rel, self.name, self.kind, self.st, self.parent, self.path = rel, name, kind, st, parent, path
        self.children, self.cnid, self.deleted, self.group, self.links = [], 0, False, None, []
        self.rsrc_path, self.xattrs, self.compress, self.fragment = None, [], False, False
        self.data = self.rsrc = None                  # bytes, or None: read when placed
        self.data_len = self.rsrc_len = 0
        self.order = self.enc = None                   # cached sort key and text encoding
        self.data_ext, self.rsrc_ext, self.data_plan, self.rsrc_plan = [], [], [], []
        self.decmpfs = None


def read_xattrs(path, where):
    """Source user.NAME extended attributes, as (NAME, value) inline attributes."""
    out = []
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return out
    for n in sorted(names):
        if n.startswith('user.'):
            value = os.getxattr(path, n, follow_symlinks=False)
            if len(value) > MAX_INLINE_ATTR:
                raise Fail(f'{where}: attribute {n} is {len(value)} bytes, inline limit {MAX_INLINE_ATTR}')
            if len(n[5:].encode('utf-16-be')) > 254:
                raise Fail(f'{where}: attribute name {n} too long')
            out.append((n[5:], value))
    return out


def scan(src, label, binary):
    """Walk SRC_DIR into Entry objects, children sorted by name (path order)."""
    root = Entry('', label, 'dir', os.stat(src), None, src)
    root.xattrs = read_xattrs(src, '/')
    stack = [root]
    while stack:
        d = stack.pop()
        names = sorted(os.listdir(d.path))
        present = set(names)
        seen = {}
        for n in names:
            p, rel = os.path.join(d.path, n), (d.rel + '/' + n).lstrip('/')
            st = os.lstat(p)
            base = n[:-5]
            if n.endswith('.rsrc') and base in present and stat.S_ISREG(st.st_mode) \
                    and stat.S_ISREG(os.lstat(os.path.join(d.path, base)).st_mode):
                continue                                     # becomes base's resource fork
            kind = ('dir' if stat.S_ISDIR(st.st_mode) else 'file' if stat.S_ISREG(st.st_mode)
                    else 'symlink' if stat.S_ISLNK(st.st_mode) else 'special')
            e = Entry(rel, hfs_name(n, rel), kind, st, d, p)
            if d is root and e.name in (PRIVATE_DATA, PRIVATE_DIRS):
                raise Fail(f'{rel}: name reserved for the HFS+ private folders')
            order = e.order = name_order(e.name, binary)
            if order in seen:
                raise Fail(f'{rel}: same catalog name as {seen[order]} on this volume')
            seen[order] = rel
            if kind == 'file' and n + '.rsrc' in present and stat.S_ISREG(os.lstat(p + '.rsrc').st_mode):
                e.rsrc_path = p + '.rsrc'
            if kind in ('dir', 'file'):
                e.xattrs = read_xattrs(p, rel)
            d.children.append(e)
            if kind == 'dir':
                stack.append(e)
    return root


def walk(entry):
    """Pre-order, children in name order: the path order CNIDs follow."""
    stack = [entry]
    while stack:
        e = stack.pop()
        yield e
        stack.extend(reversed(e.children))


def make_hard_links(root, private):
    """Files with st_nlink > 1 seen under several names become one indirect node
    iNode<CNID> in the private folder plus one 'hlnk' file per name (TN1150)."""
    groups = {}
    for e in walk(root):
        if e.kind == 'file' and e.st.st_nlink > 1:
            groups.setdefault((e.st.st_dev, e.st.st_ino), []).append(e)
    inodes = []
    for links in groups.values():
        if len(links) < 2:
            continue
        first = links[0]
        inode = Entry(INODE_KEY + first.rel, '', 'inode', first.st, private, first.path)
        inode.rsrc_path, inode.xattrs, inode.links = first.rsrc_path, first.xattrs, links
        for e in links:
            e.kind, e.group, e.xattrs, e.rsrc_path = 'link', inode, [], None
        inodes.append(inode)
    return inodes


# The --ids file also keeps the volume id, so that a rebuilt image is the same volume (not a path: no `/` start).
VOLUME_ID_KEY = '//volume-id'


def kept_volume_id(ids_path):
    """The volume id an --ids file keeps, as (high, low) 32-bit words, or None."""
    if ids_path and os.path.exists(ids_path):
        with open(ids_path, encoding='utf-8') as f:
            v = json.load(f).get(VOLUME_ID_KEY)
        if isinstance(v, int) and 0 <= v < 1 << 64:
            return v >> 32, v & 0xFFFFFFFF
    return None


def assign_cnids(ordered_keys, ids_path):
    """CNIDs from 16 in path order; --ids keeps the ids of paths it already maps and
    gives new paths ids above its maximum.  Returns (key -> cnid, mapping to save)."""
    old = {}
    if ids_path and os.path.exists(ids_path):
        with open(ids_path, encoding='utf-8') as f:
            old = json.load(f)
        old.pop(VOLUME_ID_KEY, None)
        if not all(isinstance(v, int) and 16 <= v <= U32 for v in old.values()) or \
                len(set(old.values())) != len(old):
            raise Fail(f'{ids_path}: CNIDs must be distinct integers >= 16')
    nxt = max(list(old.values()) + [15]) + 1
    ids = {}
    for k in ordered_keys:
        if k in old:
            ids[k] = old[k]
        else:
            ids[k], nxt = nxt, nxt + 1
            if nxt > U32:
                raise Fail('out of catalog node IDs')
    return ids, dict(old, **ids)


# ---------------------------------------------------------------- allocation -----

class Volume:
    """The image file and its allocation bitmap (TN1150 'Allocation File')."""

    def __init__(self, f, size, bs):
        self.f, self.bs = f, bs
        self.total = size // bs
        self.bits = bytearray((self.total + 7) // 8)
        self.next = 0
        # the last block(s) holding the alternate header and the last 512 bytes stay used
        self.tail = min((size - 1024) // bs, self.total - 1)

    def mark(self, start, count, used=True):
        for b in range(start, start + count):
            if used:
                self.bits[b >> 3] |= 0x80 >> (b & 7)
            else:
                self.bits[b >> 3] &= ~(0x80 >> (b & 7)) & 0xFF

    def take(self, count, gap=0):
        start = self.next + gap
        if start + count > self.tail:
            raise Fail(f'tree does not fit: needs more than the {self.total} blocks of {self.bs} bytes')
        self.mark(start, count)
        self.next = start + count
        return start

    def write(self, offset, data):
        if data:
            self.f.seek(offset)
            self.f.write(data)

    def used(self):
        return sum(bin(b).count('1') for b in self.bits)


def plan(nbytes, bs, fragment):
    """Block counts of a fork's extents: one extent, or FRAGMENTS pieces."""
    n = -(-nbytes // bs)
    if n == 0:
        return []
    if not fragment:
        return [n]
    k = min(n, FRAGMENTS)
    return [n // k + (1 if i < n % k else 0) for i in range(k)]


def place(vol, data, sizes, fragment):
    """Write a fork's bytes into newly taken blocks; a fragmented fork leaves a free
    block between its extents.  Returns the extents [(startBlock, blockCount)]."""
    ext, pos = [], 0
    for i, n in enumerate(sizes):
        start = vol.take(n, gap=1 if fragment and i else 0)
        vol.write(start * vol.bs, data[pos * vol.bs:(pos + n) * vol.bs])
        ext.append((start, n))
        pos += n
    return ext


def fork_data(logical, extents, clump=0):
    """HFSPlusForkData: logicalSize, clumpSize, totalBlocks and the first 8 extents."""
    rec = b''.join(struct.pack('>II', s, c) for s, c in extents[:8]).ljust(64, b'\0')
    return struct.pack('>QII', logical, clump, sum(c for _, c in extents)) + rec


def overflow_records(cnid, fork_type, extents):
    """Extents overflow records (key fileID/forkType/startBlock) for extents 9 onward."""
    out, start = [], sum(c for _, c in extents[:8])
    for i in range(8, len(extents), 8):
        chunk = extents[i:i + 8]
        key = struct.pack('>HBBII', 10, fork_type, 0, cnid, start)
        data = b''.join(struct.pack('>II', *x) for x in chunk).ljust(64, b'\0')
        out.append(((cnid, fork_type, start), key, key + data))
        start += sum(c for _, c in chunk)
    return out


# ---------------------------------------------------------------- B-trees --------

def btree(records, ns, max_key, attributes, compare_type, bs):
    """Lay out a B-tree file from leaf records [(key, key + data, deleted)] sorted by key.

    Leaves are filled in key order; index levels (first key of each child + its node
    number) are added until one root remains; map nodes follow when the header's map
    record cannot cover every node.  A deleted record is kept at the end of its leaf,
    past numRecords: the node looks as a B-tree delete leaves it (count and offset
    table shrunk, the record's bytes in the free space).  Returns (bytes, info)."""
    leaves, cur, used = [], [], 16                    # used: descriptor + free-space offset
    for i, (key, data, dead) in enumerate(records):
        rec = data + (b'\0' if len(data) % 2 else b'')  # data: key + record; keys have even length
        if 16 + len(rec) + 2 > ns:
            raise Fail('a B-tree record does not fit in a node')
        if dead and not cur:
            raise Fail('cannot delete the first record of a B-tree')
        if cur and used + len(rec) + 2 > ns:          # full: a deleted record takes its live one along
            k = max(j for j, r in enumerate(cur) if not r[2]) if dead else len(cur)
            leaves.append(cur[:k])
            cur = cur[k:]
            used = 16 + sum(len(r[1]) + 2 for r in cur)
            if not leaves[-1] or used + len(rec) + 2 > ns:
                raise Fail('deleted records do not fit in one node')
        cur.append((key, rec, dead))
        used += len(rec) + 2
        if dead and (i + 1 == len(records) or not records[i + 1][2]):
            leaves.append(cur)                        # the deleted bytes end the leaf
            cur, used = [], 16
    if cur:
        leaves.append(cur)
    levels = [[(1 + i, lf) for i, lf in enumerate(leaves)]]
    count = 1 + len(leaves)
    while len(levels[-1]) > 1:
        cur, used, level = [], 16, []
        for no, recs in levels[-1]:
            rec = recs[0][0] + struct.pack('>I', no)
            if cur and used + len(rec) + 2 > ns:
                level.append(cur)
                cur, used = [], 16
            cur.append((recs[0][0], rec, False))
            used += len(rec) + 2
        level.append(cur)
        levels.append([(count + i, recs) for i, recs in enumerate(level)])
        count += len(level)
    maps = 0
    while True:                                       # total nodes in whole allocation blocks
        total = -(-((count + maps) * ns) // max(bs, ns)) * max(bs, ns) // ns
        if total <= (ns - 256) * 8 + maps * (ns - 20) * 8:
            break
        maps += 1
    out = bytearray(total * ns)
    for height, level in enumerate(levels, 1):
        for i, (no, recs) in enumerate(level):
            node = memoryview(out)[no * ns:(no + 1) * ns]
            flink = level[i + 1][0] if i + 1 < len(level) else 0
            blink = level[i - 1][0] if i else 0
            live = sum(1 for r in recs if not r[2])
            struct.pack_into('>IIbBHH', node, 0, flink, blink, -1 if height == 1 else 0, height, live, 0)
            off = 14
            for j, (_, rec, _) in enumerate(recs):    # offsets of deleted records stay, stale
                node[off:off + len(rec)] = rec
                struct.pack_into('>H', node, ns - 2 * (j + 1), off)
                off += len(rec)
            struct.pack_into('>H', node, ns - 2 * (len(recs) + 1), off)
    bitmap = bytearray((ns - 256) + maps * (ns - 20))
    for n in range(count + maps):                     # one bit per used node, MSB first
        bitmap[n >> 3] |= 0x80 >> (n & 7)
    out[248:ns - 8] = bitmap[:ns - 256]
    for m in range(maps):                             # map nodes: one record of ns - 20 bytes
        no = count + m
        struct.pack_into('>IIbBHH', out, no * ns, no + 1 if m + 1 < maps else 0, 0, 2, 0, 1, 0)
        at = ns - 256 + m * (ns - 20)
        out[no * ns + 14:no * ns + ns - 6] = bitmap[at:at + ns - 20]
        struct.pack_into('>HH', out, no * ns + ns - 4, ns - 6, 14)
    leaf_records = sum(1 for r in records if not r[2])
    struct.pack_into('>IIbBHH', out, 0, count if maps else 0, 0, 1, 0, 3, 0)
    struct.pack_into('>HIIIIHHIIHIBBI', out, 14, len(levels) if leaves else 0, levels[-1][0][0] if leaves else 0,
                     leaf_records, 1 if leaves else 0, len(leaves), ns, max_key, total, total - count - maps,
                     0, total * ns, 0, compare_type, attributes)      # clumpSize: the fork's size
    struct.pack_into('>4H', out, ns - 8, ns - 8, 248, 120, 14)
    return out, {'depth': len(levels) if leaves else 0, 'leaves': len(leaves), 'maps': maps,
                        'index': count - 1 - len(leaves), 'records': leaf_records}


# ---------------------------------------------------------------- catalog records -

def cat_key(parent, name):
    """HFSPlusCatalogKey: keyLength, parentID, HFSUniStr255 nodeName."""
    u = name.encode('utf-16-be')
    return struct.pack('>HIH', 6 + len(u), parent, len(u) // 2) + u


def bsd_info(owner, group, owner_flags, mode, special):
    """HFSPlusBSDInfo: ownerID, groupID, adminFlags, ownerFlags, fileMode, special."""
    return struct.pack('>IIBBHI', owner & U32, group & U32, 0, owner_flags, mode & 0xFFFF, special & U32)


def dates(st):
    """[create, contentMod, attributeMod, access, backup] in seconds since 1904 (UTC);
    create is the birth time when the platform reports one, else the modification time."""
    times = (getattr(st, 'st_birthtime', st.st_mtime), st.st_mtime, st.st_ctime, st.st_atime)
    return [max(0, min(U32, int(t) + HFS_EPOCH)) for t in times] + [0]


def added_info(st):
    """Extended Finder info carrying date_added (Unix seconds), for kHFSHasDateAddedMask."""
    return struct.pack('>4xI8x', max(0, min(U32, int(getattr(st, 'st_birthtime', st.st_mtime)))))


def thread(kind, e, parent):
    """Thread record keyed (CNID, empty name) pointing back to (parentID, name)."""
    u = e.name.encode('utf-16-be')
    key = cat_key(e.cnid, '')
    return (e.cnid, b''), key, key + struct.pack('>hHIH', kind, 0, parent, len(u) // 2) + u, e.deleted


def folder_records(e, v):
    """HFSPlusCatalogFolder (88 bytes) and its thread.  HFSX folders carry
    kHFSHasFolderCountMask with the sub-folder count in the last word, as xnu keeps it."""
    parent = e.parent.cnid if e.parent else 1
    when, flags, special = dates(e.st), HAS_ATTRS if e.xattrs else 0, 1
    owner, group, owner_flags, mode = e.st.st_uid, e.st.st_gid, 0, e.st.st_mode
    user_info, finder_info = bytes(16), added_info(e.st)
    if e.rel in (PRIVATE_DATA, PRIVATE_DIRS):          # as xnu's hfs_privatedir_init makes them
        flags, owner, group, owner_flags = HAS_FOLDER_COUNT, 0, 0, UF_IMMUTABLE
        mode = 0o040000 if e.rel == PRIVATE_DATA else 0o041555
        when, finder_info = [v.date] * 4 + [0], bytes(16)
        user_info = struct.pack('>8xHhhH', 0x5000, 16384, 16384, 0)   # invisible + name locked
    elif e.parent is None:                              # the root folder
        special, finder_info = 0, bytes(16)
    else:
        flags |= HAS_DATE_ADDED
    if v.binary:
        flags |= HAS_FOLDER_COUNT
    valence = sum(1 for c in e.children if not c.deleted)
    subfolders = sum(1 for c in e.children if c.kind == 'dir') if flags & HAS_FOLDER_COUNT else 0
    rec = (struct.pack('>hHII5I', FOLDER_REC, flags, valence, e.cnid, *when)
           + bsd_info(owner, group, owner_flags, mode, special) + user_info + finder_info
           + struct.pack('>II', v.encoding(e), subfolders))
    key = cat_key(parent, e.name)
    return [((parent, v.order(e)), key, key + rec, False), thread(FOLDER_THREAD, e, parent)]


def file_records(e, v):
    """HFSPlusCatalogFile (248 bytes) and its thread, for plain files, symlinks
    ('slnk'/'rhap'), devices (rdev in special), indirect nodes iNode<N> (link count in
    special, first link in reserved1) and hard-link files ('hlnk'/'hfs+', iNodeNum in
    special, previous/next link in ownerID/groupID; xnu's createindirectlink)."""
    parent, when, st = e.parent.cnid, dates(e.st), e.st
    flags = THREAD_EXISTS | HAS_DATE_ADDED | (HAS_ATTRS if e.xattrs or e.decmpfs else 0)
    owner, group, mode, owner_flags, special = st.st_uid, st.st_gid, st.st_mode, 0, 1
    user_info, reserved1 = bytes(16), 0
    if e.kind == 'symlink':
        user_info = struct.pack('>4s4s8x', b'slnk', b'rhap')
    elif e.kind == 'special' and (stat.S_ISCHR(mode) or stat.S_ISBLK(mode)):
        special = (os.major(st.st_rdev) << 24) | (os.minor(st.st_rdev) & 0xFFFFFF)
    elif e.kind == 'inode':
        flags |= HAS_LINK_CHAIN
        special, reserved1 = len(e.links), e.links[0].cnid
    elif e.kind == 'link':
        chain = [x.cnid for x in e.group.links]
        k = chain.index(e.cnid)
        flags |= HAS_LINK_CHAIN
        owner, group = (chain[k - 1] if k else 0), (chain[k + 1] if k + 1 < len(chain) else 0)
        mode, owner_flags, special, when[0] = 0o100444, UF_IMMUTABLE, e.group.cnid, v.date
        user_info = struct.pack('>4s4sH6x', b'hlnk', b'hfs+', 0x0100)     # kHasBeenInited
    if e.decmpfs:
        owner_flags |= UF_COMPRESSED
    rec = (struct.pack('>hHII5I', FILE_REC, flags, reserved1, e.cnid, *when)
           + bsd_info(owner, group, owner_flags, mode, special) + user_info + added_info(st)
           + struct.pack('>II', 0 if e.kind == 'inode' else v.encoding(e), 0)
           + fork_data(e.data_len, e.data_ext) + fork_data(e.rsrc_len, e.rsrc_ext))
    key = cat_key(parent, e.name)
    return [((parent, v.order(e)), key, key + rec, e.deleted), thread(FILE_THREAD, e, parent)]


def attr_record(cnid, name, value):
    """Attributes B-tree key (pad, fileID, startBlock 0, name; ordered by fileID, then
    name as UTF-16 code units, as xnu's hfs_attrkeycompare) and inline-data record 0x10."""
    u = name.encode('utf-16-be')
    key = struct.pack('>HHIIH', 12 + len(u), 0, cnid, 0, len(u) // 2) + u
    return (cnid, u, 0), key, key + struct.pack('>IIII', 0x10, 0, 0, len(value)) + value


def lzvn_literals(raw):
    """An LZVN stream of literals only (opcode 0xE0 with a length byte, 0xE1-0xEF for up to 15), then the
    end-of-stream opcode 0x06 and its seven zero bytes: valid LZVN, as Apple's decoder reads it."""
    out = bytearray()
    for i in range(0, len(raw), 271):
        c = raw[i:i + 271]
        out += (bytes([0xE0 | len(c)]) if len(c) < 16 else bytes([0xE0, len(c) - 16])) + c
    return bytes(out) + b'\x06' + bytes(7)


def lzfse_stored(raw):
    """An LZFSE frame of one uncompressed block ('bvx-', its length, the bytes) and the end ('bvx$')."""
    return b'bvx-' + struct.pack('<I', len(raw)) + raw + b'bvx$'


def decmpfs(data, method='zlib'):
    """com.apple.decmpfs value (+ resource fork): 'fpmc' LE magic, type, uncompressed size.
    zlib: inline (type 3) when the file is one 64 KiB unit and fits the attribute, else 64 KiB units in a
    resource fork (type 4): 256-byte header, block table (offset, size) from the count field, blocks,
    50-byte resource map. lzvn (types 7, 8) and lzfse (11, 12): inline likewise, else the resource fork holds
    the blocks' offsets from its start (u32 LE, one more than the blocks) and the blocks; the streams are
    literal-only LZVN and stored LZFSE blocks (what they decode to is what matters to a reader); a unit
    whose stream would pass 64 KiB + 1 bytes (TSK's limit) is kept stored after its marker byte (0x06, 0xFF)."""
    def header(kind):
        return struct.pack('<IIQ', 0x636D7066, kind, len(data))

    if method in ('lzvn', 'lzfse'):
        marker = b'\x06' if method == 'lzvn' else b'\xff'

        def encode(raw):                                # a unit longer than 64 KiB + 1 is kept stored
            packed = lzvn_literals(raw) if method == 'lzvn' else lzfse_stored(raw)
            return packed if len(packed) <= CHUNK + 1 else marker + raw
        inline_kind, fork_kind = (7, 8) if method == 'lzvn' else (11, 12)
        packed = encode(data)
        if len(data) <= CHUNK and 16 + len(packed) <= MAX_INLINE_ATTR:
            return header(inline_kind) + packed, b''
        blocks = [encode(data[i:i + CHUNK]) for i in range(0, len(data), CHUNK)]
        off = 4 * (len(blocks) + 1)
        offsets = [off]
        for b in blocks:
            off += len(b)
            offsets.append(off)
        return header(fork_kind), struct.pack(f'<{len(offsets)}I', *offsets) + b''.join(blocks)

    def squeeze(raw):                                   # 0xFF marks a stored, uncompressed unit
        z = zlib.compress(raw, 9)
        return z if len(z) < len(raw) else b'\xff' + raw
    inline = squeeze(data)
    if len(data) <= CHUNK and 16 + len(inline) <= MAX_INLINE_ATTR:
        return header(3) + inline, b''
    blocks = [squeeze(data[i:i + CHUNK]) for i in range(0, len(data), CHUNK)]
    table, off = b'', 4 + 8 * len(blocks)
    for b in blocks:
        table += struct.pack('<II', off, len(b))
        off += len(b)
    res = struct.pack('<I', len(blocks)) + table + b''.join(blocks)
    head = struct.pack('>IIII', 256, 256 + 4 + len(res), 4 + len(res), 50)
    rmap = head + bytes(8) + struct.pack('>HHH4sHHHHB3xI', 28, 50, 0, b'cmpf', 0, 10, 1, 0xFFFF, 0, 0)
    return header(4), head.ljust(256, b'\0') + struct.pack('>I', len(res)) + res + rmap


class Tree:
    """The scanned tree plus what the record builders share."""

    def __init__(self, root, binary):
        self.root, self.binary, self.date, self.encodings = root, binary, dates(root.st)[0], {0}

    def encoding(self, e):
        if e.enc is None:
            e.enc = text_encoding(e.name)
            self.encodings.add({140: 49, 152: 48}.get(e.enc, e.enc))    # TN1150's encodingsBitmap bits
        return e.enc

    def order(self, e):
        if e.order is None:
            e.order = name_order(e.name, self.binary)
        return e.order

    def btrees(self, bs, ns):
        """Extents, attributes and catalog B-tree files from the entries' current extents."""
        cat, ext, att = [], [], []
        for e in walk(self.root):
            cat += folder_records(e, self) if e.kind == 'dir' else file_records(e, self)
            att += [attr_record(e.cnid, n, v) for n, v in e.xattrs] if not e.deleted else []
            if e.kind in ('file', 'symlink', 'inode') and not e.deleted:
                ext += overflow_records(e.cnid, 0, e.data_ext) + overflow_records(e.cnid, 0xFF, e.rsrc_ext)
                att += [attr_record(e.cnid, 'com.apple.decmpfs', e.decmpfs)] if e.decmpfs else []
        for recs in (cat, ext, att):
            recs.sort(key=lambda r: r[0])
            if any(a[0] == b[0] for a, b in zip(recs, recs[1:])):
                raise Fail('two B-tree records with the same key')
        return (btree([(k, r, False) for _, k, r in ext], EXT_NODE, 10, 0x2, 0, bs),
                btree([(k, r, False) for _, k, r in att], ATTR_NODE, 266, 0x6, 0, bs),
                btree([r[1:] for r in cat], ns, 516, 0x6, 0xBC if self.binary else 0xCF, bs))


# ---------------------------------------------------------------- the volume -----

def parse_size(text):
    mult = {'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}
    t = text.strip().upper().rstrip('B').rstrip('I')
    try:
        return int(t[:-1]) * mult[t[-1]] if t and t[-1] in mult else int(t)
    except ValueError:
        raise Fail(f'bad size {text!r}')


def mark_options(root, args):
    """Flag the --compress/--fragment/--deleted paths (relative to SRC_DIR)."""
    by_rel = {e.rel: e for e in walk(root)}
    for opt in ('compress', 'fragment', 'deleted'):
        for p in getattr(args, opt):
            rel = os.path.relpath(p, args.src) if os.path.isabs(p) else p
            e = by_rel.get(os.path.normpath(rel).replace(os.sep, '/'))
            if e is None or e.kind not in ('file', 'symlink') or (opt != 'deleted' and e.kind != 'file'):
                raise Fail(f'--{opt} {p}: not a regular file of the tree')
            setattr(e, opt, args.compress_method if opt == 'compress' else True)


def read(path, size=None):
    with open(path, 'rb') as f:
        data = f.read()
    if size is not None and len(data) != size:
        raise Fail(f'{path}: changed while the image was written')
    return data


def load(e, bs):
    """Size a file's forks (compressing when asked: that needs the bytes now; other
    data is read when placed) and plan their extents."""
    if e.kind == 'symlink':
        e.data = os.readlink(e.path).encode('utf-8', 'surrogateescape')
    elif e.compress:
        if e.rsrc_path or any(n == 'com.apple.decmpfs' for n, _ in e.xattrs):
            raise Fail(f'--compress {e.rel}: file already has a resource fork or decmpfs attribute')
        e.decmpfs, e.rsrc = decmpfs(read(e.path), e.compress)
        e.data = b''
    e.data_len = len(e.data) if e.data is not None else os.path.getsize(e.path)
    e.rsrc_len = len(e.rsrc) if e.rsrc is not None else os.path.getsize(e.rsrc_path) if e.rsrc_path else 0
    e.data_plan, e.rsrc_plan = plan(e.data_len, bs, e.fragment), plan(e.rsrc_len, bs, e.fragment)
    e.data_ext, e.rsrc_ext = [(0, n) for n in e.data_plan], [(0, n) for n in e.rsrc_plan]


def volume_header(args, t, vol, files, folders, next_cnid, forks):
    """HFSPlusVolumeHeader (512 bytes).  createDate is local time by the spec; UTC here."""
    modify = max(dates(e.st)[1] for e in walk(t.root))
    label = args.label.encode('utf-8', 'surrogateescape')
    volume_id = kept_volume_id(args.ids) or \
        (zlib.crc32(label + struct.pack('>I', t.date)), zlib.crc32(struct.pack('>I', t.date) + label))
    args.volume_id = volume_id
    return struct.pack('>2sHI4sI4I2I3I4IIQ8I', b'HX' if t.binary else b'H+', 5 if t.binary else 4,
                       VOL_UNMOUNTED | VOL_UNUSED_NODES_ZEROED, b'10.0', 0,      # no journal
                       t.date, max(modify, t.date), 0, t.date,            # create, modify, backup, checked
                       files, folders, vol.bs, vol.total, vol.total - vol.used(), vol.next, CHUNK, CHUNK,
                       next_cnid, 1, sum(1 << b for b in t.encodings), 0, 0, 0, 0, 0, 0,
                       *volume_id) + b''.join(forks)


def build(args):
    bs, ns, size, binary = args.block_size, args.node_size, parse_size(args.size), args.hfsx
    if bs < 512 or bs & (bs - 1) or bs > 1 << 20:
        raise Fail('--block-size must be a power of two from 512 to 1 MiB')
    if ns < 4096 or ns > 32768 or ns & (ns - 1):
        raise Fail('--node-size must be a power of two from 4096 to 32768')
    if size % 512 or size < 64 * bs or size < 1 << 20 or size // bs > U32:
        raise Fail('--size must be a multiple of 512, at least 1 MiB and 64 blocks')
    if not os.path.isdir(args.src):
        raise Fail(f'{args.src}: not a folder')
    root = scan(args.src, hfs_name(args.label, '--label'), binary)
    mark_options(root, args)
    private = Entry(PRIVATE_DATA, PRIVATE_DATA, 'dir', root.st, root)
    private_dirs = Entry(PRIVATE_DIRS, PRIVATE_DIRS, 'dir', root.st, root)
    inodes = make_hard_links(root, private)
    for i in inodes:
        if any(e.deleted for e in i.links):
            raise Fail(f'--deleted {i.links[0].rel}: deleting a hard-link name is not supported')
        i.compress = next((e.compress for e in i.links if e.compress), False)
        i.fragment = any(e.fragment for e in i.links)
    # CNIDs: 16 and 17 for the private folders made at format time, then paths in order
    keys = [PRIVATE_DATA, PRIVATE_DIRS]
    for e in list(walk(root))[1:]:
        keys += [e.group.rel] if e.kind == 'link' and e is e.group.links[0] else []
        keys.append(e.rel)
    ids, mapping = assign_cnids(keys, args.ids)
    root.cnid = 2
    for e in list(walk(root))[1:] + inodes + [private, private_dirs]:
        e.cnid = ids[e.rel]
    for i in inodes:
        i.name = f'iNode{i.cnid}'
    root.children += [private, private_dirs]
    private.children = inodes
    holders = [e for e in walk(root) if e.kind in ('file', 'symlink', 'inode')]
    for e in holders:
        load(e, bs)
    t = Tree(root, binary)
    sizes = [len(blob) for blob, _ in t.btrees(bs, ns)]        # dry run: only sizes matter
    with open(args.out, 'wb') as f:
        try:
            f.truncate(size)
            vol = Volume(f, size, bs)
            vol.take(-(-1536 // bs))                            # boot blocks + volume header
            alloc_len = -(-len(vol.bits) // bs) * bs
            starts = [vol.take(alloc_len // bs)] + [vol.take(n // bs) for n in sizes]
            for e in holders:
                data = e.data if e.data is not None else read(e.path, e.data_len)
                e.data_ext = place(vol, data, e.data_plan, e.fragment)
                rsrc = e.rsrc if e.rsrc is not None else read(e.rsrc_path, e.rsrc_len) if e.rsrc_path else b''
                e.rsrc_ext = place(vol, rsrc, e.rsrc_plan, e.fragment)
            vol.mark(vol.tail, vol.total - vol.tail)            # alternate header + last 512 bytes
            for e in holders:
                if e.deleted:                                   # a deleted file's blocks are free again
                    for s, c in e.data_ext + e.rsrc_ext:
                        vol.mark(s, c, used=False)
            trees = t.btrees(bs, ns)
            assert [len(blob) for blob, _ in trees] == sizes
            blobs = [bytes(vol.bits).ljust(alloc_len, b'\0')] + [blob for blob, _ in trees]
            for start, blob in zip(starts, blobs):
                vol.write(start * bs, blob)
            alloc, ext, att, cat = [fork_data(len(b), [(s, len(b) // bs)], len(b)) for s, b in zip(starts, blobs)]
            files = sum(1 for e in walk(root) if e.kind != 'dir' and not e.deleted)
            folders = sum(1 for e in walk(root) if e.kind == 'dir') - 1
            header = volume_header(args, t, vol, files, folders, max(mapping.values()) + 1,
                                   [alloc, ext, cat, att, fork_data(0, [])])     # startup file empty
            vol.write(1024, header)
            vol.write(size - 1024, header)
        except BaseException:
            f.close()
            os.unlink(args.out)
            raise
    if args.ids:
        with open(args.ids, 'w', encoding='utf-8') as f:
            hi, lo = args.volume_id
            json.dump(dict(mapping, **{VOLUME_ID_KEY: hi << 32 | lo}), f, indent=1, sort_keys=True)
            f.write('\n')
    (_, ext_info), (_, att_info), (_, cat_info) = trees
    extra = sum(max(0, len(e.data_ext) - 8) + max(0, len(e.rsrc_ext) - 8) for e in holders if not e.deleted)
    print(f'{args.out}: {"HFSX" if binary else "HFS+"} "{args.label}", {size} bytes, {vol.total} blocks of {bs} '
          f'({vol.total - vol.used()} free); {files} files, {folders} folders, {len(inodes)} hard-link inodes, '
          f'{sum(1 for e in holders if e.deleted)} deleted; catalog depth {cat_info["depth"]} '
          f'({cat_info["leaves"]} leaf + {cat_info["index"]} index nodes of {ns}, {cat_info["records"]} records); '
          f'{ext_info["records"]} extents overflow records ({extra} extents); {att_info["records"]} attributes')


def main(argv=None):
    ap = argparse.ArgumentParser(description='Build an HFS+/HFSX image from a folder (see the module docstring).')
    ap.add_argument('src', metavar='SRC_DIR')
    ap.add_argument('out', metavar='OUT.img')
    ap.add_argument('--size', default='64M', help='volume size in bytes, or with a K/M/G suffix (default 64M)')
    ap.add_argument('--block-size', type=int, default=4096, help='allocation block size (default 4096)')
    ap.add_argument('--node-size', type=int, default=8192, help='catalog B-tree node size (default 8192)')
    ap.add_argument('--hfsx', action='store_true', help="case-sensitive HFSX ('HX', version 5, binary order)")
    ap.add_argument('--label', default='untitled', help='volume name (default "untitled")')
    ap.add_argument('--ids', metavar='IDS.json', help='path -> CNID map to keep and update')
    ap.add_argument('--fragment', action='append', default=[], metavar='PATH',
                    help=f'split this file into {FRAGMENTS} extents separated by free blocks')
    ap.add_argument('--compress-method', choices=['zlib', 'lzvn', 'lzfse'], default='zlib',
                    help='how --compress stores files (decmpfs types 3/4, 7/8 or 11/12), default zlib')
    ap.add_argument('--compress', action='append', default=[], metavar='PATH',
                    help='store this file decmpfs-compressed (--compress-method; inline or in the resource fork)')
    ap.add_argument('--deleted', action='append', default=[], metavar='PATH',
                    help="remove this file's catalog records, leaving their bytes in leaf-node slack")
    args = ap.parse_args(argv)
    try:
        build(args)
    except Fail as e:
        print(f'make-hfsplus: error: {e}', file=sys.stderr)
        return 2
    except OSError as e:
        print(f'make-hfsplus: error: {e.filename or ""}: {e.strerror}', file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main())
