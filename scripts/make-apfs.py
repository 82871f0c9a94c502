#!/usr/bin/env python3
"""Build an APFS container image (one or more volumes, optional snapshots) from folder trees.

No Linux tool writes a populated APFS container, so this lays one out byte by byte:
  block 0         container superblock NXSB (ephemeral oid 1, xid X); the checkpoint
                  descriptor area follows: its checkpoint map (block 1) and the same
                  superblock (block 2; desc_index 0, desc_len 2)
  data area       space manager (oid 1024, versioned, struct size 2520), reaper (1025),
                  internal-pool and main free-queue roots (1026, 1027): ephemeral, empty
                  queues, each listed in the checkpoint map; the area reaches block 1008
                  when the container is large enough, so that every physical object lies
                  at block 1024 or above (the reference reserves oids below 1024)
  then            16 internal-pool bitmap blocks (the first current) and the internal
                  pool, 3 x (chunks + chunk-info blocks) long, holding a bitmap block for
                  each chunk with a block in use, and the chunk-info blocks
  then            file data: each volume, each transaction, in path order
  then            metadata: per volume its superblock APSB (virtual), per snapshot a
                  physical superblock copy, the file-system tree nodes of every
                  transaction (virtual B-tree reached through the object map), the object
                  map (physical B-tree), the extent-reference trees, the snapshot metadata
                  tree and the omap snapshot tree; last the container object map (volume
                  oid -> superblock)
Transactions: the format is xid 1 (formatted_by), snapshots take xids 2, 3, ... in the
order given (all volumes), the current state is the last xid X.  Each transaction has a
complete set of file-system tree nodes and file data of its own (nothing is shared).
The nodes of every version reuse the same virtual oids, the root's included, and the
object map keeps one (oid, xid) record per version: a reader takes the newest xid not
above the one it reads at.  Each extent-reference tree holds NEW records for its own
extents and UPDATE records (owner ~0, refcount delta -n) taking the previous
transaction's extents to 0.  Inode numbers: root 2, private-dir 3, the tree's paths
from 16 in path order (kept per path with --ids; sibling ids too); xattr dstream ids
and each snapshot's inode number come from the same counter after them.

Records (j_*): every inode has its NAME xfield (and DSTREAM for non-empty data forks,
SPARSE_BYTES with INODE_IS_SPARSE for holes, RDEV for devices); directory records with
hashed keys on both case-insensitive (default) and case-sensitive (normalization-
insensitive, as newfs_apfs makes it) volumes; hard links as one inode with a sibling
link and sibling map record per name; symlink targets NUL-terminated in an inline
com.apple.fs.symlink (flags embedded | fs-owned); source user.NAME xattrs as NAME,
inline up to 3804 bytes, else in a dstream; NAME.rsrc beside NAME as its
com.apple.ResourceFork (always a dstream, INODE_HAS_RSRC_FORK); --compress as decmpfs
(UF_COMPRESSED, com.apple.decmpfs, no data fork); --clone DST=SRC as DST's own dstream
whose extents are SRC's blocks (refcount 2, WAS_CLONED / WAS_EVER_CLONED); --encrypted
clears APFS_FS_UNENCRYPTED and flags the tree nodes and their omap records encrypted
(contents stay plain, no keybag: the "hardware" kind, NX_CRYPTO_SW clear).  Times are
the source's in nanoseconds (birth and date added = modification time); sources are
read with O_NOATIME where allowed, so their access times stay as scanned.

Facts come from Apple's "Apple File System Reference" (object header and Fletcher-64,
superblocks, checkpoints, object maps, B-tree nodes and info footer, j_* records,
xfields, the name hash: crc32c without final xor over the UTF-32LE code points of the
NFD name, case-folded on case-insensitive volumes, low 22 bits, shifted left 10 above
the length); from apfsprogs' apfsck and mkapfs, what a strict checker demands (space
manager, internal pool and its 16 bitmaps, chunk-info blocks, free-queue node limits,
ephemeral info, volumes per 512 MiB, snapshot superblock copies as physical objects
without omap/extent/snapshot trees, snapshot inode numbers, sibling link/map rules,
xattr and inode flag pairs, clone flags, extent refcount deltas across snapshots, the
exact table of contents of fixed-size nodes with 8-byte aligned keys); from libfsapfs'
format notes (record layouts, directory entry types); from The Sleuth Kit's reader
(snapshots are read through the current root-tree oid at the snapshot's xid; the
omap's current xid is its root node's); and from a volume made by macOS (dfvfs
test_data/apfs.raw: spaceman layout, B-tree info flags, tables of contents in steps of
8 entries, NO_RSRC_FORK on inodes, resource forks in dstreams, extent owner = inode
also for xattr streams, no dstream-id record for xattr streams).  Checksums and name
hashes were checked against that image.  decmpfs is make-hfsplus.py's own code,
imported from beside this file.

--ids FILE.json: {"//container-uuid": UUID, VOLUME: {"//volume-uuid": UUID, PATH: inode,
"//sibling/PATH": sibling id, ...}, ...}; written back after each run.

Exit status 2 with a one-line message when the trees cannot be written.
"""
import argparse
import fnmatch
import importlib.util
import json
import os
import stat
import struct
import sys
import unicodedata
import uuid
from itertools import accumulate

U32, U64 = 0xFFFFFFFF, (1 << 64) - 1
OID_MASK = (1 << 60) - 1
# object types and storage flags (Apple File System Reference, "Objects")
OBJ_VIRTUAL, OBJ_EPHEMERAL, OBJ_PHYSICAL, OBJ_ENCRYPTED = 0, 0x80000000, 0x40000000, 0x10000000
T_NX, T_BTREE, T_NODE, T_SPACEMAN, T_CIB, T_OMAP, T_CPMAP, T_FS = 0x1, 0x2, 0x3, 0x5, 0x7, 0xB, 0xC, 0xD
T_FSTREE, T_EXTREF, T_SNAPMETA, T_REAPER, T_OMAP_SNAP, T_FREEQ = 0xE, 0xF, 0x10, 0x11, 0x13, 0x9
# B-tree node flags and info flags
BTN_ROOT, BTN_LEAF, BTN_FIXED = 1, 2, 4
BT_SEQUENTIAL, BT_GHOSTS, BT_EPHEMERAL, BT_PHYSICAL, BT_NONALIGNED = 0x2, 0x4, 0x8, 0x10, 0x40
# file-system record types
J_SNAP_META, J_EXTENT, J_INODE, J_XATTR, J_SIBLING, J_DSTREAM_ID = 1, 2, 3, 4, 5, 6
J_FILE_EXTENT, J_DIR_REC, J_SNAP_NAME, J_SIBLING_MAP = 8, 9, 11, 12
ROOT_PARENT, ROOT_INO, PRIV_INO, MIN_USER_INO = 1, 2, 3, 16
# inode internal flags, bsd flags, xfield types and flags, xattr flags
INODE_WAS_CLONED, INODE_IS_SPARSE, INODE_WAS_EVER_CLONED = 0x10, 0x200, 0x400
INODE_HAS_RSRC_FORK, INODE_NO_RSRC_FORK = 0x4000, 0x8000
UF_COMPRESSED = 0x20
XF_NAME, XF_DSTREAM, XF_SPARSE, XF_RDEV, DREC_XF_SIBLING = 4, 8, 13, 14, 1
XF_DO_NOT_COPY, XF_CHILDREN_INHERIT, XF_SYSTEM = 0x02, 0x08, 0x20
XATTR_STREAM, XATTR_EMBEDDED, XATTR_FS_OWNED = 1, 2, 4
MAX_EMBEDDED_XATTR = 3804
SYMLINK_XATTR, RSRC_XATTR, DECMPFS_XATTR = 'com.apple.fs.symlink', 'com.apple.ResourceFork', 'com.apple.decmpfs'
# volume superblock values
FS_UNENCRYPTED, FEATURE_HARDLINK_MAP = 0x1, 0x2
INCOMPAT_CASE_INSENSITIVE, INCOMPAT_NORM_INSENSITIVE = 0x1, 0x8
ROLES = {'none': 0, 'system': 1, 'user': 2, 'recovery': 4, 'vm': 8, 'preboot': 0x10, 'installer': 0x20,
         'data': 0x40, 'baseband': 0x80, 'update': 0xC0, 'xart': 0x100, 'hardware': 0x140, 'backup': 0x180,
         'enterprise': 0x240, 'prelogin': 0x2C0}
DT = {'fifo': 1, 'chr': 2, 'dir': 4, 'blk': 6, 'file': 8, 'symlink': 10, 'sock': 12}
SPACEMAN_OID, REAPER_OID, IP_FQ_OID, MAIN_FQ_OID, FIRST_FREE_OID = 1024, 1025, 1026, 1027, 1028
SM_STRUCT_SIZE = 0x9D8                    # versioned spaceman_phys_t, as macOS writes it
FORMAT_XID = 1
FORMATTED_BY = b'make-apfs.py (uffs)'
IDS_CONTAINER = '//container-uuid'
IDS_VOLUME = '//volume-uuid'
IDS_SIBLING = '//sibling/'
NS = uuid.UUID('6f1c0e6a-3d55-4d2e-9a4b-2b8f3c0e7a11')   # namespace of the made-up UUIDs


class Fail(Exception):
    """A condition that makes the image impossible; reported in one line, exit 2."""


