//! `uffs`: the command line. Argument parsing, output and progress live here; everything else is in the
//! library crates.

mod backend;
mod bench;
mod cat_cmd;
#[cfg(test)]
mod cli_checks;
mod common;
mod contents;
mod daemon_cmd;
mod dataset;
mod diff_cmd;
#[cfg(test)]
mod docs_examples;
mod drives;
mod du_cmd;
mod dupes_cmd;
mod export;
mod grep_cmd;
mod grep_lines;
mod hash_cmd;
mod index_cmd;
mod info;
mod journal_cmd;
mod man_page;
mod mcp_cmd;
mod mounted;
mod query_cmd;
mod registered;
mod serve_cmd;
mod signals;
mod sql_cmd;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "uffs",
    version = env!("UFFS_VERSION"),
    about = "Ultra Fast File Search: index and search NTFS, FAT, exFAT, ext, XFS, Btrfs, HFS+ and APFS volumes by reading their own tables",
    override_usage = "uffs [OPTIONS] QUERY...            (through the daemon)\n       uffs [OPTIONS] QUERY... --index FILE | --source SOURCE | --dataset DIR\n       uffs <COMMAND>",
    args_conflicts_with_subcommands = true,
    arg_required_else_help = true,
    after_help = after_help()

)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    search: query_cmd::SearchArgs,
    /// Read from the matches of the query or of the command that takes them (see [`parse_from`]).
    #[arg(skip)]
    reading: ReadingArgs,
}

// How sources are read: given to a query and to every command that reads a source (see `READS_SOURCES`),
// offered to no other. (A plain comment: clap would make a doc comment here the `about` of every command these
// options are added to, the first line of `uffs --help` and of each command's help.)
#[derive(clap::Args, Default)]
struct ReadingArgs {
    /// A volume that keeps other volumes' shadow copy stores (`vssadmin add shadowstorage /for=D: /on=E:`):
    /// an image, a partition (disk.img@N), a container or a device. Matched by the GUID in its VSS header;
    /// repeat for several. A partition of the same disk is found without it.
    #[arg(long, value_name = "SOURCE")]
    shadow_storage: Vec<String>,
    /// Read FAT's 8.3 names in this DOS code page: 437 (the default, as Windows in the US and the Linux kernel),
    /// 850 (Western Europe; mtools' default, so what `mdir` shows), 852 or 866 (also UFFS_FAT_CODEPAGE). The
    /// volume does not record which code page wrote its 8.3 names.
    #[arg(long, value_name = "CP", value_parser = uffs_mft::neutral::parse_code_page)]
    fat_codepage: Option<u16>,
    #[command(flatten)]
    walk: WalkArgs,
}

// How a mounted folder given as a source is read (see FOLDERS in `uffs --help`). (A plain comment, as on
// `ReadingArgs`.)
#[derive(clap::Args, Default)]
struct WalkArgs {
    /// Walk a mounted folder even where its device could be read raw (a folder at the top of an NTFS, FAT,
    /// exFAT, ext or XFS file system whose device this user may read is read raw otherwise).
    #[arg(long)]
    walk: bool,
    /// A walk enters the other file systems mounted below the folder too (`find` without `-xdev`); pseudo file
    /// systems (proc, sysfs …), bind mounts of a file system walked already and --prune-fs types never.
    #[arg(long)]
    cross_mounts: bool,
    /// Folders a walk does not enter, space-separated absolute paths (updatedb's PRUNEPATHS); "" for none.
    /// [default: /tmp /var/spool /media /var/lib/os-prober /var/lib/ceph /home/.ecryptfs /var/lib/schroot]
    #[arg(long, value_name = "PATHS")]
    prune_paths: Option<String>,
    /// File system types a walk with --cross-mounts does not enter (updatedb's PRUNEFS); "" for none.
    /// [default: updatedb.conf's: nfs, nfs4, cifs, tmpfs, fuse.sshfs and the others Debian lists]
    #[arg(long, value_name = "TYPES")]
    prune_fs: Option<String>,
    /// Folder names a walk does not enter wherever they are (updatedb's PRUNENAMES); "" for none.
    /// [default: .git .bzr .hg .svn]
    #[arg(long, value_name = "NAMES")]
    prune_names: Option<String>,
}

impl WalkArgs {
    /// The options every folder of this run is walked with.
    fn options(&self) -> uffs_walk::Options {
        let mut o = uffs_walk::Options {
            cross_mounts: self.cross_mounts,
            raw: !self.walk,
            ..uffs_walk::Options::default()
        };
        let words = |s: &str| s.split_whitespace().map(str::to_string).collect();
        if let Some(p) = &self.prune_paths {
            o.prune.paths = words(p);
        }
        if let Some(p) = &self.prune_fs {
            o.prune.filesystems = words(p);
        }
        if let Some(p) = &self.prune_names {
            o.prune.names = words(p);
        }
        o
    }
}

