#!/usr/bin/env python3
"""Build the uffs standard benchmark workload: a real NTFS image with >= 1M entries.

The volume is formatted by mkntfs and populated through the ntfs-3g FUSE driver
(the real on-disk structures: B+tree directory indexes, $ATTRIBUTE_LIST
extension records, hard links, named streams, sparse runs, reparse points,
DOS 8.3 names, deleted-but-still-present MFT records).

The tree is a deterministic function of (--seed, --entries, knobs): a
Windows-like system volume (Windows/System32, WinSxS, Program Files, ProgramData,
Users/<name>/..., source trees with deep node_modules, photo folders, ...).
Names come from word lists embedded below; nothing is downloaded.

Python 3 stdlib only.  Needs root, /dev/fuse, mkntfs and ntfs-3g.

    sudo python3 scripts/make-bench-volume.py --out /work/bench/bench.img
    python3 scripts/make-bench-volume.py --dry-run            # tree stats only

With --jobs > 1 several client processes feed the (single-threaded) ntfs-3g
daemon concurrently; this roughly triples throughput but makes MFT record
numbers vary between builds.  --jobs 1 gives a reproducible creation order.
See scripts/BENCH.md.
"""

import argparse
import calendar
import errno
import gc
import hashlib
import json
import math
import multiprocessing
import os
import random
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import time

DEFAULT_SEED = 20240917
DEFAULT_ENTRIES = 1_200_000
DEFAULT_OUT = "/work/bench/bench.img"
DEFAULT_DRIVER = "ntfs-3g"          # measured faster than lowntfs-3g (BENCH.md)
DEFAULT_JOBS = 4                    # measured sweet spot on 2 cores (BENCH.md)
BASE_MOUNT_OPTS = "noatime,big_writes,streams_interface=windows"
RESIDENT_MAX = 600                  # sizes <= this are written as real (resident) bytes
REALDATA_MAX = 64 * 1024
KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30

# ---------------------------------------------------------------------------
# Word lists (embedded; all names are synthesised from these)
# ---------------------------------------------------------------------------

def W(s):
    return s.split()

NOUNS = W("""account action activity address agenda agreement album analysis answer
apartment application appointment archive area article assessment asset audit
award backup balance bank baseline benchmark bill birthday blueprint board book
booking brief budget build bundle business calendar campaign candidate card
catalog certificate chapter chart checklist claim client code collection
comment committee company comparison concept conference config contract
contact copy course cover credit customer dashboard data database deadline
deal deck delivery demo design diagram diary draft election estimate event
evidence exam expense export feedback figure finance flyer forecast form
garden grant guide handbook health history holiday home homework house idea
import insurance interview inventory invoice itinerary job journal kitchen
label lecture ledger lesson letter license list loan log logo manual map
marketing meeting memo menu minutes model mortgage movie music network notes
offer order outline overview package payment payroll pension permit photo
plan playlist policy portfolio poster presentation price process product
profile program project proposal purchase quote receipt recipe record
reference report request research resume review roadmap salary sample
schedule school script selection sheet shipment slides specification
statement strategy study summary supplier survey syllabus task tax template
test thesis ticket timeline timesheet training transcript travel trip update
vacation vendor video warranty website wedding workshop""")

ADJS = W("""annual final new old draft signed scanned revised updated complete
monthly weekly quarterly personal shared private public internal external
official original edited backup temp important urgent archived approved
preliminary corrected extended short long detailed summary full partial
master local remote legacy current next previous""")

VERBS = W("""parse load save build read write render fetch update create delete
sync merge split compute validate format convert encode decode compress
extract resolve register dispatch schedule handle process transform filter
sort map reduce scan index search query emit notify attach detach mount
init open close flush commit rollback probe bind connect listen accept send
receive retry refresh collect measure trace verify sign encrypt""")

TECH = W("""alloc arena array async atomic audio auth buffer bus cache channel
chunk cipher clock codec color config context core crypto cursor device
dialog driver engine entry event file font frame graph grid hash heap
helper hook host http image input io ipc irq json kernel key layout link
list lock log loop mem memory menu meta mutex net node object option page
panel parser path pipe pixel plugin pool port power proc queue record
region registry render request resource route rpc runtime sched schema
session shader shell signal socket sound stack state storage stream string
style surface sync table task text theme thread timer token tree type ui
url usb user util value vector view widget window worker xml zone""")

SYS_PREFIX = W("""win nt ms d3d dx wmi shell crypt rpc sec net ws2 mf dwm ux wlan
bcrypt cert dns usb hid print audio bth sync wpn search cred kerb ole com
user gdi kernel adv setup cfg dev inet url media speech ink pen touch xaml
tapi rasa wdi wer wsc wu app bit cdp cloud data diag efs fve gpsvc iphlp
lsa msi ncrypt ntlm pnp sspi tcp tdh uia vds vss wbem wcm wdf win32 wintrust
wlanhlp wpd xinput hal ci clfs dbg dhcp dism dpapi fltmgr ks mcupdate ndis
rdp sxs tpm vm wof""")

SYS_CORE = W("""api svc core host mgr ext prov util ui res base srv cli lib
helper broker task agent client server proxy stub plugin shim filter
provider handler service manager runtime loader cfg diag perf log trace
policy sched store cache net auth com core2 ps""")

CAMEL = W("""Account Action Activation App Audio Auth Background Battery Bluetooth
Broker Camera Capture Cloud Color Component Connected Contact Content
Core Credential Data Delivery Desktop Device Diagnostics Display Edge
Experience Feature Feedback File Font Game Graphics Holographic Identity
Image Ink Input Install Language License Location Mail Map Media Message
Mobile Network Notification Payment People Phone Photo Picker Platform
Policy Power Print Privacy Profile Proximity Radio Remote Search Security
Sensor Settings Setup Shell Speech Spatial Storage Store Sync System
Task Telemetry Text Theme Time Touch Update User Video Voice Wallet Web
Wifi Window Wireless Xbox""")

CAMEL_TAIL = W("""Service Host Broker Client Provider Handler Ext Core Api Lib Res
Ui Manager Proxy Plugin Runtime Agent Helper Task Server Stub Model
Controls Common Interop Dll""")

LOCALES = W("""en-US de-DE fr-FR es-ES it-IT ja-JP ko-KR zh-CN zh-TW pt-BR ru-RU
pl-PL nl-NL sv-SE tr-TR cs-CZ da-DK fi-FI nb-NO hu-HU el-GR he-IL ar-SA
uk-UA th-TH ro-RO""")