def _load_hfsplus():
    """make-hfsplus.py beside this file: its decmpfs writer is reused as it is."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'make-hfsplus.py')
    spec = importlib.util.spec_from_file_location('make_hfsplus', path)
    if spec is None or not os.path.exists(path):
        raise Fail(f'{path}: missing (its decmpfs code is needed for --compress)')
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---------------------------------------------------------------- checksums ------

def fletcher64(block):
    """APFS object checksum over block[8:] as 32-bit little-endian words (mod 2^32 - 1)."""
    words = struct.unpack_from(f'<{(len(block) - 8) // 4}I', block, 8)
    s1 = sum(words)
    s2 = sum(accumulate(words))
    c1 = U32 - (s1 + s2) % U32
    c2 = U32 - (s1 + c1) % U32
    return c2 << 32 | c1


def seal(buf, off=0, size=None):
    """Write the Fletcher-64 checksum of the object at buf[off:off+size] into its header."""
    size = size or len(buf) - off
    struct.pack_into('<Q', buf, off, fletcher64(memoryview(buf)[off:off + size]))


def _crc_tables():
    t0 = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t0.append(c)
    tabs = [t0]
    for _ in range(3):                          # slicing by 4: one step per UTF-32 unit
        prev = tabs[-1]
        tabs.append([(prev[i] >> 8) ^ t0[prev[i] & 0xFF] for i in range(256)])
    return tabs


_T0, _T1, _T2, _T3 = _crc_tables()


def crc32c_utf32(codepoints, crc=U32):
    """crc32c (no final xor) over the code points as UTF-32LE."""
    for cp in codepoints:
        x = crc ^ cp
        crc = _T3[x & 0xFF] ^ _T2[(x >> 8) & 0xFF] ^ _T1[(x >> 16) & 0xFF] ^ _T0[x >> 24]
    return crc


_hash_cache = {}


def name_hash(name, fold):
    """22-bit directory-entry name hash: NFD (case-folded on case-insensitive volumes)."""
    key = (name, fold)
    h = _hash_cache.get(key)
    if h is None:
        if name.isascii():
            s = name.lower() if fold else name
        else:
            s = unicodedata.normalize('NFD', name)
            if fold:
                s = unicodedata.normalize('NFD', s.casefold())
        h = _hash_cache[key] = crc32c_utf32(map(ord, s)) & 0x3FFFFF
    return h


def name_identity(name, fold):
    """What two names of one folder must not share on this volume."""
    s = unicodedata.normalize('NFD', name)
    return unicodedata.normalize('NFD', s.casefold()) if fold else s


# ---------------------------------------------------------------- source trees ---

class Entry:
    """One name in a source tree: 'dir', 'file', 'symlink', 'fifo', 'sock', 'chr', 'blk'."""
    __slots__ = ('rel', 'name', 'bname', 'kind', 'st', 'parent', 'path', 'children', 'ino', 'xattrs',
                 'rsrc_path', 'compress', 'sparse', 'group', 'sibling', 'clone_of', 'clones', 'stream',
                 'decmpfs', 'rsrc', 'xstreams', 'flags', 'bsd')

    def __init__(self, rel, name, kind, st, parent, path):
        self.rel, self.name, self.kind, self.st, self.parent, self.path = rel, name, kind, st, parent, path
        self.bname = name.encode('utf-8')
        self.children, self.ino, self.xattrs, self.rsrc_path = [], 0, [], None
        self.compress, self.sparse, self.group, self.sibling = None, False, None, 0
        self.clone_of, self.clones, self.stream, self.decmpfs, self.rsrc = None, [], None, None, None
        self.xstreams, self.flags, self.bsd = {}, 0, 0


def check_name(name, where):
    try:
        b = name.encode('utf-8')
    except UnicodeEncodeError:
        raise Fail(f'{where}: name is not valid UTF-8')
    if len(b) > 255:
        raise Fail(f'{where}: name is longer than 255 bytes')
    return name


def read_xattrs(path, where):
    """Source user.NAME extended attributes as [(NAME, value)]."""
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return []
    out = []
    for n in sorted(names):
        if n.startswith('user.'):
            name = n[5:]
            try:
                name.encode('utf-8')
            except UnicodeEncodeError:
                raise Fail(f'{where}: attribute name {n!r} is not valid UTF-8')
            if name in (SYMLINK_XATTR, DECMPFS_XATTR):
                raise Fail(f'{where}: attribute {n} is reserved for the file system')
            if len(name.encode('utf-8')) > 254:
                raise Fail(f'{where}: attribute name {n} too long')
            out.append((name, os.getxattr(path, n, follow_symlinks=False)))
    return out


def scan(src, fold, where):
    """Walk SRC into Entry objects, children sorted by name (the path order ids follow)."""
    if not os.path.isdir(src):
        raise Fail(f'{src}: not a folder')
    root = Entry('', 'root', 'dir', os.stat(src), None, src)
    root.xattrs = read_xattrs(src, f'{where}:/')
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            dfd = open_noatime(d.path, os.O_RDONLY | os.O_DIRECTORY)
            try:
                with os.scandir(dfd) as it:
                    items = sorted((e.name, e) for e in it)      # names only: stat below by path
            finally:
                os.close(dfd)
        except OSError as e:
            raise Fail(f'{d.path}: {e.strerror}')
        present = {n for n, _ in items}
        seen = {}
        for n, de in items:
            rel = d.rel + '/' + n if d.rel else n
            check_name(n, f'{where}:{rel}')
            path = os.path.join(d.path, n)
            st = os.lstat(path)
            mode = st.st_mode
            if n.endswith('.rsrc') and n[:-5] in present and stat.S_ISREG(mode):
                base = os.lstat(os.path.join(d.path, n[:-5]))
                if stat.S_ISREG(base.st_mode):
                    continue                                 # becomes the base file's resource fork
            kind = ('dir' if stat.S_ISDIR(mode) else 'file' if stat.S_ISREG(mode) else
                    'symlink' if stat.S_ISLNK(mode) else 'fifo' if stat.S_ISFIFO(mode) else
                    'sock' if stat.S_ISSOCK(mode) else 'chr' if stat.S_ISCHR(mode) else
                    'blk' if stat.S_ISBLK(mode) else None)
            if kind is None:
                raise Fail(f'{where}:{rel}: unsupported file type')
            ident = name_identity(n, fold)
            if ident in seen:
                raise Fail(f'{where}:{rel}: same name as {seen[ident]} on this volume '
                           f'({"case- and " if fold else ""}normalization-insensitive)')
            seen[ident] = rel
            e = Entry(rel, n, kind, st, d, path)
            if kind in ('dir', 'file'):
                e.xattrs = read_xattrs(path, f'{where}:{rel}')
            if kind == 'file' and n + '.rsrc' in present and stat.S_ISREG(os.lstat(path + '.rsrc').st_mode):
                if any(x == RSRC_XATTR for x, _ in e.xattrs):
                    raise Fail(f'{where}:{rel}: both {n}.rsrc and a user.{RSRC_XATTR} attribute')
                e.rsrc_path = path + '.rsrc'
            d.children.append(e)
            if kind == 'dir':
                stack.append(e)
    return root


def walk(entry):
    """Pre-order, children in name order."""
    stack = [entry]
    while stack:
        e = stack.pop()
        yield e
        stack.extend(reversed(e.children))


class Tree:
    """One transaction of one volume: a scanned folder and what is derived from it."""

    def __init__(self, vol, label, src, snapname=None):
        self.vol, self.label, self.src, self.snapname = vol, label, src, snapname
        self.root = scan(src, vol.fold, label)
        self.entries = list(walk(self.root))
        self.xid = 0
        self.next_id = 0
        self.inum = 0                               # a snapshot's own inode number
        self.streams = []                           # Stream objects of this transaction
        self.time = max(e.st.st_mtime_ns for e in self.entries)


def make_groups(tree):
    """Regular files seen under several names (st_nlink > 1) become one inode."""
    groups = {}
    for e in tree.entries:
        if e.kind == 'file' and e.st.st_nlink > 1:
            groups.setdefault((e.st.st_dev, e.st.st_ino), []).append(e)
    for links in groups.values():
        if len(links) > 1:
            for e in links:
                e.group = links
                if e is not links[0]:
                    e.xattrs, e.rsrc_path = [], None        # the first name's attributes serve the inode


# ---------------------------------------------------------------- ids ------------

class Ids:
    """--ids: per volume, path -> inode number (and sibling ids) kept across rewrites."""

    def __init__(self, path):
        self.path, self.data = path, {}
        if path and os.path.exists(path):
            try:
                with open(path, encoding='utf-8') as f:
                    self.data = json.load(f)
            except (OSError, ValueError) as e:
                raise Fail(f'{path}: {e}')
            if not isinstance(self.data, dict):
                raise Fail(f'{path}: not a JSON object')

    def volume(self, name):
        m = self.data.get(name, {})
        if not isinstance(m, dict):
            raise Fail(f'{self.path}: entry {name!r} is not an object')
        for k, v in m.items():
            if not k.startswith('//') or k.startswith(IDS_SIBLING):
                if not isinstance(v, int) or not MIN_USER_INO <= v <= OID_MASK:
                    raise Fail(f'{self.path}: {name}:{k}: ids must be integers from {MIN_USER_INO}')
        return m

    def uuid(self, m, key, default):
        v = m.get(key)
        try:
            return uuid.UUID(v) if isinstance(v, str) else default
        except ValueError:
            return default


def assign_ids(vol, old):
    """Inode numbers of every tree (oldest first): a path keeps the number it had in an
    earlier tree or in the --ids map when no other path of the same tree holds it; new
    paths get numbers above every number known; a hard-link group takes its first
    path's number, each of its names a sibling id likewise.  Returns the map to save:
    the old one updated (entries of vanished paths stay, so their numbers are not reused)."""
    known = dict(old)
    counter = [max([v for k, v in old.items() if not k.startswith('//') or k.startswith(IDS_SIBLING)]
                   + [MIN_USER_INO - 1]) + 1]
    for t in vol.trees:
        taken, local = set(), {}

        def take(key):
            if key in local:
                return local[key]
            v = known.get(key)
            if v is None or v in taken:
                v = counter[0]
                counter[0] += 1
            taken.add(v)
            local[key] = known[key] = v
            return v
        t.root.ino = ROOT_INO
        for e in t.entries[1:]:
            if e.group is not None:
                first = e.group[0]
                if first.rel not in local:
                    gid = take(first.rel)
                    for x in e.group[1:]:
                        local[x.rel] = known[x.rel] = gid
                e.ino = local[first.rel]
            else:
                e.ino = take(e.rel)
        for e in t.entries[1:]:
            if e.group is not None:
                e.sibling = take(IDS_SIBLING + e.rel)
        counter[0] = max([counter[0]] + [e.ino + 1 for e in t.entries] + [e.sibling + 1 for e in t.entries])
        t.next_id = counter[0]
    vol.counter = counter                   # xattr dstream ids and snapshot inode numbers follow (plan_streams)
    return known


# ---------------------------------------------------------------- data streams ---

class Stream:
    """A data stream: a file's data fork or an xattr's value kept outside the record.
    runs: [(logical block, block count, physical block or 0 for a hole)]."""
    __slots__ = ('sid', 'owner', 'size', 'data', 'path', 'runs', 'shared', 'refs', 'sparse_bytes', 'blocks')

    def __init__(self, sid, owner, size, data=None, path=None):
        self.sid, self.owner, self.size, self.data, self.path = sid, owner, size, data, path
        self.runs, self.shared, self.refs, self.sparse_bytes, self.blocks = [], None, {}, 0, 0


_NOATIME = getattr(os, 'O_NOATIME', 0)


def open_noatime(path, flags=os.O_RDONLY):
    """Open without touching the access time (the image keeps the one scanned), where the
    system allows it (O_NOATIME: the file's owner or root), else plainly."""
    if _NOATIME:
        try:
            return os.open(path, flags | _NOATIME)
        except PermissionError:
            pass
    return os.open(path, flags)


def read_file(path, size=None):
    try:
        with open(open_noatime(path), 'rb') as f:
            data = f.read()
    except OSError as e:
        raise Fail(f'{path}: {e.strerror}')
    if size is not None and len(data) != size:
        raise Fail(f'{path}: changed while the image was written')
    return data


def hole_runs(data, bs):
    """Block runs of data: [(first block, count, is_hole)] where a hole is all zeros."""
    n = -(-len(data) // bs)
    zero = bytes(bs)
    runs = []
    for b in range(n):
        chunk = data[b * bs:(b + 1) * bs]
        hole = chunk == zero[:len(chunk)]
        if runs and runs[-1][2] == hole:
            runs[-1][1] += 1
        else:
            runs.append([b, 1, hole])
    return runs


def plan_streams(vol, tree, args, bs, hfs):
    """Decide every stream of a transaction (data forks, big xattrs, resource forks,
    decmpfs), compress and find holes where asked, and give xattr streams their ids."""
    counter = vol.counter
    by_rel = {e.rel: e for e in tree.entries}
    for e in tree.entries:
        if e.kind != 'file' or (e.group is not None and e is not e.group[0]):
            continue
        if e.compress:
            if e.rsrc_path or any(n == RSRC_XATTR for n, _ in e.xattrs):
                raise Fail(f'--compress {tree.label}:{e.rel}: file already has a resource fork')
            raw = read_file(e.path, e.st.st_size)
            e.decmpfs, e.rsrc = hfs.decmpfs(raw, e.compress)
            e.bsd |= UF_COMPRESSED
        elif e.st.st_size:
            s = Stream(e.ino, e.ino, e.st.st_size, path=e.path)
            if e.sparse:
                s.data = read_file(e.path, e.st.st_size)
                runs = hole_runs(s.data, bs)
                s.runs = [(b, n, 0 if hole else None) for b, n, hole in runs]
                s.sparse_bytes = sum(n for _, n, hole in runs if hole) * bs
                if s.sparse_bytes:
                    e.flags |= INODE_IS_SPARSE
                    args.holes.update(e.sparse)
                else:                                        # no all-zero block: written whole
                    s.runs = [(0, -(-s.size // bs), None)]
            else:
                s.runs = [(0, -(-s.size // bs), None)]
            e.stream = s
            tree.streams.append(s)
    for dst_rel, src_rel in args.clone:
        dst, src = by_rel.get(dst_rel), by_rel.get(src_rel)
        if dst is None or src is None:
            continue                                     # a clone where a tree has both names
        if dst.kind != 'file' or src.kind != 'file':
            raise Fail(f'--clone {dst_rel}={src_rel}: both must be regular files of {tree.label}')
        if dst.group or src.group or dst.compress or src.compress or dst is src:
            raise Fail(f'--clone {dst_rel}={src_rel}: hard-linked or compressed files are not cloned')
        if dst.clone_of or dst.clones:
            raise Fail(f'--clone {dst_rel}: already part of a clone')
        while src.clone_of:
            src = src.clone_of
        if src.stream is None or dst.stream is None:
            raise Fail(f'--clone {dst_rel}={src_rel}: empty files have no blocks to share')
        if read_file(dst.path) != (src.stream.data or read_file(src.path)):
            raise Fail(f'--clone {dst_rel}={src_rel}: contents differ ({tree.label})')
        tree.streams.remove(dst.stream)
        dst.stream.shared = src.stream
        dst.stream.runs, dst.stream.sparse_bytes = None, src.stream.sparse_bytes
        dst.flags |= INODE_WAS_CLONED | INODE_WAS_EVER_CLONED | (src.flags & INODE_IS_SPARSE)
        src.flags |= INODE_WAS_EVER_CLONED
        dst.clone_of = src
        src.clones.append(dst)
    for e in tree.entries:
        if e.group is not None and e is not e.group[0]:
            continue
        xs = list(e.xattrs)
        if e.rsrc_path:
            xs.append((RSRC_XATTR, read_file(e.rsrc_path)))
        if e.rsrc:                                   # decmpfs types 4, 8, 12
            xs.append((RSRC_XATTR, e.rsrc))
        if e.decmpfs is not None:
            xs.append((DECMPFS_XATTR, e.decmpfs))
        xs.sort(key=lambda x: x[0].encode('utf-8'))
        e.xattrs = xs
        for name, value in xs:
            if name == RSRC_XATTR or not embeddable(name, value, bs):
                sid = counter[0]
                counter[0] += 1
                s = Stream(sid, e.ino, len(value), data=value)
                s.runs = [(0, -(-len(value) // bs), None)] if value else []
                e.xstreams[name] = s
                tree.streams.append(s)
            if name == RSRC_XATTR:
                e.flags |= INODE_HAS_RSRC_FORK
        if not e.flags & INODE_HAS_RSRC_FORK:
            e.flags |= INODE_NO_RSRC_FORK                # as macOS marks inodes without one
    tree.next_id = counter[0]
    if tree.snapname is not None:
        tree.inum = counter[0]
        counter[0] += 1


def embeddable(name, value, bs):
    """An xattr value is kept in its record when it is at most 3804 bytes (Apple's
    limit) and the record fits even a root leaf (header, 8 table entries, footer)."""
    return len(value) <= MAX_EMBEDDED_XATTR and \
        (11 + len(name.encode('utf-8'))) + (4 + len(value)) <= bs - BTree.HEADER - 64 - BTree.INFO


def place_streams(tree, alloc):
    """Give every run of the transaction's streams its physical blocks."""
    for s in tree.streams:
        runs = []
        for b, n, p in s.runs:
            runs.append((b, n, 0 if p == 0 else alloc.take(n)))
        s.runs = runs
        s.blocks = sum(n for _, n, p in runs if p)


# ---------------------------------------------------------------- space ----------

class Space:
    """The container's allocation bitmap (one bit per block, LSB first) and a
    sequential allocator."""

    def __init__(self, total):
        self.total = total
        self.bits = bytearray((total + 7) // 8)
        self.next = 0

    def mark(self, start, count):
        end = start + count
        if end > self.total:
            raise Fail(f'the trees do not fit in {self.total} blocks (use a larger --size)')
        b = start
        while b < end and b & 7:
            self.bits[b >> 3] |= 1 << (b & 7)
            b += 1
        if end - b >= 8:
            full = (end - b) >> 3
            self.bits[b >> 3:(b >> 3) + full] = b'\xff' * full
            b += full << 3
        while b < end:
            self.bits[b >> 3] |= 1 << (b & 7)
            b += 1

    def take(self, count):
        start = self.next
        self.mark(start, count)
        self.next = start + count
        return start


# ---------------------------------------------------------------- B-trees --------

class BTree:
    """A B-tree planned from sorted leaf records [(key, value)], laid out bottom-up:
    leaves filled in key order, index levels (first key of each child, its id) until one
    root remains.  fixed = (key size, value size) for trees of fixed-size entries."""
    HEADER = 0x38
    INFO = 40

    def __init__(self, bs, records, subtype, storage, info_flags, fixed=None):
        self.bs, self.subtype, self.storage, self.info_flags, self.fixed = bs, subtype, storage, info_flags, fixed
        self.records = records
        self.levels = []                        # [(items, groups)] from the leaves up
        items, level = records, 0
        while True:
            if self._fits(items, level, True):
                groups = [(0, len(items))]
            else:
                groups = self._pack(items, level)
                if len(groups) == 1:            # fits a node but not a root (its info footer)
                    half = max(1, len(items) // 2)
                    groups = [(0, half), (half, len(items))]
            self.levels.append((items, groups))
            if len(groups) == 1:
                break
            items = [(items[a][0], None) for a, _ in groups]
            level += 1
        self.count = sum(len(g) for _, g in self.levels)
        self.ids = None

    def _toc_entries(self, n, level):
        """Table of contents: trees of fixed-size entries preallocate it whole (as many
        entries as the node can hold); others grow in steps of 8 entries, as macOS does."""
        if self.fixed:
            vsz = self.fixed[1] if level == 0 else 8
            return (self.bs - self.HEADER) // (self.fixed[0] + vsz + 4)
        return max(8, -(-n // 8) * 8)

    def _capacity(self, level, root):
        """Entries a node of a fixed-size tree holds."""
        room = self.bs - self.HEADER - (self.INFO if root else 0)
        toc = self._toc_entries(0, level)
        vsz = self.fixed[1] if level == 0 else 8
        return min(toc, (room - 4 * toc - self._pad(toc)) // (self.fixed[0] + vsz))

    def _pad(self, toc_entries):
        """Keys of fixed-size trees are 8-byte aligned: when the table of contents ends
        4 bytes off, the keys start 4 bytes into the key area (counted as free key space)."""
        return (-(self.HEADER + 4 * toc_entries)) % 8 if self.fixed else 0

    def _fits(self, items, level, root):
        if self.fixed:
            return len(items) <= self._capacity(level, root)
        room = self.bs - self.HEADER - (self.INFO if root else 0)
        vals = sum(len(v) for _, v in items) if level == 0 else 8 * len(items)
        return 8 * self._toc_entries(len(items), level) + sum(len(k) for k, _ in items) + vals <= room

    def _pack(self, items, level):
        if self.fixed:
            per = self._capacity(level, False)
            return [(a, min(a + per, len(items))) for a in range(0, len(items), per)]
        room = self.bs - self.HEADER
        groups, start, n, used = [], 0, 0, 0
        for i, (k, v) in enumerate(items):
            size = len(k) + (len(v) if level == 0 else 8)
            if size + 64 > room:
                raise Fail('a B-tree record does not fit in a node')
            if n and 8 * (-(-(n + 1) // 8) * 8) + used + size > room:
                groups.append((start, i))
                start, n, used = i, 0, 0
            n += 1
            used += size
        groups.append((start, len(items)))
        return groups

    def assign(self, first):
        """Node ids first, first + 1, ...: the root first, then each level top-down."""
        self.ids = []
        nid = first
        for items, groups in reversed(self.levels):
            self.ids.insert(0, list(range(nid, nid + len(groups))))
            nid += len(groups)
        return self.root_id

    @property
    def root_id(self):
        return self.ids[-1][0]

    def nodes(self, xid, info_extra):
        """Yield (id, block bytes without checksum) for every node."""
        top = len(self.levels) - 1
        key_count = len(self.records)
        for level, (items, groups) in enumerate(self.levels):
            for g, (a, b) in enumerate(groups):
                root = level == top
                recs = items[a:b]
                if level:
                    child_ids = self.ids[level - 1]
                    recs = [(k, struct.pack('<Q', child_ids[a + j])) for j, (k, _) in enumerate(recs)]
                nid = self.ids[level][g]
                yield nid, self._node(nid, recs, level, root, xid, key_count, info_extra)

    def _node(self, nid, recs, level, root, xid, key_count, info_extra):
        bs = self.bs
        buf = bytearray(bs)
        flags = (BTN_ROOT if root else 0) | (BTN_LEAF if level == 0 else 0) | (BTN_FIXED if self.fixed else 0)
        n = len(recs)
        toc_entries = self._toc_entries(n, level)
        toc_len = toc_entries * (4 if self.fixed else 8)
        key_area = self.HEADER + toc_len
        end = bs - (self.INFO if root else 0)
        pad = self._pad(toc_entries)
        kpos, vpos = pad, 0
        tocs = []
        keys, vals = [], []
        for k, v in recs:
            vpos += len(v)
            if self.fixed:
                tocs.append(struct.pack('<HH', kpos, vpos))
            else:
                tocs.append(struct.pack('<HHHH', kpos, len(k), vpos, len(v)))
            keys.append(k)
            vals.append(v)
            kpos += len(k)
        tb = b''.join(tocs)
        buf[self.HEADER:self.HEADER + len(tb)] = tb
        kb = b''.join(keys)
        buf[key_area + pad:key_area + pad + len(kb)] = kb
        vals.reverse()
        vb = b''.join(vals)
        buf[end - len(vb):end] = vb
        free_len = end - key_area - kpos - vpos
        if free_len < 0:
            raise AssertionError('node overflow')
        otype = (T_BTREE if root else T_NODE) | self.storage
        struct.pack_into('<QQIIHHIHHHHHHHH', buf, 8, nid, xid, otype, self.subtype, flags, level, n,
                         0, toc_len, kpos, free_len, 0xFFFF, pad, 0xFFFF, 0)
        if root:
            ksz, vsz = self.fixed or (0, 0)
            lk, lv = info_extra
            struct.pack_into('<IIIIIIQQ', buf, bs - self.INFO, self.info_flags, bs, ksz, vsz, lk, lv,
                             key_count, self.count)
        return buf


def longest(records):
    return (max((len(k) for k, _ in records), default=0), max((len(v) for _, v in records), default=0))


# ---------------------------------------------------------------- fs records -----

def xfields(fields):
    """xf_blob: count, used bytes, x_field_t headers, values padded to 8 bytes."""
    if not fields:
        return b''
    heads = b''.join(struct.pack('<BBH', t, f, len(v)) for t, f, v in fields)
    vals = b''.join(v + bytes(-len(v) % 8) for _, _, v in fields)
    return struct.pack('<HH', len(fields), len(vals)) + heads + vals


def hdr(oid, kind):
    return struct.pack('<Q', (kind << 60) | oid)


def dstream_blob(size, alloced):
    return struct.pack('<QQQQQ', size, alloced, 0, size, 0)


def inode_record(e, ino, parent, name, nchildren_or_nlink, xf):
    st = e.st
    val = struct.pack('<QQQQQQQIIIIIIHHQ', parent, ino, st.st_mtime_ns, st.st_mtime_ns, st.st_ctime_ns,
                      st.st_atime_ns, e.flags, nchildren_or_nlink, 0, 0, e.bsd, st.st_uid & U32, st.st_gid & U32,
                      st.st_mode & 0xFFFF, 0, 0)
    fields = [(XF_NAME, XF_DO_NOT_COPY, name + b'\0')] + xf
    return hdr(ino, J_INODE), val + xfields(fields)


def tree_records(vol, tree):
    """Every file-system record of one transaction, sorted as the B-tree keys compare:
    (object id, type, then hash/number, then name bytes)."""
    recs = []
    add = recs.append
    fold = vol.fold
    bs = vol.bs

    def drec(parent_ino, e_name_b, e_name, target, dtype, date, sibling=0):
        h = name_hash(e_name, fold)
        key = hdr(parent_ino, J_DIR_REC) + struct.pack('<I', (h << 10) | (len(e_name_b) + 1)) + e_name_b + b'\0'
        val = struct.pack('<QQH', target, date, dtype)
        if sibling:
            val += xfields([(DREC_XF_SIBLING, 0, struct.pack('<Q', sibling))])
        add(((parent_ino << 4) | J_DIR_REC, h, e_name_b, key, val))

    def xattr_recs(e):
        for name, value in e.xattrs:
            nb = name.encode('utf-8')
            key = hdr(e.ino, J_XATTR) + struct.pack('<H', len(nb) + 1) + nb + b'\0'
            s = e.xstreams.get(name)
            if s is not None:
                body = struct.pack('<Q', s.sid) + dstream_blob(s.size, sum(n for _, n, _ in s.runs) * bs)
                val = struct.pack('<HH', XATTR_STREAM, len(body)) + body
                extent_recs(s.sid, s)
            else:
                flags = XATTR_EMBEDDED | (XATTR_FS_OWNED if name == SYMLINK_XATTR else 0)
                val = struct.pack('<HH', flags, len(value)) + value
            add(((e.ino << 4) | J_XATTR, 0, nb, key, val))

    def extent_recs(sid, s):
        for b, n, p in (s.shared.runs if s.shared else s.runs):
            key = hdr(sid, J_FILE_EXTENT) + struct.pack('<Q', b * bs)
            add(((sid << 4) | J_FILE_EXTENT, b, b'', key, struct.pack('<QQQ', n * bs, p, 0)))

    # the two folders every volume has (parent 1)
    priv_t = vol.format_time
    for name, ino in (('private-dir', PRIV_INO), ('root', ROOT_INO)):
        key, val = _special_drec(name, ino, priv_t, fold)
        add(((ROOT_PARENT << 4) | J_DIR_REC, name_hash(name, fold), name.encode(), key, val))
    root = tree.root
    k, v = inode_record(root, ROOT_INO, ROOT_PARENT, b'root', len(root.children), [])
    add(((ROOT_INO << 4) | J_INODE, 0, b'', k, v))
    xattr_recs(root)
    priv = struct.pack('<QQQQQQQIIIIIIHHQ', ROOT_PARENT, PRIV_INO, priv_t, priv_t, priv_t, priv_t,
                       INODE_NO_RSRC_FORK, 0, 0, 0, 0, 0, 0, 0o40644, 0, 0)
    priv += xfields([(XF_NAME, XF_DO_NOT_COPY, b'private-dir\0')])
    add(((PRIV_INO << 4) | J_INODE, 0, b'', hdr(PRIV_INO, J_INODE), priv))
    counts = {'file': 0, 'dir': 0, 'symlink': 0, 'other': 0}
    for e in tree.entries[1:]:
        drec(e.parent.ino, e.bname, e.name, e.ino, DT[e.kind], e.st.st_mtime_ns, e.sibling)   # date added
        if e.group is not None:
            links = e.group
            if e is not links[0]:
                continue
            primary = min(links, key=lambda x: x.sibling)
            parent, name, count = primary.parent.ino, primary.bname, len(links)
            for x in links:
                key = hdr(e.ino, J_SIBLING) + struct.pack('<Q', x.sibling)
                add(((e.ino << 4) | J_SIBLING, x.sibling, b'', key,
                     struct.pack('<QH', x.parent.ino, len(x.bname) + 1) + x.bname + b'\0'))
                add(((x.sibling << 4) | J_SIBLING_MAP, 0, b'', hdr(x.sibling, J_SIBLING_MAP), struct.pack('<Q', e.ino)))
        else:
            parent, name, count = e.parent.ino, e.bname, (len(e.children) if e.kind == 'dir' else 1)
        xf = []
        s = e.stream
        if s is not None:
            runs = s.shared.runs if s.shared else s.runs
            xf.append((XF_DSTREAM, XF_SYSTEM, dstream_blob(s.size, sum(n for _, n, _ in runs) * bs)))
            if s.sparse_bytes:
                xf.append((XF_SPARSE, XF_SYSTEM | XF_CHILDREN_INHERIT, struct.pack('<Q', s.sparse_bytes)))
        if e.kind in ('chr', 'blk'):
            rdev = (os.major(e.st.st_rdev) & 0xFF) << 24 | (os.minor(e.st.st_rdev) & 0xFFFFFF)
            xf.append((XF_RDEV, 0, struct.pack('<I', rdev)))
        k, v = inode_record(e, e.ino, parent, name, count, xf)
        add(((e.ino << 4) | J_INODE, 0, b'', k, v))
        if e.kind == 'symlink':
            target = os.fsencode(os.readlink(e.path))
            if len(target) + 1 > MAX_EMBEDDED_XATTR:
                raise Fail(f'{tree.label}:{e.rel}: symlink target too long')
            e.xattrs = [(SYMLINK_XATTR, target + b'\0')]
        xattr_recs(e)
        if s is not None:
            add(((e.ino << 4) | J_DSTREAM_ID, 0, b'', hdr(e.ino, J_DSTREAM_ID), struct.pack('<I', 1)))
            extent_recs(e.ino, s)
        kind = e.kind if e.kind in ('file', 'dir', 'symlink') else 'other'
        counts[kind] += 1
    recs.sort(key=lambda r: (r[0], r[1], r[2]))
    for a, b in zip(recs, recs[1:]):
        if a[:3] == b[:3]:
            raise Fail(f'{tree.label}: two records with one key (object {a[0] >> 4}, type {a[0] & 15})')
    tree.counts = counts
    return [(r[3], r[4]) for r in recs]


def _special_drec(name, ino, t, fold):
    nb = name.encode()
    key = hdr(ROOT_PARENT, J_DIR_REC) + struct.pack('<I', (name_hash(name, fold) << 10) | (len(nb) + 1)) + nb + b'\0'
    return key, struct.pack('<QQH', ino, t, DT['dir'])


def extent_refs(tree):
    """{physical block: [blocks, owner inode, refcount]} of a transaction's extents: one per
    run, the owner the inode (for xattr streams too), one reference per stream using it."""
    refs = {}
    for s in tree.streams:
        for b, n, p in s.runs:
            if p:
                refs[p] = [n, s.owner, 1]
    for e in tree.entries:
        s = e.stream
        if s is not None and s.shared is not None:
            for b, n, p in s.shared.runs:
                if p:
                    refs[p][2] += 1
    return refs


def extref_records(tree, prev):
    """Physical extent records of a transaction: NEW (kind 1) for its own extents, and,
    as it uses none of the previous transaction's blocks, UPDATE (kind 2, owner ~0) with
    the refcount delta that takes each of those to 0."""
    recs = {p: struct.pack('<QQI', n | (1 << 60), owner, rc) for p, (n, owner, rc) in extent_refs(tree).items()}
    if prev is not None:
        for p, (n, owner, rc) in extent_refs(prev).items():
            recs[p] = struct.pack('<QQI', n | (2 << 60), U64, (-rc) & U32)
    return [(hdr(p, J_EXTENT), recs[p]) for p in sorted(recs)]


# ---------------------------------------------------------------- volumes --------

class Volume:
    def __init__(self, index, name, src, args, ids):
        self.index, self.name, self.src = index, name, src
        self.fold = name not in args.case_sensitive_set
        self.role = args.roles.get(name, 0)
        self.encrypted = name in args.encrypted
        self.bs = args.block_size
        self.idmap = ids.volume(name)
        self.uuid = ids.uuid(self.idmap, IDS_VOLUME, uuid.uuid5(NS, f'volume {index} {name}'))
        self.trees = [Tree(self, f'{name}@{snap}', d, snap) for snap, d in args.snapshots.get(name, [])]
        self.trees.append(Tree(self, name, src))
        self.current = self.trees[-1]
        self.time = max(t.time for t in self.trees)
        self.format_time = min(t.time for t in self.trees)


def mark_options(vol, args):
    """Flag --compress/--sparse matches (globs over paths relative to each tree)."""
    for t in vol.trees:
        for e in t.entries[1:]:
            if e.kind != 'file':
                continue
            for g in args.compress:
                if e.rel == g or fnmatch.fnmatchcase(e.rel, g):
                    e.compress = args.compress_method
                    args.matched.add(('compress', g))
            for g in args.sparse:
                if e.rel == g or fnmatch.fnmatchcase(e.rel, g):
                    e.sparse = e.sparse or set()
                    e.sparse.add(g)
                    args.matched.add(('sparse', g))
            if e.compress and e.sparse:
                raise Fail(f'{t.label}:{e.rel}: both --compress and --sparse')
        make_groups(t)
        for e in t.entries:
            if e.group is not None and e is e.group[0]:
                e.compress = next((x.compress for x in e.group if x.compress), None)
                e.sparse = set().union(*(x.sparse or () for x in e.group)) or False


# ---------------------------------------------------------------- container ------

def parse_size(text):
    mult = {'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}
    t = text.strip().upper().rstrip('B').rstrip('I')
    try:
        return int(t[:-1]) * mult[t[-1]] if t and t[-1] in mult else int(t)
    except ValueError:
        raise Fail(f'bad size {text!r}')


def main_fq_node_limit(blocks):
    """Node limit of the main free queue as a function of the block count (apfsprogs)."""
    if blocks < 0x40000:
        r = 1 + (blocks - 1) // 4544
    elif blocks < 0x100000:
        r = 116 + (blocks - 261281) // 2272
    else:
        r = 512
    return 3 if r == 2 else r


def ip_fq_node_limit(chunks):
    r = (3 * (chunks + 751) // 1127 - 1) & 0xFFFF
    return 3 if r == 2 else r


class Layout:
    """Fixed areas for a container of `total` blocks."""

    def __init__(self, total, bs):
        self.total, self.bs = total, bs
        size = total * bs
        self.bpc = 8 * bs                                 # blocks per chunk: one bitmap block each
        self.cpc = (bs - 40) // 32                        # chunk-info entries per chunk-info block
        self.chunks = -(-total // self.bpc)
        self.cibs = -(-self.chunks // self.cpc)
        self.cib_addr_off = SM_STRUCT_SIZE + 8 + 8 + 32
        if self.cib_addr_off + 8 * self.cibs + 8 > bs:
            raise Fail('container too large for a one-block space manager')
        self.desc_base = 1
        self.desc_blocks = 8 if size <= 512 << 20 else 12 if size <= 1 << 30 else 20
        self.data_base = self.desc_base + self.desc_blocks
        self.data_blocks = max(52, min(27672, total // 256))
        if total >= 4096:
            # the reference reserves oids below 1024 for physical objects too (macOS does not
            # keep to it; apfsprogs' checker of 2023 does): the checkpoint data area reaches
            # block 1008, so the pool bitmaps end at 1023 and every physical object is above
            self.data_blocks = max(self.data_blocks, 1008 - self.data_base)
        self.ip_bm_base = self.data_base + self.data_blocks
        self.ip_base = self.ip_bm_base + 16
        self.ip_blocks = 3 * (self.chunks + self.cibs)
        self.first_free = self.ip_base + self.ip_blocks
        if self.first_free + 64 > total:
            raise Fail('--size too small for the container structures')


def obj_header(buf, oid, xid, otype, subtype=0, off=0):
    struct.pack_into('<QQQII', buf, off, 0, oid, xid, otype, subtype)


def write_spaceman(lay, space, xid, bs):
    """Space manager, chunk-info blocks, chunk bitmaps and the internal-pool bitmap.
    Returns {block: bytes} of what lives in the fixed areas."""
    out = {}
    bits = space.bits
    ip_used = []
    cib_blocks = []
    chunk_infos = []
    bm_slot = lay.ip_base
    free_total = 0
    for c in range(lay.chunks):
        start = c * lay.bpc
        count = min(lay.bpc, lay.total - start)
        chunk_bits = bytes(bits[start // 8:(start + count + 7) // 8])
        used = int.from_bytes(chunk_bits, 'little').bit_count()
        free = count - used
        free_total += free
        addr = 0
        if used:
            addr = bm_slot
            bm_slot += 1
            ip_used.append(addr)
            out[addr] = chunk_bits.ljust(bs, b'\0')
        chunk_infos.append(struct.pack('<QQIIQ', xid, start, count, free, addr))
    cib_base = lay.ip_base + lay.chunks
    for i in range(lay.cibs):
        ents = chunk_infos[i * lay.cpc:(i + 1) * lay.cpc]
        b = bytearray(bs)
        bno = cib_base + i
        obj_header(b, bno, xid, OBJ_PHYSICAL | T_CIB)
        struct.pack_into('<II', b, 32, i, len(ents))
        b[40:40 + 32 * len(ents)] = b''.join(ents)
        seal(b)
        out[bno] = bytes(b)
        cib_blocks.append(bno)
        ip_used.append(bno)
    ipbm = bytearray(bs)
    for bno in ip_used:
        r = bno - lay.ip_base
        ipbm[r >> 3] |= 1 << (r & 7)
    out[lay.ip_bm_base] = bytes(ipbm)
    for i in range(1, 16):
        out[lay.ip_bm_base + i] = bytes(bs)
    sm = bytearray(bs)
    obj_header(sm, SPACEMAN_OID, xid, OBJ_EPHEMERAL | T_SPACEMAN)
    struct.pack_into('<IIII', sm, 0x20, bs, lay.bpc, lay.cpc, (bs - 40) // 8)
    struct.pack_into('<QQIIQIIQ', sm, 0x30, lay.total, lay.chunks, lay.cibs, 0, free_total, lay.cib_addr_off, 0, 0)
    struct.pack_into('<QQIIQIIQ', sm, 0x60, 0, 0, 0, 0, 0, lay.cib_addr_off + 8 * lay.cibs, 0, 0)
    struct.pack_into('<IIQIIQQQQ', sm, 0x90, 1, 16, lay.ip_blocks, 1, 16, lay.ip_bm_base, lay.ip_base, 0, 0)
    struct.pack_into('<QQQHHIQ', sm, 0xC8, 0, IP_FQ_OID, 0, ip_fq_node_limit(lay.chunks), 0, 0, 0)
    struct.pack_into('<QQQHHIQ', sm, 0xF0, 0, MAIN_FQ_OID, 0, main_fq_node_limit(lay.total), 0, 0, 0)
    struct.pack_into('<HHIIIII', sm, 0x140, 1, 15, SM_STRUCT_SIZE, SM_STRUCT_SIZE + 8, SM_STRUCT_SIZE + 16, 1,
                     SM_STRUCT_SIZE)
    struct.pack_into('<Q', sm, SM_STRUCT_SIZE, xid)                   # xid of the one current ip bitmap
    struct.pack_into('<H', sm, SM_STRUCT_SIZE + 8, 0)                 # it is bitmap block 0
    struct.pack_into('<16H', sm, SM_STRUCT_SIZE + 16, *([0xFFFF] + list(range(2, 16)) + [0xFFFF]))
    for i, bno in enumerate(cib_blocks):
        struct.pack_into('<Q', sm, lay.cib_addr_off + 8 * i, bno)
    seal(sm)
    out[lay.data_base] = bytes(sm)
    return out, free_total


def empty_free_queue(bs, oid, xid):
    t = BTree(bs, [], T_FREEQ, OBJ_EPHEMERAL, BT_SEQUENTIAL | BT_GHOSTS | BT_EPHEMERAL, fixed=(16, 8))
    t.ids = [[oid]]
    (_, node), = t.nodes(xid, (16, 8))
    seal(node)
    return bytes(node)


# ---------------------------------------------------------------- build ----------

def estimate_blocks(vols, bs):
    """An upper bound of the blocks that data and metadata take (for the default size)."""
    data = meta = 0
    for v in vols:
        for t in v.trees:
            for e in t.entries:
                size = e.st.st_size if e.kind == 'file' else 0
                data += -(-size // bs)
                meta += 260 + 3 * len(e.bname) + sum(len(n) + 40 + (len(x) if len(x) <= MAX_EMBEDDED_XATTR else 0)
                                                     for n, x in e.xattrs)
                if e.rsrc_path:
                    data += -(-os.path.getsize(e.rsrc_path) // bs) + 1
                data += sum(-(-len(x) // bs) for _, x in e.xattrs if len(x) > MAX_EMBEDDED_XATTR)
    return data + 2 * meta // (bs - 200) + 256


def build(args):
    bs = args.block_size
    if bs < 4096 or bs > 65536 or bs & (bs - 1):
        raise Fail('--block-size must be a power of two from 4096 to 65536')
    if not args.volume:
        raise Fail('give at least one --volume NAME=DIR')
    names = []
    vol_src = {}
    for spec in args.volume:
        name, sep, d = spec.partition('=')
        if not sep or not name or not d:
            raise Fail(f'--volume {spec!r}: expected NAME=DIR')
        if name in vol_src:
            raise Fail(f'--volume {name}: given twice')
        if len(name.encode('utf-8')) > 255:
            raise Fail(f'--volume {name}: name longer than 255 bytes')
        names.append(name)
        vol_src[name] = d
    if len(names) > 100:
        raise Fail('at most 100 volumes')
    args.case_sensitive_set = set(names) if '*' in args.case_sensitive else set(args.case_sensitive)
    args.roles = {}
    for spec in args.role:
        name, sep, role = spec.partition('=')
        if not sep or role not in ROLES:
            raise Fail(f'--role {spec!r}: expected NAME={"|".join(ROLES)}')
        args.roles[name] = ROLES[role]
    args.snapshots = {}
    for spec in args.snapshot:
        parts = spec.split('=', 2)
        if len(parts) != 3 or not all(parts):
            raise Fail(f'--snapshot {spec!r}: expected NAME=SNAPNAME=DIR')
        name, snap, d = parts
        if any(s == snap for s, _ in args.snapshots.get(name, [])):
            raise Fail(f'--snapshot {name}={snap}: given twice')
        if len(snap.encode('utf-8')) > 255:
            raise Fail(f'--snapshot {snap}: name longer than 255 bytes')
        args.snapshots.setdefault(name, []).append((snap, d))
    clones = []
    for spec in args.clone_specs:
        dst, sep, src = spec.partition('=')
        if not sep or not dst or not src:
            raise Fail(f'--clone {spec!r}: expected DST=SRC')
        clones.append((os.path.normpath(dst).lstrip('/'), os.path.normpath(src).lstrip('/')))
    args.clone = clones
    for opt in ('case_sensitive_set', 'encrypted'):
        for n in (getattr(args, opt)):
            if n not in vol_src:
                raise Fail(f'--{opt.replace("_set", "").replace("_", "-")} {n}: no such --volume')
    for n in list(args.roles) + list(args.snapshots):
        if n not in vol_src:
            raise Fail(f'{n}: no such --volume')
    args.matched, args.holes = set(), set()
    args.sparse = [os.path.normpath(g).lstrip('/') for g in args.sparse]
    args.compress = [os.path.normpath(g).lstrip('/') for g in args.compress]
    hfs = _load_hfsplus() if args.compress else None

    ids = Ids(args.ids)
    vols = [Volume(i, n, vol_src[n], args, ids) for i, n in enumerate(names)]
    for v in vols:
        mark_options(v, args)
    for opt in ('compress', 'sparse'):
        for g in getattr(args, opt):
            if (opt, g) not in args.matched:
                raise Fail(f'--{opt} {g}: matches no regular file')
    xid = FORMAT_XID + 1
    for v in vols:
        for t in v.trees[:-1]:
            t.xid = xid
            xid += 1
    X = xid                                           # the current transaction
    for v in vols:
        v.current.xid = X
    saved = {}
    for v in vols:
        saved[v.name] = assign_ids(v, v.idmap)
        for t in v.trees:
            plan_streams(v, t, args, bs, hfs)
        v.next_obj_id = v.counter[0]
    for g in args.sparse:
        if g not in args.holes:
            raise Fail(f'--sparse {g}: no matching file has a whole block of zeros to leave as a hole')
    if args.clone:
        for dst, src in args.clone:
            if not any(e.rel == dst for v in vols for t in v.trees for e in t.entries if e.clone_of):
                raise Fail(f'--clone {dst}={src}: no tree has both files')

    # container size
    max_vols_needed = len(vols)
    if args.size:
        size = parse_size(args.size)
    else:
        need = estimate_blocks(vols, bs) * bs
        size = max(128 << 20, (max_vols_needed - 1) * (512 << 20) + (64 << 20), need + need // 4)
        size = -(-size // (1 << 20)) << 20
    if size % bs or size < 1 << 20:
        raise Fail('--size must be a multiple of the block size and at least 1 MiB')
    max_fs = min(100, -(-size // (512 << 20)))
    if len(vols) > max_fs:
        raise Fail(f'{len(vols)} volumes need a container over {(len(vols) - 1) * 512} MiB '
                   f'(one volume per 512 MiB started, Apple File System Reference)')
    total = size // bs
    lay = Layout(total, bs)
    space = Space(total)
    space.mark(0, 1)
    space.mark(lay.desc_base, lay.desc_blocks)
    space.mark(lay.data_base, lay.data_blocks)
    space.mark(lay.ip_bm_base, 16)
    space.mark(lay.ip_base, lay.ip_blocks)
    space.next = lay.first_free

    # file data, then metadata
    for v in vols:
        v.first_block = space.next
        for t in v.trees:
            place_streams(t, space)
        v.data_blocks = space.next - v.first_block
    next_oid = FIRST_FREE_OID
    blocks = {}                                       # block -> bytes of metadata to write
    for v in vols:
        v.oid = next_oid
        next_oid += 1
    container_omap_recs = []
    vol_plans = []
    for v in vols:
        fs_trees = []
        for t in v.trees:
            recs = tree_records(v, t)
            bt = BTree(bs, recs, T_FSTREE, OBJ_VIRTUAL | (OBJ_ENCRYPTED if v.encrypted else 0),
                       BT_SEQUENTIAL | BT_NONALIGNED)
            fs_trees.append((t, bt, recs))
        v.fs_base = next_oid
        next_oid += max(bt.count for _, bt, _ in fs_trees)
        for t, bt, _ in fs_trees:
            bt.assign(v.fs_base)
        vol_plans.append((v, fs_trees))
    nx_next_oid = next_oid

    for v, fs_trees in vol_plans:
        v_first = space.next
        sb_bno = space.take(1)
        # snapshot superblock copies and the fs nodes of every transaction
        omap_recs = []
        node_blocks = {}
        for t, bt, recs in fs_trees:
            t.sb_copy = space.take(1) if t.snapname is not None else sb_bno
            first = space.take(bt.count)
            for i, (oid, node) in enumerate(bt.nodes(t.xid, longest(recs))):
                bno = first + i
                node_blocks[bno] = node
                omap_recs.append((oid, t.xid, bno))
        omap_recs.sort()
        vflag = 4 if v.encrypted else 0
        omap_leaf = [(struct.pack('<QQ', o, x), struct.pack('<IIQ', vflag, bs, b)) for o, x, b in omap_recs]
        omap_tree = BTree(bs, omap_leaf, T_OMAP, OBJ_PHYSICAL, BT_SEQUENTIAL | BT_PHYSICAL, fixed=(16, 16))
        omap_obj = space.take(1)
        omap_tree.assign(space.take(omap_tree.count))
        for bno, node in omap_tree.nodes(X, (16, 16)):
            node_blocks[bno] = node
        # extent-reference trees (one per transaction)
        extref_roots = {}
        for i, (t, _, _) in enumerate(fs_trees):
            er = extref_records(t, fs_trees[i - 1][0] if i else None)
            et = BTree(bs, er, T_EXTREF, OBJ_PHYSICAL, BT_SEQUENTIAL | BT_PHYSICAL | BT_NONALIGNED)
            et.assign(space.take(et.count))
            for bno, node in et.nodes(t.xid, (8, 20) if er else (0, 0)):
                node_blocks[bno] = node
            extref_roots[t] = et.root_id
        # snapshot metadata tree and the omap snapshot tree
        snaps = [t for t, _, _ in fs_trees if t.snapname is not None]
        sm_recs = []
        for t in snaps:
            nb = t.snapname.encode('utf-8')
            sm_recs.append((hdr(t.xid, J_SNAP_META),
                            struct.pack('<QQQQQIIH', extref_roots[t], t.sb_copy, t.time, t.time, t.inum,
                                        OBJ_PHYSICAL | T_BTREE, 0, len(nb) + 1) + nb + b'\0'))
        for t in sorted(snaps, key=lambda t: t.snapname.encode('utf-8')):
            nb = t.snapname.encode('utf-8')
            sm_recs.append((hdr(OID_MASK, J_SNAP_NAME) + struct.pack('<H', len(nb) + 1) + nb + b'\0',
                            struct.pack('<Q', t.xid)))
        smt = BTree(bs, sm_recs, T_SNAPMETA, OBJ_PHYSICAL, BT_SEQUENTIAL | BT_PHYSICAL | BT_NONALIGNED)
        smt.assign(space.take(smt.count))
        for bno, node in smt.nodes(X, longest(sm_recs)):
            node_blocks[bno] = node
        snap_tree_root = 0
        if snaps:
            os_recs = [(struct.pack('<Q', t.xid), bytes(16)) for t in snaps]
            ost = BTree(bs, os_recs, T_OMAP_SNAP, OBJ_PHYSICAL, BT_SEQUENTIAL | BT_PHYSICAL, fixed=(8, 16))
            ost.assign(space.take(ost.count))
            for bno, node in ost.nodes(X, (8, 16)):
                node_blocks[bno] = node
            snap_tree_root = ost.root_id
        ob = bytearray(bs)
        obj_header(ob, omap_obj, X, OBJ_PHYSICAL | T_OMAP)
        struct.pack_into('<IIIIQQQQQ', ob, 0x20, 0, len(snaps), OBJ_PHYSICAL | T_BTREE, OBJ_PHYSICAL | T_BTREE,
                         omap_tree.root_id, snap_tree_root, max((t.xid for t in snaps), default=0), 0, 0)
        node_blocks[omap_obj] = ob
        v_last = space.next
        n_sb = 1 + len(snaps)
        alloc_count = v.data_blocks + (v_last - v_first) - n_sb
        # volume superblocks: the current one and each snapshot's copy
        for k, (t, bt, recs) in enumerate(fs_trees):
            snap = t.snapname is not None
            b = volume_superblock(v, t, bs, snap, k, alloc_count, omap_obj, bt.root_id, extref_roots[t],
                                  smt.root_id, len(snaps))
            node_blocks[t.sb_copy] = b
        for bno, b in node_blocks.items():
            seal(b)
            blocks[bno] = b
        container_omap_recs.append((v.oid, X, sb_bno))
        v.alloc_count = alloc_count

    # container object map
    com_leaf = [(struct.pack('<QQ', o, x), struct.pack('<IIQ', 0, bs, b)) for o, x, b in container_omap_recs]
    com_tree = BTree(bs, com_leaf, T_OMAP, OBJ_PHYSICAL, BT_SEQUENTIAL | BT_PHYSICAL, fixed=(16, 16))
    com_obj = space.take(1)
    com_tree.assign(space.take(com_tree.count))
    for bno, node in com_tree.nodes(X, (16, 16)):
        seal(node)
        blocks[bno] = node
    ob = bytearray(bs)
    obj_header(ob, com_obj, X, OBJ_PHYSICAL | T_OMAP)
    struct.pack_into('<IIIIQQQQQ', ob, 0x20, 1, 0, OBJ_PHYSICAL | T_BTREE, OBJ_PHYSICAL | T_BTREE,
                     com_tree.root_id, 0, 0, 0, 0)
    seal(ob)
    blocks[com_obj] = ob

    # ephemeral objects and the space manager (the bitmap is final now)
    fixed, free = write_spaceman(lay, space, X, bs)
    reaper = bytearray(bs)
    obj_header(reaper, REAPER_OID, X, OBJ_EPHEMERAL | T_REAPER)
    struct.pack_into('<QQQQIIIIQQQII', reaper, 0x20, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, bs - 112)
    seal(reaper)
    fixed[lay.data_base + 1] = bytes(reaper)
    fixed[lay.data_base + 2] = empty_free_queue(bs, IP_FQ_OID, X)
    fixed[lay.data_base + 3] = empty_free_queue(bs, MAIN_FQ_OID, X)
    cpm = bytearray(bs)
    obj_header(cpm, lay.desc_base, X, OBJ_PHYSICAL | T_CPMAP)
    maps = [(OBJ_EPHEMERAL | T_SPACEMAN, 0, SPACEMAN_OID, lay.data_base),
            (OBJ_EPHEMERAL | T_REAPER, 0, REAPER_OID, lay.data_base + 1),
            (OBJ_EPHEMERAL | T_BTREE, T_FREEQ, IP_FQ_OID, lay.data_base + 2),
            (OBJ_EPHEMERAL | T_BTREE, T_FREEQ, MAIN_FQ_OID, lay.data_base + 3)]
    struct.pack_into('<II', cpm, 0x20, 1, len(maps))
    for i, (ty, sub, oid, pa) in enumerate(maps):
        struct.pack_into('<IIIIQQQ', cpm, 0x28 + 40 * i, ty, sub, bs, 0, 0, oid, pa)
    seal(cpm)
    fixed[lay.desc_base] = bytes(cpm)
    cont_uuid = ids.uuid(ids.data, IDS_CONTAINER, uuid.uuid5(NS, 'container ' + ' '.join(names)))
    nx = bytearray(bs)
    obj_header(nx, 1, X, OBJ_EPHEMERAL | T_NX)
    struct.pack_into('<4sIQQQQ16sQQIIQQIIIIIIQQQII', nx, 0x20, b'NXSB', bs, total, 0, 0, 2, cont_uuid.bytes,
                     nx_next_oid, X + 1, lay.desc_blocks, lay.data_blocks, lay.desc_base, lay.data_base,
                     2, 4, 0, 2, 0, 4, SPACEMAN_OID, com_obj, REAPER_OID, 0, max_fs)
    for i, v in enumerate(vols):
        struct.pack_into('<Q', nx, 0xB8 + 8 * i, v.oid)
    min_blocks = 8 if size >= 128 << 20 else main_fq_node_limit(total)
    struct.pack_into('<Q', nx, 0x520, (min_blocks << 32) | (4 << 16) | 1)
    seal(nx)
    fixed[0] = bytes(nx)
    fixed[lay.desc_base + 1] = bytes(nx)

    write_image(args.out, size, bs, vols, fixed, blocks)
    if args.ids:
        out = dict(ids.data)
        out[IDS_CONTAINER] = str(cont_uuid)
        for v in vols:
            m = dict(sorted(saved[v.name].items()))
            m[IDS_VOLUME] = str(v.uuid)
            out[v.name] = m
        with open(args.ids, 'w', encoding='utf-8') as f:
            json.dump(out, f, indent=1, sort_keys=True, ensure_ascii=False)
            f.write('\n')
    used = total - free
    parts = []
    for v in vols:
        c = v.current.counts
        parts.append(f'"{v.name}" oid {v.oid} ({c["file"]} files, {c["dir"]} folders, {c["symlink"]} symlinks, '
                     f'{c["other"]} other; {len(v.trees) - 1} snapshots)')
    print(f'{args.out}: APFS container, {size} bytes, {total} blocks of {bs} ({free} free, {used} used), '
          f'xid {X}; ' + '; '.join(parts))


def volume_superblock(v, t, bs, snap, k, alloc_count, omap_obj, root_oid, extref_root, snapmeta_root, nsnaps):
    b = bytearray(bs)
    if snap:
        obj_header(b, t.sb_copy, t.xid, OBJ_PHYSICAL | T_FS)
    else:
        obj_header(b, v.oid, t.xid, OBJ_VIRTUAL | T_FS)
    incompat = INCOMPAT_CASE_INSENSITIVE if v.fold else INCOMPAT_NORM_INSENSITIVE
    struct.pack_into('<4sIQQQQQQQ', b, 0x20, b'APSB', v.index, FEATURE_HARDLINK_MAP, 0, incompat, t.time,
                     0, 0, 0 if snap else alloc_count)
    struct.pack_into('<HHIIIHH', b, 0x60, 5, 0, 0, 6, 0, 1, 0)      # meta_crypto: v5.0, class F, key revision 1
    struct.pack_into('<III', b, 0x74, OBJ_VIRTUAL | T_BTREE, OBJ_PHYSICAL | T_BTREE, OBJ_PHYSICAL | T_BTREE)
    struct.pack_into('<QQQQ', b, 0x80, 0 if snap else omap_obj, root_oid, 0 if snap else extref_root,
                     0 if snap else snapmeta_root)
    c = t.counts
    struct.pack_into('<QQQQQQ', b, 0xB0, t.next_id if snap else v.next_obj_id, c['file'], c['dir'], c['symlink'],
                     c['other'], k if snap else nsnaps)
    struct.pack_into('<QQ', b, 0xE0, alloc_count, 0)
    b[0xF0:0x100] = v.uuid.bytes
    struct.pack_into('<QQ', b, 0x100, t.time, 0 if v.encrypted else FS_UNENCRYPTED)
    b[0x110:0x110 + len(FORMATTED_BY)] = FORMATTED_BY
    struct.pack_into('<QQ', b, 0x130, v.format_time, FORMAT_XID)
    nb = v.name.encode('utf-8')
    b[0x2C0:0x2C0 + len(nb)] = nb
    struct.pack_into('<IHH', b, 0x3C0, 3, v.role, 0)
    struct.pack_into('<II', b, 0x410, OBJ_PHYSICAL | T_BTREE, OBJ_PHYSICAL | T_BTREE)
    return b


def copy_big(s, fd, bs):
    """Copy a large file's one run in pieces."""
    (_, _, p), = s.runs
    done = 0
    try:
        with open(open_noatime(s.path), 'rb') as f:
            while True:
                piece = f.read(1 << 22)
                if not piece:
                    break
                os.pwrite(fd, piece, p * bs + done)
                done += len(piece)
    except OSError as e:
        raise Fail(f'{s.path}: {e.strerror}')
    if done != s.size:
        raise Fail(f'{s.path}: changed while the image was written')


def write_image(out, size, bs, vols, fixed, blocks):
    try:
        f = open(out, 'wb')
    except OSError as e:
        raise Fail(f'{out}: {e.strerror}')
    with f:
        try:
            f.truncate(size)
            fd = f.fileno()
            for bno in sorted(fixed):
                os.pwrite(fd, fixed[bno], bno * bs)
            pending, at, size_pending = [], None, 0        # data runs are mostly contiguous: write in batches

            def flush():
                nonlocal pending, at, size_pending
                if pending:
                    os.pwrite(fd, b''.join(pending), at * bs)
                pending, at, size_pending = [], None, 0
            for v in vols:
                for t in v.trees:
                    for s in t.streams:
                        if s.data is None and len(s.runs) == 1 and s.size > 1 << 24:
                            flush()
                            copy_big(s, fd, bs)
                            continue
                        data = s.data if s.data is not None else read_file(s.path, s.size)
                        for b, n, p in s.runs:
                            if not p:
                                continue
                            chunk = data[b * bs:(b + n) * bs]
                            if at is None or p != at + size_pending // bs or size_pending > 1 << 23:
                                flush()
                                at = p
                            pending.append(chunk + bytes(n * bs - len(chunk)))
                            size_pending += n * bs
            flush()
            run, start = [], None
            for bno in sorted(blocks):
                if start is not None and bno == start + len(run):
                    run.append(blocks[bno])
                else:
                    if run:
                        os.pwrite(fd, b''.join(run), start * bs)
                    run, start = [blocks[bno]], bno
            if run:
                os.pwrite(fd, b''.join(run), start * bs)
        except BaseException:
            f.close()
            os.unlink(out)
            raise


def main(argv=None):
    ap = argparse.ArgumentParser(description='Build an APFS container image from folders (see the module docstring).')
    ap.add_argument('out', metavar='OUT.img')
    ap.add_argument('--volume', action='append', default=[], metavar='NAME=DIR',
                    help='a volume named NAME holding the tree DIR (repeat for more volumes, in order)')
    ap.add_argument('--size', help='container size in bytes, or with a K/M/G suffix (default: room for the '
                                   'trees, at least 128M, and 512M per volume past the first)')
    ap.add_argument('--block-size', type=int, default=4096,
                    help='block size, a power of two from 4096 to 65536 (default 4096)')
    ap.add_argument('--case-sensitive', action='append', nargs='?', const='*', default=[], metavar='NAME',
                    help='volume NAME (every volume without NAME) is case-sensitive: normalization-insensitive '
                         'as newfs_apfs makes it; default case-insensitive')
    ap.add_argument('--role', action='append', default=[], metavar='NAME=ROLE',
                    help=f'volume role: {"|".join(ROLES)}')
    ap.add_argument('--snapshot', action='append', default=[], metavar='NAME=SNAPNAME=DIR',
                    help='volume NAME gets a snapshot SNAPNAME holding DIR (an earlier state); repeat, oldest first')
    ap.add_argument('--encrypted', action='append', default=[], metavar='NAME',
                    help='mark volume NAME encrypted (APFS_FS_UNENCRYPTED clear; contents stay plain, no keybag)')
    ap.add_argument('--compress', action='append', default=[], metavar='GLOB',
                    help='store matching files (path relative to the volume folder; fnmatch) decmpfs-compressed')
    ap.add_argument('--compress-method', choices=['zlib', 'lzvn', 'lzfse'], default='zlib',
                    help='how --compress stores files (decmpfs types 3/4, 7/8 or 11/12), default zlib')
    ap.add_argument('--clone', dest='clone_specs', action='append', default=[], metavar='DST=SRC',
                    help="DST's extents share SRC's blocks (refcount 2), as cp -c makes; equal contents")
    ap.add_argument('--sparse', action='append', default=[], metavar='GLOB',
                    help='leave the all-zero blocks of matching files unallocated: holes (file extents at block 0, '
                         'sparse-bytes xfield)')
    ap.add_argument('--ids', metavar='IDS.json',
                    help='per volume path -> inode number map to keep and update (and the UUIDs), so a rewritten '
                         'image keeps its numbers')
    args = ap.parse_args(argv)
    try:
        build(args)
    except Fail as e:
        print(f'make-apfs: error: {e}', file=sys.stderr)
        return 2
    except OSError as e:
        print(f'make-apfs: error: {e.filename or ""}: {e.strerror}', file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main())
