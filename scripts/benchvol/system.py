"""Component generators for the system side: flat folders and random subtrees, Windows (System32, WinSxS,
...), npm and node_modules, Program Files."""

import math

from .words import (
    CAMEL, FONTS, KIB, LOCALES, MIB, NOUNS, NPM, NPM_SCOPES, PLACES, PREFETCH_EXE, PYPKG, SW_DIRS,
    SYS_PREFIX, TECH, VENDORS, VERBS, WINSXS_COMPONENTS,
)
from .model import FA_HIDDEN, FA_SYSTEM, camel, cap, code_base, guid, hexs, sys_base, utf16_len, wchoice, ymd


# ---------------------------------------------------------------------------
# Component generators.  Each takes a budget (entries) and stops near it.
# ---------------------------------------------------------------------------

def flat(b, d, n, fn, stop=None):
    """Add up to n files named by fn(rng) to d (skipping duplicates)."""
    r = b.rng
    out = []
    tries = 0
    lim = b.until(n)
    while b.live < lim and tries < 4 * n + 20:
        if stop is not None and b.live >= stop:
            break
        tries += 1
        f = b.fnew(d, fn(r))
        if f is not None:
            out.append(f)
    return out


def tree(b, parent, budget, dname, fname, fan=(2, 6), nfiles=(2, 25), max_depth=5, depth=0):
    """Generic recursive tree: files here, then split the rest among subdirs."""
    r = b.rng
    stop = b.until(budget)
    flat(b, parent, min(r.randint(*nfiles), max(0, stop - b.live)), fname)
    if depth >= max_depth or b.live >= stop:
        return
    nd = r.randint(*fan)
    for i in range(nd):
        left = stop - b.live
        if left <= 0:
            return
        share = left // (nd - i) if i < nd - 1 else left
        share = max(1, int(share * (0.5 + r.random())))
        sub = b.dir(parent, dname(r, depth))
        tree(b, sub, share - 1, dname, fname, fan, nfiles, max_depth, depth + 1)


def sysname(exts):
    return lambda r: sys_base(r) + "." + wchoice(r, exts)


SYS_EXTS = [("dll", 62), ("exe", 9), ("sys", 1), ("cpl", 1), ("msc", 1), ("nls", 1),
            ("tlb", 1), ("ax", 1), ("ocx", 1), ("winmd", 2), ("rll", 1), ("inf", 1),
            ("xml", 2), ("dat", 1), ("mof", 1), ("ps1", 1), ("ini", 1), ("bin", 1)]


