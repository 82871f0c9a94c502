"""Component generators for Users: each user's skeleton, pictures, documents, music, downloads, desktop,
AppData and browser profiles, git repositories and source trees."""

import calendar
import math
import time

from .words import (
    ARTISTS, CRATES, DL_EXT, DOC_EXT, EVENTS, FIRST, KIB, LAST, LOCALES, MIB, NOUNS, NPM, PLACES,
    PREFETCH_EXE, PYPKG, SONG_WORDS, TECH, UNICODE_WORDS, VENDORS, VERBS,
)
from .model import (
    FA_HIDDEN, FA_SYSTEM, camel, camel_code, cap, code_base, doc_title, guid, hexs, long_title, wchoice,
    ymd,
)
from .system import flat, gen_node_modules, gen_product, gen_pypkg, npm_name, sw_file, tree


# -- Users -------------------------------------------------------------------

USERS = [  # name, persona, weight, unicode share of document names
    ("Alice", "photo", 0.24, 0.02),
    ("bob.smith", "office", 0.16, 0.01),
    ("chen.wei", "dev", 0.22, 0.15),
    ("María García", "office", 0.12, 0.12),
    ("devops", "dev", 0.20, 0.0),
    ("Дмитрий", "gamer", 0.06, 0.3),
]

PERSONA = {  # section -> share of the user's budget
    "photo": {"pictures": .42, "documents": .08, "music": .08, "videos": .02, "downloads": .04,
              "desktop": .01, "appdata": .25, "source": .0, "onedrive": .10},
    "office": {"pictures": .12, "documents": .30, "music": .05, "videos": .01, "downloads": .06,
               "desktop": .02, "appdata": .34, "source": .0, "onedrive": .10},
    "dev": {"pictures": .03, "documents": .05, "music": .02, "videos": .0, "downloads": .04,
            "desktop": .01, "appdata": .30, "source": .55, "onedrive": .0},
    "gamer": {"pictures": .06, "documents": .05, "music": .10, "videos": .04, "downloads": .10,
              "desktop": .02, "appdata": .43, "source": .0, "onedrive": .0, "savedgames": .20},
}


def zone_identifier(r, name):
    site = r.choice(["www.example.com", "download.example.org", "github.com", "objects.githubusercontent.com",
                     "drive.example.net", "mail.example.com", "cdn.example.io", "files.contoso.com"])
    zid = 3 if r.random() < 0.9 else r.choice([2, 4])
    s = f"[ZoneTransfer]\r\nZoneId={zid}\r\n"
    if r.random() < 0.8:
        s += f"ReferrerUrl=https://{site}/{r.choice(NOUNS)}/{hexs(r, 8)}\r\n"
        s += f"HostUrl=https://{site}/dl/{hexs(r, 16)}/{r.choice(NOUNS)}.bin\r\n"
    return s.encode()


def user_skeleton(b, u, uname):
    r = b.rng
    home = f"C:\\Users\\{uname}"
    for n in ["AppData/Local", "AppData/LocalLow", "AppData/Roaming", "Contacts", "Desktop",
              "Documents", "Downloads", "Favorites", "Links", "Music", "OneDrive", "Pictures",
              "Saved Games", "Searches", "Videos", "3D Objects"]:
        b.path(u, n)
    b.attr_d[b.dir(u, "AppData")] = FA_HIDDEN
    for n, sz in [("NTUSER.DAT", 4 * MIB), ("ntuser.dat.LOG1", 256 * KIB), ("ntuser.dat.LOG2", 128 * KIB),
                  ("ntuser.ini", 20)]:
        b.fnew(u, n, size=sz, attr=FA_HIDDEN | FA_SYSTEM)
    g = guid(r, False, False)
    b.fnew(u, f"NTUSER.DAT{{{g}}}.TM.blf", size=64 * KIB, attr=FA_HIDDEN | FA_SYSTEM)
    for i in (1, 2):
        b.fnew(u, f"NTUSER.DAT{{{g}}}.TMContainer0000000000000000000{i}.regtrans-ms", size=512 * KIB,
               attr=FA_HIDDEN | FA_SYSTEM)
    for n in ["Contacts", "Desktop", "Documents", "Downloads", "Favorites", "Links", "Music",
              "Pictures", "Saved Games", "Searches", "Videos", "3D Objects"]:
        b.fnew(b.dir(u, n), "desktop.ini", size=r.randint(150, 500), attr=FA_HIDDEN | FA_SYSTEM)
    junc = [("Application Data", "AppData\\Roaming"), ("Cookies", "AppData\\Local\\Microsoft\\Windows\\INetCookies"),
            ("Local Settings", "AppData\\Local"), ("My Documents", "Documents"),
            ("NetHood", "AppData\\Roaming\\Microsoft\\Windows\\Network Shortcuts"),
            ("PrintHood", "AppData\\Roaming\\Microsoft\\Windows\\Printer Shortcuts"),
            ("Recent", "AppData\\Roaming\\Microsoft\\Windows\\Recent"),
            ("SendTo", "AppData\\Roaming\\Microsoft\\Windows\\SendTo"),
            ("Start Menu", "AppData\\Roaming\\Microsoft\\Windows\\Start Menu"),
            ("Templates", "AppData\\Roaming\\Microsoft\\Windows\\Templates")]
    for n, t in junc:
        b.junction(u, n, home + "\\" + t)
    docs = b.dir(u, "Documents")
    for n, t in [("My Music", "Music"), ("My Pictures", "Pictures"), ("My Videos", "Videos")]:
        b.junction(docs, n, home + "\\" + t)
    loc = b.path(u, "AppData/Local")
    b.junction(loc, "Application Data", home + "\\AppData\\Local")
    b.junction(loc, "History", home + "\\AppData\\Local\\Microsoft\\Windows\\History")
    b.junction(loc, "Temporary Internet Files", home + "\\AppData\\Local\\Microsoft\\Windows\\INetCache")


