#!/usr/bin/env python3
"""Build the uffs content workload: an NTFS image holding gigabytes of real file data, for content search and
hashing (issue 29).

mkntfs formats the image and the ntfs-3g FUSE driver fills it, so every on-disk structure is the real thing. The
data is this machine's /usr: a deterministic sample of its regular files (ordered by a keyed hash of the path, taken
until the byte budget is spent; symlinks and devices skipped), copied with their paths and modification times. Around
it, the kinds of data a content reader must handle:

  /usr/...          text, ELF binaries, .so libraries, .gz and other archives as the system has them
  /archives         .zip (stored and deflated), .tar, .tar.gz and .tar.xz made here from /usr/share text
  /utf16            UTF-16LE text converted from /usr text: with and without a BOM, LF and CRLF
  /compressed       a folder with FILE_ATTRIBUTE_COMPRESSED: ntfs-3g writes its files as LZNT1 compression units
  /fragmented       files written after free space was cut into holes, so each has tens to hundreds of runs (one
                    in a compressed folder: compressed and fragmented)
  /sparse           sparse files: data islands between holes, a trailing hole, one all hole
  /resident         tiny files (< 700 bytes) whose data lives in the MFT record; /empty: empty files
  /streams          files with named streams (ntfs-3g streams_interface=xattr, `user.NAME`), small and large

Needles with known answers are planted in files of every kind (see --help of the needle options below and the
manifest): an ASCII literal, a case-changed variant, a variant that is not a whole word, and a UTF-16LE literal.
The manifest (OUT.manifest.json) lists every planted site (path, stream, kind, encoding, byte offset, line), the
volume's totals (files, data bytes, stream bytes) and the istat facts checked at the end.

Python 3 stdlib only. Needs root, /dev/fuse, mkntfs, ntfs-3g and The Sleuth Kit (istat, fls).

    sudo python3 scripts/make-content-volume.py                       # -> /work/bench/content.img, 2.2 GB of data
    sudo python3 scripts/make-content-volume.py --data-mb 64 --out /tmp/c.img   # a small one a test can afford

See docs/benchmarks.md ("The content workload").
"""

import argparse
import hashlib
import io
import json
import os
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from types import SimpleNamespace

from benchvol.build import Progress, copy_sparse, mount, pick_stage_dir, unmount
from benchvol.words import MIB

DEFAULT_OUT = "/work/bench/content.img"
DEFAULT_SEED = 29
SOURCE = "/usr"
MOUNT_OPTS = "noatime,big_writes,compression,streams_interface=xattr"
CLUSTER = 4096
FILE_ATTRIBUTE_DIRECTORY, FILE_ATTRIBUTE_COMPRESSED = 0x10, 0x800
MAX_SOURCE_FILE = 256 * MIB          # one huge binary would be most of a small budget
RESIDENT_MAX = 600                   # "tiny": fits in a 1 KiB MFT record beside the other attributes

# The planted strings. Every site's text is one of these, followed by " kind=KIND site=N" so that a regex can tell
# the sites apart; the manifest has each site's exact text.
NEEDLE = "UFFS-NEEDLE-7Q2K"                # ASCII literal, the one every kind holds
NEEDLE_CASED = "Uffs-Needle-7q2k"          # found only case-insensitively
NEEDLE_GLUED = "UFFS-NEEDLE-7Q2Kx9"        # the literal, but not as a whole word
NEEDLE_WIDE = "UFFS-WIDE-NEEDLE-5J8P"      # planted as UTF-16LE only
NEEDLE_REGEX = r"NEEDLE-7Q2K kind=[a-z0-9-]+ site=[0-9]+"


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# Choosing the data
# ---------------------------------------------------------------------------

def walk_source(root):
    """Every regular file under root as (path, size, mtime), in sorted order; symlinks, devices, sockets skipped."""
    out = []
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            p = os.path.join(d, name)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_size <= MAX_SOURCE_FILE:
                out.append((p, st.st_size, st.st_mtime))
    return out


def select(files, budget, seed):
    """A deterministic sample: files ordered by SHA-256(seed, path), taken while they fit in the budget."""
    key = lambda f: hashlib.sha256(f"{seed}\0{f[0]}".encode()).digest()
    picked, total = [], 0
    for f in sorted(files, key=key):
        if total + f[1] <= budget:
            picked.append(f)
            total += f[1]
        if total >= budget - 4096:
            break
    picked.sort()
    return picked, total


