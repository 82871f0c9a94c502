"""The tree model (Tree: folders, files, links, streams, times, DOS names, deleted entries, in creation
order) and the name generators."""

import hashlib
import math
import random
import struct
import time

from .words import (
    ADJS, CAMEL, CAMEL_TAIL, DEFAULT_SIZE, EMOJI, EXT_SIZE, FIRST, GIB, LAST, NOUNS, PLACES, REALDATA_MAX,
    RESIDENT_MAX, SYS_CORE, SYS_PREFIX, TECH, UNICODE_WORDS, VERBS,
)


# ---------------------------------------------------------------------------
# The tree model
# ---------------------------------------------------------------------------
# Names/structure come from Tree.rng; sizes/times/DOS names/streams from
# Tree.mrng, so metadata knobs do not change the set of names.

DOS_OK = set("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-~!#$%&@()")
DOS_DEVICES = {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"} | {f"{p}{i}" for p in ("COM", "LPT") for i in range(10)}
LINK_BASE = 1 << 40
FA_READONLY, FA_HIDDEN, FA_SYSTEM, FA_ARCHIVE = 0x1, 0x2, 0x4, 0x20
FA_NOT_INDEXED = 0x2000

NT_EPOCH_DELTA = 11644473600


def nt_time(t):
    return int((t + NT_EPOCH_DELTA) * 10_000_000)


def ymd(t):
    return time.strftime("%Y-%m-%d", time.gmtime(t))


def utf16_len(s):
    return len(s.encode("utf-16-le")) // 2


class Tree:
    def __init__(self, seed, args):
        self.rng = random.Random(seed)
        self.mrng = random.Random(seed * 7919 + 1)      # sizes, stream content
        self.trng = random.Random(seed * 7919 + 2)      # timestamps
        self.xrng = random.Random(seed * 7919 + 3)      # 8.3 aliases, real-data choice
        self.args = args
        self.d_parent = [-1]
        self.d_name = [""]
        self.d_depth = [0]
        self.d_time = [0]
        self.children = [{}]
        self.f_dir, self.f_name, self.f_size, self.f_time = [], [], [], []
        self.links = []                     # (target file, dir, name)
        self.order = []                     # file idx >= 0, dir as -idx
        self.ads, self.dos_f, self.dos_d = {}, {}, {}
        self.attr_f, self.attr_d = {}, {}
        self.reparse_f, self.reparse_d = {}, {}
        self.real_f, self.frag_f = set(), {}
        self.deleted_f, self.deleted_d = set(), set()
        self.protected = set()
        self.short_taken = {}
        self.temp_sites = []                # (dir, kind) places that get deleted entries
        self.live = 0
        self.link_budget = 0
        self.tspan = (1.45e9, 1.72e9)
        self.dos_p = 0.0
        self.p_times = args.times
        self.p_real = args.real_data
        self.users = []
        self.n_junctions = 0

    # -- helpers -----------------------------------------------------------
    def loop(self, stop, patience=50):
        """Iterate while under budget; stop when iterations stop adding entries."""
        stall = 0
        while self.live < stop and stall < patience:
            before = self.live
            yield
            stall = stall + 1 if self.live == before else 0

    def until(self, n):
        return self.live + max(0, int(n))

    def rtime(self):
        a, b = self.tspan
        return int(a + (b - a) * self.trng.random())

    def _unique(self, d, name):
        ch = self.children[d]
        key = name.lower()
        if key not in ch:
            return name, key
        stem, dot, ext = name.rpartition(".")
        if not dot or not stem:
            stem, ext = name, ""
        for n in range(2, 10000):
            cand = f"{stem} ({n}).{ext}" if ext else f"{stem} ({n})"
            if cand.lower() not in ch:
                return cand, cand.lower()
        raise RuntimeError("cannot uniquify " + name)

    def _short(self, d, name):
        """Windows-style 8.3 alias, or None when the name already fits 8.3."""
        if name.split(".")[0].upper().rstrip(" ") in DOS_DEVICES:
            return None             # ntfs-3g refuses Win32 names like "prn.inf_..."
        stem, dot, ext = name.rpartition(".")
        if not dot or not stem:
            stem, ext = name, ""
        if (0 < len(stem) <= 8 and len(ext) <= 3 and "." not in stem
                and all(c in DOS_OK for c in (stem + ext).upper())):
            return None
        taken = self.short_taken.setdefault(d, set())
        ch = self.children[d]
        b = "".join(c if c in DOS_OK else "_" for c in stem.upper() if c not in " .")
        e = "".join(c if c in DOS_OK else "_" for c in ext.upper() if c not in " .")[:3]
        b = b or "_"
        sfx = ("." + e) if e else ""
        cands = [f"{b[:6]}~{n}{sfx}" for n in range(1, 5)]
        h = hashlib.md5(name.encode()).hexdigest()[:4].upper()
        cands += [f"{b[:2]}{h}~{n}{sfx}" for n in range(1, 10)]
        for c in cands:
            if c not in taken and c.lower() not in ch:
                taken.add(c)
                return c
        return None

    # -- constructors --------------------------------------------------------
    def dir(self, parent, name, attr=0):
        ch = self.children[parent]
        key = name.lower()
        v = ch.get(key)
        if v is not None and v < 0:
            return -v
        if v is not None:
            name, key = self._unique(parent, name)
        d = len(self.d_name)
        self.d_parent.append(parent)
        self.d_name.append(name)
        self.d_depth.append(self.d_depth[parent] + 1)
        self.d_time.append(self.rtime() if self.trng.random() < self.p_times else 0)
        self.children.append({})
        ch[key] = -d
        self.order.append(-d)
        self.live += 1
        if attr:
            self.attr_d[d] = attr
        if self.dos_p and self.xrng.random() < self.dos_p:
            s = self._short(parent, name)
            if s:
                self.dos_d[d] = s
        return d

    def path(self, parent, rel, attr=0):
        d = parent
        for part in rel.split("/"):
            if part:
                d = self.dir(d, part, attr)
        return d

    def file(self, d, name, size=None, t=None, attr=0, ext=None):
        name, key = self._unique(d, name)
        f = len(self.f_name)
        m = self.mrng
        if size is None:
            if ext is None:
                ext = name.rpartition(".")[2].lower() if "." in name else ""
            med, sig, pe = EXT_SIZE.get(ext, DEFAULT_SIZE)
            if pe and m.random() < pe:
                size = 0
            else:
                size = int(med * math.exp(sig * m.gauss(0.0, 1.0)))
                if size > 4 * GIB:
                    size = 4 * GIB
        self.f_dir.append(d)
        self.f_name.append(name)
        self.f_size.append(size)
        if t is None:
            t = self.rtime() if self.trng.random() < self.p_times else 0
        elif self.p_times <= 0:
            t = 0
        self.f_time.append(t)
        self.children[d][key] = f
        self.order.append(f)
        self.live += 1
        if RESIDENT_MAX < size <= REALDATA_MAX and self.xrng.random() < self.p_real:
            self.real_f.add(f)
        if attr:
            self.attr_f[f] = attr
        if self.dos_p and self.xrng.random() < self.dos_p:
            s = self._short(d, name)
            if s:
                self.dos_f[f] = s
        return f

    def fnew(self, d, name, **kw):
        """Like file() but returns None instead of renaming when the name exists."""
        if name.lower() in self.children[d]:
            return None
        return self.file(d, name, **kw)

    def link(self, target, d, name):
        if name.lower() in self.children[d]:
            return None
        i = len(self.links)
        self.links.append((target, d, name))
        self.children[d][name.lower()] = LINK_BASE + i
        self.protected.add(target)
        self.live += 1
        self.link_budget -= 1
        return i

    def add_ads(self, f, sname, data):
        self.ads.setdefault(f, []).append((sname, data))

    def junction(self, parent, name, target):
        """Directory junction (IO_REPARSE_TAG_MOUNT_POINT), hidden+system."""
        d = self.dir(parent, name, attr=FA_HIDDEN | FA_SYSTEM)
        sub = ("\\??\\" + target).encode("utf-16-le")
        pr = target.encode("utf-16-le")
        body = struct.pack("<HHHH", 0, len(sub), len(sub) + 2, len(pr)) + sub + b"\0\0" + pr + b"\0\0"
        self.reparse_d[d] = struct.pack("<IHH", 0xA0000003, len(body), 0) + body
        self.dos_d.pop(d, None)
        self.n_junctions += 1
        return d

    def symlink_file(self, d, name, target, relative=False):
        """File symlink (IO_REPARSE_TAG_SYMLINK)."""
        f = self.file(d, name, size=0)
        sub = (target if relative else "\\??\\" + target).encode("utf-16-le")
        pr = target.encode("utf-16-le")
        body = (struct.pack("<HHHHI", 0, len(sub), len(sub), len(pr), 1 if relative else 0)
                + sub + pr)
        self.reparse_f[f] = struct.pack("<IHH", 0xA000000C, len(body), 0) + body
        self.protected.add(f)
        return f

    def dpath(self, d):
        parts = []
        while d > 0:
            parts.append(self.d_name[d])
            d = self.d_parent[d]
        return "/".join(reversed(parts))

    def is_dir_live(self, d):
        return d not in self.deleted_d

# ---------------------------------------------------------------------------
# Name generators
# ---------------------------------------------------------------------------

def hexs(r, n):
    return "%0*x" % (n, r.getrandbits(4 * n))


def guid(r, upper=True, braces=True):
    s = "%08x-%04x-%04x-%04x-%012x" % (r.getrandbits(32), r.getrandbits(16),
                                      r.getrandbits(16), r.getrandbits(16), r.getrandbits(48))
    if upper:
        s = s.upper()
    return "{" + s + "}" if braces else s


def wchoice(r, pairs):
    tot = sum(w for _, w in pairs)
    x = r.random() * tot
    for v, w in pairs:
        x -= w
        if x < 0:
            return v
    return pairs[-1][0]


def cap(w):
    return w[:1].upper() + w[1:]


def camel(r, k):
    return "".join(r.choice(CAMEL) for _ in range(k))


def sys_base(r):
    x = r.random()
    if x < 0.42:
        s = r.choice(SYS_PREFIX) + r.choice(SYS_CORE)
        if r.random() < 0.25:
            s += r.choice(["32", "64", "2", "3", "10", "ex", "v2", "_1", "lib"])
        return s
    if x < 0.57:
        return "api-ms-win-%s-%s-l%d-%d-%d" % (r.choice(TECH), r.choice(TECH), r.randint(1, 2),
                                              r.randint(1, 3), r.randint(0, 2))
    if x < 0.75:
        return "Windows." + ".".join(r.choice(CAMEL) for _ in range(r.randint(1, 3)))
    if x < 0.85:
        return "Microsoft." + ".".join(r.choice(CAMEL) for _ in range(r.randint(1, 3)))
    return camel(r, r.randint(1, 2)) + r.choice(CAMEL_TAIL)


def code_base(r):
    x = r.random()
    if x < 0.4:
        return r.choice(VERBS) + "_" + r.choice(TECH)
    if x < 0.6:
        return r.choice(TECH) + "_" + r.choice(TECH)
    if x < 0.8:
        return r.choice(TECH)
    return r.choice(TECH) + r.choice(["s", "er", "_util", "_impl", "_test", "_types", "2", "_v2"])


def camel_code(r):
    return cap(r.choice(VERBS)) + cap(r.choice(TECH)) + r.choice(["", "", "Service", "Helper",
                                                                 "Factory", "Test", "Impl", "View"])


def doc_title(r, uni=0.0):
    x = r.random()
    y = r.randint(2008, 2024)
    if r.random() < uni:
        w = r.choice(UNICODE_WORDS)
        return r.choice([f"{w} {y}", f"{w} {r.choice(UNICODE_WORDS)}", f"{w}_{r.randint(1, 99)}",
                         f"{cap(r.choice(NOUNS))} {w}"])
    if x < 0.18:
        s = f"{cap(r.choice(ADJS))} {r.choice(NOUNS)} {y}"
    elif x < 0.32:
        s = f"{r.choice(NOUNS)}_{y}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}"
    elif x < 0.44:
        s = f"{cap(r.choice(NOUNS))} {r.choice(NOUNS)} v{r.randint(1, 9)}"
    elif x < 0.52:
        s = f"{r.choice(FIRST)} {r.choice(LAST)} - {cap(r.choice(NOUNS))}"
    elif x < 0.62:
        s = f"{r.choice(NOUNS).upper()}_{r.randint(1, 9999):04d}"
    elif x < 0.70:
        s = f"{cap(r.choice(NOUNS))} Q{r.randint(1, 4)} {y} ({r.choice(['final', 'draft', 'v2', 'signed', 'FINAL', 'edited'])})"
    elif x < 0.76:
        s = f"Copy of {cap(r.choice(NOUNS))} {r.choice(NOUNS)}"
    elif x < 0.84:
        s = f"{r.choice(NOUNS)}-{r.choice(NOUNS)}-{r.choice(NOUNS)}"
    elif x < 0.92:
        s = f"{cap(r.choice(ADJS))}{cap(r.choice(NOUNS))}{y}"
    else:
        s = f"{cap(r.choice(NOUNS))} for {r.choice(FIRST)} ({r.choice(PLACES)} {y})"
    if r.random() < 0.004:
        s = s + " " + r.choice(EMOJI)
    return s


def long_title(r, limit=240):
    """A very long (but <= limit UTF-16 units) name stem."""
    parts = []
    while True:
        w = r.choice(NOUNS + ADJS + PLACES)
        if r.random() < 0.1:
            w = r.choice(UNICODE_WORDS)
        cand = " ".join(parts + [w])
        if utf16_len(cand) > limit:
            break
        parts.append(w)
    return " ".join(parts)
