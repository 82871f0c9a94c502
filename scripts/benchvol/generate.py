"""The rest of the volume (ProgramData, developer roots, the root, the archive filler, sparse giants, long
names, deleted entries), the exact fit to --entries, generate() and tree_stats()."""

import math
import time

from .words import (
    CRATES, C_DIRS, C_SUB, DOC_EXT, FIRST, GIB, KIB, LAST, LOCALES, MIB, NOUNS, NPM, PLACES, PREFETCH_EXE,
    PYPKG, RESIDENT_MAX, TECH, UNICODE_WORDS, VENDORS, VENDORS_HW,
)
from .model import (
    FA_HIDDEN, FA_SYSTEM, Tree, camel, cap, code_base, doc_title, guid, hexs, long_title, utf16_len,
    wchoice, ymd,
)
from .system import flat, gen_program_files, gen_windows, sw_file, tree
from .users import gen_users, zone_identifier


# -- ProgramData, developer roots, volume root, archive filler -----------------

def gen_programdata(b, budget):
    r = b.rng
    stop = b.until(budget)
    b.tspan = (1.55e9, 1.72e9)
    pd = b.dir(0, "ProgramData", attr=FA_HIDDEN)
    for n, t in [("Application Data", "C:\\ProgramData"), ("Desktop", "C:\\Users\\Public\\Desktop"),
                 ("Documents", "C:\\Users\\Public\\Documents"), ("Start Menu", "C:\\ProgramData\\Microsoft\\Windows\\Start Menu"),
                 ("Templates", "C:\\ProgramData\\Microsoft\\Windows\\Templates")]:
        b.junction(pd, n, t)
    sm = b.path(pd, "Microsoft/Windows/Start Menu/Programs")
    for v, prods, _ in VENDORS:
        d = b.dir(sm, v) if r.random() < 0.5 else sm
        for p in prods:
            b.fnew(d, (p or v) + ".lnk")
    pc = b.path(pd, "Package Cache")
    for _ in b.loop(b.until(int(budget * 0.15))):
        d = b.dir(pc, guid(r) + r.choice(["", f"v{r.randint(1, 30)}.{r.randint(0, 99)}.{r.randint(0, 99999)}"]))
        flat(b, d, r.randint(1, 8), lambda r: r.choice([camel(r, 2) + ".msi", f"cab{r.randint(1, 40)}.cab", camel(r, 1) + "_x64.msi", "state.rsm"]))
    mk = b.path(pd, "Microsoft/Crypto/RSA/MachineKeys")
    flat(b, mk, int(budget * 0.02), lambda r: f"{hexs(r, 32)}_{guid(r, False, False)}")
    wer = b.path(pd, "Microsoft/Windows/WER/ReportArchive")
    b.temp_sites.append((b.path(pd, "Microsoft/Windows/WER/Temp"), "tmp"))
    for _ in b.loop(b.until(int(budget * 0.05))):
        d = b.dir(wer, f"AppCrash_{r.choice(PREFETCH_EXE).lower()}_{hexs(r, 40)}_{hexs(r, 8)}_{guid(r, False, False)}")
        b.fnew(d, "Report.wer")
        if r.random() < 0.3:
            b.fnew(d, f"WER{hexs(r, 4).upper()}.tmp.WERInternalMetadata.xml")
    defd = b.path(pd, "Microsoft/Windows Defender/Definition Updates")
    for _ in range(3):
        d = b.dir(defd, guid(r))
        for n in ["mpasbase.vdm", "mpasdlta.vdm", "mpavbase.vdm", "mpavdlta.vdm", "mpengine.dll"]:
            b.fnew(d, n)
    flat(b, b.path(pd, "Microsoft/Windows Defender/Scans/History/Service/DetectionHistory/02"), r.randint(0, 20), lambda r: guid(r))
    flat(b, b.path(pd, "Microsoft/Diagnosis/ETLLogs/AutoLogger"), r.randint(5, 40), lambda r: f"AutoLogger-Diagtrack-Listener_{r.randint(1, 99)}.etl")
    flat(b, b.path(pd, "Microsoft/Windows/AppRepository"), r.randint(20, 300), lambda r: f"{camel(r, 2)}_{r.randint(1, 99)}.{r.randint(0, 9999)}.{r.randint(0, 99)}.0_x64__{hexs(r, 13)}.xml")
    flat(b, b.path(pd, "Microsoft/Windows/Caches"), r.randint(2, 10), lambda r: f"cversions.{r.randint(1, 3)}.db")
    b.path(pd, "Microsoft/Search/Data/Applications/Windows")
    flat(b, b.path(pd, "chocolatey/lib"), 0, sw_file)
    for _ in b.loop(stop):
        vd = b.dir(pd, r.choice([v for v, _, _ in VENDORS] + ["Microsoft/Windows/WER/ReportQueue", "Microsoft/DiagnosticLogCSP", "Packages", "regid.1991-06.com.microsoft", "USOShared/Logs", "SoftwareDistribution"]))
        tree(b, vd, min(stop - b.live, r.randint(10, 800)), lambda r, dp: r.choice(TECH + ["Logs", "Cache", "Data", "Updates", "Config", "Temp", "Backup", "Plugins", "Drivers"]),
             lambda r: r.choice([sw_file(r), f"{r.choice(NOUNS)}_{ymd(r.randint(1_550_000_000, 1_720_000_000))}.log", f"{guid(r)}.xml", f"{hexs(r, 32)}.dat"]), fan=(1, 5), max_depth=5)