CAMERA = ["iphone", "pixel", "canon", "nikon", "sony", "gopro", "samsung", "whatsapp", "scan"]


def photo_names(r, style, n, t0):
    """Yield (name, time) for one shoot/folder of n pictures."""
    k = r.randint(1, 9000)
    t = t0
    for i in range(n):
        t += r.randint(3, 600)
        tm = time.gmtime(t)
        stamp = time.strftime("%Y%m%d_%H%M%S", tm)
        if style == "iphone":
            ext = "HEIC" if r.random() < 0.6 else "JPG"
            yield f"IMG_{(k + i) % 10000:04d}.{ext}", t
            if r.random() < 0.08:
                yield f"IMG_{(k + i) % 10000:04d}.MOV", t
            if r.random() < 0.05:
                yield f"IMG_{(k + i) % 10000:04d}.AAE", t
        elif style == "pixel":
            yield f"PXL_{stamp}{r.randint(0, 999):03d}{r.choice(['', '', '', '.MP', '.PORTRAIT', '.NIGHT'])}.jpg", t
        elif style == "canon":
            yield f"IMG_{(k + i) % 10000:04d}.JPG", t
            if r.random() < 0.3:
                yield f"_MG_{(k + i) % 10000:04d}.CR2", t
        elif style == "nikon":
            yield f"DSC_{(k + i) % 10000:04d}.{r.choice(['JPG', 'JPG', 'NEF'])}", t
        elif style == "sony":
            yield f"DSC{(k * 7 + i) % 100000:05d}.JPG", t
        elif style == "gopro":
            yield (f"GOPR{(k + i) % 10000:04d}.JPG" if r.random() < 0.7 else f"GH01{(k + i) % 10000:04d}.MP4"), t
        elif style == "samsung":
            yield f"{stamp}.jpg", t
        elif style == "whatsapp":
            yield f"IMG-{stamp[:8]}-WA{i % 10000:04d}.jpg", t
        else:
            yield f"Scan {i + 1:03d}.{r.choice(['jpg', 'png', 'pdf', 'tif'])}", t


def year_time(r, y):
    return calendar.timegm((y, r.randint(1, 12), r.randint(1, 28), r.randint(6, 20), r.randint(0, 59), 0, 0, 0, 0))


def gen_pictures(b, pic, budget, uni):
    r = b.rng
    stop = b.until(budget)
    cr = b.dir(pic, "Camera Roll")
    n_cr = int(budget * 0.3)
    t = year_time(r, 2016)
    for name, tt in photo_names(r, r.choice(["iphone", "pixel", "samsung"]), n_cr, t):
        if b.live >= stop:
            break
        b.fnew(cr, name, t=tt)
    ss = b.dir(pic, "Screenshots")
    for i in range(min(max(0, stop - b.live), r.randint(20, 600))):
        tt = year_time(r, r.randint(2018, 2024))
        b.fnew(ss, f"Screenshot {time.strftime('%Y-%m-%d %H%M%S', time.gmtime(tt))}.png", t=tt)
    b.dir(pic, "Saved Pictures")
    b.fnew(pic, "Thumbs.db", attr=FA_HIDDEN | FA_SYSTEM)
    for _ in b.loop(stop):
        y = r.randint(2009, 2024)
        yd = b.dir(pic, str(y))
        t0 = year_time(r, y)
        tm = time.gmtime(t0)
        if r.random() < uni:
            ev = f"{time.strftime('%Y-%m-%d', tm)} {r.choice(UNICODE_WORDS)}"
        else:
            ev = r.choice([f"{time.strftime('%Y-%m-%d', tm)} {r.choice(EVENTS)} {r.choice(PLACES)}",
                           f"{r.choice(PLACES)} {y}", f"{time.strftime('%Y_%m', tm)}",
                           f"{r.choice(EVENTS)} at {r.choice(FIRST)}'s", f"{time.strftime('%B', tm)}"])
        ed = b.dir(yd, ev)
        style = r.choice(CAMERA)
        n = min(max(0, stop - b.live), max(3, int(60 * math.exp(0.9 * r.gauss(0, 1)))), 3000)
        for name, tt in photo_names(r, style, n, t0):
            b.fnew(ed, name, t=tt)
        if r.random() < 0.15:
            sd = b.dir(ed, r.choice(["edited", "Selects", "raw", "export", "for print", "Instagram"]))
            for name, tt in photo_names(r, "canon", r.randint(2, 40), t0):
                b.fnew(sd, name.replace("IMG_", "IMG_E"), t=tt)
        if r.random() < 0.01:
            b.fnew(ed, long_title(r, 230) + ".jpg")


