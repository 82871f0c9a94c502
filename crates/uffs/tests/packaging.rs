//! What uffs offers to be installed like its peers, run through the real binary: `--version` with the commit and
//! build profile.

mod common;

use std::process::{Command, Output};

use common::*;

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("utf-8 output")
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