def gen_dev(b, budget):
    """C:\\src (kernel-like C tree), C:\\tools\\msys64, C:\\vcpkg."""
    r = b.rng
    stop = b.until(budget)
    b.tspan = (1.60e9, 1.72e9)
    src = b.dir(0, "src")
    lk = b.dir(src, f"linux-6.{r.randint(1, 8)}")
    for n in ["COPYING", "CREDITS", "Kbuild", "Kconfig", "MAINTAINERS", "Makefile", "README", ".gitignore", ".mailmap", ".clang-format"]:
        b.fnew(lk, n)
    kstop = b.until(int(budget * 0.5))
    for top in C_DIRS:
        td = b.dir(lk, top)
        tree(b, td, min(max(0, kstop - b.live), int(budget * 0.5 / len(C_DIRS) * (3 if top == "drivers" else 1))),
             lambda r, dp: r.choice(C_SUB if dp < 2 else VENDORS_HW + C_SUB + TECH),
             lambda r: r.choice([code_base(r) + r.choice([".c", ".c", ".c", ".h", ".h"]), "Kconfig", "Makefile", code_base(r) + ".S", code_base(r) + ".rst", code_base(r) + ".yaml"]),
             fan=(2, 10), nfiles=(2, 60), max_depth=6)
    msys = b.path(0, "tools/msys64")
    mstop = b.until(int(budget * 0.3))
    for _ in b.loop(mstop):
        base = b.path(msys, r.choice(["usr/share/man/man1", "usr/share/man/man3", "usr/share/locale", "usr/lib/perl5/core_perl", "usr/include", "mingw64/include", "mingw64/lib", "usr/share/terminfo", "usr/bin", "etc", "usr/share/doc", "usr/share/info", "usr/lib/python3.11"]))
        if b.d_name[base].startswith("man"):
            flat(b, base, min(mstop - b.live, r.randint(50, 500)), lambda r: f"{code_base(r)}.{b.d_name[base][3:]}.gz")
        elif b.d_name[base] == "locale":
            for l in LOCALES:
                flat(b, b.path(base, l.replace("-", "_") + "/LC_MESSAGES"), r.randint(5, 60), lambda r: r.choice(TECH + NPM).split("/")[-1] + ".mo")
        elif b.d_name[base] == "terminfo":
            for c in "0123456789abcdefghijklmnopqrstuvwxyz":
                flat(b, b.dir(base, c), r.randint(1, 30), lambda r: c + code_base(r).replace("_", "-"))
        else:
            tree(b, base, min(mstop - b.live, r.randint(50, 800)), lambda r, dp: r.choice(TECH + C_SUB),
                 lambda r: code_base(r) + r.choice([".h", ".pm", ".py", ".a", ".dll", ".exe", ".info", ".txt", ""]), fan=(1, 6), max_depth=5)
    vc = b.dir(0, "vcpkg")
    for _ in b.loop(stop):
        port = r.choice(CRATES + TECH + PYPKG)
        pd = b.path(vc, f"packages/{port}_x64-windows")
        tree(b, pd, min(stop - b.live, r.randint(10, 400)), lambda r, dp: r.choice(["include", "lib", "bin", "share", "debug", "tools", port, "cmake", "pkgconfig"]),
             lambda r: code_base(r) + r.choice([".h", ".hpp", ".lib", ".dll", ".pdb", ".cmake", ".pc", ".json"]), fan=(1, 4), max_depth=5)
        b.fnew(b.path(vc, "ports/" + port), "portfile.cmake")
        b.fnew(b.path(vc, "ports/" + port), "vcpkg.json")