FIRST = W("""James Mary John Patricia Robert Jennifer Michael Linda William
Elizabeth David Barbara Richard Susan Joseph Jessica Thomas Sarah Charles
Karen Daniel Nancy Matthew Lisa Anthony Betty Mark Sandra Paul Ashley
Steven Emily Andrew Donna Kevin Michelle Brian Carol George Amanda Emma
Olivia Noah Liam Sophia Lucas Mia Ethan Chloe Hannah""")

LAST = W("""Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez
Martinez Hernandez Lopez Gonzalez Wilson Anderson Thomas Taylor Moore
Jackson Martin Lee Perez Thompson White Harris Sanchez Clark Ramirez Lewis
Robinson Walker Young Allen King Wright Scott Torres Nguyen Hill Flores
Green Adams Nelson Baker Hall Rivera Campbell Mitchell Carter""")

PLACES = W("""Paris Rome London Berlin Tokyo Lisbon Prague Vienna Barcelona Madrid
Amsterdam Dublin Oslo Helsinki Reykjavik Yosemite Yellowstone Zion Hawaii
Maui Bali Kyoto Seoul Sydney Melbourne Vancouver Toronto Montreal Boston
Chicago Seattle Portland Denver Austin Miami Cancun Lima Cusco Santiago
Alps Dolomites Tuscany Provence Normandy Scotland Iceland Norway Croatia
Greece Santorini Crete Sicily Sardinia Algarve Marrakech Cairo""")

EVENTS = W("""Birthday Wedding Vacation Christmas Graduation Hiking Camping
Beach Skiing Roadtrip Concert Party Reunion Halloween Easter Thanksgiving
Picnic Marathon Festival Museum Zoo Garden Renovation Baby Anniversary
Fishing Climbing Kayak Cruise Weekend""")

ARTISTS = ["The Beatles", "Radiohead", "Pink Floyd", "Daft Punk", "Adele",
           "Miles Davis", "Nina Simone", "Led Zeppelin", "Massive Attack",
           "Björk", "Sigur Rós", "Motörhead", "Beyoncé", "Mötley Crüe",
           "Queen", "Portishead", "Air", "Moby", "Coldplay", "Muse",
           "Arctic Monkeys", "The Cure", "Depeche Mode", "Kraftwerk",
           "Johann Sebastian Bach", "Ludwig van Beethoven", "Frédéric Chopin",
           "Antonín Dvořák", "Erik Satie", "Hans Zimmer", "Ennio Morricone",
           "坂本龍一", "宇多田ヒカル", "Кино", "ДДТ", "Stromae", "Rosalía",
           "Sade", "Toto", "ABBA", "a-ha", "Röyksopp", "Aphex Twin", "Bonobo"]

SONG_WORDS = W("""love night day heart light dream fire rain blue river road home
time sun moon star sky ocean wind gold silver shadow city summer winter
song dance run fly fall rise stay away forever tonight again alone world""")

DOC_EXT = [("docx", 30), ("pdf", 30), ("xlsx", 14), ("pptx", 6), ("txt", 8),
           ("doc", 3), ("xls", 2), ("odt", 1), ("rtf", 1), ("csv", 3),
           ("md", 2), ("png", 3), ("jpg", 3), ("zip", 2), ("msg", 2)]

DL_EXT = [("exe", 14), ("msi", 5), ("zip", 16), ("pdf", 18), ("jpg", 8),
          ("png", 6), ("docx", 6), ("xlsx", 3), ("iso", 0.3), ("7z", 3),
          ("mp4", 3), ("mp3", 2), ("torrent", 2), ("csv", 3), ("txt", 3),
          ("json", 2), ("tar.gz", 2), ("whl", 1), ("apk", 1), ("dmg", 0.3)]

VENDORS = [
    ("Microsoft Office", ["root"], "office"),
    ("Microsoft Visual Studio", ["2022"], "native"),
    ("Microsoft VS Code", [""], "electron"),
    ("Google", ["Chrome"], "chrome"),
    ("Microsoft", ["Edge"], "chrome"),
    ("Mozilla Firefox", [""], "native"),
    ("Mozilla Thunderbird", [""], "native"),
    ("Adobe", ["Acrobat DC", "Adobe Photoshop 2024", "Adobe Creative Cloud"], "native"),
    ("NVIDIA Corporation", ["NVIDIA App", "PhysX", "FrameViewSDK", "Display.NvContainer"], "native"),
    ("Intel", ["Intel(R) Management Engine Components", "Wifi"], "native"),
    ("Realtek", ["Audio"], "native"),
    ("JetBrains", ["IntelliJ IDEA 2023.3.2", "PyCharm Community Edition 2023.3"], "java"),
    ("Java", ["jdk-17", "jre-1.8"], "java"),
    ("Python311", [""], "python"),
    ("nodejs", [""], "node"),
    ("Git", [""], "git"),
    ("Docker", ["Docker"], "electron"),
    ("7-Zip", [""], "native"),
    ("Notepad++", [""], "native"),
    ("VideoLAN", ["VLC"], "native"),
    ("LibreOffice", [""], "native"),
    ("Blender Foundation", ["Blender 4.0"], "python"),
    ("GIMP 2", [""], "native"),
    ("Inkscape", [""], "native"),
    ("Audacity", [""], "native"),
    ("obs-studio", [""], "native"),
    ("Wireshark", [""], "native"),
    ("PuTTY", [""], "native"),
    ("WinRAR", [""], "native"),
    ("CMake", [""], "native"),
    ("LLVM", [""], "native"),
    ("dotnet", [""], "dotnet"),
    ("PowerShell", ["7"], "dotnet"),
    ("Common Files", ["microsoft shared", "System", "Oracle"], "native"),
    ("Windows Defender", [""], "native"),
    ("Windows NT", ["Accessories", "TableTextService"], "native"),
    ("Windows Media Player", [""], "native"),
    ("Zoom", ["bin"], "native"),
    ("Slack", [""], "electron"),
    ("Steam", [""], "steam"),
    ("Epic Games", ["Launcher"], "native"),
    ("VMware", ["VMware Workstation"], "native"),
    ("Oracle", ["VirtualBox"], "native"),
    ("Autodesk", ["AutoCAD 2024"], "native"),
    ("Logitech", ["LogiOptionsPlus"], "electron"),
    ("Dropbox", ["Client"], "native"),
    ("TeamViewer", [""], "native"),
    ("Malwarebytes", ["Anti-Malware"], "native"),
    ("Paint.NET", [""], "dotnet"),
    ("qBittorrent", [""], "native"),
    ("KeePass Password Safe 2", [""], "dotnet"),
    ("Sublime Text", [""], "native"),
    ("WindowsPowerShell", ["Modules"], "native"),
    ("Unity", ["Hub"], "electron"),
    ("Spotify", [""], "electron"),
]