def looks_text(data):
    """UTF-8 text without NUL, the way grep tools decide: good for planting lines and for UTF-16 conversion."""
    if not data or b"\0" in data[:65536]:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def text_pool(files, want, rng, min_size=2048, max_size=MIB):
    """Up to `want` bytes of text files from the source list (path, bytes), in a seeded order; none over
    `max_size`, so that the pool is many files."""
    cands = [f for f in files if min_size <= f[1] <= max_size and (f[0].startswith("/usr/share/") or f[0].startswith(
        "/usr/include/"))]
    rng.shuffle(cands)
    out, n = [], 0
    for p, size, _ in cands:
        if n >= want:
            break
        try:
            with open(p, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        if looks_text(data):
            out.append((p, data))
            n += len(data)
    return out


# ---------------------------------------------------------------------------
# Planting needles
# ---------------------------------------------------------------------------

class Sites:
    """The planted needles: each a dict with path (inside the volume, '/'-rooted), stream (None for the file's
    data), kinds, needle, encoding, offset and line (1-based, counted in the file's own encoding)."""

    def __init__(self):
        self.sites = []

    def line(self, needle, kind):
        return f"{needle} kind={kind} site={len(self.sites)}"

    def plant(self, data, path, kinds, needle=NEEDLE, encoding="ascii", at=None, stream=None, rng=None,
              boundary=None):
        """Inserts a needle line into data (bytes already in `encoding`) and records the site. `at`: a byte offset
        (moved to the next line start); `boundary`: an offset the needle must straddle (for compression units);
        otherwise a seeded place. Returns the new bytes."""
        text = self.line(needle, kinds[0])
        wide = encoding == "utf-16le"
        nl = "\r\n" if (b"\r\0\n\0" if wide else b"\r\n") in data[:4096] else "\n"
        enc = lambda s: s.encode("utf-16-le") if wide else s.encode()
        unit = 2 if wide else 1
        if boundary is not None:
            # the needle's first half before the boundary, its second after: no line break around it
            body = enc(text)
            off = max(0, boundary - (len(body) // 2) // unit * unit)
            if off > len(data):
                data = data + enc(" ") * ((off - len(data)) // unit)
            ins = body
        else:
            if at is None:
                at = (rng.randrange(max(1, len(data))) if rng else len(data) // 2)
            at -= at % unit
            nlb = enc("\n")
            j = data.find(nlb, at)
            while wide and j >= 0 and j % 2:
                j = data.find(nlb, j + 1)
            off = len(data) if j < 0 else j + len(nlb)
            ins = enc(text + nl)
            if off == len(data) and data and not data.endswith(nlb):
                ins = enc(nl) + ins
                off_text = off + len(enc(nl))
            else:
                off_text = off
        new = data[:off] + ins + data[off:]
        if boundary is not None:
            off_text = off
        before = new[:off_text]
        if wide:
            line = 1 + sum(1 for k in range(0, len(before) - 1, 2) if before[k:k + 2] == b"\n\0")
        else:
            line = 1 + before.count(b"\n")
        self.sites.append({"path": path, "stream": stream, "kinds": list(kinds), "needle": needle,
                           "text": text, "encoding": encoding, "offset": off_text, "line": line})
        return new


# ---------------------------------------------------------------------------
# Writing through ntfs-3g
# ---------------------------------------------------------------------------

class Volume:
    """The mounted volume being filled: paths are '/'-rooted inside it."""

    def __init__(self, mnt):
        self.mnt = mnt
        self.compressed_roots = []
        self.errors = []

    def host(self, path):
        return self.mnt + path

    def mkdirs(self, path):
        """Makes the folder and its parents; a folder under a compressed root is marked compressed too."""
        parts = [p for p in path.split("/") if p]
        cur = ""
        for p in parts:
            cur += "/" + p
            h = self.host(cur)
            if not os.path.isdir(h):
                os.mkdir(h)
                if any(cur == r or cur.startswith(r + "/") for r in self.compressed_roots):
                    mark_compressed(h)

    def write(self, path, data, mtime=None):
        self.mkdirs(os.path.dirname(path))
        with open(self.host(path), "wb") as fh:
            fh.write(data)
        if mtime is not None:
            os.utime(self.host(path), (mtime, mtime))

    def copy(self, src, path, mtime):
        self.mkdirs(os.path.dirname(path))
        try:
            shutil.copyfile(src, self.host(path))
            os.utime(self.host(path), (mtime, mtime))
        except OSError as e:
            # a name ntfs-3g refuses, or a file that vanished: skipped and counted, the build goes on
            self.errors.append(f"{path}: {e}")
            try:
                os.unlink(self.host(path))
            except OSError:
                pass
            return False
        return True

    def stream(self, path, name, data):
        """A named stream, through ntfs-3g's streams_interface=xattr (what `setfattr -n user.NAME` does)."""
        os.setxattr(self.host(path), "user." + name, data)


def mark_compressed(host_dir):
    """Sets FILE_ATTRIBUTE_COMPRESSED on a folder, so ntfs-3g (mounted with `compression`) compresses the files
    created in it. system.ntfs_attrib_be is the attribute word, big-endian."""
    os.setxattr(host_dir, "system.ntfs_attrib_be",
                (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_COMPRESSED).to_bytes(4, "big"))


# ---------------------------------------------------------------------------
# The parts of the volume
# ---------------------------------------------------------------------------

def part_usr(vol, picked, sites, rng, q):
    """The /usr sample; a few text files and binaries get a needle. A share of it goes under /compressed."""
    texts = [f for f in picked if 4096 < f[1] <= 4 * MIB and f[0].startswith(("/usr/share/", "/usr/include/"))]
    elfs = [f for f in picked if f[1] > 65536 and f[0].startswith(("/usr/bin/", "/usr/lib/"))]
    hosts = {}
    for f in rng.sample(texts, min(len(texts), 60)):
        with open(f[0], "rb") as fh:
            if looks_text(fh.read()):
                hosts[f[0]] = "text"
        if len(hosts) == 6:
            break
    k = 0
    for f in rng.sample(elfs, min(len(elfs), 400)):
        with open(f[0], "rb") as fh:
            if fh.read(4) == b"\x7fELF":
                hosts[f[0]] = "binary"
                k += 1
        if k == 3:
            break
    # about 4 % of the sample's bytes go to the compressed folder, text and binaries alike
    comp = set()
    cbytes, cwant = 0, int(0.04 * sum(f[1] for f in picked))
    for f in rng.sample(picked, len(picked)):
        if cbytes >= cwant:
            break
        if f[0] not in hosts and f[1] <= 16 * MIB:
            comp.add(f[0])
            cbytes += f[1]
    vol.compressed_roots.append("/compressed")
    vol.mkdirs("/compressed")
    prog = Progress("usr MiB", sum(f[1] for f in picked) // MIB, q)
    done = 0
    for src, size, mtime in picked:
        dst = ("/compressed" if src in comp else "") + src
        kind = hosts.get(src)
        if kind:
            with open(src, "rb") as fh:
                data = fh.read()
            kinds = [kind] + (["compressed"] if src in comp else [])
            data = sites.plant(data, dst, kinds, rng=rng)
            vol.write(dst, data, mtime)
        else:
            vol.copy(src, dst, mtime)
        done += size
        prog.add(done // MIB - prog.done)
    prog.finish()
    return len(comp), cbytes


def part_compressed_extra(vol, pool, sites, scale):
    """Text in the compressed folder with needles on purpose: one straddling the boundary between two 64 KiB
    compression units (16 clusters of 4 KiB), one near the end, and a UTF-16LE file."""
    blob = b"".join(d for _, d in pool)[: max(256 * 1024, int(8 * MIB * scale))]
    data = sites.plant(blob, "/compressed/needles/units.txt", ["compressed", "unit-boundary"], boundary=65536 * 2)
    data = sites.plant(data, "/compressed/needles/units.txt", ["compressed"], at=len(data) - 100)
    vol.write("/compressed/needles/units.txt", data)
    wide = b"\xff\xfe" + blob[: len(blob) // 4].decode("utf-8", "replace").encode("utf-16-le")
    wide = sites.plant(wide, "/compressed/needles/wide.txt", ["compressed", "utf16-bom"], NEEDLE_WIDE,
                       "utf-16le", at=len(wide) // 2)
    vol.write("/compressed/needles/wide.txt", wide)


def part_archives(vol, pool, sites, scale):
    """Archives made here from /usr text: the needle is visible in the stored zip and the plain tar only."""
    want = max(512 * 1024, int(10 * MIB * scale))
    members, n = [], 0
    for p, d in pool:
        if n >= want:
            break
        members.append((p.lstrip("/"), d))
        n += len(d)
    needle_member = ("needles/inside-archive.txt", (sites.line(NEEDLE, "archive") + "\n").encode())
    made = {}
    for name, comp in (("docs-stored.zip", zipfile.ZIP_STORED), ("docs-deflated.zip", zipfile.ZIP_DEFLATED)):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", comp) as z:
            for m, d in members + [needle_member]:
                zi = zipfile.ZipInfo(m, date_time=(2024, 9, 17, 12, 0, 0))
                zi.compress_type = comp
                z.writestr(zi, d)
        made[name] = buf.getvalue()
    for name, mode, opts in (("docs.tar", "w", {}), ("docs.tar.gz", "w:gz", {}), ("docs.tar.xz", "w:xz",
                                                                                    {"preset": 1})):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode=mode, **opts) as t:
            for m, d in members + [needle_member]:
                ti = tarfile.TarInfo(m)
                ti.size, ti.mtime = len(d), 1726574400
                t.addfile(ti, io.BytesIO(d))
        made[name] = buf.getvalue()
    for name, data in made.items():
        vol.write("/archives/" + name, data)
        if name in ("docs-stored.zip", "docs.tar"):
            off = data.find(needle_member[1])
            before = data[:off]
            sites.sites.append({"path": "/archives/" + name, "stream": None, "kinds": ["archive"],
                                "needle": NEEDLE, "text": needle_member[1].decode().strip(), "encoding": "ascii",
                                "offset": off, "line": 1 + before.count(b"\n")})
    return sum(len(d) for d in made.values())


def part_utf16(vol, pool, sites, rng, scale):
    """UTF-16LE copies of text files: BOM+LF, no BOM+LF, BOM+CRLF, no BOM+CRLF in turn; needles in some."""
    want = max(256 * 1024, int(20 * MIB * scale))
    n, count = 0, 0
    for i, (p, d) in enumerate(pool):
        if n >= want:
            break
        bom, crlf = i % 4 in (0, 2), i % 4 >= 2
        text = d.decode("utf-8")
        if crlf:
            text = text.replace("\r\n", "\n").replace("\n", "\r\n")
        data = (b"\xff\xfe" if bom else b"") + text.encode("utf-16-le")
        name = f"/utf16/{'bom' if bom else 'nobom'}-{'crlf' if crlf else 'lf'}/{i:04d}-{os.path.basename(p)}.txt"
        if i < 8:
            kind = "utf16-" + ("bom" if bom else "nobom") + ("-crlf" if crlf else "")
            data = sites.plant(data, name, [kind], NEEDLE_WIDE, "utf-16le", rng=rng)
        vol.write(name, data)
        n += len(data)
        count += 1
    return count, n


def part_sparse(vol, pool, sites, scale):
    """Sparse files: islands of text between holes (needles in islands after a hole), a trailing hole, all hole."""
    text = b"".join(d for _, d in pool[:40])
    s = max(scale, 1 / 64)
    specs = [  # name, logical size, [(offset, island bytes)]
        ("log-with-holes.txt", int(64 * MIB * s), [(0, 64 * 1024), (int(16 * MIB * s), 100_000),
                                                    (int(40 * MIB * s), 300_000)]),
        ("disk-image.vhd", int(96 * MIB * s), [(int(8 * MIB * s), 1 * MIB), (int(90 * MIB * s), 200_000)]),
        ("trailing-hole.dat", int(24 * MIB * s), [(0, 500_000)]),
        ("all-hole.dat", int(16 * MIB * s), []),
    ]
    total = 0
    for name, size, islands in specs:
        path = "/sparse/" + name
        vol.mkdirs("/sparse")
        fd = os.open(vol.host(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            for j, (off, n) in enumerate(islands):
                off = off // CLUSTER * CLUSTER
                isl = text[(j * 7919) % max(1, len(text) - n):][:n]
                if j > 0 or name == "trailing-hole.dat":
                    isl = sites.plant(isl, path, ["sparse"], at=len(isl) // 2)
                    sites.sites[-1]["offset"] += off
                    sites.sites[-1]["line"] = None      # lines before it depend on the hole's zeros: none
                os.pwrite(fd, isl, off)
            os.ftruncate(fd, size)
        finally:
            os.close(fd)
        total += size
    return len(specs), total


def part_resident(vol, pool, sites, rng):
    """Tiny files (1..699 bytes) whose data stays in the MFT record, some with needles; and empty files."""
    lines = [l for _, d in pool[:200] for l in d.split(b"\n") if 8 < len(l) < 200]
    n = 0
    for i in range(400):
        want = rng.randint(1, RESIDENT_MAX - 90)
        data = b""
        while len(data) < want:
            data += rng.choice(lines) + b"\n"
        data = data[:want]
        path = f"/resident/r{i:03d}.txt"
        if i % 40 == 7:
            data = sites.plant(data, path, ["resident"], rng=rng)
        elif i % 40 == 13:
            data = sites.plant(data, path, ["resident", "case"], NEEDLE_CASED, rng=rng)
        elif i % 40 == 21:
            data = sites.plant(data, path, ["resident", "not-whole-word"], NEEDLE_GLUED, rng=rng)
        elif i == 33:
            data = sites.plant(b"\xff\xfe" + data.decode("utf-8", "replace")[:100].encode("utf-16-le"), path,
                               ["resident", "utf16-bom"], NEEDLE_WIDE, "utf-16le", rng=rng)
        assert len(data) <= RESIDENT_MAX, len(data)
        vol.write(path, data)
        n += len(data)
    for i in range(40):
        vol.write(f"/empty/e{i:02d}", b"")
    return 400, n


def part_streams(vol, pool, sites, rng):
    """Files with named streams: small (resident) and large (up to 60 KB, non-resident), text and binary, some with
    needles; one empty stream. The xattr interface caps a stream at 64 KiB."""
    count, n = 0, 0
    for i in range(60):
        p, d = pool[(i * 13) % len(pool)]
        path = f"/streams/s{i:02d}-{os.path.basename(p)}"
        vol.write(path, d[:20000])
        k = 1 + i % 3
        for j in range(k):
            name = ["Zone.Identifier", "summary", "thumbnail"][j]
            if name == "Zone.Identifier":
                data = b"[ZoneTransfer]\r\nZoneId=3\r\nReferrerUrl=https://example.invalid/\r\n"
            elif name == "summary":
                q = pool[(i * 7 + 3) % len(pool)][1]
                data = q[: rng.choice([300, 5000, 60000])]
            else:
                data = random.Random(i).randbytes(rng.choice([600, 40000]))
            if name == "summary" and i % 6 == 1:
                data = sites.plant(data, path, ["stream"], rng=rng, stream=name)
            if name == "Zone.Identifier" and i % 10 == 4:
                data = sites.plant(b"\xff\xfe" + data.decode().encode("utf-16-le"), path, ["stream", "utf16-bom"],
                                   NEEDLE_WIDE, "utf-16le", rng=rng, stream=name)
            vol.stream(path, name, data)
            count += 1
            n += len(data)
    vol.write("/streams/with-empty-stream.txt", b"the stream beside me is empty\n")
    vol.stream("/streams/with-empty-stream.txt", "empty", b"")
    return count + 1, n


def part_fragmented(vol, pool, picked, sites, scale, q):
    """Cuts the free space into holes (fill it with files up to ENOSPC, delete every other one), writes the
    fragmented files into the holes, then deletes the rest of the filler. Done last, so nothing else lands in
    the holes."""
    t0 = time.time()
    fill = "/.fill"
    vol.mkdirs(fill)
    sizes = [16 * 1024, 32 * 1024, 64 * 1024, 128 * 1024]
    zeros = bytes(max(sizes))
    k = 0
    while True:
        h = vol.host(f"{fill}/{k}")
        try:
            with open(h, "wb") as fh:
                fh.write(zeros[: sizes[k % len(sizes)]])
        except OSError:
            os.unlink(h)
            break
        k += 1
    for j in range(0, k, 2):
        os.unlink(vol.host(f"{fill}/{j}"))
    holes = os.statvfs(vol.mnt).f_bfree * CLUSTER
    if not q:
        log(f"[fragment] free space cut into {k // 2} holes ({holes / MIB:.0f} MiB free) in {time.time() - t0:.1f}s")
    s = max(scale, 1 / 8)         # a small volume keeps its fragmented files at 1 MiB and more
    text = b"".join(d for _, d in pool)
    bins = sorted((f for f in picked if f[0].startswith("/usr/lib/") and f[1] > 4 * MIB), key=lambda f: f[0])
    files = {}
    for i in range(4):
        n = int((8 + 8 * i) * MIB * s)
        data = (text[(i * 1_000_003) % len(text):] + text)[:n]
        path = f"/fragmented/text-{i}.txt"
        for frac in (0.1, 0.5, 0.97):
            data = sites.plant(data, path, ["fragmented"], at=int(len(data) * frac))
        files[path] = data
    for i, (src, size, _) in enumerate(bins[:2]):
        with open(src, "rb") as fh:
            data = fh.read(int(24 * MIB * s))
        path = f"/fragmented/lib-{i}-{os.path.basename(src)}"
        if i == 0:
            data = sites.plant(data, path, ["fragmented", "binary"], at=len(data) * 2 // 3)
        files[path] = data
    wide = b"\xff\xfe" + text[: int(6 * MIB * s)].decode("utf-8", "replace").encode("utf-16-le")
    files["/fragmented/wide.txt"] = sites.plant(wide, "/fragmented/wide.txt", ["fragmented", "utf16-bom"],
                                                NEEDLE_WIDE, "utf-16le", at=len(wide) * 3 // 4)
    vol.compressed_roots.append("/fragmented/compressed")
    cpath = "/fragmented/compressed/text.txt"
    cdata = (text[333_333:] + text)[: int(12 * MIB * s)]
    files[cpath] = sites.plant(cdata, cpath, ["fragmented", "compressed"], at=len(cdata) * 3 // 5)
    total = sum(len(d) for d in files.values())
    if total > holes * 0.9:
        raise RuntimeError(f"fragmented files ({total / MIB:.0f} MiB) do not fit the holes ({holes / MIB:.0f} MiB)")
    # interleaved 64 KiB appends, each file a little at a time, so the holes are shared out among them
    handles = {}
    for path in files:
        vol.mkdirs(os.path.dirname(path))
        handles[path] = open(vol.host(path), "wb")
    pos = dict.fromkeys(files, 0)
    while pos:
        for path in list(pos):
            d, o = files[path], pos[path]
            handles[path].write(d[o:o + 65536])
            handles[path].flush()
            pos[path] = o + 65536
            if pos[path] >= len(d):
                del pos[path]
    for fh in handles.values():
        fh.close()
    for j in range(1, k, 2):
        os.unlink(vol.host(f"{fill}/{j}"))
    os.rmdir(vol.host(fill))
    return len(files), total


# ---------------------------------------------------------------------------
# Checks: totals over the mount, istat facts, ntfsfix, fls, rg
# ---------------------------------------------------------------------------

def totals(mnt):
    files = dirs = data = streams = sbytes = 0
    for d, ds, fs in os.walk(mnt):
        dirs += len(ds)
        for name in fs:
            p = os.path.join(d, name)
            st = os.lstat(p)
            files += 1
            data += st.st_size
            for x in os.listxattr(p, follow_symlinks=False):
                if x.startswith("user."):
                    streams += 1
                    sbytes += len(os.getxattr(p, x, follow_symlinks=False))
    return {"files": files, "dirs": dirs, "data_bytes": data, "named_streams": streams,
            "named_stream_bytes": sbytes}


def fls_index(img):
    """path -> inode number of every allocated file name (fls -r -p -u); a named stream is listed as
    "path:name" too (with its file's inode), and so is a file whose name has a colon: count inodes, not names."""
    out = subprocess.run(["fls", "-r", "-p", "-u", img], capture_output=True, text=True, check=True).stdout
    idx = {}
    for line in out.splitlines():
        head, _, path = line.partition("\t")
        if head.startswith("r/r"):
            idx["/" + path] = int(head.split()[-1].rstrip(":").split("-")[0])
    return idx


def istat_data(img, inum):
    """The $DATA attributes istat -r lists: [{name, flags, size, runs, sparse_runs, clusters}]."""
    out = subprocess.run(["istat", "-r", img, str(inum)], capture_output=True, text=True, check=True).stdout
    attrs, cur = [], None
    for line in out.splitlines():
        m = re.match(r"Type: \$DATA \(128-\d+\)\s+Name: (\S+)\s+(.*?)\s+size: (\d+)", line)
        if m:
            cur = {"name": None if m.group(1) == "N/A" else m.group(1), "flags": m.group(2).strip(),
                   "size": int(m.group(3)), "runs": 0, "sparse_runs": 0, "clusters": 0}
            attrs.append(cur)
            continue
        if line.startswith("Type:"):
            cur = None
        elif cur is not None:
            m = re.match(r"\s+Starting address: (\S+), length: (\d+)", line)
            if m:
                if m.group(1) == "X":
                    cur["sparse_runs"] += 1
                else:
                    cur["runs"] += 1
                    cur["clusters"] += int(m.group(2))
    return attrs


def facts(img, sites):
    """Per kind, istat's account of the files holding it: the evidence that each kind is what it says."""
    idx = fls_index(img)
    named = len({i for p, i in idx.items() if not p.startswith("/$")})
    want = {
        "compressed": ["/compressed/needles/units.txt", "/compressed/needles/wide.txt"],
        "fragmented": sorted(p for p in idx if p.startswith("/fragmented/")),
        "sparse": sorted(p for p in idx if p.startswith("/sparse/")),
        "resident": sorted({s["path"] for s in sites if "resident" in s["kinds"]}),
        "streams": sorted({s["path"] for s in sites if "stream" in s["kinds"]})[:4],
    }
    out = {}
    for kind, paths in want.items():
        rows = []
        for p in paths:
            for a in istat_data(img, idx[p]):
                rows.append({"path": p, "inode": idx[p], "stream": a["name"], "flags": a["flags"],
                             "size": a["size"], "runs": a["runs"], "sparse_runs": a["sparse_runs"],
                             "clusters": a["clusters"]})
        out[kind] = rows
    return out, named


def check_facts(f):
    bad = []
    for r in f["compressed"]:
        if r["stream"] is None and "Compressed" not in r["flags"]:
            bad.append(f"not compressed: {r['path']}")
    for r in f["fragmented"]:
        if r["stream"] is None and r["runs"] < 4:
            bad.append(f"only {r['runs']} runs: {r['path']}")
    for r in f["sparse"]:
        if r["stream"] is None and "Sparse" not in r["flags"]:
            bad.append(f"not sparse: {r['path']}")
    for r in f["resident"]:
        if r["stream"] is None and not r["flags"].startswith("Resident"):
            bad.append(f"not resident: {r['path']}")
    if not any(r["stream"] for r in f["streams"]):
        bad.append("no named stream seen by istat")
    return bad


def rg_check(mnt, sites):
    """rg over the mount finds the ASCII needle in exactly the files the manifest says, as many lines each."""
    want = {}
    for s in sites:
        if s["stream"] is None and s["encoding"] == "ascii" and NEEDLE in s["text"]:
            want[s["path"]] = want.get(s["path"], 0) + 1
    p = subprocess.run(["rg", "-uuu", "--no-mmap", "-c", "-F", NEEDLE, mnt], capture_output=True, text=True)
    got = {}
    for line in p.stdout.splitlines():
        path, _, n = line.rpartition(":")
        got[path[len(mnt):]] = int(n)
    return want, got


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=DEFAULT_OUT, help="image file (default %(default)s); OUT.manifest.json beside")
    ap.add_argument("--size-gb", type=float, default=2.2, help="data budget in GB of 10^9 bytes (default %(default)s)")
    ap.add_argument("--data-mb", type=float, default=0, help="data budget in MB instead (a small volume for tests)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help="selection and placement seed (default %(default)s)")
    ap.add_argument("--stage-dir", default="auto",
                    help="build in this dir, then sparse-copy to --out; 'auto' = /dev/shm when RAM allows, "
                         "'none' = build in place (default %(default)s)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()

    if os.geteuid() != 0:
        sys.exit("make-content-volume: needs root (FUSE mount, mkntfs on an image)")
    for tool in ("mkntfs", "ntfs-3g", "istat", "fls", "ntfsfix"):
        if not shutil.which(tool):
            sys.exit(f"make-content-volume: missing tool {tool}")
    budget = int(args.data_mb * 1e6) if args.data_mb else int(args.size_gb * 1e9)
    scale = budget / 2.2e9
    out = os.path.abspath(args.out)
    q = args.quiet
    say = (lambda *a: None) if q else log
    rng = random.Random(args.seed)
    t_start = time.time()

    # the made files' real bytes (archives, UTF-16, fragmented, compressed, sparse islands: about 230 MiB at full
    # scale) come out of the budget; the /usr sample takes the rest. Sparse holes are not counted.
    extras = int(230 * MIB * scale) + 2 * MIB
    files = walk_source(SOURCE)
    picked, usr_bytes = select(files, budget - extras, args.seed)
    say(f"[select  ] {len(picked):,} of {len(files):,} files under {SOURCE}, {usr_bytes / 1e9:.3f} GB "
        f"(budget {budget / 1e9:.3f} GB, seed {args.seed}) in {time.time() - t_start:.1f}s")
    pool = text_pool(files, max(4 * MIB, int(48 * MIB * min(1, scale * 4))), random.Random(args.seed + 1))
    say(f"[pool    ] {sum(len(d) for _, d in pool) / MIB:.0f} MiB of text to make files from, at {time.time() - t_start:.1f}s")

    # room for the data, the MFT (a 1 KiB record per file and then some) and free space to cut into holes
    # (measured at full scale: the data took 2.45 GB of 2.69 GiB, 4 KiB clusters rounding up 37k small files)
    size = int(budget * 1.3 + 256 * MIB + 4 * 1024 * len(picked))
    size = -(-size // (64 * MIB)) * 64 * MIB
    os.makedirs(os.path.dirname(out), exist_ok=True)
    stage = pick_stage_dir(SimpleNamespace(stage_dir=args.stage_dir), size)
    img = os.path.join(stage, f"uffs-content-{os.getpid()}.img") if stage else out + ".partial"
    with open(img, "wb") as fh:
        fh.truncate(size)
    subprocess.run(["mkntfs", "-F", "-f", "-q", "-L", "UFFS-CONTENT", "-c", str(CLUSTER), img], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    say(f"[mkntfs  ] {size / MIB:,.0f} MiB volume ({img})")

    def on_term(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)

    sites = Sites()
    counts = {}
    mnt = tempfile.mkdtemp(prefix="uffs-content-mnt-")
    proc = None
    ok = False
    try:
        proc = mount("ntfs-3g", img, mnt, MOUNT_OPTS)
        vol = Volume(mnt)
        t = time.time()
        ncomp, cbytes = part_usr(vol, picked, sites, rng, q)
        counts["usr"] = {"files": len(picked) - len(vol.errors), "bytes": usr_bytes,
                         "of_which_compressed_files": ncomp, "of_which_compressed_bytes": cbytes}
        say(f"[usr     ] {len(picked):,} files in {time.time() - t:.1f}s; {len(vol.errors)} skipped")
        for e in vol.errors[:5]:
            say(f"           skipped {e}")
        part_compressed_extra(vol, pool, sites, scale)
        t = time.time()
        counts["archives"] = {"files": 5, "bytes": part_archives(vol, pool, sites, scale)}
        counts["utf16"] = dict(zip(("files", "bytes"), part_utf16(vol, pool, sites, rng, scale)))
        counts["sparse"] = dict(zip(("files", "logical_bytes"), part_sparse(vol, pool, sites, scale)))
        counts["resident"] = dict(zip(("files", "bytes"), part_resident(vol, pool, sites, rng)))
        counts["empty"] = {"files": 40}
        counts["streams"] = dict(zip(("streams", "bytes"), part_streams(vol, pool, sites, rng)))
        say(f"[extras  ] archives, utf16, sparse, resident, empty, streams in {time.time() - t:.1f}s")
        t = time.time()
        counts["fragmented"] = dict(zip(("files", "bytes"), part_fragmented(vol, pool, picked, sites, scale, q)))
        say(f"[fragment] {counts['fragmented']['files']} files, {counts['fragmented']['bytes'] / MIB:.0f} MiB "
            f"in {time.time() - t:.1f}s")
        unmount(mnt, proc, q)
        proc = None
        if stage:
            t = time.time()
            copy_sparse(img, out + ".partial", size)
            os.unlink(img)
            img = out + ".partial"
            say(f"[copy    ] {stage} -> {os.path.dirname(out)} in {time.time() - t:.1f}s")

        # checks on the finished image
        fx = subprocess.run(["ntfsfix", "-n", img], capture_output=True, text=True)
        if fx.returncode != 0:
            raise RuntimeError(f"ntfsfix -n: {fx.stdout}{fx.stderr}")
        f, named = facts(img, sites.sites)
        bad = check_facts(f)
        if bad:
            raise RuntimeError("istat disagrees:\n  " + "\n  ".join(bad))
        proc = mount("ntfs-3g", img, mnt, "ro,streams_interface=xattr")
        tot = totals(mnt)
        if tot["files"] != named:
            raise RuntimeError(f"fls -r -p lists {named} files, the mount {tot['files']}")
        want, got = rg_check(mnt, sites.sites)
        unmount(mnt, proc, True)
        proc = None
        if want != got:
            diff = sorted(set(want.items()) ^ set(got.items()))
            raise RuntimeError(f"rg over the mount disagrees with the planted sites: {diff[:10]}")
        os.replace(img, out)
        ok = True
    finally:
        if proc is not None:
            unmount(mnt, proc, True)
        try:
            os.rmdir(mnt)
        except OSError:
            pass
        if not ok:
            for p in (img, out + ".partial"):
                if os.path.exists(p):
                    os.unlink(p)

    manifest = {
        "image": out, "volume_bytes": size, "cluster_bytes": CLUSTER, "seed": args.seed, "source": SOURCE,
        "budget_bytes": budget, "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seconds": round(time.time() - t_start, 1),
        "totals": tot, "fls_files": named, "parts": counts, "skipped": vol.errors,
        "needles": {"ascii": NEEDLE, "cased": NEEDLE_CASED, "glued": NEEDLE_GLUED, "wide_utf16le": NEEDLE_WIDE,
                    "regex": NEEDLE_REGEX},
        "notes": [
            "offset is the byte offset of the needle's text in the file's data (or the named stream); line is 1-based, "
            "counted in the file's own encoding (null for sparse islands); a UTF-16LE file's offset counts its BOM",
            "rg over an ntfs-3g mount sees the unnamed data only; named streams are read with getfattr -n user.NAME",
            "the stored zip and the plain tar show the needle; the deflated zip and the .tar.gz/.tar.xz do not",
            "regex matches the sites of the ascii needle and, case-insensitively, of the cased one; not the glued "
            "one (its 'x9' stands between the needle and ' kind=')",
        ],
        "rg_ascii_counts": got,
        "sites": sites.sites,
        "istat": f,
    }
    with open(out + ".manifest.json", "w") as fh:
        json.dump(manifest, fh, indent=1)
    fr = [r for r in f["fragmented"] if r["stream"] is None]
    say(f"done: {out} ({size / MIB:,.0f} MiB volume, {os.stat(out).st_blocks * 512 / MIB:,.0f} MiB on disk) in "
        f"{manifest['seconds']:.0f}s")
    say(f"  {tot['files']:,} files, {tot['dirs']:,} folders, {tot['data_bytes'] / 1e9:.3f} GB of data, "
        f"{tot['named_streams']} named streams ({tot['named_stream_bytes']:,} bytes)")
    say(f"  {len(sites.sites)} needle sites; rg finds the ASCII needle in {len(got)} files as planted; "
        f"fragmented files have {min(r['runs'] for r in fr)}..{max(r['runs'] for r in fr)} runs; ntfsfix -n clean")
    say(f"  manifest: {out}.manifest.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