#[derive(Subcommand)]
enum Command {
    /// Describe a source: geometry, serial, label, version, MFT location and size, partitions. Without one: list
    /// the NTFS, FAT, exFAT, ext, XFS, Btrfs, HFS+ and APFS volumes this system shows (a Windows PC's drives, Linux block devices).
    #[command(
        after_help = "EXAMPLES:\n  uffs info                 (the NTFS, FAT, exFAT, ext, XFS, Btrfs, HFS+ and APFS volumes here)\n  uffs info C:              (a Windows drive, read live: needs an elevated prompt)\n  uffs info /dev/sdb1\n  uffs info disk.img --json"
    )]
    Info {
        /// A volume, a whole disk, an image or a $MFT capture (see SOURCES in `uffs --help`), or a Windows drive
        /// (C:).
        source: Option<String>,
        /// With a whole disk: only its partition N (as SOURCE@N; `uffs info SOURCE` lists them).
        #[arg(long, value_name = "N")]
        partition: Option<u32>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Build the index of a volume and write it to a file.
    #[command(
        after_help = "EXAMPLES:\n  uffs index /dev/sdb1 -o sdb1.uffs\n  uffs index disk.img@2 -o d2.uffs --deleted\n  uffs index /dev/sdb1 -o sdb1.uffs --update   (apply only what changed since sdb1.uffs was made)\n  uffs index /dev/sdb1 -o sdb1.uffs --update --compact   (and merge the changes into sdb1.uffs)"
    )]
    Index {
        /// The volume to index: a partition or volume image, a whole disk (every partition uffs reads, or
        /// SOURCE@N), a $MFT capture, or a Windows drive (C:).
        source: String,
        /// Index file to write.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// With a whole disk: only its partition N (as SOURCE@N; `uffs info SOURCE` lists them).
        #[arg(long, value_name = "N")]
        partition: Option<u32>,
        /// Also read unused MFT records and index deleted files that still parse.
        #[arg(long)]
        deleted: bool,
        #[command(flatten)]
        read: common::ReadArgs,
        /// If FILE is an index of this volume, apply only what changed since it was made (found through the
        /// change journal, or a re-scan of the MFT where there is none) instead of building it again. The
        /// changes go to a small delta file beside it (FILE.delta), merged into FILE once it grows past a
        /// sixteenth of the index.
        #[arg(long)]
        update: bool,
        /// With --update: merge the delta into FILE now.
        #[arg(long, requires = "update")]
        compact: bool,
        /// Every shadow copy of the volume too (Volume Shadow Copies, read from the volume's own bytes), each
        /// written beside FILE as FILE.vss1, FILE.vss2, … (oldest first): a delta over FILE that holds only
        /// what the store changed. Searching FILE then answers across the present and the past, the stores'
        /// paths prefixed @vssN:. --update keeps them, and makes them again when FILE is written again.
        #[arg(long)]
        snapshots: bool,
    },
    /// Write one row per entry (path, name, kind, sizes, times, $FILE_NAME times, attributes, record numbers) as
    /// CSV, JSON lines or Parquet (docs/parquet.md), or a timeline as The Sleuth Kit's body file (for mactime).
    #[command(
        after_help = "EXAMPLES:\n  uffs export /dev/sdb1 --format csv -o files.csv\n  uffs export sdb1.uffs --format jsonl --streams\n  uffs export sdb1.uffs --format parquet -o files.parquet\n  uffs export MFT --deleted --format csv\n  uffs export disk.img@2 --format bodyfile --deleted --streams -o body && mactime -b body -d > timeline.csv\n  uffs export C.uffs D.uffs disk.img --dataset /lake/files --host pc1   # DIR/host=pc1/volume=C/uffs.parquet, ...\n  uffs export C.uffs --dataset /lake/files --changes /lake/changes      # and what changed since the last export\n  duckdb -c \"select host, volume, count(*) from read_parquet('/lake/files/*/*/*.parquet', hive_partitioning=true) group by all\""
    )]
    Export {
        /// Sources or index files written by `uffs index` (several only with --dataset).
        #[arg(required = true, value_name = "SOURCE")]
        sources: Vec<String>,
        /// Output format (parquet with --dataset; csv otherwise).
        #[arg(long, value_enum)]
        format: Option<uffs_results::export::Format>,
        /// Write to FILE (through a temporary file renamed into place) instead of stdout.
        #[arg(short, long, value_name = "FILE", conflicts_with = "dataset")]
        output: Option<PathBuf>,
        /// Write a Parquet dataset: each volume as DIR/host=HOST/volume=NAME/uffs.parquet (hive-style folders
        /// Spark, Trino and DuckDB read as one table), replacing that volume's earlier file whole.
        #[arg(long, value_name = "DIR")]
        dataset: Option<PathBuf>,
        /// The host folder of --dataset (default: this machine's name).
        #[arg(long, value_name = "NAME", requires = "dataset")]
        host: Option<String>,
        /// With --dataset: also write what changed in each volume since the dataset last held it (created,
        /// deleted, renamed, moved, changed; `uffs diff`'s columns) as CDIR/host=HOST/volume=NAME/changes-TIME.parquet,
        /// a file per export, for engines that ingest increments.
        #[arg(long, value_name = "CDIR", requires = "dataset")]
        changes: Option<PathBuf>,
        /// Include deleted entries.
        #[arg(long)]
        deleted: bool,
        /// Include named data streams (alternate data streams) as entries `file:stream`.
        #[arg(long)]
        streams: bool,
        /// With a whole disk: only its partition N (as SOURCE@N; `uffs info SOURCE` lists them).
        #[arg(long, value_name = "N")]
        partition: Option<u32>,
        /// Every shadow copy of the volume too, after it, its paths prefixed `@vssN:` (as a search with
        /// --snapshots prints them); on Btrfs every snapshot, prefixed `@snapN:`.
        #[arg(long)]
        snapshots: bool,
    },
    /// List the USN change journal ($Extend/$UsnJrnl:$J) of a volume, or a raw $J capture: one row per record
    /// (usn, timestamp, reasons, file and parent record/sequence, name, full path, attributes, ...).
    #[command(
        after_help = "SOURCE is an NTFS volume, a partition of a disk (disk.img@2), or a raw $J capture (for instance\n`icat VOLUME <record>-128-<id> > J`; detected from its content; it has no paths). A path is given where the\nvolume's MFT still has the parent folder with the sequence number the record names.\n\nEXAMPLES:\n  uffs journal /dev/sdb1 --format table\n  uffs journal disk.img@2 --since 123456789 --format jsonl -o changes.jsonl\n  uffs journal J --format csv"
    )]
    Journal {
        /// The volume whose journal to read (a partition of a whole disk as SOURCE@N), or a raw $J capture.
        source: String,
        /// Only records whose USN is at least this.
        #[arg(long, value_name = "USN")]
        since: Option<u64>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = journal_cmd::Format::Csv)]
        format: journal_cmd::Format,
        /// Write to FILE instead of stdout.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// With a whole disk: only its partition N (as SOURCE@N; `uffs info SOURCE` lists them).
        #[arg(long, value_name = "N")]
        partition: Option<u32>,
    },
    /// What uses the disk: a folder's children with their recursive sizes (hard links once, streams counted),
    /// file and folder counts and share of the folder, largest first; the folder's own total last.
    #[command(
        after_help = "Through the daemon (every registered volume), or an index file or a source.\n\nEXAMPLES:\n  uffs du                               (every volume's top folders)\n  uffs du 'C:\\Users' --depth 2 --limit 10\n  uffs du /Windows --index c.uffs --sort count\n  uffs du --source /dev/sdb1 --format csv -o usage.csv\n\nThe same totals answer queries: uffs 'treesize:>1gb', 'descendants:>10000', 'empty:', --sort treesize,\nand the columns tree_size, tree_allocated, descendants, children."
    )]
    Du(du_cmd::DuArgs),
    /// Files with the same content: grouped by size from the index (hard links of one file are one file), then
    /// by a hash of their first and last 64 KiB, then of all of it; printed with the bytes they waste.
    #[command(
        after_help = "EXAMPLES:\n  uffs dupes --source /dev/sdb1 --min-size 1m\n  uffs dupes ext:jpg --index d.uffs --format csv -o dupes.csv\n  uffs dupes --index d.uffs --by size        (no reading: same size only)\n  uffs dupes --index d.uffs --by name        (same name and size)"
    )]
    Dupes(dupes_cmd::DupesArgs),
    /// Hashes of the files a query selects (md5, sha1, sha256, xxh3), read from the volume in disk order on
    /// every core: sha256sum lines, hashdeep's format, or csv/jsonl/parquet/table with path and size; --known
    /// marks files against hash sets (hash lists, hashdeep files, NSRL RDS) and --unknown keeps the rest.
    #[command(
        after_help = "EXAMPLES:\n  uffs hash ext:exe --source /dev/sdb1                   (sha256sum lines)\n  uffs hash --index d.uffs --hashdeep --algo md5,sha256 > known.hashdeep\n  hashdeep -k known.hashdeep -a -r /mnt/d               (hashdeep audits what uffs wrote)\n  uffs hash --index d.uffs --known NSRLFile.db --unknown  (what NSRL does not know)\n  uffs hash 'path:\\Windows' --index d.uffs --algo md5,sha1 --format parquet -o hashes.parquet"
    )]
    Hash(hash_cmd::HashArgs),
    /// Lines matching a pattern in the files a query selects, with ripgrep's manners (path:line:text, -l, -c,
    /// -i, -w, -F, -e, -C N; binary files skipped unless --binary; UTF-16 by its BOM or --utf16), read from the
    /// volume in disk order on every core. Exit status as rg's: 0 a match, 1 none, 2 an error.
    #[command(
        after_help = "EXAMPLES:\n  uffs grep timeout ext:log --source /dev/sdb1          (only .log files are read)\n  uffs grep -i -w 'error' 'path:\\Windows\\Logs' --index c.uffs -C 2\n  uffs grep -F 'password=' --index c.uffs -l\n  uffs grep --utf16 'Install' ext:txt --index c.uffs     (UTF-16LE files without a BOM)\n  uffs grep -e foo -e bar --streams --index c.uffs -c"
    )]
    Grep(grep_cmd::GrepArgs),
    /// What changed between two states of a volume, each an index file or a source: entries created, deleted,
    /// renamed, moved (same record and sequence number, another path), and changed in size, times, attributes
    /// or $FILE_NAME times (timestomping shows there). Exit status as diff's: 0 the same, 1 different, 2 error.
    #[command(
        after_help = "Entries pair up by record and sequence number: a record used again by another file is a delete and a\ncreate. Access times are ignored unless --ignore says otherwise (--ignore none compares every field).\nDeleted entries are never compared. A table shows change, path and details; csv, tsv, jsonl and parquet\nhave one row per change with its fields' old and new values (docs/commands.md lists the columns).\n\nEXAMPLES:\n  uffs diff monday.uffs /dev/sdb1                        (an index file against the volume now)\n  uffs diff old.img new.img --format csv -o changes.csv\n  uffs diff old.uffs new.uffs 'path:\\Windows ext:exe' --only created,changed\n  uffs diff old.uffs new.uffs --count\n  uffs diff old.uffs new.uffs --ignore none --streams --format parquet -o changes.parquet\n  uffs diff old.uffs new.uffs --only changed --format jsonl | grep fn_created   (timestomped files)"
    )]
    Diff(diff_cmd::DiffArgs),
    /// Serve uffs's search to an AI assistant: the Model Context Protocol on stdin and stdout (read-only tools:
    /// search, count, facets, volumes, grep, query_syntax).
    #[command(
        after_help = "Answers from the daemon (every registered volume), or from an index file or a source.\n\nEXAMPLES:\n  uffs mcp\n  uffs mcp --index sdb1.uffs\n\nAn MCP client's configuration (Claude Desktop, VS Code and others take this form):\n  {\"mcpServers\": {\"uffs\": {\"command\": \"uffs\", \"args\": [\"mcp\"]}}}\n\n`uffs serve` offers the same tools over HTTP at /mcp, behind its token."
    )]
    Mcp(mcp_cmd::McpArgs),
    /// Print a query as a SQL condition over a Parquet dataset's columns (`uffs export --dataset`), for DuckDB,
    /// Spark or Trino: it selects the rows `uffs QUERY` answers from the same volumes.
    #[command(
        after_help = "Dates are resolved when the SQL is made (dm:today is today's bounds in UTC, as FILETIMEs on the\n_filetime columns). Terms that need other rows (dupe:, sizedupe:, treesize:, descendants:, childcount:,\nempty:) or the files' data (content:, type:, hash:) are refused. docs/parquet.md has more.\n\nEXAMPLES:\n  uffs sql 'ext:pdf size:>10mb dm:thisyear'\n  duckdb -c \"select host, volume, path from read_parquet('lake/*/*/*.parquet', hive_partitioning=true) where $(uffs sql 'report ext:docx')\"\n  spark.sql(f\"select * from files where {sql}\")   with sql = uffs sql --dialect spark 'invoice | receipt !ext:tmp'\n  uffs sql --dialect trino 'regex:^IMG_\\d{4}\\.jpg$'"
    )]
    Sql(sql_cmd::SqlArgs),
    /// Measure an index build: per-phase times, records/s, MB/s, peak memory.
    #[command(
        after_help = "EXAMPLES:\n  uffs bench /dev/sdb1 --runs 5\n  uffs bench bench.img --read-only --json"
    )]
    Bench {
        /// The volume to index; with --queries, an index file or a source to query.
        source: String,
        /// How many times to build (or run the queries); the median run is reported, and the first build's
        /// peak memory.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Measure only the raw MFT read (the same bytes, the same read sizes as the build).
        #[arg(long)]
        read_only: bool,
        /// Read every record and index deleted files too.
        #[arg(long)]
        deleted: bool,
        #[command(flatten)]
        read: common::ReadArgs,
        /// With a whole disk: only its partition N (as SOURCE@N; `uffs info SOURCE` lists them).
        #[arg(long, value_name = "N")]
        partition: Option<u32>,
        /// Measure the queries of FILE (one per line, see bench/queries.tsv) on the index instead of the build.
        #[arg(long, value_name = "FILE")]
        queries: Option<PathBuf>,
    },
    /// Write a file's data (or one of its named streams) to stdout or FILE, read from the volume without
    /// mounting it: resident, fragmented, sparse and compressed data; deleted files too.
    #[command(
        after_help = "TARGET is a path on the volume (`/` or `\\` between folders; the leading one may be left out) or an MFT record