def gen_root(b):
    r = b.rng
    b.tspan = (1.60e9, 1.72e9)
    b.junction(0, "Documents and Settings", "C:\\Users")
    rb = b.dir(0, "$Recycle.Bin", attr=FA_HIDDEN | FA_SYSTEM)
    for _ in range(3):
        sid = f"S-1-5-21-{r.randint(10 ** 9, 4 * 10 ** 9)}-{r.randint(10 ** 9, 4 * 10 ** 9)}-{r.randint(10 ** 9, 4 * 10 ** 9)}-{r.randint(1000, 1010)}"
        sd = b.dir(rb, sid, attr=FA_HIDDEN | FA_SYSTEM)
        b.fnew(sd, "desktop.ini", attr=FA_HIDDEN | FA_SYSTEM)
        b.temp_sites.append((sd, "recycle"))
        for _ in range(r.randint(5, 80)):
            tag = "".join(r.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") for _ in range(6))
            e = wchoice(r, DOC_EXT)
            b.fnew(sd, f"$I{tag}.{e}", size=r.randint(80, 540))
            if r.random() < 0.1:
                tree(b, b.dir(sd, f"$R{tag}"), r.randint(3, 60), lambda r, dp: cap(r.choice(NOUNS)), lambda r: doc_title(r) + "." + wchoice(r, DOC_EXT), fan=(1, 3), max_depth=2)
            else:
                b.fnew(sd, f"$R{tag}.{e}")
    svi = b.dir(0, "System Volume Information", attr=FA_HIDDEN | FA_SYSTEM)
    for n in ["IndexerVolumeGuid", "WPSettings.dat", "tracking.log", "MountPointManagerRemoteDatabase", "Syscache.hve", "Syscache.hve.LOG1", "Syscache.hve.LOG2"]:
        b.fnew(svi, n, attr=FA_HIDDEN | FA_SYSTEM)
    b.fnew(b.path(svi, "SPP/OnlineMetadataCache"), f"{guid(r, False)}_OnDiskSnapshotProp")
    b.path(0, "PerfLogs")
    b.fnew(b.path(0, "inetpub/wwwroot"), "iisstart.htm")
    b.fnew(b.path(0, "inetpub/wwwroot"), "iisstart.png")
    flat(b, b.path(0, "inetpub/logs/LogFiles/W3SVC1"), r.randint(5, 50), lambda r: f"u_ex{r.randint(21, 24)}{r.randint(1, 12):02d}{r.randint(1, 28):02d}.log")
    flat(b, b.path(0, "Intel/Logs"), r.randint(1, 10), lambda r: f"IntelGFX_{r.randint(1, 99)}.log")
    rec = b.path(0, "Recovery/WindowsRE", attr=FA_HIDDEN | FA_SYSTEM)
    b.fnew(rec, "ReAgent.xml")
    b.fnew(rec, "boot.sdi")
    b.fnew(b.dir(0, "OneDriveTemp", attr=FA_HIDDEN), "desktop.ini", attr=FA_HIDDEN | FA_SYSTEM)
    b.fnew(0, "DumpStack.log.tmp", size=8 * KIB, attr=FA_HIDDEN | FA_SYSTEM)
    b.fnew(0, "DumpStack.log", size=8 * KIB, attr=FA_HIDDEN | FA_SYSTEM)
    # a few Windows file symlinks
    bin_ = b.path(0, "tools/bin")
    for n in ["python.exe", "git.exe", "node.exe", "code.cmd", "rg.exe"]:
        b.symlink_file(bin_, n, f"C:\\tools\\{n.split('.')[0]}\\{n}")
    b.symlink_file(bin_, "readme.txt", "..\\README.txt", relative=True)


class ArchiveFiller:
    """Endless source of archive entries used to hit --entries exactly."""

    def __init__(self, b):
        self.b = b
        self.root = None
        self.cur = None
        self.left = 0

    def add_one(self):
        b, r = self.b, self.b.rng
        b.tspan = (1.30e9, 1.72e9)
        if self.root is None:
            self.root = b.dir(0, "Archive")
            return
        if self.left <= 0 or self.cur is None:
            y = r.randint(2005, 2024)
            parent = b.dir(self.root, str(y))
            for _ in range(r.randint(0, 3)):
                if b.d_depth[parent] >= 7:
                    break
                parent = b.dir(parent, r.choice([cap(r.choice(NOUNS)), f"{r.choice(FIRST)} {r.choice(LAST)}", f"{y}-{r.randint(1, 12):02d}", r.choice(PLACES), r.choice(UNICODE_WORDS) if r.random() < 0.05 else "Misc"]))
            self.cur = parent
            self.left = int(30 * math.exp(r.gauss(0, 1.2))) + 1
            if b.children[parent]:
                return          # reused existing folder; no entry added
            return
        self.left -= 1
        x = r.random()
        if x < 0.4:
            nm = doc_title(r, 0.02) + "." + wchoice(r, DOC_EXT)
        elif x < 0.8:
            nm = f"IMG_{r.randint(1, 9999):04d}.JPG"
        elif x < 0.9:
            nm = f"{r.choice(NOUNS)}_{ymd(r.randint(1_100_000_000, 1_720_000_000))}.{r.choice(['zip', '7z', 'tar.gz', 'bak', 'pst'])}"
        else:
            nm = f"{code_base(r)}.{r.choice(['txt', 'csv', 'xml', 'log', 'json'])}"
        b.fnew(self.cur, nm)


# -- sparse giants, deleted entries, exact fit ---------------------------------

def place_big(b, n):
    r = b.rng
    HS = FA_HIDDEN | FA_SYSTEM
    rec = [(0, "pagefile.sys", 16 * GIB, 0, HS), (0, "hiberfil.sys", int(12.7 * GIB), 0, HS),
           (0, "swapfile.sys", 256 * MIB, 0, HS)]
    svi = b.path(0, "System Volume Information")
    for _ in range(2):
        rec.append((svi, f"{guid(r, False)}{{3808876b-c176-4e48-b7ae-04046e6cc752}}", r.randint(4, 20) * GIB, 600, HS))
    rec.append((b.path(0, "Windows"), "MEMORY.DMP", int(2.3 * GIB), 0, 0))
    rec.append((b.path(0, "ProgramData/Microsoft/Search/Data/Applications/Windows"), "Windows.edb", int(1.1 * GIB), 3000, 0))
    rec.append((b.path(0, "ProgramData/DockerDesktop/vm-data"), "DockerDesktop.vhdx", 64 * GIB, 800, 0))
    rec.append((b.path(0, "Archive/Backups/WindowsImageBackup/DESKTOP-7QK2M1B/Backup 2023-05-01 101010"), f"{guid(r, False, False)}.vhdx", 120 * GIB, 1500, 0))
    us = b.users or [0]
    for i, u in enumerate(us):
        nm = b.d_name[u].split()[0].lower()
        rec.append((b.path(u, "AppData/Local/Microsoft/Outlook"), f"{nm}@example.com.ost", int(3.5 * GIB), 4000 if i == 1 else 200, 0))
        rec.append((b.path(u, f"VirtualBox VMs/{r.choice(['Ubuntu 22.04', 'Win11 Dev', 'Kali', 'Fedora 39'])}"), f"disk{i}.vdi", r.randint(20, 80) * GIB, 1500 if i == 0 else 0, 0))
        rec.append((b.path(u, "Downloads"), f"{r.choice(['ubuntu-22.04.3-desktop-amd64', 'Win11_23H2_English_x64', 'debian-12.4.0-amd64-DVD-1', 'Fedora-Workstation-Live-x86_64-39'])}.iso", r.randint(3, 7) * GIB, 0, 0))
        rec.append((b.path(u, "Videos"), f"{doc_title(r)}.mkv", r.randint(4, 20) * GIB, 0, 0))
        rec.append((b.path(u, "AppData/Local/Packages/CanonicalGroupLimited.Ubuntu_79rhkp1fndgsc/LocalState"), "ext4.vhdx", 256 * GIB, 2000 if i == 2 else 0, 0))
    rec.append((b.path(us[0], "Downloads"), "Big.Buck.Bunny.2160p.mkv.part", 9 * GIB, 4000, 0))
    k = 0
    while len(rec) < n:
        k += 1
        rec.append((b.path(0, f"Archive/Backups/{r.choice(['SQL', 'Mail', 'VMs', 'Photos'])}"), f"{r.choice(NOUNS)}_{k:03d}.{r.choice(['bak', 'vhdx', 'img', 'pst', 'tar'])}", r.randint(2, 40) * GIB, 0, 0))
    made = []
    for d, name, size, frag, attr in rec[:n]:
        f = b.fnew(d, name, size=size, attr=attr)
        if f is None:
            continue
        if frag:
            b.frag_f[f] = frag
        b.protected.add(f)
        b.real_f.discard(f)
        made.append(f)
    return made


def place_long_names(b, n):
    """A few names of 200-255 UTF-16 units (files, and some folders) in random places."""
    r = b.rng
    cands = [-op for op in b.order if op < 0 and -op not in b.reparse_d and b.d_depth[-op] >= 2]
    for i in range(n):
        if not cands:
            return
        d = r.choice(cands)
        if i % 10 == 9:
            b.dir(d, long_title(r, r.randint(200, 250)))
        else:
            ext = wchoice(r, DOC_EXT)
            b.fnew(d, long_title(r, r.randint(200, 250) - len(ext) - 1) + "." + ext)


def gen_deleted(b, n):
    """Create n entries that the build deletes at the end (records stay in the MFT)."""
    r = b.rng
    mark = len(b.order)
    sites = b.temp_sites or [(b.dir(0, "Temp"), "tmp")]
    count = 0
    while count < n:
        d, kind = r.choice(sites)
        before = len(b.order)
        if kind in ("update", "tmp") and r.random() < 0.04:
            # a whole deleted folder tree
            dd = b.dir(d, hexs(r, 32) if kind == "update" else guid(r))
            for _ in range(r.randint(3, 60)):
                b.file(dd, r.choice([f"windows10.0-kb{r.randint(4000000, 5040000)}-x64_{hexs(r, 40)}.{r.choice(['cab', 'psf', 'esd', 'msu'])}",
                                     f"{code_base(r)}.{r.choice(['dll', 'tmp', 'dat', 'log'])}"]))
            if r.random() < 0.5:
                sd = b.dir(dd, r.choice(["Express", "_temp", "obj", "Debug"]))
                for _ in range(r.randint(1, 20)):
                    b.file(sd, code_base(r) + ".tmp")
        elif kind == "cache":
            b.file(d, r.choice([f"f_{hexs(r, 6)}", f"{hexs(r, 16)}_0", hexs(r, 40).upper()]), ext="cache")
        elif kind == "dl":
            f = b.file(d, r.choice([f"Unconfirmed {r.randint(100000, 999999)}.crdownload", f"{doc_title(r)}.pdf.part",
                                    f"{r.choice(NOUNS)}-setup-{r.randint(1, 9)}.{r.randint(0, 9)}.exe"]))
            b.add_ads(f, "Zone.Identifier", zone_identifier(b.mrng, b.f_name[f]))
        elif kind == "office":
            b.file(d, r.choice([f"~${doc_title(r)[:20]}.docx", f"~WRL{r.randint(1, 9999):04d}.tmp", f"~${r.choice(NOUNS)}.xlsx"]), size=162,
                   attr=FA_HIDDEN)
        elif kind == "recycle":
            tag = "".join(r.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") for _ in range(6))
            e = wchoice(r, DOC_EXT)
            b.file(d, f"$I{tag}.{e}", size=r.randint(80, 540))
            b.file(d, f"$R{tag}.{e}")
        elif kind == "hex":
            b.file(d, hexs(r, 16) + r.choice(["", ".dll", ".mui"]))
        else:
            b.file(d, r.choice([f"~DF{hexs(r, 4).upper()}.TMP", f"{guid(r)}.tmp", f"tmp{hexs(r, 4)}.tmp",
                                f"{camel(r, 1)}_{hexs(r, 6)}.log"]))
        count += len(b.order) - before
    new = b.order[mark:]
    del b.order[mark:]
    for op in new:
        if op < 0:
            b.deleted_d.add(-op)
        else:
            b.deleted_f.add(op)
    b.live -= len(new)
    # Interleave: each deleted entry is created right after its parent folder.
    anchor = {}
    pos = {}
    for i, op in enumerate(b.order):
        if op < 0:
            pos[-op] = i
    for op in new:
        parent = b.d_parent[-op] if op < 0 else b.f_dir[op]
        anchor.setdefault(pos.get(parent, -1), []).append(op)
    out = list(anchor.get(-1, []))
    for i, op in enumerate(b.order):
        out.append(op)
        if i in anchor:
            out.extend(anchor[i])
    b.order = out


def trim(b, k):
    """Remove k trailing removable entries (leaf files / empty folders)."""
    drop = set()
    i = len(b.order) - 1
    while k > 0 and i >= 0:
        op = b.order[i]
        if op >= 0:
            if op not in b.protected:
                del b.children[b.f_dir[op]][b.f_name[op].lower()]
                drop.add(i)
                k -= 1
        else:
            d = -op
            if not b.children[d] and d not in b.reparse_d:
                del b.children[b.d_parent[d]][b.d_name[d].lower()]
                drop.add(i)
                k -= 1
        i -= 1
    b.order = [op for j, op in enumerate(b.order) if j not in drop]
    b.live -= len(drop)


def generate(args):
    t0 = time.time()
    b = Tree(args.seed, args)
    N = args.entries
    b.link_budget = args.links if args.links >= 0 else int(N * 0.007)
    gen_root(b)
    gen_windows(b, N * 0.25)
    gen_program_files(b, N * 0.13)
    gen_programdata(b, N * 0.04)
    gen_users(b, N * 0.38)
    gen_dev(b, N * 0.08)
    place_big(b, args.big)
    place_long_names(b, max(3, N // 8000))
    filler = ArchiveFiller(b)
    while b.live < N:
        filler.add_one()
    if b.live > N:
        trim(b, b.live - N)
    nd = args.deleted if args.deleted >= 0 else int(N * 0.005)
    gen_deleted(b, nd)
    b.gen_seconds = time.time() - t0
    return b


def tree_stats(b):
    files = [op for op in b.order if op >= 0]
    dirs = [-op for op in b.order if op < 0]
    live_f = [f for f in files if f not in b.deleted_f]
    live_d = [d for d in dirs if d not in b.deleted_d]
    sizes = [b.f_size[f] for f in live_f]
    live_fs, live_ds = set(live_f), set(live_d)
    names = [b.f_name[f] for f in live_f] + [b.d_name[d] for d in live_d] + [l[2] for l in b.links]
    depth = max((b.d_depth[b.f_dir[f]] + 1 for f in live_f), default=0)
    fan = {}
    for f in live_f:
        fan[b.f_dir[f]] = fan.get(b.f_dir[f], 0) + 1
    for d in live_d:
        p = b.d_parent[d]
        fan[p] = fan.get(p, 0) + 1
    for (_, d, _) in b.links:
        fan[d] = fan.get(d, 0) + 1
    fans = sorted(fan.values())
    exts = {}
    for n in names[:len(live_f)]:
        e = n.rpartition(".")[2].lower() if "." in n else ""
        exts[e] = exts.get(e, 0) + 1
    top = sorted(exts.items(), key=lambda kv: -kv[1])[:15]
    ln = sorted(len(n) for n in names)
    big = max(fan.items(), key=lambda kv: kv[1]) if fan else (0, 0)
    st = {
        "entries_total": len(live_f) + len(live_d) + len(b.links),
        "directories": len(live_d),
        "files": len(live_f),
        "hard_links_extra_names": len(b.links),
        "files_with_hard_links": len(set(l[0] for l in b.links)),
        "junctions": sum(1 for d in b.reparse_d if d not in b.deleted_d),
        "file_symlinks": len(b.reparse_f),
        "named_streams": sum(len(v) for f, v in b.ads.items() if f not in b.deleted_f),
        "files_with_streams": sum(1 for f in b.ads if f not in b.deleted_f),
        "dos_83_names": sum(1 for f in b.dos_f if f in live_fs) + sum(1 for d in b.dos_d if d in live_ds),
        "files_over_1GiB": len([f for f in live_f if b.f_size[f] >= GIB]),
        "fragmented_files": len(b.frag_f),
        "fragment_extents": sum(b.frag_f.values()),
        "empty_files": sum(1 for s in sizes if s == 0),
        "resident_content_files": sum(1 for s in sizes if 0 < s <= RESIDENT_MAX),
        "real_data_files": sum(1 for f in b.real_f if f not in b.deleted_f),
        "real_data_bytes": sum(b.f_size[f] for f in b.real_f if f not in b.deleted_f),
        "sparse_sized_files": sum(1 for f in live_f if b.f_size[f] > RESIDENT_MAX and f not in b.real_f),
        "logical_bytes": sum(sizes),
        "deleted_files": len(b.deleted_f),
        "deleted_dirs": len(b.deleted_d),
        "max_depth": depth,
        "largest_dir_entries": big[1],
        "largest_dir": b.dpath(big[0]),
        "dirs_over_1000_entries": sum(1 for v in fans if v > 1000),
        "dirs_over_10000_entries": sum(1 for v in fans if v > 10000),
        "median_dir_entries": fans[len(fans) // 2] if fans else 0,
        "non_ascii_names": sum(1 for n in names if not n.isascii()),
        "names_over_200_chars": sum(1 for n in names if utf16_len(n) > 200),
        "name_len_p50_p99_max": [ln[len(ln) // 2], ln[int(len(ln) * 0.99)], ln[-1]] if ln else [0, 0, 0],
        "top_extensions": top,
        "generate_seconds": round(b.gen_seconds, 1),
    }
    return st
