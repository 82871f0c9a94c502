"""Knobs, the word lists every name is made from, and the size profile of each extension."""


DEFAULT_SEED = 20240917
DEFAULT_ENTRIES = 1_200_000
DEFAULT_OUT = "/work/bench/bench.img"
DEFAULT_DRIVER = "ntfs-3g"          # measured faster than lowntfs-3g (docs/benchmarks.md)
DEFAULT_JOBS = 4                    # measured sweet spot on 2 cores (docs/benchmarks.md)
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