number, optionally followed by :STREAM for a named data stream (`file.txt:Zone.Identifier`, `120:big`). A path
is matched as given, else ignoring case; --deleted looks among deleted files too. The output is exactly the
stream's size: holes and bytes past its valid data length are zeros. A deleted file's data is written with a
warning (its clusters may have been reused); an encrypted (EFS) stream, a folder or a file not found is an
error (exit status 2).

EXAMPLES:
  uffs cat /dev/sdb1 /Users/alice/Documents/report.docx -o report.docx
  uffs cat disk.img@2 'Users\\alice\\Downloads\\setup.exe:Zone.Identifier'
  uffs cat image.dd 35 | sha256sum                 (MFT record 35)
  uffs cat image.dd /trash/old.txt --deleted
  uffs cat 'D:\\Users\\alice\\notes.txt'          (a path the daemon printed: its volume's source)
  uffs cat MFT 120:small                           (a raw $MFT capture holds resident data only)"
    )]
    Cat {
        /// The volume the file is on (a partition of a whole disk as SOURCE@N), or a $MFT capture. Alone, a path
        /// that names a volume of the daemon's (`C:\dir\file`, `NAME:/dir/file`, as `uffs QUERY` prints them):
        /// read from that volume's source.
        source: String,
        /// PATH or RECORD, optionally with :STREAM.
        target: Option<String>,
        /// Write to FILE (through a temporary file renamed into place) instead of stdout.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Resolve PATH among deleted files too.
        #[arg(long)]
        deleted: bool,
        /// With a whole disk: only its partition N (as SOURCE@N; `uffs info SOURCE` lists them).
        #[arg(long, value_name = "N")]
        partition: Option<u32>,
    },
    /// Serve the HTTP API (JSON: search, count, volumes, status, disk usage) and a web page to search from a
    /// browser, on loopback, guarded by a token made at start. Answers from the daemon, or an index or source.
    #[command(
        after_help = "The first line printed is the page's address with its token (http://127.0.0.1:PORT/?token=...).