def gen_documents(b, docs, budget, uni):
    r = b.rng
    stop = b.until(budget)
    tops = ["Work", "Personal", "Taxes", "School", "Projects", "Receipts", "Scans", "Finance",
            "Letters", "Archive", "Contracts", "Meetings", "Family", "Recipes", "Travel", "Health",
            "Car", "House", "Invoices", "Clients", "Zoom", "Custom Office Templates", "Outlook Files"]
    flat(b, docs, r.randint(5, 60), lambda r: doc_title(r, uni) + "." + wchoice(r, DOC_EXT))
    b.temp_sites.append((docs, "office"))

    def dname(r, depth):
        x = r.random()
        if x < uni:
            return r.choice(UNICODE_WORDS)
        if x < 0.3:
            return str(r.randint(2008, 2024))
        if x < 0.45:
            return f"{r.choice(FIRST)} {r.choice(LAST)}"
        if x < 0.55:
            return f"{r.randint(2008, 2024)}-{r.randint(1, 12):02d} {cap(r.choice(NOUNS))}"
        if x < 0.6:
            return "New folder" + r.choice(["", " (2)", " (3)"])
        return cap(r.choice(NOUNS)) + r.choice(["", "", "s", " " + r.choice(NOUNS), " " + str(r.randint(1, 20))])

    for _ in b.loop(stop):
        td = b.dir(docs, r.choice(tops) if r.random() < 0.8 else dname(r, 0))
        tree(b, td, min(stop - b.live, r.randint(10, 1500)), dname,
             lambda r: doc_title(r, uni) + "." + wchoice(r, DOC_EXT), fan=(1, 6), nfiles=(1, 40), max_depth=6)
        if r.random() < 0.02:
            b.fnew(td, long_title(r, 235) + ".docx")


def gen_music(b, mus, budget, uni):
    r = b.rng
    stop = b.until(budget)
    for _ in b.loop(stop):
        art = r.choice(ARTISTS)
        ad = b.dir(mus, art)
        alb = " ".join(cap(r.choice(SONG_WORDS)) for _ in range(r.randint(1, 3)))
        if r.random() < 0.3:
            alb += f" ({r.randint(1965, 2024)})"
        if r.random() < uni:
            alb = r.choice(UNICODE_WORDS)
        al = b.dir(ad, alb)
        ext = wchoice(r, [("mp3", 6), ("flac", 2), ("m4a", 2), ("ogg", 1), ("wav", 0.2)])
        for i in range(r.randint(6, 18)):
            title = " ".join(cap(r.choice(SONG_WORDS)) for _ in range(r.randint(1, 4)))
            b.fnew(al, f"{i + 1:02d} {r.choice(['', '- ', art + ' - '])}{title}.{ext}")
        for n in ["cover.jpg", "Folder.jpg", "AlbumArtSmall.jpg", "desktop.ini"]:
            if r.random() < 0.4:
                b.fnew(al, n, attr=(FA_HIDDEN | FA_SYSTEM) if n != "cover.jpg" else 0)


def gen_downloads(b, dl, budget, uni):
    r = b.rng
    stop = b.until(budget)
    b.temp_sites.append((dl, "dl"))

    def nm(r):
        x = r.random()
        e = wchoice(r, DL_EXT)
        if e in ("exe", "msi"):
            return f"{r.choice(NPM + TECH).split('/')[-1]}{r.choice(['-setup', '_setup', 'Setup', '-installer', ''])}{r.choice(['', '-x64', '_win64', '-amd64'])}-{r.randint(0, 20)}.{r.randint(0, 30)}.{r.randint(0, 99)}.{e}"
        if x < 0.4:
            return doc_title(r, uni) + "." + e
        if x < 0.55:
            return f"{r.choice(NOUNS)}-{hexs(r, 8)}.{e}"
        if x < 0.7:
            return f"{r.choice(NOUNS)} ({r.randint(1, 9)}).{e}"
        if x < 0.8:
            return f"IMG_{r.randint(1, 9999):04d}.{e}"
        return f"{r.choice(NOUNS)}_{r.choice(NOUNS)}_{r.randint(1, 999)}.{e}"

    for _ in b.loop(stop):
        f = b.fnew(dl, nm(r))
        if f is None:
            continue
        if r.random() < 0.85:
            b.add_ads(f, "Zone.Identifier", zone_identifier(b.mrng, b.f_name[f]))
        if b.f_name[f].endswith(".exe") and r.random() < 0.5:
            b.add_ads(f, "SmartScreen", b"Anaheim")
        if r.random() < 0.01:
            b.add_ads(f, "AFP_AfpInfo", b"AFP\x00" + bytes(56))