SW_DIRS = W("""bin lib plugins resources locales share doc include modules x64 x86
platforms imageformats translations help templates samples data config
icons themes extensions drivers runtime assets fonts licenses redist tools
scripts styles skins lang codecs addins components presets brushes
sounds shaders cache tessdata""")

NPM = W("""lodash react react-dom webpack babel-loader typescript eslint
prettier jest mocha chai express axios moment dayjs chalk commander debug
semver uuid rxjs tslib yargs glob minimatch rimraf mkdirp fs-extra
graceful-fs source-map postcss autoprefixer sass less vue vite rollup
esbuild terser core-js regenerator-runtime classnames prop-types
object-assign inherits safe-buffer readable-stream string_decoder
util-deprecate isarray ms once wrappy inflight path-is-absolute
brace-expansion balanced-match concat-map escape-string-regexp
supports-color has-flag ansi-styles color-convert color-name
ansi-regex strip-ansi emoji-regex is-fullwidth-code-point string-width
cliui wrap-ansi y18n get-caller-file require-directory picomatch
micromatch braces fill-range to-regex-range is-number anymatch
chokidar normalize-path readdirp glob-parent is-glob is-extglob
fsevents nanoid postcss-value-parser caniuse-lite browserslist
electron-to-chromium node-releases update-browserslist-db picocolors
json5 minimist js-tokens loose-envify scheduler acorn acorn-walk
ajv fast-deep-equal json-schema-traverse uri-js punycode
webpack-sources tapable enhanced-resolve watchpack schema-utils
terser-webpack-plugin serialize-javascript randombytes
mime mime-types mime-db negotiator accepts depd http-errors
statuses toidentifier setprototypeof body-parser bytes
content-type raw-body iconv-lite safer-buffer qs side-channel
call-bind get-intrinsic has-symbols function-bind hasown
es-errors define-data-property gopd has-property-descriptors
react-is hoist-non-react-statics zustand immer redux
next styled-components framer-motion date-fns luxon zod
undici ws socket.io engine.io cookie cors dotenv""")

NPM_SCOPES = {"@babel": W("core parser traverse types generator template helpers "
                          "code-frame compat-data runtime preset-env plugin-syntax-jsx "
                          "helper-plugin-utils helper-module-imports highlight"),
              "@types": W("node react react-dom jest estree json-schema prop-types "
                          "scheduler lodash express"),
              "@jest": W("core types environment expect fake-timers reporters "
                         "transform test-result console"),
              "@eslint": W("js eslintrc"),
              "@esbuild": W("win32-x64 linux-x64 darwin-arm64"),
              "@rollup": W("rollup-win32-x64-msvc pluginutils"),
              "@webassemblyjs": W("ast wasm-parser helper-numbers leb128 utf8"),
              "@jridgewell": W("trace-mapping sourcemap-codec resolve-uri gen-mapping"),
              "@nodelib": W("fs.stat fs.walk fs.scandir")}

PYPKG = W("""numpy pandas requests urllib3 certifi idna charset_normalizer six
setuptools pip wheel attrs packaging pyparsing dateutil pytz yaml jinja2
markupsafe click flask werkzeug itsdangerous sqlalchemy greenlet pydantic
typing_extensions annotated_types matplotlib pillow scipy sklearn joblib
threadpoolctl torch tqdm rich pygments colorama pytest pluggy iniconfig
_pytest botocore boto3 s3transfer jmespath cryptography cffi pycparser""")

CRATES = W("""serde serde_json serde_derive tokio tokio_macros mio bytes futures
futures_util futures_core anyhow thiserror clap clap_builder clap_derive
syn quote proc_macro2 unicode_ident libc log env_logger regex regex_syntax
aho_corasick memchr rayon rayon_core crossbeam_utils crossbeam_epoch
crossbeam_deque either itoa ryu once_cell lazy_static cfg_if bitflags
hashbrown indexmap smallvec parking_lot parking_lot_core lock_api scopeguard
windows_sys windows_targets windows_x86_64_msvc winapi rand rand_core
rand_chacha getrandom ppv_lite86 byteorder chrono num_traits time
tracing tracing_core tracing_subscriber pin_project_lite""")

FONTS = W("""arial arialbd ariali arialbi ariblk bahnschrift calibri calibrib
calibrii calibril cambria cambriab candara comic comicbd consola consolab
constan corbel cour courbd ebrima framd gabriola gadugi georgia georgiab
holomdl2 impact inkfree javatext lucon l_10646 malgun marlett micross mingliub
monbaiti msgothic msjh msyh mvboli ntailu pala palab phagspa segmdl2 segoepr
segoesc segoeui segoeuib segoeuii segoeuil segoeuisl seguiemj seguihis
seguisym simsun sylfaen symbol tahoma tahomabd times timesbd trebuc verdana
verdanab webdings wingding yugothb yugothic""")

UNICODE_WORDS = ["Привет", "документы", "отчёт", "фотографии", "Москва", "лето",
                 "报告", "照片", "会议记录", "项目计划", "北京", "上海", "家庭",
                 "写真", "旅行", "東京", "資料", "議事録", "ファイル",
                 "Ελληνικά", "Αθήνα", "σημειώσεις", "café", "résumé", "naïve",
                 "Größe", "Übersicht", "Straße", "Bücher", "Zürich", "São Paulo",
                 "año", "niño", "mañana", "presentación", "facturación",
                 "日本語", "한국어", "서울", "사진", "문서", "हिन्दी", "नमस्ते",
                 "עברית", "שלום", "العربية", "مرحبا", "Ünïcödé", "Ærøskøbing",
                 "Łódź", "Kraków", "Český Krumlov", "İstanbul", "Þingvellir"]