The token is also written to the runtime directory (serve-PORT.token, readable by you only). Every request
needs it: the page sends it for you; other clients send `Authorization: Bearer TOKEN`.

API (GET, JSON answers; errors are {\"error\": ...} with 400 for a bad query, 503 without a daemon):
  /api/search?q=QUERY&sort=size&reverse=true&offset=0&limit=100&columns=name,path,size,modified
      -> {found, offset, limit, truncated, rows: [{name, path, size, modified}, ...]}   (limit at most 1000)
  /api/count?q=QUERY   /api/volumes   /api/status   /api/syntax
  /api/du?path=FOLDER&depth=1&limit=50&sort=size|count|name   folder sizes, as `uffs du`

EXAMPLES:
  uffs serve                                   (the daemon's volumes, on http://127.0.0.1:7980/)
  uffs serve --index sdb1.uffs --bind 127.0.0.1:0   (any free port)
  uffs serve --source /dev/sdb1
  curl -H \"Authorization: Bearer $(cat TOKEN_FILE)\" 'http://127.0.0.1:7980/api/search?q=ext:pdf&limit=5'
      (TOKEN_FILE: the file `uffs serve` names as it starts, `token in ...`: in $UFFS_RUNTIME_DIR, else
      $XDG_RUNTIME_DIR/uffs, else /tmp/uffs-UID)
  uffs serve --bind 0.0.0.0:7980 --allow-remote   (other machines too: prints a warning)"
    )]
    Serve(serve_cmd::ServeArgs),
    /// Run, stop or inspect the daemon that keeps the registered volumes indexed and answers `uffs QUERY`.
    #[command(
        after_help = "EXAMPLES:\n  uffs daemon start\n  uffs daemon status\n  uffs daemon run      (in the foreground, logging to stderr)\n  uffs daemon stop\n  sudo uffs daemon start --system   (root's, for every user: each sees only what they may reach)\n\nFILES:\n  registry, index files, log: $UFFS_CACHE_DIR, else $XDG_CACHE_HOME/uffs, else ~/.cache/uffs\n    (Windows: %LOCALAPPDATA%\\uffs)\n  socket (mode 0700 directory): $UFFS_RUNTIME_DIR, else $XDG_RUNTIME_DIR/uffs, else /tmp/uffs-UID\n    (Windows: the named pipe \\\\.\\pipe\\uffs-<user SID>-<hash>, open to this user only; lock and pid\n    in %LOCALAPPDATA%\\uffs\\run)\n  the system daemon's: $UFFS_SYSTEM_CACHE_DIR, else /var/cache/uffs; its socket (open to every user) in\n    $UFFS_SYSTEM_RUNTIME_DIR, else /run/uffs; a systemd unit: packaging/systemd/uffs-system.service"
    )]
    Daemon {
        #[command(subcommand)]
        action: DaemonAction,
    },
    /// Register, list or remove the volumes the daemon serves.
    #[command(
        after_help = "EXAMPLES:\n  uffs volumes add --all                    (every fixed NTFS, FAT, exFAT, ext or XFS drive: C:, D: ...)\n  uffs volumes add C:                       (a Windows drive, read live; paths print as C:\\...)\n  uffs volumes add /dev/sdb1 --name D       (paths print as D:\\...)\n  uffs volumes add disk.img@2 backup.img    (names from the file names: disk-2, backup)\n  uffs volumes add /dev/sdc1 --refresh 1m   (check for changes every minute; `never`: only when asked)\n  uffs volumes refresh D                    (apply D's changes now)\n  uffs volumes list\n  uffs volumes remove backup\n  sudo uffs volumes add --system            (the system daemon's: every mounted local file system)"
    )]
    Volumes {
        #[command(subcommand)]
        action: VolumesAction,
    },
    /// Print a shell's completion script for uffs's commands, options and their values, generated from this
    /// parser; docs/commands.md says where each shell looks for it.
    #[command(
        after_help = "EXAMPLES:\n  uffs completions bash > ~/.local/share/bash-completion/completions/uffs\n  uffs completions zsh > ~/.zfunc/_uffs      (a folder on $fpath, before compinit)\n  uffs completions fish > ~/.config/fish/completions/uffs.fish\n  uffs completions powershell > $HOME\\uffs.ps1   (and `. $HOME\\uffs.ps1` in $PROFILE)"
    )]
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): every command with its options and examples, generated from this help.
    #[command(
        after_help = "EXAMPLES:\n  uffs man | man -l -\n  uffs man > ~/.local/share/man/man1/uffs.1   (then `man uffs`; docs/commands.md says more)"
    )]
    Man,
}