def gen_desktop(b, desk, budget, uni):
    r = b.rng
    stop = b.until(budget)
    for _ in b.loop(stop):
        x = r.random()
        if x < 0.4:
            b.fnew(desk, r.choice(VENDORS)[0] + r.choice(["", " - Shortcut"]) + ".lnk")
        elif x < 0.8:
            b.fnew(desk, doc_title(r, uni) + "." + wchoice(r, DOC_EXT))
        else:
            d = b.dir(desk, "New folder" + r.choice(["", " (2)", " (3)", " (4)"]))
            flat(b, d, r.randint(1, 10), lambda r: doc_title(r, uni) + "." + wchoice(r, DOC_EXT))


def browser_profile(b, base, budget):
    """Chromium-style profile: Cache_Data f_xxxxxx (flat), Code Cache, IndexedDB, ..."""
    r = b.rng
    stop = b.until(budget)
    prof = b.path(base, "User Data/Default")
    for n in ["Bookmarks", "Cookies", "History", "Login Data", "Preferences", "Secure Preferences",
              "Top Sites", "Visited Links", "Web Data", "Favicons", "Shortcuts", "Network Action Predictor"]:
        b.fnew(prof, n, ext="db")
    cd = b.path(prof, "Cache/Cache_Data")
    b.temp_sites.append((cd, "cache"))
    for n in ["index", "data_0", "data_1", "data_2", "data_3"]:
        b.fnew(cd, n)
    start = r.randint(1, 50000)
    n = int(budget * 0.55)
    for i in range(n):
        if b.live >= stop:
            break
        b.fnew(cd, f"f_{start + i:06x}", ext="cache")
    js = b.path(prof, "Code Cache/js")
    flat(b, js, int(budget * 0.15), lambda r: f"{hexs(r, 16)}_0", stop=stop)
    flat(b, b.path(prof, "Code Cache/wasm"), int(budget * 0.02), lambda r: f"{hexs(r, 16)}_0", stop=stop)
    sw = b.path(prof, "Service Worker/CacheStorage")
    for _ in b.loop(b.until(int(budget * 0.1))):
        d = b.dir(b.dir(sw, hexs(r, 40)), guid(r, False, False))
        flat(b, d, r.randint(1, 60), lambda r: f"{hexs(r, 16)}_0")
    idb = b.path(prof, "IndexedDB")
    for _ in b.loop(b.until(int(budget * 0.05))):
        d = b.dir(idb, f"https_{r.choice(['www', 'app', 'mail', 'docs', 'web'])}.{r.choice(NOUNS)}{r.choice(['', 'hub', 'ly', 'app'])}.{r.choice(['com', 'org', 'io', 'net'])}_0.indexeddb.leveldb")
        for k in ["CURRENT", "LOCK", "LOG", "LOG.old", f"MANIFEST-{r.randint(1, 999):06d}", f"{r.randint(1, 999):06d}.log", f"{r.randint(1, 999):06d}.ldb"]:
            b.fnew(d, k)
    ext = b.path(prof, "Extensions")
    for _ in b.loop(stop):
        e = b.dir(ext, "".join(r.choice("abcdefghijklmnop") for _ in range(32)))
        v = b.dir(e, f"{r.randint(1, 30)}.{r.randint(0, 99)}.{r.randint(0, 999)}_0")
        tree(b, v, min(stop - b.live, r.randint(10, 300)), lambda r, dp: r.choice(["_locales", "js", "css", "images", "icons", "html", "lib", "_metadata", "content", "background"]) if dp else r.choice(["_locales", "js", "images"]),
             lambda r: code_base(r) + r.choice([".js", ".css", ".html", ".png", ".json", ".svg"]), fan=(1, 4), max_depth=3)


