//! What uffs offers to be installed like its peers, run through the real binary: shell completions and the man
//! page generated from its argument parser, and `--version` with the commit and build profile.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;

/// The commands of `uffs --help`, which every completion script and the man page must know.
const COMMANDS: [&str; 14] = [
    "info",
    "index",
    "export",
    "journal",
    "du",
    "dupes",
    "mcp",
    "bench",
    "cat",
    "serve",
    "daemon",
    "volumes",
    "completions",
    "man",
];

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("utf-8 output")
}

#[test]
fn completions_for_every_shell() {
    let bash = stdout(&run_ok(uffs().args(["completions", "bash"])));
    assert!(bash.contains("complete "), "{bash}");
    for command in COMMANDS {
        assert!(bash.contains(command), "bash completion lacks `{command}`");
    }
    let zsh = stdout(&run_ok(uffs().args(["completions", "zsh"])));
    assert!(
        zsh.starts_with("#compdef uffs\n"),
        "{}",
        &zsh[..zsh.len().min(200)]
    );
    // These show each option's help beside it.
    for (shell, script) in [
        ("zsh", zsh),
        (
            "fish",
            stdout(&run_ok(uffs().args(["completions", "fish"]))),
        ),
        (
            "powershell",
            stdout(&run_ok(uffs().args(["completions", "powershell"]))),
        ),
        (
            "elvish",
            stdout(&run_ok(uffs().args(["completions", "elvish"]))),
        ),
    ] {
        for command in COMMANDS {
            assert!(
                script.contains(command),
                "{shell} completion lacks `{command}`"
            );
        }
        assert!(
            script.contains("only its partition N (as SOURCE@N"),
            "{shell} completion lacks the help of --partition"
        );
    }
}

#[test]
fn a_bad_shell_lists_the_good_ones() {
    let out = uffs()
        .args(["completions", "tcsh"])
        .output()
        .expect("run uffs");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("tcsh")
            && err.contains("[possible values: bash, elvish, fish, powershell, zsh]"),
        "{err}"
    );
}

/// The bash script loads, registers itself for `uffs`, and completes a command and an option.
#[test]
fn bash_completion_loads_and_completes() {
    let has_bash = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("bash").is_file()));
    if !has_bash {
        return cannot_run("bash is not installed");
    }
    let script = "source <(\"$UFFS\" completions bash) && complete -p uffs
        complete_words() { COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); _uffs uffs \"${@: -1}\"; echo \"${COMPREPLY[*]}\"; }
        complete_words uffs volumes a
        complete_words uffs --parti
        complete_words uffs completions p";
    let out = run_ok(
        Command::new("bash")
            .args(["--norc", "-c", script])
            .env("UFFS", env!("CARGO_BIN_EXE_uffs")),
    );
    let lines: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    assert_eq!(
        lines,
        [
            "complete -o bashdefault -o default -o nosort -F _uffs uffs",
            "add",
            "--partition",
            "powershell"
        ],
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn man_page_holds_every_command() {
    let page = stdout(&run_ok(uffs().arg("man")));
    assert!(
        page.lines().any(|l| l.starts_with(".TH uffs 1 ")),
        "no .TH line"
    );
    for command in COMMANDS {
        assert!(
            page.contains(&format!(".SS \"uffs {command}\"")),
            "the man page has no section for `uffs {command}`"
        );
    }
    // The options of a command are on the page, not only its name.
    assert!(
        page.contains("\\-\\-update"),
        "`uffs index --update` is not on the page"
    );
    // One page: no references to a page per command, which is not installed.
    assert!(!page.contains("uffs\\-index(1)"));
    assert!(!page.contains("SUBCOMMANDS"));
}

#[test]
fn version_says_commit_and_profile() {
    let version = stdout(&run_ok(uffs().arg("--version")));
    let version = version.trim_end();
    let rest = version
        .strip_prefix(&format!("uffs {} (commit ", env!("CARGO_PKG_VERSION")))
        .unwrap_or_else(|| panic!("{version}"));
    let (commit, profile) = rest
        .strip_suffix(')')
        .and_then(|r| r.split_once(", "))
        .unwrap_or_else(|| panic!("{version}"));
    assert!(matches!(profile, "release" | "debug"), "{version}");
    // The commit this checkout is at, as the build saw it (cargo rebuilds when HEAD moves); "unknown" when the
    // sources are not a git checkout of their own.
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(repo())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| stdout(&o).trim().to_string())
    };
    let own_checkout = git(&["rev-parse", "--show-toplevel"])
        .and_then(|t| std::path::Path::new(&t).canonicalize().ok())
        .is_some_and(|t| t == repo());
    let head = own_checkout
        .then(|| git(&["rev-parse", "--short", "HEAD"]))
        .flatten();
    assert_eq!(commit, head.as_deref().unwrap_or("unknown"), "{version}");
    assert_eq!(stdout(&run_ok(uffs().arg("-V"))).trim_end(), version);
}

/// The system daemon's systemd unit runs a command this uffs has, and systemd finds nothing wrong in it.
#[test]
fn the_systemd_unit_runs_the_system_daemon() {
    let unit =
        std::fs::read_to_string(repo().join("packaging/systemd/uffs-system.service")).unwrap();
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("ExecStart");
    let mut words = exec.split_whitespace();
    assert_eq!(words.next(), Some("/usr/local/bin/uffs"));
    let args: Vec<&str> = words.collect();
    assert_eq!(args, ["daemon", "run", "--system"]);
    // The command and its options parse (`--help` ends before anything runs).
    run_ok(uffs().args(&args).arg("--help"));
    let Ok(o) = Command::new("systemd-analyze").arg("--version").output() else {
        cannot_run("no systemd-analyze");
        return;
    };
    assert!(o.status.success());
    // Verified with the binary built here in place of the installed one.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("systemd-unit");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let here = unit.replace("/usr/local/bin/uffs", env!("CARGO_BIN_EXE_uffs"));
    let file = dir.join("uffs-system.service");
    std::fs::write(&file, here).unwrap();
    let o = Command::new("systemd-analyze")
        // The man page it names is installed by `uffs man` (docs/commands.md), not here.
        .args(["verify", "--man=no"])
        .arg(&file)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && said.trim().is_empty(), "{o:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