#[derive(Subcommand)]
enum DaemonAction {
    /// Start the daemon in the background (it loads every registered volume).
    Start {
        /// The system daemon's (root): one index of the machine's folders that answers every user, each only
        /// what they may reach (docs/daemon.md).
        #[arg(long)]
        system: bool,
    },
    /// Stop the running daemon.
    Stop {
        /// The system daemon's (root): one index of the machine's folders that answers every user, each only
        /// what they may reach (docs/daemon.md).
        #[arg(long)]
        system: bool,
    },
    /// Show the daemon's volumes: entries, index size and age, state, source; and its memory.
    Status {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// The system daemon's (root): one index of the machine's folders that answers every user, each only
        /// what they may reach (docs/daemon.md).
        #[arg(long)]
        system: bool,
    },
    /// Run the daemon in the foreground, logging to stderr.
    Run {
        /// The system daemon's (root): one index of the machine's folders that answers every user, each only
        /// what they may reach (docs/daemon.md).
        #[arg(long)]
        system: bool,
    },
}

#[derive(Subcommand)]
enum VolumesAction {
    /// Index sources (in parallel) and register them; a running daemon loads them at once.
    Add {
        /// The volumes to index and register: partitions, volume images, whole disks (every partition uffs
        /// reads, or SOURCE@N), or Windows drives (C:).
        #[arg(required_unless_present_any = ["all", "system"], value_name = "SOURCE")]
        sources: Vec<String>,
        /// Every fixed NTFS, FAT, exFAT, ext or XFS volume this system shows, each under its drive letter on Windows (paths print as
        /// `C:\...`), under its device name on Linux.
        #[arg(long, conflicts_with_all = ["sources", "name", "partition"])]
        all: bool,
        /// With --all: removable drives too.
        #[arg(long, requires = "all")]
        removable: bool,
        /// On a Windows drive without a change journal, make one (32 MiB, as `fsutil usn createjournal`), so
        /// that its changes are followed as they happen; a drive without one is re-scanned on its interval.
        #[arg(long)]
        create_journal: bool,
        /// The volume's name: one letter for a drive (paths print as `C:\...`), else paths print as `NAME:/...`.
        #[arg(long)]
        name: Option<String>,
        /// With a whole disk: only its partition N (as SOURCE@N; `uffs info SOURCE` lists them).
        #[arg(long, value_name = "N")]
        partition: Option<u32>,
        /// Index deleted files too.
        #[arg(long)]
        deleted: bool,
        /// A FAT or exFAT volume's local times are of this zone: UTC (the default) or an offset such as +02:00.
        #[arg(long, value_name = "ZONE", value_parser = uffs_mft::neutral::parse_utc_offset, allow_hyphen_values = true)]
        fat_timezone: Option<i64>,
        /// Every shadow copy of the volume too (Volume Shadow Copies, read from the volume's own bytes), each
        /// as a volume of its own named NAME-vss1, NAME-vss2, … (oldest first), so one query answers across the
        /// present and the past. `uffs info SOURCE` lists them.
        #[arg(long)]
        snapshots: bool,
        /// How often the daemon checks the volume for changes and applies them: 5s (the default), 2m, 1h, or
        /// never (then only `uffs volumes refresh` does).
        #[arg(long, value_name = "INTERVAL")]
        refresh: Option<String>,
        /// Register with the system daemon (root): with no SOURCE (or --all), every mounted real local file system
        /// (ext, XFS, Btrfs, FAT …; not tmpfs, network or pseudo ones), each as the folder it is mounted at.
        #[arg(long)]
        system: bool,
    },
    /// Write every registered volume into a Parquet dataset (through the daemon, from the index it answers
    /// from): DIR/host=HOST/volume=NAME/uffs.parquet, each volume's file replaced whole. With --keep the daemon
    /// writes a volume again after each update, so the dataset stays as current as the daemon.
    #[command(
        after_help = "EXAMPLES:\n  uffs volumes export --dataset /mnt/lake/files                 (now; the host is this machine's name)\n  uffs volumes export --dataset \\\\server\\lake\\files --host pc1 --keep   (now and after every update)\n  uffs volumes export --dataset /lake/files --changes /lake/changes --keep   (and each update's change set)\n  uffs volumes export --forget                                  (stop keeping it current)\n\ndocs/fleet.md shows how Spark, Trino and DuckDB read the dataset."
    )]
    Export {
        /// The dataset's folder.
        #[arg(long, value_name = "DIR", required_unless_present = "forget")]
        dataset: Option<PathBuf>,
        /// The host folder (default: this machine's name).
        #[arg(long, value_name = "NAME", requires = "dataset")]
        host: Option<String>,
        /// Also write each volume again after every update the daemon applies.
        #[arg(long, requires = "dataset")]
        keep: bool,
        /// Also write, with each volume, what changed since the dataset last held it, as
        /// CDIR/host=HOST/volume=NAME/changes-TIME.parquet (as `uffs export --changes`).
        #[arg(long, value_name = "CDIR", requires = "dataset")]
        changes: Option<PathBuf>,
        /// Stop keeping a dataset current (writes nothing).
        #[arg(long, conflicts_with_all = ["dataset", "host", "keep", "changes"])]
        forget: bool,
    },
    /// Check volumes for changes now and apply them (through the daemon).
    Refresh {
        /// The volume to check (default: every volume).
        name: Option<String>,
        /// The system daemon's (root): one index of the machine's folders that answers every user, each only
        /// what they may reach (docs/daemon.md).
        #[arg(long)]
        system: bool,
    },
    /// List the registered volumes.
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// The system daemon's (root): one index of the machine's folders that answers every user, each only
        /// what they may reach (docs/daemon.md).
        #[arg(long)]
        system: bool,
    },
    /// Unregister volumes and delete their index files.
    Remove {
        /// The volumes to remove, by the names `uffs volumes list` shows.
        #[arg(required = true, value_name = "NAME")]
        names: Vec<String>,
        /// The system daemon's (root): one index of the machine's folders that answers every user, each only
        /// what they may reach (docs/daemon.md).
        #[arg(long)]
        system: bool,
    },
}