def gen_appdata(b, u, budget, persona):
    r = b.rng
    stop = b.until(budget)
    loc = b.path(u, "AppData/Local")
    roam = b.path(u, "AppData/Roaming")
    low = b.path(u, "AppData/LocalLow")
    tmp = b.dir(loc, "Temp")
    b.temp_sites.append((tmp, "tmp"))
    B = lambda f: max(1, int(budget * f))
    flat(b, tmp, B(0.02), lambda r: r.choice([f"{guid(r)}.tmp", f"~DF{hexs(r, 4).upper()}.TMP", f"tmp{hexs(r, 4)}.tmp",
                                              f"{camel(r, 1)}_{hexs(r, 8)}.log", f"msedge_installer.log", f"wct{hexs(r, 4).upper()}.tmp"]))
    for _ in range(r.randint(2, 12)):
        d = b.dir(tmp, r.choice([guid(r), f"{camel(r, 1)}-{hexs(r, 6)}", f"_MEI{r.randint(10000, 99999)}", f"chrome_drag{r.randint(1000, 9999)}_{r.randint(10 ** 8, 10 ** 9)}"]))
        b.temp_sites.append((d, "tmp"))
        flat(b, d, r.randint(1, 40), sw_file)
    inet = b.path(loc, "Microsoft/Windows/INetCache/IE")
    for _ in range(4):
        d = b.dir(inet, "".join(r.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") for _ in range(8)))
        b.temp_sites.append((d, "cache"))
        flat(b, d, B(0.005), lambda r: f"{r.choice(NOUNS + TECH)}[{r.randint(1, 3)}].{r.choice(['htm', 'js', 'css', 'png', 'gif', 'jpg', 'json'])}")
    exp = b.path(loc, "Microsoft/Windows/Explorer")
    for s in ["16", "32", "48", "96", "256", "768", "1280", "1920", "2560", "custom_stream", "exif", "idx", "sr", "wide", "wide_alternate"]:
        b.fnew(exp, f"thumbcache_{s}.db")
        b.fnew(exp, f"iconcache_{s}.db")
    if r.random() < 0.7:
        browser_profile(b, b.path(loc, "Google/Chrome"), B(0.22))
    browser_profile(b, b.path(loc, "Microsoft/Edge"), B(0.08))
    pk = b.dir(loc, "Packages")
    for _ in b.loop(b.until(B(0.08))):
        p = b.dir(pk, f"{r.choice(['Microsoft.', 'Microsoft.Windows.', 'MicrosoftWindows.', 'SpotifyAB.', 'Clipchamp.', ''])}{camel(r, r.randint(1, 2))}_{''.join(r.choice('abcdefghijklmnopqrstuvwxyz0123456789') for _ in range(13))}")
        for sd in ["AC", "AppData", "LocalCache", "LocalState", "RoamingState", "Settings", "SystemAppData", "TempState"]:
            b.dir(p, sd)
        b.fnew(b.dir(p, "Settings"), "settings.dat")
        b.fnew(b.dir(p, "Settings"), "roaming.lock")
        tree(b, b.dir(p, "LocalState"), r.randint(0, 200), lambda r, dp: r.choice(TECH + ["Cache", "Logs", "db", "Images", "EBWebView"]), sw_file, fan=(1, 3), max_depth=3)
    # npm cache: deep content-addressed paths with long hex names
    if persona == "dev":
        cc = b.path(loc, "npm-cache/_cacache")
        for _ in b.loop(b.until(B(0.10))):
            x, y = hexs(r, 2), hexs(r, 2)
            if r.random() < 0.5:
                b.fnew(b.path(cc, f"content-v2/sha512/{x}/{y}"), hexs(r, 124), size=int(40 * KIB * math.exp(r.gauss(0, 1.5))))
            else:
                b.fnew(b.path(cc, f"index-v5/{x}/{y}"), hexs(r, 60))
        pip = b.path(loc, "pip/cache/http-v2")
        for _ in b.loop(b.until(B(0.04))):
            h = hexs(r, 61)
            d = b.path(pip, "/".join(h[:5]))
            b.fnew(d, h[5:])
            b.fnew(d, h[5:] + ".body")
        # pnpm content store + hard links into a project's node_modules/.pnpm
        store = b.path(loc, "pnpm/store/v3/files")
        proj = b.path(u, f"source/repos/pnpm-{r.choice(NOUNS)}/node_modules/.pnpm")
        pstop = b.until(B(0.06))
        for _ in b.loop(pstop):
            pkgn = npm_name(r).replace("/", "+") + "@" + f"{r.randint(0, 9)}.{r.randint(0, 30)}.{r.randint(0, 20)}"
            pd = b.path(proj, f"{pkgn}/node_modules/{npm_name(r).split('/')[-1]}")
            for _ in range(r.randint(2, 12)):
                h = hexs(r, 128)
                t = b.fnew(b.dir(store, h[:2]), h[2:] + r.choice(["", "", "-exec", "-index.json"]))
                if t is None:
                    continue
                nm = code_base(r) + r.choice([".js", ".d.ts", ".json", ".md", ".map"])
                if b.link_budget > 0:
                    b.link(t, pd, nm)
                else:
                    b.fnew(pd, nm)
    # Roaming
    rec = b.path(roam, "Microsoft/Windows/Recent")
    flat(b, rec, B(0.01), lambda r: doc_title(r) + r.choice([".docx", ".pdf", ".xlsx", ""]) + ".lnk")
    flat(b, b.dir(rec, "AutomaticDestinations"), r.randint(10, 60), lambda r: f"{hexs(r, 16)}.automaticDestinations-ms")
    flat(b, b.dir(rec, "CustomDestinations"), r.randint(5, 30), lambda r: f"{hexs(r, 16)}.customDestinations-ms")
    sm = b.path(roam, "Microsoft/Windows/Start Menu/Programs")
    for v, _, _ in VENDORS[:r.randint(10, len(VENDORS))]:
        b.fnew(b.dir(sm, v) if r.random() < 0.3 else sm, v + ".lnk")
    code = b.path(roam, "Code/User")
    b.fnew(code, "settings.json")
    b.fnew(code, "keybindings.json")
    ws = b.dir(code, "workspaceStorage")
    for _ in range(r.randint(5, 60)):
        d = b.dir(ws, hexs(r, 32))
        b.fnew(d, "state.vscdb")
        b.fnew(d, "state.vscdb.backup")
        b.fnew(d, "workspace.json")
    hist = b.dir(code, "History")
    for _ in b.loop(b.until(B(0.02))):
        d = b.dir(hist, f"{hexs(r, 8)}")
        b.fnew(d, "entries.json")
        flat(b, d, r.randint(1, 12), lambda r: f"{''.join(r.choice('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789') for _ in range(4))}.{r.choice(['ts', 'py', 'rs', 'md', 'json', 'js'])}")
    vsx = b.path(u, ".vscode/extensions")
    for _ in b.loop(b.until(B(0.06))):
        e = b.dir(vsx, f"{r.choice(['ms-python', 'ms-vscode', 'rust-lang', 'esbenp', 'dbaeumer', 'eamodio', 'redhat', 'golang', 'ms-toolsai', 'github'])}.{r.choice(TECH + VERBS)}-{r.randint(0, 3)}.{r.randint(0, 40)}.{r.randint(0, 9)}")
        b.fnew(e, "package.json")
        b.fnew(e, "README.md")
        b.fnew(e, "CHANGELOG.md")
        tree(b, b.dir(e, "dist"), r.randint(5, 60), lambda r, dp: r.choice(TECH), lambda r: code_base(r) + r.choice([".js", ".js.map", ".json", ".wasm"]), fan=(1, 3), max_depth=2)
        if r.random() < 0.3:
            gen_node_modules(b, e, min(max(0, stop - b.live), r.randint(50, 2000)), nest=4)
    ff = b.path(roam, f"Mozilla/Firefox/Profiles/{''.join(r.choice('abcdefghijklmnopqrstuvwxyz0123456789') for _ in range(8))}.default-release")
    for n in ["places.sqlite", "cookies.sqlite", "formhistory.sqlite", "prefs.js", "key4.db", "cert9.db", "sessionstore.jsonlz4", "favicons.sqlite", "webappsstore.sqlite", "times.json"]:
        b.fnew(ff, n)
    c2 = b.path(loc, f"Mozilla/Firefox/Profiles/{b.d_name[ff]}/cache2/entries")
    b.temp_sites.append((c2, "cache"))
    flat(b, c2, B(0.03), lambda r: hexs(r, 40).upper())
    stg = b.path(ff, "storage/default")
    for _ in b.loop(b.until(B(0.01))):
        d = b.path(stg, f"https+++{r.choice(['www', 'app', 'mail'])}.{r.choice(NOUNS)}.{r.choice(['com', 'org', 'io'])}/idb")
        flat(b, d, r.randint(1, 5), lambda r: f"{r.randint(10 ** 9, 10 ** 10)}{r.choice(['yCmf', 'ssegtnno', 'dmpe'])}.sqlite")
    flat(b, b.path(low, "Sun/Java/Deployment/cache/6.0/" + str(r.randint(1, 60))), r.randint(0, 30), lambda r: f"{hexs(r, 8)}-{hexs(r, 8)}.idx")
    flat(b, b.path(loc, "CrashDumps"), r.randint(0, 15), lambda r: f"{r.choice(PREFETCH_EXE).lower()}.{r.randint(1000, 30000)}.dmp")
    d3d = b.dir(loc, "D3DSCache")
    for _ in range(r.randint(2, 20)):
        d = b.dir(d3d, hexs(r, 16))
        g = guid(r, False, False)
        for e in ["idx", "val", "lock"]:
            b.fnew(d, f"{g}.{e}")
    progs = b.dir(loc, "Programs")
    for app, st in [("Microsoft VS Code", "electron"), ("Discord", "electron"), ("Python/Python312", "python")]:
        if r.random() < (0.9 if persona == "dev" else 0.4):
            gen_product(b, b.path(progs, app), B(0.05), st, app.split("/")[0])
    if persona == "gamer":
        sg = b.path(u, "Saved Games")
        for _ in b.loop(b.until(B(0.05))):
            gd = b.dir(sg, " ".join(cap(r.choice(NOUNS + PLACES)) for _ in range(r.randint(1, 3))))
            flat(b, gd, r.randint(3, 200), lambda r: r.choice([f"save_{r.randint(1, 999):03d}.sav", f"autosave{r.randint(1, 20)}.sav", f"quicksave.{r.randint(1, 9)}", "settings.ini", f"screenshot_{r.randint(1, 9999)}.png"]))
    # generic app data, top-up
    for _ in b.loop(stop):
        base = r.choice([loc, roam, loc, low])
        vd = b.dir(base, r.choice([v for v, _, _ in VENDORS] + [cap(r.choice(NOUNS)) for _ in range(4)]))
        tree(b, vd, min(stop - b.live, r.randint(10, 600)),
             lambda r, dp: r.choice(TECH + ["Cache", "Logs", "User Data", "Crashpad", "GPUCache", "blob_storage", "Local Storage", "Session Storage", "leveldb", "databases", "Profiles", "Settings", "Updates", "Backups"]),
             lambda r: r.choice([sw_file(r), f"{hexs(r, 16)}", f"log_{ymd(r.randint(1_550_000_000, 1_720_000_000))}_{r.randint(0, 9)}.txt", f"{r.randint(1, 999999):06d}.log", f"data_{r.randint(0, 9)}", f"{hexs(r, 8)}-{hexs(r, 4)}.{r.choice(['tmp', 'dat', 'json', 'ldb'])}"]),
             fan=(1, 5), nfiles=(1, 60), max_depth=5)


def git_objects(b, repo, budget):
    r = b.rng
    g = b.dir(repo, ".git")
    b.attr_d[g] = FA_HIDDEN
    for n in ["HEAD", "config", "description", "index", "packed-refs", "FETCH_HEAD", "ORIG_HEAD", "COMMIT_EDITMSG"]:
        b.fnew(g, n)
    for n in ["applypatch-msg", "commit-msg", "fsmonitor-watchman", "post-update", "pre-applypatch",
              "pre-commit", "pre-merge-commit", "pre-push", "pre-rebase", "pre-receive",
              "prepare-commit-msg", "push-to-checkout", "update"]:
        b.fnew(b.dir(g, "hooks"), n + ".sample")
    b.fnew(b.path(g, "info"), "exclude")
    b.fnew(b.path(g, "logs"), "HEAD")
    b.fnew(b.path(g, "logs/refs/heads"), "main")
    b.fnew(b.path(g, "refs/heads"), "main")
    b.fnew(b.path(g, "refs/remotes/origin"), "HEAD")
    b.path(g, "refs/tags")
    pk = b.path(g, "objects/pack")
    for _ in range(r.randint(1, 4)):
        h = hexs(r, 40)
        for e in ["pack", "idx", "rev"]:
            b.fnew(pk, f"pack-{h}.{e}")
    stop = b.until(budget)
    obj = b.path(g, "objects")
    for _ in b.loop(stop):
        b.fnew(b.dir(obj, hexs(r, 2)), hexs(r, 38), size=int(300 * math.exp(r.gauss(0, 1.5))))


def gen_repo(b, parent, budget, lang=None):
    r = b.rng
    stop = b.until(budget)
    lang = lang or r.choice(["js", "js", "rust", "python", "csharp", "cpp", "go", "java"])
    name = r.choice([f"{r.choice(NOUNS)}-{r.choice(TECH)}", f"{r.choice(TECH)}{r.choice(['', '-rs', '.js', '-py', 'lib', 'kit'])}", camel(r, 2)])
    repo = b.dir(parent, name)
    for n in ["README.md", ".gitignore", ".editorconfig", "LICENSE"]:
        b.fnew(repo, n)
    ext = {"js": [".ts", ".tsx", ".js", ".json", ".css", ".test.ts"], "rust": [".rs"], "python": [".py"],
           "csharp": [".cs", ".xaml", ".resx"], "cpp": [".cpp", ".h", ".hpp", ".cc"], "go": [".go", "_test.go"],
           "java": [".java", ".kt"]}[lang]
    fnm = (lambda r: camel_code(r) + r.choice(ext)) if lang in ("csharp", "java") else (lambda r: code_base(r) + r.choice(ext))
    git_objects(b, repo, int(budget * 0.15))
    src = b.dir(repo, "src")
    tree(b, src, int(budget * (0.3 if lang in ("js", "rust", "python", "csharp") else 0.8)), lambda r, dp: r.choice(TECH + VERBS + ["components", "utils", "tests", "models", "services", "api", "hooks", "views"]), fnm, fan=(2, 6), nfiles=(2, 20), max_depth=7)
    if lang == "js":
        b.fnew(repo, "package.json")
        b.fnew(repo, "package-lock.json")
        b.fnew(repo, "tsconfig.json")
        gen_node_modules(b, repo, max(0, stop - b.live), nest=7)
    elif lang == "rust":
        b.fnew(repo, "Cargo.toml")
        b.fnew(repo, "Cargo.lock")
        tgt = b.path(repo, "target/debug")
        deps = b.dir(tgt, "deps")
        b.path(tgt, "incremental")
        fp = b.dir(tgt, ".fingerprint")
        bld = b.dir(tgt, "build")
        for _ in b.loop(stop):
            c = r.choice(CRATES)
            h = hexs(r, 16)
            for e in r.sample([".rlib", ".rmeta", ".d", ".pdb", ".dll", ".exe"], r.randint(2, 3)):
                b.fnew(deps, f"lib{c}-{h}{e}" if e in (".rlib", ".rmeta") else f"{c}-{h}{e}")
            fd = b.dir(fp, f"{c.replace('_', '-')}-{h}")
            for n in ["lib-" + c, "lib-" + c + ".json", "dep-lib-" + c, "invoked.timestamp"]:
                b.fnew(fd, n)
            if r.random() < 0.15:
                od = b.path(bld, f"{c.replace('_', '-')}-{hexs(r, 16)}/out")
                flat(b, od, r.randint(0, 8), lambda r: code_base(r) + r.choice([".rs", ".o", ".lib", ".c"]))
    elif lang == "python":
        b.fnew(repo, "pyproject.toml")
        b.fnew(repo, "requirements.txt")
        sp = b.path(repo, ".venv/Lib/site-packages")
        b.fnew(b.path(repo, ".venv"), "pyvenv.cfg")
        flat(b, b.path(repo, ".venv/Scripts"), 12, lambda r: r.choice(["python.exe", "pythonw.exe", "pip.exe", "activate", "activate.bat", "Activate.ps1", "deactivate.bat", "pytest.exe", "black.exe", "ruff.exe", "ipython.exe", "jupyter.exe"]))
        for _ in b.loop(stop):
            p = r.choice(PYPKG)
            gen_pypkg(b, b.dir(sp, p), min(stop - b.live, r.randint(5, 400)))
            b.fnew(b.dir(sp, f"{p}-{r.randint(0, 9)}.{r.randint(0, 30)}.{r.randint(0, 9)}.dist-info"), "METADATA")
    elif lang == "csharp":
        b.fnew(repo, name + ".sln")
        for _ in b.loop(stop):
            for cfg in ["bin/Debug/net8.0", "obj/Debug/net8.0", "bin/Release/net8.0"]:
                d = b.path(repo, cfg)
                flat(b, d, min(max(0, stop - b.live), r.randint(5, 200)), lambda r: "Microsoft." + camel(r, 2) + r.choice([".dll", ".pdb", ".xml", ".deps.json"]))
                if r.random() < 0.3:
                    for l in LOCALES[:r.randint(3, 14)]:
                        flat(b, b.dir(d, l[:2]), r.randint(1, 6), lambda r: "Microsoft." + camel(r, 2) + ".resources.dll")
            tree(b, src, min(max(0, stop - b.live), r.randint(50, 400)), lambda r, dp: r.choice(TECH + VERBS), fnm, fan=(2, 5), max_depth=5)
    else:
        for _ in b.loop(stop):
            tree(b, src, stop - b.live, lambda r, dp: r.choice(TECH + VERBS), fnm, fan=(2, 6), max_depth=8)


def gen_source(b, u, budget):
    r = b.rng
    stop = b.until(budget)
    repos = b.path(u, "source/repos")
    for _ in b.loop(stop):
        gen_repo(b, repos, min(stop - b.live, int(3000 * math.exp(r.gauss(0, 1.2)))))


def gen_users(b, budget):
    r = b.rng
    stop = b.until(budget)
    b.tspan = (1.45e9, 1.72e9)
    b.dos_p = b.args.dos_names * 0.5
    users = b.dir(0, "Users")
    b.fnew(users, "desktop.ini", attr=FA_HIDDEN | FA_SYSTEM)
    b.junction(users, "All Users", "C:\\ProgramData")
    b.junction(users, "Default User", "C:\\Users\\Default")
    pub = b.dir(users, "Public")
    for n in ["Documents", "Downloads", "Music", "Pictures", "Videos", "Desktop", "Libraries", "AccountPictures"]:
        b.fnew(b.dir(pub, n), "desktop.ini", attr=FA_HIDDEN | FA_SYSTEM)
    default = b.dir(users, "Default")
    b.attr_d[default] = FA_HIDDEN
    user_skeleton(b, default, "Default")
    for name, persona, w, uni in USERS:
        ubudget = int(budget * w)
        u = b.dir(users, name)
        b.users.append(u)
        user_skeleton(b, u, name)
        ustop = b.until(ubudget)
        shares = PERSONA[persona]
        for sec, frac in shares.items():
            sb = int(ubudget * frac)
            if sb <= 0:
                continue
            sb = min(sb, max(0, ustop - b.live))
            if sec == "pictures":
                gen_pictures(b, b.dir(u, "Pictures"), sb, uni)
            elif sec == "documents":
                gen_documents(b, b.dir(u, "Documents"), sb, uni)
            elif sec == "music":
                gen_music(b, b.dir(u, "Music"), sb, uni)
            elif sec == "videos":
                vd = b.dir(u, "Videos")
                flat(b, b.dir(vd, "Captures"), sb // 2, lambda r: f"{r.choice(VENDORS)[0]} {time.strftime('%Y-%m-%d %H-%M-%S', time.gmtime(r.randint(1_550_000_000, 1_720_000_000)))}.mp4")
                flat(b, vd, sb - sb // 2, lambda r: doc_title(r, uni) + r.choice([".mp4", ".mkv", ".mov", ".avi"]))
            elif sec == "downloads":
                gen_downloads(b, b.dir(u, "Downloads"), sb, uni)
            elif sec == "desktop":
                gen_desktop(b, b.dir(u, "Desktop"), sb, uni)
            elif sec == "appdata":
                gen_appdata(b, u, sb, persona)
            elif sec == "source":
                gen_source(b, u, sb)
            elif sec == "onedrive":
                od = b.dir(u, "OneDrive")
                gen_documents(b, b.dir(od, "Documents"), sb // 2, uni)
                gen_pictures(b, b.dir(od, "Pictures"), sb - sb // 2, uni)
            elif sec == "savedgames":
                gen_appdata(b, u, sb, persona)
        for _ in b.loop(ustop):
            gen_documents(b, b.dir(u, "Documents"), ustop - b.live, uni)
    for _ in b.loop(stop):
        gen_documents(b, b.dir(pub, "Documents"), stop - b.live, 0.0)
    b.dos_p = 0.0