EMOJI = ["😀", "🎉", "📷", "🏖️", "🎂", "❤️", "🚀", "✅", "📁", "🐱", "🌍", "🎵"]

WINSXS_COMPONENTS = W("""microsoft-windows-shell32 microsoft-windows-kernel32
microsoft-windows-ntdll microsoft-windows-user32 microsoft-windows-gdi32
microsoft-windows-advapi32 microsoft-windows-comctl32 microsoft-windows-explorer
microsoft-windows-ie-htmlrendering microsoft-windows-servicingstack
microsoft-windows-directx-direct3d12 microsoft-windows-mediaplayer-core
microsoft-windows-networking-mpssvc-svc microsoft-windows-tcpip
microsoft-windows-security-kerberos microsoft-windows-crypt32-dll
microsoft-windows-printing-spooler-core microsoft-windows-audio-audiocore
microsoft-windows-bluetooth-stack microsoft-windows-usb-usbhub3
microsoft-windows-wmi-core microsoft-windows-powershell-exe
microsoft-windows-defender-core microsoft-windows-update-aux
microsoft-windows-search-core microsoft-windows-font-truetype
microsoft-windows-international-core microsoft-windows-ole-automation
microsoft-windows-rpc-local microsoft-windows-dns-client
microsoft-windows-dhcp-client-dll microsoft-windows-winhttp
microsoft-windows-wininet microsoft-windows-storage-storport
microsoft-windows-ntfs microsoft-windows-bcrypt-dll
microsoft-windows-taskscheduler-service microsoft-windows-appx-deployment
microsoft-windows-xaml-controls microsoft-windows-dwm-core
microsoft.vc90.crt microsoft.vc80.crt microsoft.windows.common-controls
microsoft.windows.gdiplus microsoft-windows-d..-ui-dxgi-infra
microsoft-windows-s..ngstack-onecorebase microsoft-windows-n..-ndis-minwin""")

PREFETCH_EXE = W("""CHROME.EXE MSEDGE.EXE EXPLORER.EXE SVCHOST.EXE RUNTIMEBROKER.EXE
SEARCHHOST.EXE CODE.EXE GIT.EXE NODE.EXE PYTHON.EXE CMD.EXE POWERSHELL.EXE
CONHOST.EXE TASKMGR.EXE NOTEPAD.EXE WINWORD.EXE EXCEL.EXE OUTLOOK.EXE
TEAMS.EXE SLACK.EXE SPOTIFY.EXE STEAM.EXE MSIEXEC.EXE DLLHOST.EXE
BACKGROUNDTASKHOST.EXE SETTINGSYNCHOST.EXE SMARTSCREEN.EXE WERFAULT.EXE
TIWORKER.EXE TRUSTEDINSTALLER.EXE MPCMDRUN.EXE SIHCLIENT.EXE""")

C_DIRS = W("""arch block crypto drivers fs include init ipc kernel lib mm net
samples scripts security sound tools usr virt""")
C_SUB = W("""acpi ata base block bluetooth char clk cpufreq dma firmware gpio
gpu hid i2c iio input iommu irqchip leds md media misc mmc mtd net nvme
of pci phy pinctrl platform power pwm regulator rtc scsi soc spi staging
thermal tty usb video watchdog ext4 btrfs xfs nfs cifs fat ntfs3 overlayfs
proc sysfs ipv4 ipv6 netfilter sched wireless bridge""")
VENDORS_HW = W("""intel amd nvidia broadcom realtek qcom mediatek marvell
mellanox samsung ti nxp renesas rockchip allwinner""")