/// The top-level help's query syntax, sources and examples; the macros' extensions come from the parser.
pub(crate) fn after_help() -> String {
    let macros: String = uffs_query::parse::MACRO_EXTENSIONS
        .iter()
        .map(|(m, exts)| format!("  {m}: {}\n", exts.replace(' ', ";")))
        .collect();
    format!(
        "\
QUERY SYNTAX (Everything's, with fd's flags as shortcuts):
  report draft          both words in the name (space is AND; smart case: lower case ignores case)
  jpg | png             either;  !tmp  not;  <a | b> c  or  (a | b) c  groups;  \"two words\"  a phrase
  windows/system32      a term with / or \\ matches the full path
  *.jpg  img_????.png   wildcards match the whole name;  regex:^IMG_\\d+   a regular expression
  case:Readme nocase:X  path:  file:  folder:  wholeword:   modifiers, combinable (file:case:Make)
  wfn:libc.so.6  startwith:lib  endwith:.so   the whole name, its start, its end
  cafe  finds Café: diacritics are ignored (diacritics: matches them);  nowildcards:a*b  a literal *
  ext:jpg;png  size:>10mb  size:1kb..2mb  size:huge  size:unknown  len:>100  attrib:h
  dm:today  dm:2024  dc:>2024-05-01  da:lastweek  dm:past3days  dm:prevyear  dm:june  dm:monday  dc:unknown
  parent:/Windows (nosubfolders:)  depth:2 (parents:)  root:  frn:1234  fsi:0   where an entry is
  child:*.jpg  childfile:readme  childfolder:src  childfilecount:0  childfoldercount:>2   folders by children
  dupe:  namepartdupe:  sizedupe:  dmdupe:  dcdupe:  dadupe:  attribdupe:  deleted:  stream:
  treesize:>1gb  descendants:>10000  childcount:0..3  empty:   a folder's totals (see `uffs du`)
  Values a file system does not keep never match (FAT: no owner, no access time of day; ext2/3: no dc:;
  only NTFS has streams); `unknown` finds them. Every function: docs/query-language.md
  content:timeout  type:pdf  type:mismatch  hash:HEX   read from the files' data, beside the rest with AND
MACROS (extension sets):
{macros}SOURCES (detected from content, not from the name):
  a volume image or partition device           uffs info /dev/sdb1   (NTFS, FAT12/16/32, exFAT, ext2/3/4, XFS, Btrfs, HFS+, HFSX)
  an APFS container (each volume)              uffs info mac.img    (mac.img@2 picks volume 2)
  a whole disk: MBR, GPT or APM (each volume)  uffs info disk.img   (disk.img@2 picks partition 2;
                                                disk.img@2@1: volume 1 of an APFS container there)
  a raw $MFT capture (e.g. from `icat VOL 0`)   uffs export MFT --format csv -o mft.csv
FOLDERS (any mounted file system: ext4, XFS, Btrfs, tmpfs, a share, a FUSE mount):
  uffs index ~/Documents -o docs.uffs     walked: getdents64 and statx on every core; paths print as they are
  uffs volumes add /home                  the daemon follows it (fanotify as root, else inotify)
  uffs info /mnt/data                     the top of an NTFS, FAT, exFAT, ext or XFS file system whose device this
                                          user may read is read raw instead (--walk: walk it all the same)
  On Windows any folder but a drive (C:\\Users\\ana, \\\\server\\share) is walked from its listings and followed
  with ReadDirectoryChangesW; drives (C:) are read raw.
  A walk stays on the folder's file system (as find -xdev; --cross-mounts enters the others), never enters
  pseudo file systems (proc, sysfs …) and leaves out what updatedb.conf's defaults prune (--prune-paths,
  --prune-fs, --prune-names; \"\" for none). A folder it may not read is a warning; the exit status is then 3.

EXAMPLES:
  uffs volumes add /dev/sdb1 --name D && uffs daemon start
  uffs report ext:pdf                             search every registered volume through the daemon
  uffs --source /dev/sdb1 ext:pdf report            PDFs with \"report\" in the name
  uffs --index sdb1.uffs -e jpg -S +5M --sort size   fd-style flags work too
  uffs --index sdb1.uffs 'dm:thisweek !ext:tmp' --format table --limit 20
  uffs --index sdb1.uffs 'ext:log content:timeout'   only .log files are read
  uffs ext:log --facet folder --top 10             counts and sizes per group;  uffs pic: --stats   totals
  uffs du 'C:\\Users' --depth 2                     folder sizes
  uffs info tests/data/linux-made/testfs1
  uffs index /dev/sdb1 -o sdb1.uffs
  uffs export sdb1.uffs --format jsonl -o files.jsonl
  uffs export disk.img@2 --deleted --streams --format csv
  uffs bench /dev/sdb1 --runs 5
  uffs journal /dev/sdb1 --since 123456789 --format table   the USN change journal, with full paths
  uffs cat /dev/sdb1 /Users/alice/report.docx -o report.docx   a file's data, without mounting"
    )
}

/// Exit status of a command that did its work but read only part of a source (see [`exit_status`]): a truncated
/// image, MFT records or files that could not be read.
const PARTIAL: u8 = 3;

