//! Two things the `uffs` executable needs from its build:
//!
//! - **The version it prints**: `uffs 0.1.0 (commit 056bcd0, release)`, as `UFFS_VERSION`. The commit is `git
//!   rev-parse --short HEAD` of the checkout it is built from ("unknown" outside one, or without git); the
//!   profile is cargo's `PROFILE` (`release` or `debug`). Cargo reruns this script only when HEAD or the branch it
//!   points to moves, not on every build.
//! - **A fixed address** on x86-64 Linux with glibc. The code stays position independent; only the executable is
//!   not: the linker then fills in the 34,000 pointers of its tables (vtables, panic locations, string constants),
//!   which a position-independent executable has the dynamic loader write at every start, copying the ~130 pages
//!   that hold them. That was a third of a one-shot query's time (`uffs --version`: 2.7 -> 1.5 ms of CPU). The
//!   price is that the executable's own code and data are not placed at random (its libraries, heap, stack and
//!   mappings still are): uffs is written in Rust, and the daemon takes requests only from its own user.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("TARGET").as_deref() == Ok("x86_64-unknown-linux-gnu") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }

    // Only this repository's own commit: not that of another one the sources were unpacked inside.
    let root = manifest_dir().join("../..").canonicalize().ok();
    let top =
        git(&["rev-parse", "--show-toplevel"]).and_then(|t| PathBuf::from(t).canonicalize().ok());
    let commit = if root.is_some() && top == root {
        git(&["rev-parse", "--short", "HEAD"])
    } else {
        None
    };
    if commit.is_some() {
        for path in git_files_to_watch() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    let profile = std::env::var("PROFILE").unwrap_or_else(|_| "unknown".into());
    println!(
        "cargo:rustc-env=UFFS_VERSION={} (commit {}, {profile})",
        std::env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION"),
        commit.as_deref().unwrap_or("unknown"),
    );
}

/// The first line git prints for `args`, run in this package's folder; `None` when git is missing, fails (not a
/// checkout, a repository owned by another user) or prints nothing.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(manifest_dir())
        .output()
        .ok()?;
    let line = String::from_utf8(out.stdout)
        .ok()?
        .lines()
        .next()?
        .trim()
        .to_string();
    (out.status.success() && !line.is_empty()).then_some(line)
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"))
}

/// The files whose change moves HEAD: HEAD itself (a checkout, a detached commit) and the branch it points to (a
/// commit). Git says where they are, which also holds in a worktree, whose HEAD is not under `.git/`. A branch
/// that is only in `packed-refs` gets its own file at its next commit, so its folder is watched too. Only paths
/// that exist are given: cargo reruns a script on every build while one it watches is missing.
fn git_files_to_watch() -> Vec<PathBuf> {
    // `--git-path` prints a path relative to the folder git ran in, or an absolute one.
    let path = |p: &str| git(&["rev-parse", "--git-path", p]).map(|s| manifest_dir().join(s));
    let mut files: Vec<PathBuf> = path("HEAD").into_iter().collect();
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        match path(&branch) {
            Some(loose) if loose.is_file() => files.push(loose),
            Some(loose) => {
                files.extend(path("packed-refs"));
                files.extend(loose.parent().map(Path::to_path_buf));
            }
            None => {}
        }
    }
    files.retain(|p| p.exists());
    files
}