def gen_windows(b, budget):
    r = b.rng
    b.tspan = (1.57e9, 1.70e9)
    b.dos_p = b.args.dos_names
    stop = b.until(budget)
    B = lambda frac: max(1, int(budget * frac))
    win = b.dir(0, "Windows")
    s32 = b.dir(win, "System32")
    # System32 (flat, ~20k entries at default size)
    s32_files = flat(b, s32, B(0.065), sysname(SYS_EXTS))
    for n in ["ntdll.dll", "kernel32.dll", "KernelBase.dll", "user32.dll", "gdi32.dll",
              "advapi32.dll", "shell32.dll", "cmd.exe", "notepad.exe", "svchost.exe",
              "explorer.exe", "conhost.exe", "taskmgr.exe", "regedit.exe", "msiexec.exe"]:
        f = b.fnew(s32, n)
        if f is not None:
            s32_files.append(f)
    dlls = [f for f in s32_files if b.f_name[f].lower().endswith((".dll", ".exe"))]
    # localized resources: System32/<locale>/<name>.mui
    nloc = max(2, min(len(LOCALES), int(B(0.04) / max(1, len(dlls) * 0.3)) + 1))
    per = max(1, B(0.04) // nloc)
    for loc in LOCALES[:nloc]:
        ld = b.dir(s32, loc)
        for f in r.sample(dlls, min(per, len(dlls))):
            b.fnew(ld, b.f_name[f] + ".mui")
    # drivers
    drv = b.dir(s32, "drivers")
    flat(b, drv, B(0.01), lambda r: r.choice(SYS_PREFIX) + r.choice(["", "", "port", "bus", "filt",
                                                                    "mini", "hub", "x64", "ndis"]) + ".sys")
    etc = b.path(drv, "etc")
    for n in ["hosts", "lmhosts.sam", "networks", "protocol", "services"]:
        b.fnew(etc, n, size=r.randint(400, 18000))
    b.path(drv, "UMDF")
    flat(b, b.path(drv, "en-US"), B(0.003), lambda r: r.choice(SYS_PREFIX) + "port.sys.mui")
    # DriverStore/FileRepository/<inf>.inf_amd64_<hash>/
    repo = b.path(s32, "DriverStore/FileRepository")
    st = b.until(B(0.06))
    for _ in b.loop(st):
        inf = r.choice(["oem", "net", "usb", "hid", "prn", "disp", "hdaudio", "bth", "machine",
                        "iastor", "nvlt", "rt640x64", "igdlh64", "wdma_usb", "keyboard",
                        "msmouse", "c_monitor", "volume", "scsidev", "ialpss2i_gpio2_cnl"])
        inf += "" if r.random() < 0.5 else str(r.randint(1, 999))
        dd = b.dir(repo, f"{inf}.inf_amd64_{hexs(r, 16)}")
        b.file(dd, inf + ".inf")
        b.file(dd, inf + ".cat")
        b.file(dd, inf + ".PNF", ext="pnf")
        flat(b, dd, r.randint(0, 12), sysname([("sys", 3), ("dll", 5), ("exe", 1), ("bin", 1),
                                               ("ini", 1), ("cpl", 1)]))
    # config / registry hives
    cfg = b.dir(s32, "config")
    for h in ["SYSTEM", "SOFTWARE", "SAM", "SECURITY", "DEFAULT", "COMPONENTS", "DRIVERS", "BBI",
              "ELAM", "BCD-Template"]:
        b.fnew(cfg, h, size=r.randint(256 * KIB, 120 * MIB))
        b.fnew(cfg, h + ".LOG1", size=r.randint(0, 4 * MIB))
        b.fnew(cfg, h + ".LOG2", size=r.randint(0, 4 * MIB))
        b.fnew(cfg, f"{h}{{{guid(r, False, False)}}}.TM.blf", size=64 * KIB)
        b.fnew(cfg, f"{h}{{{guid(r, False, False)}}}.TMContainer00000000000000000001.regtrans-ms",
               size=512 * KIB)
    txr = b.path(cfg, "TxR")
    for i in range(6):
        b.fnew(txr, f"{{{guid(r, False, False)}}}.TxR.{i % 3}.regtrans-ms", size=2 * MIB)
    b.path(cfg, "RegBack")
    b.path(cfg, "systemprofile/AppData/Local/Microsoft/Windows/INetCache")
    # catroot: thousands of long-named .cat files in one folder
    cat = b.path(s32, "catroot/{F750E6C3-38EE-11D1-85E5-00C04FC295EE}")
    flat(b, cat, B(0.03), lambda r: r.choice([
        f"Package_{r.randint(1, 9999)}_for_KB{r.randint(4000000, 5040000)}~31bf3856ad364e35~amd64~~19041.{r.randint(1, 4000)}.1.{r.randint(1, 20)}.cat",
        f"Microsoft-Windows-{camel(r, 2)}-Package~31bf3856ad364e35~amd64~{r.choice(LOCALES).lower()}~10.0.19041.{r.randint(1, 4000)}.cat",
        f"{guid(r)}.cat", f"oem{r.randint(1, 300)}.CAT"]))
    b.path(s32, "catroot2")
    # wbem, spool, Tasks, winevt, LogFiles, WindowsPowerShell
    wbem = b.dir(s32, "wbem")
    flat(b, wbem, B(0.004), sysname([("dll", 4), ("mof", 3), ("mfl", 2), ("exe", 1), ("xsl", 1)]))
    rep = b.dir(wbem, "Repository")
    for n in ["INDEX.BTR", "MAPPING1.MAP", "MAPPING2.MAP", "MAPPING3.MAP", "OBJECTS.DATA"]:
        b.fnew(rep, n)
    sp = b.path(s32, "spool/drivers/x64/3")
    flat(b, sp, B(0.002), sysname([("dll", 4), ("gpd", 2), ("ppd", 2), ("ini", 1), ("xml", 1)]))
    b.path(s32, "spool/PRINTERS")
    tasks = b.path(s32, "Tasks/Microsoft/Windows")
    st = b.until(B(0.006))
    for _ in b.loop(st):
        td = b.dir(tasks, camel(r, r.randint(1, 2)))
        flat(b, td, r.randint(1, 6), lambda r: camel(r, r.randint(1, 3)) + r.choice(["", "", " Task", "Maintenance", "-" + guid(r, True, False)]), )
    evt = b.path(s32, "winevt/Logs")
    flat(b, evt, B(0.002), lambda r: f"Microsoft-Windows-{camel(r, r.randint(1, 2))}%4{r.choice(['Operational', 'Admin', 'Analytic', 'Diagnostic'])}.evtx")
    for n in ["Application.evtx", "Security.evtx", "System.evtx", "Setup.evtx"]:
        b.fnew(evt, n)
    b.temp_sites.append((b.path(s32, "LogFiles/WMI/RtBackup"), "tmp"))
    psm = b.path(s32, "WindowsPowerShell/v1.0/Modules")
    st = b.until(B(0.008))
    for _ in b.loop(st):
        m = b.dir(psm, r.choice(["Microsoft.PowerShell.", "", "Pnp", "Net", "Storage", "Defender", "Dism", "Hyper-V", "Appx", "Bits"]) + camel(r, 1))
        flat(b, m, r.randint(2, 12), lambda r: r.choice([camel(r, 2) + ".psd1", camel(r, 2) + ".psm1", camel(r, 1) + ".format.ps1xml", camel(r, 2) + ".cdxml", "MSFT_" + camel(r, 2) + ".cdxml", camel(r, 1) + ".dll-Help.xml"]))
        if r.random() < 0.4:
            flat(b, b.dir(m, "en-US"), r.randint(1, 5), lambda r: "about_" + camel(r, 2) + ".help.txt")
    # SysWOW64: many of the same names as System32, plus its own
    wow = b.dir(win, "SysWOW64")
    for f in r.sample(dlls, min(len(dlls), B(0.05))):
        b.fnew(wow, b.f_name[f])
    flat(b, wow, B(0.02), sysname(SYS_EXTS))
    wl = b.dir(wow, "en-US")
    for f in r.sample(dlls, min(len(dlls), B(0.01))):
        b.fnew(wl, b.f_name[f] + ".mui")
    # WinSxS: tens of thousands of component folders; files are partly hard links
    sxs = b.dir(win, "WinSxS")
    man = b.dir(sxs, "Manifests")
    sxs_stop = b.until(B(0.33))
    for _ in b.loop(sxs_stop):
        comp = r.choice(WINSXS_COMPONENTS)
        arch = wchoice(r, [("amd64", 6), ("wow64", 2), ("x86", 1), ("msil", 1)])
        ver = f"10.0.19041.{r.choice([1, 1, 84, 153, 264, 546, 928, 1023, 1202, 1466, 2130, 3636, 3803, 4170])}"
        lang = "none" if r.random() < 0.85 else r.choice(LOCALES).lower()
        cname = f"{arch}_{comp}_31bf3856ad364e35_{ver}_{lang}_{hexs(r, 16)}"
        if utf16_len(cname) > 120:
            cname = cname[:110] + hexs(r, 8)
        cd = b.dir(sxs, cname)
        b.file(man, cname + ".manifest", ext="manifest")
        for _ in range(r.choice([0, 1, 1, 1, 2, 2, 3, 4, 6, 10, 25])):
            if b.link_budget > 0 and dlls and r.random() < 0.7:
                t = r.choice(dlls)
                b.link(t, cd, b.f_name[t])
            else:
                b.fnew(cd, sys_base(r) + "." + r.choice(["dll", "dll", "exe", "mui", "sys", "inf", "cat"]))
        if r.random() < 0.15:
            flat(b, b.dir(cd, r.choice(["f", "r", "n"])), r.randint(1, 4), sysname([("dll", 1)]))
    for n in ["Backup", "Catalogs", "Temp/PendingDeletes", "Temp/InFlight", "FileMaps", "InstallTemp"]:
        b.path(sxs, n)
    b.temp_sites.append((b.path(sxs, "Temp/PendingDeletes"), "hex"))
    # servicing/Packages: flat .mum/.cat pairs with long names
    pk = b.path(win, "servicing/Packages")
    st = b.until(B(0.04))
    for _ in b.loop(st):
        nm = r.choice([f"Package_{r.randint(1, 9999)}_for_KB{r.randint(4000000, 5040000)}",
                       f"Microsoft-Windows-{camel(r, r.randint(1, 3))}-Package{r.choice(['', '', '-WOW64', '-merged', '0012', '-onecore'])}",
                       f"Microsoft-OneCore-{camel(r, 2)}-FOD-Package"])
        nm += f"~31bf3856ad364e35~{r.choice(['amd64', 'wow64', 'x86'])}~{r.choice(['', '', 'en-US'])}~10.0.19041.{r.randint(1, 4000)}"
        b.fnew(pk, nm + ".mum", ext="mum")
        b.fnew(pk, nm + ".cat", ext="cat")
    b.path(win, "servicing/Sessions")
    # .NET: GAC and Framework
    gac = b.path(win, "Microsoft.NET/assembly/GAC_MSIL")
    st = b.until(B(0.04))
    for _ in b.loop(st):
        asm = r.choice(["System.", "Microsoft.", "Microsoft.VisualStudio.", "PresentationFramework.", "System.Windows."]) + ".".join(r.choice(CAMEL) for _ in range(r.randint(1, 3)))
        ad = b.dir(gac, asm)
        vd = b.dir(ad, f"v4.0_{r.choice(['4.0.0.0', '10.0.0.0', '15.0.0.0', '16.0.0.0'])}__{hexs(r, 16)}")
        b.fnew(vd, asm + ".dll")
        if r.random() < 0.3:
            b.fnew(vd, asm + ".resources.dll")
    for fw in ["Framework", "Framework64"]:
        for v in ["v2.0.50727", "v3.0", "v3.5", "v4.0.30319"]:
            fd = b.path(win, f"Microsoft.NET/{fw}/{v}")
            flat(b, fd, B(0.004), sysname([("dll", 8), ("exe", 2), ("config", 1), ("tlb", 1), ("xml", 1)]))
            for sub in ["1033", "Config", "WPF", "MUI", "SQL/en", "Temporary ASP.NET Files"]:
                flat(b, b.path(fd, sub), r.randint(0, 40), sysname([("dll", 3), ("xml", 1), ("config", 1)]))
    ni = b.path(win, "assembly/NativeImages_v4.0.30319_64")
    st = b.until(B(0.02))
    for _ in b.loop(st):
        asm = r.choice(["System", "Microsoft", "PresentationCore", "WindowsBase", "mscorlib"]) + "." + camel(r, 1)
        hd = b.dir(b.dir(ni, asm), hexs(r, 32))
        b.fnew(hd, asm + ".ni.dll")
        if r.random() < 0.2:
            b.fnew(hd, asm + ".ni.dll.aux")
    # Installer cache
    inst = b.dir(win, "Installer")
    st = b.until(B(0.03))
    for _ in b.loop(st):
        if r.random() < 0.6:
            b.fnew(inst, hexs(r, r.choice([5, 6, 7, 8])) + r.choice([".msi", ".msp", ".msp", ".msi"]))
        else:
            gd = b.dir(inst, guid(r))
            flat(b, gd, r.randint(1, 6), lambda r: r.choice(["ARPPRODUCTICON.exe", "icon.ico", "_" + hexs(r, 16).upper() + ".exe", camel(r, 1) + "Ico.exe"]))
    pc = b.path(inst, "$PatchCache$/Managed")
    for _ in range(r.randint(3, 20)):
        flat(b, b.path(pc, hexs(r, 32).upper() + f"/16.0.{r.randint(4000, 17000)}"), r.randint(1, 30), sysname([("dll", 3), ("cab", 1)]))
    # Misc Windows folders
    misc = [
        ("INF", 0.012, lambda r: r.choice(SYS_PREFIX) + r.choice(["", "", "usb", "net", "port", "hid", "mdm"]) + r.choice([".inf", ".inf", ".PNF"])),
        ("Fonts", 0.002, lambda r: r.choice(FONTS) + r.choice(["", "", "", "bd", "i", "z"]) + r.choice([".ttf", ".ttf", ".ttc", ".fon", ".otf"])),
        ("Prefetch", 0.004, lambda r: f"{r.choice(PREFETCH_EXE)}-{hexs(r, 8).upper()}.pf"),
        ("Logs/CBS", 0.0005, lambda r: f"CbsPersist_{r.randint(2021, 2024)}{r.randint(1, 12):02d}{r.randint(1, 28):02d}{r.randint(0, 235959):06d}.log"),
        ("Logs/WindowsUpdate", 0.001, lambda r: f"WindowsUpdate.{r.randint(2021, 2024)}{r.randint(1, 12):02d}{r.randint(1, 28):02d}.{r.randint(0, 235959):06d}.{r.randint(100, 999)}.{r.randint(1, 30)}.etl"),
        ("PolicyDefinitions", 0.001, lambda r: camel(r, r.randint(1, 2)) + ".admx"),
        ("PolicyDefinitions/en-US", 0.001, lambda r: camel(r, r.randint(1, 2)) + ".adml"),
        ("Media", 0.0005, lambda r: f"Windows {camel(r, 1)} {r.choice(['Notify', 'Error', 'Ding', 'Startup', 'Balloon', 'Ringout'])}.wav"),
        ("Web/Wallpaper/Windows", 0.0001, lambda r: f"img{r.randint(0, 40)}.jpg"),
        ("Web/Screen", 0.0001, lambda r: f"img{r.randint(100, 110)}.jpg"),
        ("Globalization/ICU", 0.0002, lambda r: f"icudt{r.randint(58, 72)}l.dat"),
        ("IME/IMEJP/DICTS", 0.0005, lambda r: f"IMJP{r.randint(10, 15)}{camel(r, 1)[:3].upper()}.dic"),
        ("ShellExperiences", 0.0005, lambda r: "Windows.UI." + camel(r, 2) + r.choice([".dll", ".winmd", ".pri"])),
        ("Boot/EFI/en-US", 0.0002, lambda r: r.choice(["bootmgr", "bootmgfw", "memtest", "bootmgr.efi"]) + ".efi.mui"),
        ("Cursors", 0.0003, lambda r: r.choice(["aero", "lcross", "wait", "busy", "arrow", "beam"]) + "_" + r.choice(["arrow", "busy", "link", "pen", "ns", "ew", "nesw"]) + r.choice([".cur", ".ani", "_l.cur", "_xl.cur"])),
        ("Resources/Themes/aero/Shell/NormalColor", 0.0002, lambda r: camel(r, 1) + ".msstyles"),
        ("diagnostics/system/Networking", 0.0005, lambda r: "CL_" + camel(r, 2) + ".ps1"),
        ("Panther", 0.0003, lambda r: r.choice(["setupact", "setuperr", "cbs", "diagerr", "diagwrn"]) + r.choice([".log", ".xml", ".etl"])),
        ("Performance/WinSAT/DataStore", 0.0002, lambda r: f"{r.randint(2021, 2024)}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d} {r.randint(0, 23):02d}.{r.randint(0, 59):02d}.{r.randint(0, 59):02d}.{r.randint(100, 999)} {camel(r, 1)}.Assessment (Recent).WinSAT.xml"),
        ("ServiceProfiles/LocalService/AppData/Local/Microsoft/Windows/DeliveryOptimization/Cache", 0.004, lambda r: hexs(r, 40)),
        ("System32/sru", 0.0001, lambda r: r.choice(["SRUDB.dat", "SRU.log", "SRUtmp.log", "SRU00001.log"])),
        ("System32/Microsoft/Protect/S-1-5-18/User", 0.0001, lambda r: guid(r, False, False)),
    ]
    for rel, frac, fn in misc:
        flat(b, b.path(win, rel), B(frac), fn)
    sa = b.dir(win, "SystemApps")
    st = b.until(B(0.03))
    for _ in b.loop(st):
        app = b.dir(sa, f"{r.choice(['Microsoft.Windows.', 'Microsoft.', 'Windows.'])}{camel(r, 2)}_{r.choice(['cw5n1h2txyewy', '8wekyb3d8bbwe', 'cw5n1h2txyewy'])}")
        tree(b, app, r.randint(10, 200), lambda r, dp: r.choice(["Assets", "resources", "js", "css", "images", "en-US", "pris", "Images", "webui", "Controls", "Common", "Views"]),
             lambda r: r.choice([camel(r, 1) + ".png", camel(r, 1) + ".scale-" + r.choice(["100", "125", "150", "200", "400"]) + ".png", code_base(r) + ".js", code_base(r) + ".css", camel(r, 2) + ".dll", "resources.pri", "AppxManifest.xml", camel(r, 1) + ".xbf"]),
             fan=(1, 4), nfiles=(3, 30), max_depth=4)
    tmp = b.dir(win, "Temp")
    b.temp_sites.append((tmp, "tmp"))
    flat(b, tmp, B(0.001), lambda r: r.choice([f"{guid(r)}.tmp", f"tmp{hexs(r, 4).upper()}.tmp", f"MpCmdRun{r.randint(1, 99)}.log", f"{camel(r, 1)}-{ymd(r.randint(1_600_000_000, 1_700_000_000))}.log"]))
    sd = b.path(win, "SoftwareDistribution/Download")
    b.temp_sites.append((sd, "update"))
    b.path(win, "SoftwareDistribution/DataStore/Logs")
    b.path(win, "SoftwareDistribution/PostRebootEventCache.V2")
    # top up anything left with more System32-like folders
    for _ in b.loop(stop):
        dd = b.dir(win, r.choice(["System32", "SysWOW64", "SystemResources", "ImmersiveControlPanel", "PrintDialog", "bcastdvr", "Speech_OneCore", "WaaS", "Help", "schemas", "twain_32", "apppatch", "Branding"]))
        tree(b, dd, min(stop - b.live, r.randint(20, 400)), lambda r, dp: r.choice(LOCALES + [camel(r, 1), camel(r, 2), "Assets", "en-US", "x64"]),
             sysname(SYS_EXTS), fan=(1, 4), nfiles=(2, 40), max_depth=3)
    b.dos_p = 0.0


# -- npm / node_modules ------------------------------------------------------

NPM_PREFIX = ["eslint-plugin-", "babel-plugin-", "postcss-", "is-", "rollup-plugin-", "vite-plugin-",
              "webpack-", "gulp-", "get-", "has-", "lodash.", "string.prototype.", "array.prototype.",
              "@types/", "@babel/plugin-transform-", "@babel/helper-", "es-", "p-", "node-", "react-"]


def npm_name(r):
    x = r.random()
    if x < 0.45:
        return r.choice(NPM)
    if x < 0.65:
        sc = r.choice(list(NPM_SCOPES))
        return sc + "/" + r.choice(NPM_SCOPES[sc])
    return r.choice(NPM_PREFIX) + r.choice(VERBS + TECH + NOUNS)


def gen_npm_package(b, pd, budget):
    r = b.rng
    stop = b.until(budget)
    for n, p in [("package.json", 1), ("README.md", 0.9), ("LICENSE", 0.8), ("CHANGELOG.md", 0.35),
                 ("index.js", 0.7), ("index.d.ts", 0.4), (".npmignore", 0.1), ("tsconfig.json", 0.1)]:
        if r.random() < p and b.live < stop:
            b.fnew(pd, n)
    subs = r.sample(["lib", "dist", "src", "esm", "cjs", "build", "types", "es", "umd", "test",
                     "bin", "modules", "internal", "helpers", "locale", "fp"], r.randint(1, 3))
    for i, sd in enumerate(subs):
        left = stop - b.live
        if left <= 0:
            break
        d = b.dir(pd, sd)
        share = left // (len(subs) - i)
        tree(b, d, share - 1, lambda r, dp: r.choice(TECH + ["internal", "utils", "helpers", "plugins",
                                                             "streams", "core", "platform", "node",
                                                             "browser", "compat", "locale"]),
             lambda r: code_base(r) + r.choice([".js", ".js", ".js", ".d.ts", ".js.map", ".mjs",
                                                ".cjs", ".json", ".min.js", ".ts"]),
             fan=(1, 4), nfiles=(2, 18), max_depth=3)


def gen_node_modules(b, parent, budget, nest=6):
    r = b.rng
    stop = b.until(budget)
    nm = b.dir(parent, "node_modules")
    b.fnew(nm, ".package-lock.json")
    if r.random() < 0.5:
        bd = b.dir(nm, ".bin")
        for _ in range(r.randint(2, 20)):
            n = r.choice(NPM).split("/")[-1]
            for e in ["", ".cmd", ".ps1"]:
                b.fnew(bd, n + e)
    misses = 0
    while b.live < stop and misses < 200:
        name = npm_name(r)
        if "/" in name:
            sc, pkg = name.split("/", 1)
            sd = b.dir(nm, sc)
            if pkg.lower() in b.children[sd]:
                misses += 1
                continue
            pd = b.dir(sd, pkg)
        else:
            if name.lower() in b.children[nm]:
                misses += 1
                continue
            pd = b.dir(nm, name)
        pb = min(stop - b.live, max(3, int(20 * math.exp(1.0 * r.gauss(0, 1)))))
        gen_npm_package(b, pd, pb)
        if nest > 0 and r.random() < 0.2 and b.live < stop:
            gen_node_modules(b, pd, min(stop - b.live, r.randint(5, 150)), nest - 1)


# -- Program Files -----------------------------------------------------------

LOCALE_PAKS = ["af", "am", "ar", "bg", "bn", "ca", "cs", "da", "de", "el", "en-GB", "en-US", "es",
               "es-419", "et", "fa", "fi", "fil", "fr", "gu", "he", "hi", "hr", "hu", "id", "it",
               "ja", "kn", "ko", "lt", "lv", "ml", "mr", "ms", "nb", "nl", "pl", "pt-BR", "pt-PT",
               "ro", "ru", "sk", "sl", "sr", "sv", "sw", "ta", "te", "th", "tr", "uk", "vi",
               "zh-CN", "zh-TW"]


def sw_file(r):
    x = r.random()
    if x < 0.35:
        return sys_base(r).split(".")[-1].lower() + r.choice([".dll", ".dll", ".exe", ".dat", ".bin"])
    if x < 0.55:
        return code_base(r) + r.choice([".xml", ".json", ".ini", ".cfg", ".txt", ".html", ".css", ".js"])
    if x < 0.75:
        return r.choice(TECH) + "_" + r.choice(["16", "24", "32", "48", "64", "128", "256"]) + r.choice([".png", ".ico", ".svg"])
    if x < 0.85:
        return camel(r, 2) + r.choice([".dll", ".pak", ".qm", ".mo", ".pdb", ".lib"])
    return r.choice(TECH) + r.choice(["", "s", "_data", "_config"]) + r.choice([".dat", ".bin", ".pak", ".db", ".cache"])


def sw_dir(r, depth):
    return r.choice(SW_DIRS) if r.random() < 0.7 else r.choice(TECH + LOCALES)


def gen_product(b, pd, budget, style, vendor):
    r = b.rng
    stop = b.until(budget)
    exe = vendor.split()[0].replace(".", "").lower()
    b.fnew(pd, exe + ".exe")
    b.fnew(pd, "unins000.exe")
    b.fnew(pd, "unins000.dat")
    if style in ("electron", "chrome"):
        root = pd
        if style == "chrome":
            root = b.path(pd, f"Application/{r.randint(110, 126)}.0.{r.randint(5000, 6500)}.{r.randint(10, 200)}")
            b.fnew(b.dir(pd, "Application"), exe + ".exe")
        for n in ["ffmpeg.dll", "libEGL.dll", "libGLESv2.dll", "d3dcompiler_47.dll", "vulkan-1.dll",
                  "chrome_100_percent.pak", "chrome_200_percent.pak", "resources.pak", "icudtl.dat",
                  "v8_context_snapshot.bin", "snapshot_blob.bin", "LICENSES.chromium.html", "vk_swiftshader.dll"]:
            b.fnew(root, n)
        loc = b.dir(root, "locales" if style == "electron" else "Locales")
        for l in LOCALE_PAKS:
            b.fnew(loc, l + ".pak")
        if style == "electron":
            res = b.dir(pd, "resources")
            b.fnew(res, "app.asar", ext="asar")
            app = b.dir(res, "app" if r.random() < 0.5 else "app.asar.unpacked")
            b.fnew(app, "package.json")
            if r.random() < 0.5:
                ext = b.dir(app, "extensions")
                for _ in range(r.randint(5, 60)):
                    if b.live >= stop:
                        break
                    ed = b.dir(ext, r.choice(TECH + VERBS) + r.choice(["", "-language-features", "-basics", "-debug"]))
                    tree(b, ed, r.randint(5, 60), sw_dir, lambda r: code_base(r) + r.choice([".js", ".json", ".tmLanguage.json", ".md", ".png"]), fan=(1, 3), nfiles=(2, 10), max_depth=3)
            gen_node_modules(b, app, max(0, (stop - b.live) * 2 // 3), nest=5)
        else:
            for sub in ["Extensions", "MEIPreload", "WidevineCdm/_platform_specific/win_x64", "VisualElements", "default_apps", "Installer"]:
                flat(b, b.path(root, sub), r.randint(1, 8), sw_file)
    elif style == "java":
        for sub in ["bin", "lib", "jbr/bin", "jbr/lib", "plugins"]:
            flat(b, b.path(pd, sub), r.randint(5, 60), lambda r: r.choice(TECH + VERBS + NPM).split("/")[-1] + r.choice(["", "-api", "-impl", "-core", "-rt"]) + r.choice([".jar", ".jar", ".jar", ".dll", ".exe", ".properties"]))
        pl = b.path(pd, "plugins")
        for _ in b.loop(stop):
            p = b.dir(pl, r.choice(TECH + VERBS + NOUNS) + r.choice(["", "-plugin", "-support", "-frontend", "-backend", "-java"]))
            flat(b, b.dir(p, "lib"), r.randint(1, 40), lambda r: r.choice(TECH + VERBS + NPM).split("/")[-1] + r.choice(["", "-api", "-impl", "-" + str(r.randint(1, 30))]) + ".jar")
            if r.random() < 0.2:
                tree(b, b.dir(p, "resources"), r.randint(5, 80), sw_dir, sw_file, fan=(1, 3), max_depth=3)
    elif style == "python":
        lib = b.dir(pd, "Lib")
        flat(b, b.dir(pd, "DLLs"), r.randint(10, 40), lambda r: "_" + r.choice(TECH) + ".pyd")
        flat(b, b.dir(pd, "libs"), r.randint(2, 10), lambda r: r.choice(["python3", "python311", "_tkinter"]) + ".lib")
        flat(b, b.dir(pd, "Scripts"), r.randint(2, 20), lambda r: r.choice(PYPKG) + r.choice([".exe", "-script.py", ".exe"]))
        sp = b.dir(lib, "site-packages")
        for _ in b.loop(stop):
            pkgd = b.dir(sp if r.random() < 0.6 else lib, r.choice(PYPKG + TECH))
            gen_pypkg(b, pkgd, min(stop - b.live, r.randint(5, 300)))
    elif style == "git":
        core = b.path(pd, "mingw64/libexec/git-core")
        git = b.fnew(core, "git.exe")
        for cmd in ["add", "am", "annotate", "apply", "archive", "bisect", "blame", "branch", "bundle",
                    "cat-file", "check-attr", "check-ignore", "checkout", "cherry", "cherry-pick", "clean",
                    "clone", "commit", "commit-tree", "config", "count-objects", "describe", "diff",
                    "diff-files", "diff-index", "diff-tree", "fetch", "fetch-pack", "for-each-ref",
                    "format-patch", "fsck", "gc", "grep", "hash-object", "help", "index-pack", "init",
                    "log", "ls-files", "ls-remote", "ls-tree", "merge", "merge-base", "mktree", "mv",
                    "notes", "pack-objects", "prune", "pull", "push", "rebase", "reflog", "remote",
                    "repack", "replace", "reset", "restore", "rev-list", "rev-parse", "revert", "rm",
                    "send-pack", "shortlog", "show", "show-ref", "stash", "status", "switch", "tag",
                    "unpack-objects", "update-index", "update-ref", "upload-pack", "var", "verify-pack",
                    "worktree", "write-tree"]:
            if git is not None and b.link_budget > 0:
                b.link(git, core, f"git-{cmd}.exe")
            else:
                b.fnew(core, f"git-{cmd}.exe")
        for sub in ["usr/bin", "usr/lib", "usr/share/perl5/core_perl", "usr/share/vim/vim91/syntax", "mingw64/bin", "mingw64/share/doc/git-doc", "mingw64/share/locale", "etc"]:
            flat(b, b.path(pd, sub), r.randint(10, 300), lambda r: r.choice(TECH + VERBS) + r.choice([".exe", ".dll", ".pm", ".vim", ".html", ".txt", ".mo", ""]))
        for _ in b.loop(stop):
            tree(b, b.path(pd, r.choice(["usr/share", "mingw64/share", "usr/lib/perl5", "mingw64/lib"])), min(stop - b.live, r.randint(20, 400)), sw_dir, lambda r: code_base(r) + r.choice([".pm", ".pl", ".txt", ".html", ".gz", ".h", ".a", ".tcl"]), fan=(2, 6), max_depth=4)
    elif style == "node":
        b.fnew(pd, "node.exe")
        for n in ["npm", "npm.cmd", "npx", "npx.cmd", "corepack", "corepack.cmd", "nodevars.bat", "install_tools.bat"]:
            b.fnew(pd, n)
        gen_node_modules(b, pd, max(0, stop - b.live), nest=4)
    elif style == "dotnet":
        for v in ["6.0.25", "7.0.14", "8.0.0", "8.0.1"]:
            fd = b.path(pd, f"shared/Microsoft.NETCore.App/{v}")
            flat(b, fd, min(max(0, stop - b.live), r.randint(40, 200)), lambda r: "System." + ".".join(r.choice(CAMEL) for _ in range(r.randint(1, 3))) + ".dll")
        for _ in b.loop(stop):
            sd = b.path(pd, f"sdk/{r.choice(['6.0.417', '7.0.404', '8.0.100', '8.0.101'])}")
            tree(b, sd, min(stop - b.live, r.randint(50, 600)), lambda r, dp: r.choice(LOCALES[:10] + ["Sdks", "Roslyn", "FSharp", "ref", "runtimes", "tools", "net8.0", "bincore"]) if r.random() < 0.5 else camel(r, 1), lambda r: "Microsoft." + ".".join(r.choice(CAMEL) for _ in range(r.randint(1, 3))) + r.choice([".dll", ".dll", ".xml", ".targets", ".props", ".resources.dll"]), fan=(2, 5), max_depth=5)
    elif style == "office":
        o16 = b.path(pd, "Office16")
        flat(b, o16, min(max(0, stop - b.live), 600), lambda r: r.choice(["MSO", "OFF", "OUT", "WW", "XL", "PP", "MSPUB", "ONENOTE", "GROOVE", "VB", "ACE", "MSO20"]) + r.choice(["", "", "INTL", "RES", "WIN32", "CLIENT"]) + camel(r, 1).upper()[:6] + r.choice([".DLL", ".dll", ".EXE", ".OLB", ".XML", ".ACCDA"]))
        for _ in b.loop(stop):
            sd = b.path(pd, r.choice(["Office16/1033", "Office16/ADDINS", "Templates/1033", "vfs/ProgramFilesCommonX64/Microsoft Shared/OFFICE16", "vfs/SystemX86", "Office16/DCF", "Office16/Document Themes 16", "Office16/PROOF", "Office16/Bibliography/Style", "Office16/SDXs"]))
            flat(b, sd, min(stop - b.live, r.randint(10, 200)), lambda r: camel(r, r.randint(1, 3)) + r.choice([".dll", ".xml", ".dotx", ".thmx", ".lex", ".xsl", ".potx", ".ttf", ".sdx"]))
    elif style == "steam":
        for n in ["steam.exe", "steamclient64.dll", "tier0_s64.dll", "vstdlib_s64.dll", "steamerrorreporter.exe"]:
            b.fnew(pd, n)
        common = b.path(pd, "steamapps/common")
        flat(b, b.path(pd, "steamapps"), r.randint(3, 30), lambda r: f"appmanifest_{r.randint(10, 2500000)}.acf")
        for _ in b.loop(stop):
            game = b.dir(common, " ".join(cap(r.choice(NOUNS + PLACES)) for _ in range(r.randint(1, 3))))
            tree(b, game, min(stop - b.live, r.randint(50, 3000)), lambda r, dp: r.choice(["Data", "Content", "Paks", "Binaries", "Win64", "Engine", "Plugins", "Movies", "Audio", "Maps", "Textures", "Shaders", "Localization", "Config", "Mods"] + TECH), lambda r: r.choice([code_base(r) + r.choice([".pak", ".bnk", ".wem", ".dds", ".bk2", ".uasset", ".umap", ".ini", ".dll", ".ogg", ".bin"]), f"pakchunk{r.randint(0, 99)}-WindowsNoEditor.pak", f"{hexs(r, 8)}.wem"]), fan=(2, 6), nfiles=(2, 60), max_depth=5)
    # generic native app content (also tops up all styles)
    for _ in b.loop(stop):
        tree(b, pd, min(stop - b.live, r.randint(10, 800)), sw_dir, sw_file, fan=(1, 5), nfiles=(2, 40), max_depth=4)


def gen_pypkg(b, pkgd, budget):
    r = b.rng
    stop = b.until(budget)
    b.fnew(pkgd, "__init__.py")
    pc = b.dir(pkgd, "__pycache__")
    mods = flat(b, pkgd, r.randint(2, 30), lambda r: code_base(r) + ".py", stop=stop)
    for f in mods:
        if b.live >= stop:
            break
        b.fnew(pc, b.f_name[f][:-3] + ".cpython-311.pyc")
    for _ in b.loop(stop):
        sd = b.dir(pkgd, r.choice(TECH + ["tests", "_vendor", "core", "utils", "io", "internal", "compat"]))
        if sd in (pkgd,):
            break
        gen_pypkg(b, sd, min(stop - b.live, r.randint(3, 80)))


def gen_program_files(b, budget):
    r = b.rng
    b.tspan = (1.60e9, 1.72e9)
    b.dos_p = b.args.dos_names
    stop = b.until(budget)
    pf = b.dir(0, "Program Files")
    pfx = b.dir(0, "Program Files (x86)")
    b.fnew(pf, "desktop.ini", attr=FA_HIDDEN | FA_SYSTEM)
    b.fnew(pfx, "desktop.ini", attr=FA_HIDDEN | FA_SYSTEM)
    ws = [math.exp(r.gauss(0, 1.0)) for _ in VENDORS]
    tot = sum(ws)
    for (vendor, products, style), w in zip(VENDORS, ws):
        root = pf if r.random() < 0.7 else pfx
        vd = b.dir(root, vendor)
        for prod in products:
            pd = b.dir(vd, prod) if prod else vd
            share = int(budget * w / tot / len(products))
            if b.live >= stop:
                break
            gen_product(b, pd, min(share, stop - b.live), style, vendor)
    for _ in b.loop(stop):
        vd = b.dir(pfx if r.random() < 0.5 else pf, " ".join(cap(r.choice(NOUNS)) for _ in range(r.randint(1, 2))) + r.choice(["", " Software", " Inc", " Ltd", " Labs"]))
        gen_product(b, vd, min(stop - b.live, r.randint(20, 2000)), "native", b.d_name[vd])
    b.dos_p = 0.0