/// The command `word` is most likely a typing mistake for: one whose name is at most two edits away (one for a
/// short word), not the word itself.
fn mistyped_command(word: &str) -> Option<String> {
    let word = word.to_ascii_lowercase();
    if word.len() < 3 {
        return None;
    }
    // The names alone, not the parser: a query that finds nothing ends as fast as one that does.
    COMMAND_NAMES
        .iter()
        .filter(|&&name| name != "help")
        .map(|name| name.to_string())
        .filter(|name| *name != word)
        .map(|name| (edit_distance(&word, &name), name))
        // One edit (a letter wrong, missing, added, or two swapped): two would take real words for commands
        // (`report`, the README's own search, is two from `export`).
        .filter(|(d, _)| *d <= 1)
        .min()
        .map(|(_, name)| name)
}

/// Levenshtein distance, an adjacent swap counting as one edit (`deamon`, `exprot`).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

/// The commands that read sources, by path (`volumes add`): they, and a query, take [`ReadingArgs`].
const READS_SOURCES: [&[&str]; 15] = [
    &["info"],
    &["index"],
    &["export"],
    &["journal"],
    &["du"],
    &["dupes"],
    &["hash"],
    &["grep"],
    &["diff"],
    &["mcp"],
    &["serve"],
    &["bench"],
    &["cat"],
    &["volumes", "add"],
    &["volumes", "refresh"],
];

/// The argument parser, for parsing and for what is generated from it (completions, the man page).
fn cli_command() -> clap::Command {
    use clap::{Args, CommandFactory};
    let mut cmd = ReadingArgs::augment_args(Cli::command());
    for path in READS_SOURCES {
        cmd = with_reading_args(cmd, path);
    }
    fn with_reading_args(cmd: clap::Command, path: &[&str]) -> clap::Command {
        match path {
            [] => ReadingArgs::augment_args(cmd),
            [first, rest @ ..] => cmd.mut_subcommand(*first, |c| with_reading_args(c, rest)),
        }
    }
    cmd
}

/// A command line, parsed: the reading options from the query's place or the command's own.
fn parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::FromArgMatches;
    let matches = cli_command().try_get_matches_from(args)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    // A query's options are the top level's; a command's its own (the top level's are not filled in when a
    // command is given); a command that reads no source has none. (Said by the command's path: a release build of
    // clap cannot tell an argument a command lacks from one not given.)
    let (mut m, mut path) = (&matches, Vec::new());
    while let Some((name, sub)) = m.subcommand() {
        path.push(name);
        m = sub;
    }
    if path.is_empty() || READS_SOURCES.contains(&path.as_slice()) {
        cli.reading = ReadingArgs::from_arg_matches(m)?;
    }
    Ok(cli)
}

/// The commands' names (and clap's `help`), so that a plain query is told from a command without building the
/// parser (a unit test holds this list to the parser's).
const COMMAND_NAMES: [&str; 19] = [
    "info",
    "index",
    "export",
    "journal",
    "du",
    "dupes",
    "hash",
    "grep",
    "diff",
    "mcp",
    "sql",
    "bench",
    "cat",
    "serve",
    "daemon",
    "volumes",
    "completions",
    "man",
    "help",
];

/// A command line that is only the words of a query (`uffs report draft`, `uffs 'ext:pdf size:>1mb'`), parsed
/// without building the whole parser: the process start is most of a query's time through the daemon, and clap's
/// commands and options are most of the start (issue 59). Anything else (a flag, a command, no word) is `None`,
/// for [`parse_from`], which gives every flag.
fn plain_query(args: &[std::ffi::OsString]) -> Option<Cli> {
    let words: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_str().map(str::to_string))
        .collect::<Option<_>>()?;
    let plain = |w: &String| !w.is_empty() && !w.starts_with('-');
    if words.is_empty() || !words.iter().all(plain) || COMMAND_NAMES.contains(&words[0].as_str()) {
        return None;
    }
    Some(Cli {
        command: None,
        search: query_cmd::SearchArgs {
            query: words,
            ..query_cmd::SearchArgs::default()
        },
        reading: ReadingArgs::default(),
    })
}

/// Writes `bytes` to stdout; a reader that stopped early (`uffs man | head`) is not an error.
fn print(bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match plain_query(&args) {
        Some(cli) => cli,
        None => parse_from(args).unwrap_or_else(|e| e.exit()),
    };
    if let Err(e) = uffs_source::storage::offer(&cli.reading.shadow_storage) {
        eprintln!("uffs: error: {e}");
        return ExitCode::from(2);
    }
    uffs_walk::set_default_options(cli.reading.walk.options());
    // The code page of FAT's 8.3 names for every read of this run.
    let code_page = match (
        cli.reading.fat_codepage,
        std::env::var_os("UFFS_FAT_CODEPAGE"),
    ) {
        (Some(cp), _) => cp,
        (None, Some(v)) => match uffs_mft::neutral::parse_code_page(&v.to_string_lossy()) {
            Ok(cp) => cp,
            Err(e) => {
                eprintln!("uffs: error: UFFS_FAT_CODEPAGE: {e}");
                return ExitCode::from(2);
            }
        },
        (None, None) => 0,
    };
    uffs_mft::neutral::set_default_fat_code_page(code_page);
    // The zone of FAT's local times for every build of this run (`--fat-timezone` overrides it where given).
    if let Some(z) = std::env::var_os("UFFS_FAT_TIMEZONE") {
        match uffs_mft::neutral::parse_utc_offset(&z.to_string_lossy()) {
            Ok(secs) => uffs_mft::neutral::set_default_local_time_offset(Some(secs)),
            Err(e) => {
                eprintln!("uffs: error: UFFS_FAT_TIMEZONE: {e}");
                return ExitCode::from(2);
            }
        }
    }
    // Commands that write files end on a signal without leaving a partial one (a one-shot query only with -o:
    // it starts no thread it does not need).
    match &cli.command {
        None if cli.search.output.output.is_some() => signals::install(),
        None
        | Some(
            Command::Serve(_) | Command::Mcp(_) | Command::Daemon { .. } | Command::Info { .. },
        ) => {}
        Some(_) => signals::install(),
    }
    let Some(command) = cli.command else {
        let code = exit_status(query_cmd::run(&cli.search), false);
        // A query that found nothing or failed, whose first word is a command's name mistyped (`uffs deamon
        // stop`): say which command was likely meant, as cargo and git do.
        if code != 0 {
            if let Some(meant) = cli.search.query.first().and_then(|w| mistyped_command(w)) {
                eprintln!(
                    "uffs: `{}` was searched for as a name; did you mean `uffs {meant}`?",
                    cli.search.query[0]
                );
            }
        }
        return ExitCode::from(code);
    };
    let as_rg = matches!(command, Command::Grep(_));
    let result = match command {
        // Commands that look for something: `Ok(false)` when they found nothing.
        Command::Du(a) => du_cmd::run(a),
        Command::Dupes(a) => dupes_cmd::run(a),
        Command::Hash(a) => hash_cmd::run(a),
        Command::Grep(a) => {
            let quiet = a.quiet;
            match grep_cmd::run(a) {
                // As rg -q: a match is the answer, whatever could not be read.
                Ok(true) if quiet => return ExitCode::SUCCESS,
                r => r,
            }
        }
        // As diff: 1 when the two differ.
        Command::Diff(a) => diff_cmd::run(a).map(|differ| !differ),
        other => run(other).map(|()| true),
    };
    ExitCode::from(exit_status(result, as_rg))
}