# ---------------------------------------------------------------------------
# Extension profiles: ext -> (median size bytes, lognormal sigma, p_empty)
# ---------------------------------------------------------------------------
EXT_SIZE = {
    "dll": (180 * KIB, 1.4, 0.0), "exe": (400 * KIB, 1.5, 0.0), "sys": (60 * KIB, 1.2, 0.0),
    "mui": (16 * KIB, 1.2, 0.0), "cat": (12 * KIB, 1.0, 0.0), "mum": (3 * KIB, 0.8, 0.0),
    "manifest": (2 * KIB, 0.9, 0.0), "inf": (14 * KIB, 1.2, 0.0), "pnf": (30 * KIB, 1.0, 0.0),
    "pf": (25 * KIB, 1.0, 0.0), "nls": (60 * KIB, 0.8, 0.0), "ttf": (300 * KIB, 1.2, 0.0),
    "ttc": (8 * MIB, 1.0, 0.0), "fon": (20 * KIB, 0.8, 0.0),
    "jpg": (3 * MIB, 0.6, 0.0), "jpeg": (2 * MIB, 0.6, 0.0), "heic": (2 * MIB, 0.5, 0.0),
    "png": (150 * KIB, 1.6, 0.0), "gif": (40 * KIB, 1.5, 0.0), "svg": (4 * KIB, 1.2, 0.0),
    "ico": (20 * KIB, 1.2, 0.0), "bmp": (500 * KIB, 1.2, 0.0), "webp": (80 * KIB, 1.2, 0.0),
    "mov": (40 * MIB, 1.0, 0.0), "mp4": (40 * MIB, 1.0, 0.0), "mkv": (700 * MIB, 0.6, 0.0),
    "aae": (1 * KIB, 0.3, 0.0), "cr2": (25 * MIB, 0.3, 0.0), "nef": (24 * MIB, 0.3, 0.0),
    "mp3": (6 * MIB, 0.5, 0.0), "flac": (30 * MIB, 0.5, 0.0), "m4a": (7 * MIB, 0.5, 0.0),
    "wav": (40 * MIB, 1.0, 0.0), "ogg": (4 * MIB, 0.8, 0.0),
    "docx": (45 * KIB, 1.3, 0.0), "doc": (60 * KIB, 1.2, 0.0), "xlsx": (35 * KIB, 1.4, 0.0),
    "xls": (80 * KIB, 1.2, 0.0), "pptx": (2 * MIB, 1.3, 0.0), "pdf": (400 * KIB, 1.6, 0.0),
    "odt": (30 * KIB, 1.0, 0.0), "rtf": (20 * KIB, 1.2, 0.0), "msg": (80 * KIB, 1.2, 0.0),
    "txt": (2 * KIB, 2.0, 0.05), "md": (3 * KIB, 1.3, 0.02), "csv": (20 * KIB, 2.0, 0.02),
    "log": (30 * KIB, 2.2, 0.08), "ini": (500, 1.0, 0.02), "cfg": (800, 1.0, 0.05),
    "xml": (6 * KIB, 1.6, 0.0), "json": (2 * KIB, 1.8, 0.02), "yml": (1 * KIB, 1.0, 0.0),
    "yaml": (1 * KIB, 1.0, 0.0), "toml": (700, 0.8, 0.0), "lock": (40 * KIB, 1.5, 0.1),
    "html": (25 * KIB, 1.5, 0.0), "htm": (20 * KIB, 1.5, 0.0), "css": (8 * KIB, 1.6, 0.02),
    "js": (6 * KIB, 1.7, 0.03), "mjs": (5 * KIB, 1.5, 0.02), "cjs": (5 * KIB, 1.5, 0.02),
    "ts": (4 * KIB, 1.4, 0.02), "map": (20 * KIB, 1.6, 0.0), "py": (6 * KIB, 1.5, 0.08),
    "pyc": (9 * KIB, 1.4, 0.0), "pyd": (200 * KIB, 1.3, 0.0), "c": (18 * KIB, 1.3, 0.0),
    "h": (5 * KIB, 1.4, 0.0), "cpp": (20 * KIB, 1.3, 0.0), "hpp": (6 * KIB, 1.3, 0.0),
    "rs": (10 * KIB, 1.3, 0.0), "go": (8 * KIB, 1.3, 0.0), "java": (7 * KIB, 1.3, 0.0),
    "class": (4 * KIB, 1.2, 0.0), "jar": (600 * KIB, 1.6, 0.0), "rlib": (2 * MIB, 1.5, 0.0),
    "rmeta": (400 * KIB, 1.5, 0.0), "d": (2 * KIB, 1.2, 0.0), "o": (60 * KIB, 1.5, 0.0),
    "obj": (80 * KIB, 1.5, 0.0), "lib": (300 * KIB, 1.6, 0.0), "pdb": (2 * MIB, 1.5, 0.0),
    "pak": (500 * KIB, 1.6, 0.0), "dat": (100 * KIB, 2.0, 0.05), "db": (1 * MIB, 2.0, 0.02),
    "msi": (8 * MIB, 1.2, 0.0), "msp": (20 * MIB, 1.0, 0.0), "cab": (5 * MIB, 1.2, 0.0),
    "zip": (3 * MIB, 1.5, 0.0), "7z": (8 * MIB, 1.5, 0.0), "gz": (1 * MIB, 1.5, 0.0),
    "iso": (700 * MIB, 0.8, 0.0), "lnk": (1500, 0.4, 0.0), "url": (200, 0.3, 0.0),
    "etl": (1 * MIB, 1.5, 0.05), "evtx": (1 * MIB, 1.2, 0.0), "blf": (64 * KIB, 0.2, 0.0),
    "regtrans-ms": (512 * KIB, 0.1, 0.0), "tmp": (30 * KIB, 2.5, 0.3),
    "cache": (12 * KIB, 2.0, 0.05), "ps1": (6 * KIB, 1.3, 0.0), "psm1": (20 * KIB, 1.3, 0.0),
    "psd1": (4 * KIB, 1.0, 0.0), "winmd": (200 * KIB, 1.3, 0.0), "tlb": (40 * KIB, 1.3, 0.0),
    "ax": (200 * KIB, 1.2, 0.0), "ocx": (300 * KIB, 1.2, 0.0), "cpl": (150 * KIB, 1.0, 0.0),
    "msc": (100 * KIB, 0.8, 0.0), "mof": (30 * KIB, 1.3, 0.0), "rll": (100 * KIB, 1.0, 0.0),
    "qm": (200 * KIB, 1.0, 0.0), "mo": (100 * KIB, 1.0, 0.0), "gz_man": (3 * KIB, 0.8, 0.0),
    "vdm": (60 * MIB, 1.0, 0.0), "edb": (50 * MIB, 1.0, 0.0), "wim": (400 * MIB, 0.5, 0.0),
    "torrent": (30 * KIB, 1.0, 0.0), "whl": (2 * MIB, 1.5, 0.0), "apk": (40 * MIB, 1.0, 0.0),
    "dmg": (150 * MIB, 0.6, 0.0), "asar": (60 * MIB, 0.5, 0.0), "node": (1 * MIB, 1.0, 0.0),
    "bin": (500 * KIB, 1.8, 0.02), "wer": (30 * KIB, 0.8, 0.0), "gitkeep": (0, 0.1, 1.0),
    "pack": (40 * MIB, 1.5, 0.0), "idx": (500 * KIB, 1.5, 0.0), "ldb": (2 * MIB, 1.0, 0.0),
    "thmx": (300 * KIB, 0.5, 0.0), "dic": (200 * KIB, 1.0, 0.0),
}
DEFAULT_SIZE = (8 * KIB, 1.8, 0.05)

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


# ---------------------------------------------------------------------------
# Execution: mkntfs, mount ntfs-3g, create everything through FUSE
# ---------------------------------------------------------------------------

_T = None          # the Tree, shared with forked workers
_DP = None         # absolute directory paths under the mount point
_PATTERN = None
_CHUNK = None


def _init_pattern(seed):
    global _PATTERN, _CHUNK
    r = random.Random(seed)
    words = NOUNS + ADJS + VERBS + TECH
    out, n = [], 0
    while n < 2 * REALDATA_MAX + 4096:
        line = " ".join(r.choice(words) for _ in range(r.randint(4, 14))) + "\r\n"
        out.append(line)
        n += len(line)
    _PATTERN = "".join(out).encode()
    _CHUNK = bytes(r.getrandbits(8) for _ in range(4096))


def _content(f, n):
    off = (f * 7919) % (len(_PATTERN) - n - 1)
    return _PATTERN[off:off + n]


def _times(f, t):
    c = nt_time(t)
    m = nt_time(t + (f * 2654435761) % (90 * 86400))
    a = m + 10_000_000 * ((f * 40503) % (30 * 86400))
    # system.ntfs_times layout: creation, last data change, last access, last MFT change
    return struct.pack("<4Q", c, m, a, m)


def _ensure_dir(d):
    try:
        os.mkdir(_DP[d])
    except FileExistsError:
        pass
    except FileNotFoundError:
        _ensure_dir(_T.d_parent[d])
        try:
            os.mkdir(_DP[d])
        except FileExistsError:
            pass


