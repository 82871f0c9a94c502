//! The system daemon (`uffs daemon start --system`, root): one index of a folder that answers every user, each
//! only what they may reach. The truth is the kernel's: what `find`, run as each real user (made by
//! scripts/setup.sh: uffs-ana in group uffs-team, uffs-ben), lists below the folder, before and after changes
//! the daemon follows; counts, totals, duplicates and child terms tell nothing more.
#![cfg(target_os = "linux")]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const USERS: [&str; 2] = ["uffs-ana", "uffs-ben"];

/// The test's folder in the system's temporary folder (every folder above it lets others through, as the
/// guests' searches need), removed at the end.
struct Place {
    root: PathBuf,
    exe: PathBuf,
}

impl Place {
    fn tree(&self) -> PathBuf {
        self.root.join("tree")
    }

    /// `uffs ARGS` as `user` (root: as root), with the system daemon's directories of this test.
    fn uffs_as(&self, user: &str, args: &[&str]) -> Output {
        let mut c = Command::new("runuser");
        c.args([
            "-u",
            user,
            "--",
            "env",
            "-u",
            "XDG_RUNTIME_DIR",
            "-u",
            "UFFS_CACHE_DIR",
        ])
        .arg(format!(
            "UFFS_SYSTEM_RUNTIME_DIR={}",
            self.root.join("run").display()
        ))
        .arg(format!(
            "UFFS_SYSTEM_CACHE_DIR={}",
            self.root.join("cache").display()
        ))
        // Each user's own (empty) runtime directory: no daemon of their own answers first.
        .arg(format!(
            "UFFS_RUNTIME_DIR={}",
            self.root.join("users").join(user).display()
        ))
        .arg(&self.exe)
        .args(args);
        c.output().expect("runuser")
    }

    fn ok_as(&self, user: &str, args: &[&str]) -> String {
        let o = self.uffs_as(user, args);
        assert!(o.status.success(), "uffs {args:?} as {user}: {o:?}");
        String::from_utf8(o.stdout).unwrap()
    }