/// Runs a command that does a job rather than look for something.
fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Info {
            source,
            partition,
            json,
        } => match source {
            Some(source) => info::run(&source, partition, json),
            None => info::list(json),
        },
        Command::Index {
            source,
            output,
            partition,
            deleted,
            read,
            update,
            compact,
            snapshots,
        } => index_cmd::index_command(
            &source,
            partition,
            &output,
            deleted,
            &read,
            index_cmd::IndexMode {
                update,
                compact,
                snapshots,
            },
        ),
        Command::Export {
            sources,
            format,
            output,
            dataset,
            host,
            changes,
            deleted,
            streams,
            partition,
            snapshots,
        } => {
            let scope = export::Scope {
                partition,
                deleted,
                streams,
                snapshots,
            };
            match dataset {
                Some(dir) => {
                    let target = export::DatasetTarget {
                        dir: &dir,
                        host,
                        changes: changes.as_deref(),
                    };
                    export::run_dataset(&sources, scope, format, target)
                }
                None => export::run(&sources, scope, format, output.as_deref()),
            }
        }
        Command::Journal {
            source,
            since,
            format,
            output,
            partition,
        } => journal_cmd::run(&source, partition, since, format, output.as_deref()),
        Command::Bench {
            source,
            runs,
            json,
            partition,
            queries: Some(q),
            ..
        } => bench::run_queries(&source, partition, &q, runs, json),
        Command::Bench {
            source,
            runs,
            json,
            read_only,
            deleted,
            read,
            partition,
            queries: None,
        } => bench::run(&source, partition, runs, json, read_only, deleted, &read),
        Command::Mcp(a) => mcp_cmd::run(&a),
        Command::Sql(a) => sql_cmd::run(&a),
        Command::Serve(a) => serve_cmd::run(a),
        Command::Cat {
            source,
            target,
            output,
            deleted,
            partition,
        } => match target {
            Some(target) => cat_cmd::run(&source, &target, partition, deleted, output.as_deref()),
            None => cat_cmd::run_registered(&source, deleted, output.as_deref()),
        },
        Command::Daemon { action } => match action {
            DaemonAction::Start { system } => {
                daemon_cmd::as_system(system).and_then(|_| daemon_cmd::start())
            }
            DaemonAction::Stop { system } => {
                daemon_cmd::as_system(system).and_then(|_| daemon_cmd::stop())
            }
            DaemonAction::Status { json, system } => {
                daemon_cmd::as_system(system).and_then(|_| daemon_cmd::status(json))
            }
            DaemonAction::Run { system } => {
                daemon_cmd::as_system(system).and_then(|_| daemon_cmd::run_foreground())
            }
        },
        Command::Volumes { action } => match action {
            VolumesAction::Add {
                sources,
                all,
                removable,
                create_journal,
                name,
                partition,
                deleted,
                fat_timezone,
                snapshots,
                refresh,
                system,
            } => {
                daemon_cmd::as_system(system)?;
                // The system daemon's default: every mounted local file system.
                let all = (all || (system && sources.is_empty())).then_some(removable);
                let add = daemon_cmd::AddOptions {
                    name,
                    partition,
                    deleted,
                    fat_timezone,
                    refresh: refresh.as_deref(),
                    create_journal,
                    snapshots,
                };
                daemon_cmd::volumes_add(&sources, all, &add)
            }
            VolumesAction::Refresh { name, system } => {
                daemon_cmd::as_system(system).and_then(|_| daemon_cmd::volumes_refresh(name))
            }
            VolumesAction::Export {
                dataset,
                host,
                keep,
                changes,
                forget,
            } => {
                let target = daemon_cmd::DatasetRequest {
                    dir: dataset.as_deref(),
                    host,
                    changes: changes.as_deref(),
                    keep,
                    forget,
                };
                daemon_cmd::volumes_export(target)
            }
            VolumesAction::List { json, system } => {
                daemon_cmd::as_system(system).and_then(|_| daemon_cmd::volumes_list(json))
            }
            VolumesAction::Remove { names, system } => {
                daemon_cmd::as_system(system).and_then(|_| daemon_cmd::volumes_remove(&names))
            }
        },
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cli_command(), "uffs", &mut script);
            print(&script)
        }
        Command::Man => print(man_page::page(cli_command()).as_bytes()),
        Command::Du(_)
        | Command::Dupes(_)
        | Command::Hash(_)
        | Command::Grep(_)
        | Command::Diff(_) => {
            unreachable!("main runs the commands that look for something")
        }
    }
}

/// The exit status of a command that ended with `result` (`Ok(false)`: it found nothing), one contract for every
/// command (docs/commands.md, "Exit status"): 0 found or done, 1 nothing found (`diff`: the two differ), 2 an
/// error (said here), 3 done but part of the source could not be read (said where it was found). `as_rg`: grep's
/// own rule, rg's: a file or part of the source that could not be read is an error (2), even beside matches.
fn exit_status(result: anyhow::Result<bool>, as_rg: bool) -> u8 {
    match result {
        Err(e) => {
            common::report_error(&e);
            2
        }
        Ok(_) if common::read_partly() => {
            if as_rg {
                2
            } else {
                PARTIAL
            }
        }
        Ok(true) => 0,
        Ok(false) => 1,
    }
}