def _mkdir(d):
    T = _T
    p = _DP[d]
    try:
        os.mkdir(p)
    except FileExistsError:
        pass
    except FileNotFoundError:
        _ensure_dir(T.d_parent[d])
        try:
            os.mkdir(p)
        except FileExistsError:
            pass
    s = T.dos_d.get(d)
    if s:
        os.setxattr(p, "system.ntfs_dos_name", s.encode(), follow_symlinks=False)
    a = T.attr_d.get(d)
    if a:
        os.setxattr(p, "system.ntfs_attrib", struct.pack("<I", a), follow_symlinks=False)
    rp = T.reparse_d.get(d)
    if rp:
        os.setxattr(p, "system.ntfs_reparse_data", rp, follow_symlinks=False)


def _mkfile(f):
    T = _T
    d = T.f_dir[f]
    p = _DP[d] + "/" + T.f_name[f]
    size = T.f_size[f]
    t = T.f_time[f]
    ads = T.ads.get(f)
    dos = T.dos_f.get(f)
    attr = T.attr_f.get(f)
    rp = T.reparse_f.get(f)
    if not (size or t or ads or dos or attr or rp):
        try:
            os.mknod(p, 0o100644)
        except FileNotFoundError:
            _ensure_dir(d)
            os.mknod(p, 0o100644)
        return
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    try:
        fd = os.open(p, flags, 0o644)
    except FileNotFoundError:
        _ensure_dir(d)
        fd = os.open(p, flags, 0o644)
    try:
        if size:
            frag = T.frag_f.get(f)
            if frag:
                step = size // frag
                for j in range(frag):
                    off = (j * step + ((j * 7919) % max(1, step // 2))) // 4096 * 4096
                    os.pwrite(fd, _CHUNK, off)
                os.ftruncate(fd, size)
            elif size <= RESIDENT_MAX or f in T.real_f:
                os.write(fd, _content(f, size))
            else:
                os.ftruncate(fd, size)
        if ads:
            for sname, data in ads:
                if _ADS_XATTR:
                    os.setxattr(fd, "user." + sname, data)
                    continue
                afd = os.open(p + ":" + sname, os.O_WRONLY | os.O_CREAT, 0o644)
                try:
                    if data:
                        os.write(afd, data)
                finally:
                    os.close(afd)
        if dos:
            os.setxattr(fd, "system.ntfs_dos_name", dos.encode())
        if attr:
            os.setxattr(fd, "system.ntfs_attrib", struct.pack("<I", attr | FA_ARCHIVE))
        if rp:
            os.setxattr(fd, "system.ntfs_reparse_data", rp)
        if t:
            os.setxattr(fd, "system.ntfs_times", _times(f, t))
    finally:
        os.close(fd)


def _oppath(op):
    if op < 0:
        return _DP[-op]
    return _DP[_T.f_dir[op]] + "/" + _T.f_name[op]


def _w_create(job):
    a, z = job
    order = _T.order
    errs = []
    for k in range(a, z):
        op = order[k]
        try:
            if op < 0:
                _mkdir(-op)
            else:
                _mkfile(op)
        except OSError as e:
            errs.append(f"create {_oppath(op)!r}: {e}")
            if len(errs) >= 5:
                break
    return z - a, errs


def _w_link(job):
    a, z = job
    T = _T
    errs = []
    for k in range(a, z):
        t, d, name = T.links[k]
        src = _DP[T.f_dir[t]] + "/" + T.f_name[t]
        try:
            os.link(src, _DP[d] + "/" + name)
        except OSError as e:
            errs.append(f"link {src!r} -> {name!r}: {e}")
            if len(errs) >= 5:
                break
    return z - a, errs


def _w_dirtimes(job):
    a, z = job
    T = _T
    errs = []
    for d in _DIRTIME_LIST[a:z]:
        try:
            os.setxattr(_DP[d], "system.ntfs_times", _times(d, T.d_time[d]), follow_symlinks=False)
        except OSError as e:
            errs.append(f"times {_DP[d]!r}: {e}")
            if len(errs) >= 5:
                break
    return z - a, errs


_DEL_LIST = []
_DIRTIME_LIST = []
_ADS_XATTR = False      # lowntfs-3g has no streams_interface=windows; use user.* xattrs


def _w_unlink(job):
    a, z = job
    errs = []
    for f in _DEL_LIST[a:z]:
        try:
            os.unlink(_oppath(f))
        except OSError as e:
            errs.append(f"unlink {_oppath(f)!r}: {e}")
            if len(errs) >= 5:
                break
    return z - a, errs


def _w_init():
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


class Progress:
    def __init__(self, phase, total, quiet=False):
        self.phase, self.total, self.quiet = phase, total, quiet
        self.done = 0
        self.t0 = self.last = time.time()
        self.tty = sys.stderr.isatty()

    def add(self, n):
        self.done += n
        now = time.time()
        if not self.quiet and now - self.last >= (0.5 if self.tty else 5.0):
            self.last = now
            self._print(now, end="\r" if self.tty else "\n")

    def _print(self, now, end):
        el = max(1e-6, now - self.t0)
        rate = self.done / el
        eta = (self.total - self.done) / rate if rate > 0 else 0
        pct = 100.0 * self.done / self.total if self.total else 100.0
        sys.stderr.write(f"[{self.phase:8s}] {self.done:>10,}/{self.total:,} ({pct:5.1f}%) "
                         f"{rate:>8,.0f}/s  elapsed {el:6.1f}s  eta {eta:5.0f}s   {end}")
        sys.stderr.flush()

    def finish(self):
        now = time.time()
        if not self.quiet:
            self._print(now, end="\n")
        return now - self.t0


def run_phase(pool, phase, fn, n, chunk, quiet):
    if n == 0:
        return 0.0
    jobs = [(a, min(n, a + chunk)) for a in range(0, n, chunk)]
    prog = Progress(phase, n, quiet)
    it = pool.imap_unordered(fn, jobs) if pool else map(fn, jobs)
    errs = []
    for done, e in it:
        prog.add(done)
        if e:
            errs.extend(e)
            break
    if errs:
        raise RuntimeError(f"{phase} failed:\n  " + "\n  ".join(errs[:10]))
    return prog.finish()


def estimate_bytes(b):
    """Rough space needed inside the volume (bytes)."""
    nrec = len(b.order) + sum(v // 40 for v in b.frag_f.values()) + 64
    mft = nrec * 1024
    names = sum(len(b.f_name[op]) if op >= 0 else len(b.d_name[-op]) for op in b.order)
    idx = (names * 2 + len(b.order) * 100) * 3
    data = sum(b.f_size[f] for f in b.real_f) + len(b.frag_f) * 0 + sum(b.frag_f.values()) * 4096
    data += sum(len(x) for v in b.ads.values() for _, x in v if len(x) > 400)
    return int(mft * 1.15 + idx + data + 128 * MIB)


def mount(driver, img, mnt, opts):
    proc = subprocess.Popen([driver, img, mnt, "-o", opts + ",no_detach"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    t0 = time.time()
    while not os.path.ismount(mnt):
        if proc.poll() is not None:
            raise RuntimeError(f"{driver} exited: {proc.stderr.read().decode(errors='replace')}")
        if time.time() - t0 > 30:
            proc.kill()
            raise RuntimeError(f"{driver} did not mount within 30s")
        time.sleep(0.05)
    return proc


def unmount(mnt, proc, quiet):
    if proc is None:
        return
    t0 = time.time()
    if os.path.ismount(mnt):
        for i in range(40):
            res = subprocess.run(["umount", mnt], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if res.returncode == 0 or not os.path.ismount(mnt):
                break
            time.sleep(0.25)
        else:
            subprocess.run(["umount", "-l", mnt], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=900)       # ntfs-3g flushes and closes the image after umount returns
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if not quiet:
        sys.stderr.write(f"[unmount ] done in {time.time() - t0:.1f}s\n")


def mem_available():
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def pick_stage_dir(args, est):
    """tmpfs staging makes ntfs-3g's many small pread/pwrite calls ~15-20% cheaper."""
    if args.stage_dir == "none":
        return None
    if args.stage_dir != "auto":
        return args.stage_dir
    d = "/dev/shm"
    try:
        ok = (os.path.isdir(d) and shutil.disk_usage(d).free > 2 * est + GIB
              and mem_available() > 2 * est + 4 * GIB)
    except OSError:
        ok = False
    return d if ok else None


def copy_sparse(src, dst, size):
    """Copy only the data regions of src (and skip all-zero MiB chunks)."""
    zero = bytes(MIB)
    with open(src, "rb") as fs, open(dst, "wb") as fd:
        fd.truncate(size)
        sfd = fs.fileno()
        off = 0
        while off < size:
            try:
                data = os.lseek(sfd, off, os.SEEK_DATA)
            except OSError as e:
                if e.errno == errno.ENXIO:
                    break
                raise
            hole = os.lseek(sfd, data, os.SEEK_HOLE)
            pos = data
            while pos < hole:
                n = min(MIB, hole - pos)
                buf = os.pread(sfd, n, pos)
                if buf != zero[:len(buf)]:
                    os.pwrite(fd.fileno(), buf, pos)
                pos += len(buf)
            off = hole


def build_image(args, b, img):
    global _T, _DP, _DEL_LIST, _DIRTIME_LIST
    est = estimate_bytes(b)
    size = args.size_gib * GIB if args.size_gib else max(4 * GIB, -(-est * 3 // GIB) * GIB)
    free = shutil.disk_usage(os.path.dirname(os.path.abspath(img))).free
    if free < est * 1.5:
        raise RuntimeError(f"not enough free space: need ~{est * 1.5 / GIB:.1f} GiB, have {free / GIB:.1f} GiB")
    final = img
    stage = pick_stage_dir(args, est)
    if stage:
        img = os.path.join(stage, f"uffs-bench-{os.getpid()}.img.partial")
    if os.path.exists(img):
        os.unlink(img)
    try:
        timings = _build(args, b, img, size)
        if stage:
            t0 = time.time()
            copy_sparse(img, final, size)
            timings["copy_out"] = time.time() - t0
            if not args.quiet:
                sys.stderr.write(f"[copy    ] {stage} -> {os.path.dirname(final)} in {timings['copy_out']:.1f}s\n")
    finally:
        if stage and os.path.exists(img):
            os.unlink(img)
    return size, timings


def _build(args, b, img, size):
    global _T, _DP, _DEL_LIST, _DIRTIME_LIST
    with open(img, "wb") as fh:
        fh.truncate(size)
    t0 = time.time()
    subprocess.run(["mkntfs", "-F", "-f", "-q", "-L", "UFFS-BENCH", "-c", "4096", img, ], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not args.quiet:
        sys.stderr.write(f"[mkntfs  ] {size / GIB:.0f} GiB volume formatted in {time.time() - t0:.1f}s ({img})\n")
    mnt = tempfile.mkdtemp(prefix="uffs-bench-mnt-")
    proc = None
    pool = None
    timings = {}
    try:
        global _ADS_XATTR
        opts = BASE_MOUNT_OPTS + ("," + args.mount_opts if args.mount_opts else "")
        if args.driver == "lowntfs-3g":
            opts = opts.replace("streams_interface=windows", "streams_interface=xattr")
            _ADS_XATTR = True
        proc = mount(args.driver, img, mnt, opts)
        _T = b
        _DP = [mnt + "/" + b.dpath(d) if d else mnt for d in range(len(b.d_name))]
        _DEL_LIST = sorted(b.deleted_f)
        _DIRTIME_LIST = [-op for op in b.order if op < 0 and b.d_time[-op] and -op not in b.reparse_d
                         and -op not in b.deleted_d]
        _init_pattern(args.seed)
        gc.collect()
        gc.freeze()
        if args.jobs > 1:
            pool = multiprocessing.get_context("fork").Pool(args.jobs, initializer=_w_init)
        q = args.quiet
        timings["create"] = run_phase(pool, "create", _w_create, len(b.order), 400, q)
        timings["links"] = run_phase(pool, "links", _w_link, len(b.links), 400, q)
        timings["dirtimes"] = run_phase(pool, "dirtimes", _w_dirtimes, len(_DIRTIME_LIST), 1000, q)
        timings["delete"] = run_phase(pool, "delete", _w_unlink, len(_DEL_LIST), 400, q)
        t0 = time.time()
        for d in sorted(b.deleted_d, key=lambda d: -b.d_depth[d]):
            os.rmdir(_DP[d])
        timings["delete"] += time.time() - t0
        if pool:
            pool.close()
            pool.join()
            pool = None
    finally:
        if pool:
            pool.terminate()
            pool.join()
        t0 = time.time()
        unmount(mnt, proc, args.quiet)
        timings["unmount"] = time.time() - t0
        try:
            os.rmdir(mnt)
        except OSError:
            pass
    return timings


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------

def script_hash():
    with open(os.path.abspath(__file__), "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def write_list(b, path):
    """Every live name as path<TAB>kind<TAB>size (links listed under their own path)."""
    with open(path, "w", encoding="utf-8") as out:
        for op in b.order:
            if op < 0:
                d = -op
                if d not in b.deleted_d:
                    out.write(f"{b.dpath(d)}\t{'junction' if d in b.reparse_d else 'dir'}\t0\n")
            elif op not in b.deleted_f:
                dp = b.dpath(b.f_dir[op])
                out.write(f"{dp + '/' if dp else ''}{b.f_name[op]}\tfile\t{b.f_size[op]}\n")
        for t, d, name in b.links:
            dp = b.dpath(d)
            out.write(f"{dp + '/' if dp else ''}{name}\tlink\t{b.f_size[t]}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=DEFAULT_ENTRIES,
                    help="live names: files + folders + extra hard-link names (default %(default)s)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help="tree seed (default %(default)s)")
    ap.add_argument("--out", default=DEFAULT_OUT, help="image file (default %(default)s)")
    ap.add_argument("--jobs", type=int, default=DEFAULT_JOBS,
                    help="concurrent FUSE client processes; 1 = reproducible record order (default %(default)s)")
    ap.add_argument("--driver", default=DEFAULT_DRIVER, choices=["ntfs-3g", "lowntfs-3g"])
    ap.add_argument("--mount-opts", default="", help="extra ntfs-3g -o options")
    ap.add_argument("--stage-dir", default="auto",
                    help="build the image in this dir, then sparse-copy to --out; 'auto' = /dev/shm "
                         "when RAM allows, 'none' = build in place (default %(default)s)")
    ap.add_argument("--size-gib", type=int, default=0, help="volume size (default: ~3x estimated use, >= 4)")
    ap.add_argument("--links", type=int, default=-1, help="extra hard-link names (default 0.7%% of entries)")
    ap.add_argument("--deleted", type=int, default=-1, help="deleted entries left in the MFT (default 0.5%% of entries)")
    ap.add_argument("--big", type=int, default=40, help="multi-GiB sparse files (default %(default)s)")
    ap.add_argument("--times", type=float, default=1.0, help="fraction of entries given realistic timestamps")
    ap.add_argument("--dos-names", type=float, default=0.5,
                    help="probability of an 8.3 alias for long names under Windows/Program Files (half that in Users)")
    ap.add_argument("--real-data", type=float, default=0.02,
                    help="fraction of 600B..64KiB files written with real (non-sparse) data")
    ap.add_argument("--list", metavar="PATH", help="also write the expected name list (TSV)")
    ap.add_argument("--dry-run", action="store_true", help="generate the tree and print stats only")
    ap.add_argument("--force", action="store_true", help="rebuild even if the stamp matches")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()

    params = {k: getattr(args, k) for k in ("entries", "seed", "jobs", "driver", "mount_opts", "size_gib",
                                            "links", "deleted", "big", "times", "dos_names", "real_data")}
    params["script_sha256"] = script_hash()
    out = os.path.abspath(args.out)
    stamp = out + ".stamp"
    if not args.dry_run and not args.force and os.path.exists(out) and os.path.exists(stamp):
        try:
            with open(stamp) as fh:
                old = json.load(fh)
            if old.get("params") == params:
                print(f"{out}: up to date (stamp matches); use --force to rebuild", file=sys.stderr)
                return 0
        except (OSError, ValueError):
            pass

    log = (lambda *a: None) if args.quiet else (lambda *a: print(*a, file=sys.stderr, flush=True))
    t_start = time.time()
    log(f"generating tree: entries={args.entries:,} seed={args.seed} ...")
    b = generate(args)
    st = tree_stats(b)
    log(f"tree generated in {st['generate_seconds']}s: {st['directories']:,} dirs, {st['files']:,} files, "
        f"{st['hard_links_extra_names']:,} links, {st['named_streams']:,} streams, "
        f"{st['deleted_files'] + st['deleted_dirs']:,} to delete, max depth {st['max_depth']}")
    if args.list:
        write_list(b, args.list)
        log(f"wrote {args.list}")
    if args.dry_run:
        print(json.dumps(st, indent=1, ensure_ascii=False))
        return 0

    if os.geteuid() != 0:
        print("needs root (FUSE mount with allow_other, mkntfs on an image)", file=sys.stderr)
        return 2
    for tool in ("mkntfs", args.driver):
        if not shutil.which(tool):
            print(f"missing tool: {tool}", file=sys.stderr)
            return 2
    os.makedirs(os.path.dirname(out), exist_ok=True)
    partial = out + ".partial"
    for p in (stamp,):
        if os.path.exists(p):
            os.unlink(p)

    def on_term(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)

    ok = False
    try:
        t_gen_end = time.time()
        vol_size, timings = build_image(args, b, partial)
        timings["prepare"] = t_gen_end - t_start - b.gen_seconds
        os.replace(partial, out)
        ok = True
    finally:
        if not ok and os.path.exists(partial):
            os.unlink(partial)
    total = time.time() - t_start
    fs_ops = st["entries_total"] + st["deleted_files"] + st["deleted_dirs"]
    du = os.stat(out).st_blocks * 512
    summary = {"params": params, "stats": st, "timings_s": {k: round(v, 1) for k, v in timings.items()},
               "total_seconds": round(total, 1),
               "entries_per_second": round(fs_ops / max(1e-6, total - st["generate_seconds"])),
               "volume_bytes": vol_size, "image_allocated_bytes": du,
               "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    with open(stamp, "w") as fh:
        json.dump(summary, fh, indent=1, ensure_ascii=False)
    log(f"done: {out}  volume {vol_size / GIB:.0f} GiB, on disk {du / GIB:.2f} GiB, "
        f"{st['entries_total']:,} entries in {total:.0f}s ({summary['entries_per_second']:,}/s through FUSE)")
    log("phases: " + ", ".join(f"{k} {v:.1f}s" for k, v in summary["timings_s"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