    /// A search's answer as `user`, which may be nothing (exit 1).
    fn found_as(&self, user: &str, args: &[&str]) -> String {
        let o = self.uffs_as(user, args);
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "uffs {args:?} as {user}: {o:?}"
        );
        String::from_utf8(o.stdout).unwrap()
    }

    /// What `find` lists below the tree as `user`, less the entries of folders `user` may read but not enter
    /// (plocate's rule, and uffs's, leaves those out; find lists their names).
    fn find_as(&self, user: &str) -> Vec<String> {
        let o = Command::new("runuser")
            .args(["-u", user, "--", "find"])
            .arg(self.tree())
            .args(["-mindepth", "1"])
            .output()
            .unwrap();
        let listed: Vec<String> = String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        let enter = |dir: &Path| {
            Command::new("runuser")
                .args(["-u", user, "--", "test", "-x"])
                .arg(dir)
                .status()
                .unwrap()
                .success()
        };
        let mut out: Vec<String> = listed
            .into_iter()
            .filter(|p| Path::new(p).parent().is_none_or(enter))
            .collect();
        out.sort();
        out
    }

    /// Every entry the daemon answers `user` (the tree's entries print as their real paths).
    fn all_as(&self, user: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .ok_as(user, &["*"])
            .lines()
            .map(str::to_string)
            .collect();
        v.sort();
        v
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let _ = self.uffs_as("root", &["daemon", "stop", "--system"]);
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn chown(p: &Path, owner: &str) {
    let s = Command::new("chown").arg(owner).arg(p).status().unwrap();
    assert!(s.success());
}

fn write(p: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

#[test]
fn each_user_is_answered_what_they_may_reach() {
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } != 0 {
        common::cannot_run("the system daemon and switching users need root");
        return;
    }
    for u in USERS {
        if !Command::new("id").arg(u).output().unwrap().status.success() {
            common::cannot_run(&format!("no user {u}: scripts/setup.sh makes it"));
            return;
        }
    }
    let root = std::env::temp_dir().join(format!("uffs-system-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("bin")).unwrap();
    chmod(&root, 0o755);
    // The binary where the other users may run it (the build's folder may be closed to them).
    let exe = root.join("bin/uffs");
    std::fs::copy(env!("CARGO_BIN_EXE_uffs"), &exe).unwrap();
    chmod(&root.join("bin"), 0o755);
    std::fs::create_dir_all(root.join("users")).unwrap();
    chmod(&root.join("users"), 0o1777);
    let p = Place { root, exe };
    let t = p.tree();
    write(&t.join("public/a.txt"), b"a");
    write(&t.join("public/secret-named.txt"), b"s");
    chmod(&t.join("public/secret-named.txt"), 0o600); // its name is seen, as `ls` shows it
    write(&t.join("public/dup.txt"), b"one");
    write(&t.join("private/dup.txt"), b"two");
    write(&t.join("private/hidden.txt"), b"hidden");
    write(&t.join("private/sub/deep.txt"), b"deep");
    chmod(&t.join("private"), 0o700);
    write(&t.join("team/team.txt"), b"team");
    chown(&t.join("team"), "root:uffs-team");
    chmod(&t.join("team"), 0o750);
    write(&t.join("ana/mine.txt"), b"mine");
    chown(&t.join("ana"), "uffs-ana");
    chmod(&t.join("ana"), 0o700);
    // Readable, not searchable: its names are listed by find, and by no search (plocate's rule).
    write(&t.join("noexec/x.txt"), b"x");
    chmod(&t.join("noexec"), 0o744);
    chmod(&t, 0o755);

    // Root's alone.
    let o = p.uffs_as(
        "uffs-ben",
        &["volumes", "add", "--system", t.to_str().unwrap()],
    );
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--system is root's"),
        "{o:?}"
    );
    p.ok_as(
        "root",
        &[
            "volumes",
            "add",
            "--system",
            t.to_str().unwrap(),
            "--name",
            "tree",
        ],
    );
    p.ok_as("root", &["daemon", "start", "--system"]);
    let sock = p.root.join("run/daemon.sock");
    assert_eq!(
        std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777,
        0o666
    );

    let path = |rel: &str| format!("{}/{rel}", t.display());
    let check = |when: &str| {
        let everything = p.all_as("root");
        assert_eq!(everything, p.find_as("root"), "root {when}");
        for u in USERS {
            let seen = p.all_as(u);
            assert_eq!(seen, p.find_as(u), "{u} {when}");
            assert!(!seen.contains(&path("noexec/x.txt")), "{u} {when}");
            // Numbers tell nothing more than the entries.
            let count = p.ok_as(u, &["--count", "*"]);
            assert_eq!(count.trim(), seen.len().to_string(), "{u} {when}");
            let files = seen.iter().filter(|s| s.ends_with(".txt")).count();
            let du = p.ok_as(u, &["du"]);
            let total = du.lines().last().unwrap();
            assert!(total.ends_with(&format!("  {}/", t.display())), "{du}");
            let cols: Vec<&str> = total.split_whitespace().collect();
            // ALLOCATED (2 words) SIZE (2 words) FILES FOLDERS SHARE PATH
            assert_eq!(cols[4], files.to_string(), "{u} {when}: {du}");
        }
    };
    check("at first");
    assert!(p.all_as("root").contains(&path("noexec/x.txt")));
    let ana = p.all_as("uffs-ana");
    assert!(ana.contains(&path("team/team.txt")) && ana.contains(&path("ana/mine.txt")));
    let ben = p.all_as("uffs-ben");
    assert!(!ben.contains(&path("team/team.txt")) && !ben.contains(&path("private/hidden.txt")));
    assert!(ben.contains(&path("public/secret-named.txt")) && ben.contains(&path("private")));

    // Terms that count other entries see only the caller's.
    assert_eq!(p.ok_as("root", &["dupe:"]).lines().count(), 2);
    assert_eq!(p.found_as("uffs-ben", &["dupe:"]), "");
    assert_eq!(
        p.ok_as("root", &["child:hidden.txt"]).trim(),
        path("private")
    );
    assert_eq!(p.found_as("uffs-ben", &["child:hidden.txt"]), "");
    assert_eq!(
        p.ok_as("uffs-ben", &["childcount:>0"]).trim(),
        path("public")
    );
    let facet = p.ok_as("uffs-ben", &["--facet", "ext", "*"]);
    assert!(
        facet
            .lines()
            .any(|l| l.split_whitespace().take(2).eq(["txt", "3"])),
        "{facet}"
    );

    // Files' data is root's to read; status and the volumes too.
    let o = p.uffs_as("uffs-ben", &["content:hidden"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("reads for root only"),
        "{o:?}"
    );
    let o = Command::new("runuser")
        .args(["-u", "uffs-ben", "--", "python3", "-c"])
        .arg(format!(
            "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({:?})\ns.sendall(b'{{\"op\":\"status\"}}\\n')\nprint(s.recv(4096).decode())",
            sock.to_str().unwrap()
        ))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(
        said.contains("refused") && !said.contains("entries"),
        "{o:?}"
    );
    let o = p.uffs_as("uffs-ben", &["daemon", "status"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("the system daemon answers your searches"),
        "{o:?}"
    );

    // Changes, followed as deltas: a new file, a folder opened, another closed, one moved under a closed one.
    write(&t.join("team/new.txt"), b"new");
    chmod(&t.join("private"), 0o755);
    write(&t.join("public/closed/c.txt"), b"c");
    chmod(&t.join("public/closed"), 0o700);
    std::fs::rename(t.join("public/a.txt"), t.join("ana/a.txt")).unwrap();
    p.ok_as("root", &["volumes", "refresh", "--system"]);
    check("after changes");
    let ben = p.all_as("uffs-ben");
    assert!(ben.contains(&path("private/hidden.txt")) && !ben.contains(&path("ana/a.txt")));
    assert!(p.all_as("uffs-ana").contains(&path("ana/a.txt")));
}
