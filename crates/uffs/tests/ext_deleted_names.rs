//! ext's deleted names: every name a folder's blocks still hold that The Sleuth Kit (`fls -r -p`) or e2fsprogs
//! (`debugfs -R "ls -d"`) lists, uffs lists with `--deleted`, including the two kinds whose inode says nothing
//! of them: an entry whose inode was cleared to 0 (a block's first entry, deleted; `fls`: `* 0:`) and one whose
//! inode is in use again (a file made since, or the same file under its new name; `fls`: `(realloc)`). Those are
//! flagged `from_index_slack` as NTFS's names from `$I30` slack are: no size, times or record data, and never
//! read as the inode's file (`cat` refuses, `hash` says why).
//!
//! Made three ways: by e2fsprogs' `debugfs` (whose unlink leaves names as kernels before 5.14 did), by the
//! kernel (which since wipes a deleted entry: nothing to find, and nothing invented), and in a public image
//! (e2fsprogs' `r_inline_xattr` test image, tests/data/ext-public/README.md).

#![cfg(unix)]

mod common;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use common::*;

/// (path, deleted) of every name `fls -r -p` lists (less TSK's `$OrphanFiles`), and the inode of each.
fn fls_names(img: &Path) -> HashMap<(String, bool), BTreeSet<String>> {
    let out = run_ok(tool("fls").args(["-r", "-p"]).arg(img));
    let mut m: HashMap<(String, bool), BTreeSet<String>> = HashMap::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((meta, name)) = l.split_once('\t') else {
            continue;
        };
        if name.starts_with("$OrphanFiles") {
            continue;
        }
        let ino = meta.rsplit(' ').next().unwrap().trim_end_matches(':');
        let ino = ino.split('(').next().unwrap().to_string();
        m.entry((format!("/{name}"), meta.contains('*')))
            .or_default()
            .insert(ino);
    }
    m
}

/// The names `debugfs -R "ls -d DIR"` lists in folder `dir`, `<inode>` for a deleted one: (name, inode, deleted).
fn debugfs_names(img: &Path, dir: &str) -> BTreeSet<(String, String, bool)> {
    let out = run_ok(
        tool("debugfs")
            .args(["-R", &format!("ls -d {dir}")])
            .arg(img),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut names = BTreeSet::new();
    // `12  (12) .    2  (1012) ..   <14> (20) gone.txt`: an inode, the entry's length, the name (none of the
    // names made here holds a space).
    let mut words = text.split_whitespace().peekable();
    while let Some(w) = words.next() {
        let Some(len) = words.peek() else { break };
        if !(len.starts_with('(') && len.ends_with(')')) {
            continue;
        }
        words.next();
        let Some(name) = words.next() else { break };
        let ino = w.trim_matches(['<', '>']).to_string();
        // An entry of the chain whose inode is 0 is deleted too (debugfs marks only those in slack).
        let deleted = w.starts_with('<') || ino == "0";
        if name != "." && name != ".." {
            names.insert((name.to_string(), ino, deleted));
        }
    }
    names
}

/// Each row of `uffs export --deleted`, by path (a path may be listed more than once: a name left in two places).
fn uffs_rows(img: &Path) -> HashMap<String, Vec<HashMap<String, String>>> {
    let mut m: HashMap<String, Vec<HashMap<String, String>>> = HashMap::new();
    for r in export(img, &["--deleted"]) {
        m.entry(r["path"].clone()).or_default().push(r);
    }
    m
}

/// Whether uffs lists `path` (deleted or not as `deleted`) with inode `ino` ("0": unknown, which uffs leaves empty).
fn lists(
    rows: &HashMap<String, Vec<HashMap<String, String>>>,
    path: &str,
    ino: &str,
    deleted: bool,
) -> bool {
    rows.get(path).is_some_and(|rs| {
        rs.iter().any(|r| {
            let record = if r["record"].is_empty() {
                "0"
            } else {
                &r["record"]
            };
            (r["deleted"] == "true") == deleted && record == ino
        })
    })
}

/// Every name fls and debugfs (in `folders`) list that uffs does not, for a failure message; fls's names that
/// are an htree's index read as names (`^`, or bytes no name has) are not asked for (see
/// `uffs_ext::dir::tests::an_htree_index_is_no_slack`), nor inodes fls reads from an index written over them
/// (`overwritten`: paths whose inode uffs gives as unknown); of debugfs's, those `made` says were names (it too
/// reads an htree's index as names).
fn missed(
    img: &Path,
    folders: &[&str],
    overwritten: &[&str],
    made: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let rows = uffs_rows(img);
    let mut missed = Vec::new();
    for ((path, deleted), inodes) in fls_names(img) {
        if path.ends_with('^') || path.chars().any(char::is_control) {
            continue;
        }
        for ino in inodes {
            let ino = if overwritten.contains(&path.as_str()) {
                "0".to_string()
            } else {
                ino
            };
            if !lists(&rows, &path, &ino, deleted) {
                missed.push(format!("fls: {path} inode {ino} deleted {deleted}"));
            }
        }
    }
    for dir in folders {
        for (name, ino, deleted) in debugfs_names(img, dir) {
            if !made(&name) {
                continue;
            }
            let path = format!("{}/{name}", dir.trim_end_matches('/'));
            // debugfs gives a deleted entry's inode as the entry holds it; uffs does too.
            let ino = if overwritten.contains(&path.as_str()) {
                "0".to_string()
            } else {
                ino
            };
            // A deleted copy of a live name (same folder, name and inode: an htree leaf's split left it) is that
            // live name, listed once (fls lists it once too).
            let copy = deleted && lists(&rows, &path, &ino, false);
            if !lists(&rows, &path, &ino, deleted) && !copy {
                missed.push(format!("debugfs: {path} inode {ino} deleted {deleted}"));
            }
        }
    }
    missed.sort();
    missed
}

/// The row of `path` from slack (`from_index_slack`), which must be the only kind of row it has when `only`.
fn slack_row<'a>(
    rows: &'a HashMap<String, Vec<HashMap<String, String>>>,
    path: &str,
) -> &'a HashMap<String, String> {
    rows.get(path)
        .and_then(|rs| rs.iter().find(|r| r["from_index_slack"] == "true"))
        .unwrap_or_else(|| panic!("{path} is not listed from slack: {:?}", rows.get(path)))
}

fn debugfs_script(img: &Path, script: &str, dir: &Path) {
    let file = dir.join("script");
    std::fs::write(&file, script).unwrap();
    let out = run_ok(tool("debugfs").arg("-w").arg("-f").arg(&file).arg(img));
    let err = String::from_utf8_lossy(&out.stderr);
    // debugfs reports a failed command on stderr and goes on.
    let failed: Vec<&str> = err
        .lines()
        .filter(|l| !l.starts_with("debugfs ") && !l.trim().is_empty())
        .collect();
    assert!(failed.is_empty(), "debugfs: {failed:?}");
}

/// The name of the first entry of block `n` of folder `dir` (a linear one).
fn first_name_of_block(img: &Path, dir: &str, n: usize) -> String {
    let out = run_ok(
        tool("debugfs")
            .args(["-R", &format!("blocks {dir}")])
            .arg(img),
    );
    let block: u64 = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .nth(n)
        .unwrap()
        .parse()
        .unwrap();
    let bytes = std::fs::read(img).unwrap();
    let at = (block * 1024) as usize;
    let len = usize::from(bytes[at + 6]);
    String::from_utf8(bytes[at + 8..at + 8 + len].to_vec()).unwrap()
}

/// Names left as e2fsprogs (and kernels before 5.14) leave them, in a linear folder of 1 KiB blocks.
#[test]
fn names_debugfs_leaves_as_tsk_and_debugfs_list_them() {
    let dir = scratch("ext-deleted-names");
    let img = dir.join("ext4.img");
    run_ok(
        tool("mkfs.ext4")
            .args(["-q", "-F", "-b", "1024", "-O", "^dir_index"])
            .arg(&img)
            .arg("8M"),
    );
    let src = dir.join("src.txt");
    std::fs::write(&src, "some bytes\n").unwrap();
    let src = src.display();
    let mut script = String::from("mkdir d\ncd d\n");
    for i in 0..80 {
        script += &format!("write {src} file-{i:03}.txt\n");
    }
    debugfs_script(&img, &script, &dir);
    // Inode 0: a block's first entry deleted (its inode cleared, its name kept).
    let first = first_name_of_block(&img, "/d", 1);
    let mut script = format!("cd d\nrm {first}\n");
    // Deleted, its inode free: a name in the slack of the one before, pointing at what the inode still holds.
    script += "rm file-010.txt\n";
    // Deleted, then their inodes taken by new files (the lowest free first: file-010's, then file-020's).
    script += "rm file-020.txt\n";
    script += &format!("write {src} a-new-file-with-a-name-too-long-for-any-slack.txt\n");
    // An editor's save: the new text written to a temporary name (taking file-020's inode), the old file removed,
    // the temporary renamed over it (debugfs renames as link and unlink; the new entry fills the slack file-010's
    // name was in): the temporary name stays, its inode the saved file's now, and so does the old file's name,
    // its inode freed.
    script += &format!("write {src} .fortune6.SwF87N\n");
    script += "rm file-030.txt\n";
    script += "ln .fortune6.SwF87N file-030.txt\n";
    script += "unlink .fortune6.SwF87N\n";
    debugfs_script(&img, &script, &dir);

    let missed = missed(&img, &["/d"], &[], &|_| true);
    assert!(missed.is_empty(), "{missed:#?}");
    let rows = uffs_rows(&img);
    let live = |path: &str| {
        rows[path]
            .iter()
            .find(|r| r["deleted"] == "false")
            .unwrap_or_else(|| panic!("{path} is not listed live"))["record"]
            .clone()
    };
    // Inode 0: listed from slack, with no record, no size and no times.
    let zero = slack_row(&rows, &format!("/d/{first}"));
    assert_eq!(
        (&*zero["record"], &*zero["size"], &*zero["allocated"]),
        ("", "0", "0")
    );
    // The names whose inode another file holds now: from slack, with the inode they named.
    let saved = live("/d/file-030.txt");
    let temp = slack_row(&rows, "/d/.fortune6.SwF87N");
    assert_eq!(
        temp["record"], saved,
        "the temporary named the saved file's inode"
    );
    assert_eq!(slack_row(&rows, "/d/file-020.txt")["record"], saved);
    // A freed inode's name keeps what the inode holds, not from slack: the saved file's old self.
    let old = rows["/d/file-030.txt"]
        .iter()
        .find(|r| r["deleted"] == "true")
        .expect("the old file-030.txt");
    assert!(old["from_index_slack"] == "false" && old["record"] != saved && old["size"] == "11");
    // Written over by the new entry: listed by none.
    assert!(!rows.contains_key("/d/file-010.txt"));

    // Never read as the file its inode is now.
    let cat = uffs()
        .args(["cat", "--deleted"])
        .arg(&img)
        .arg("/d/.fortune6.SwF87N")
        .output()
        .unwrap();
    assert!(
        !cat.status.success() && cat.stdout.is_empty(),
        "cat read a name from slack"
    );
    assert!(
        String::from_utf8_lossy(&cat.stderr).contains("slack"),
        "{}",
        String::from_utf8_lossy(&cat.stderr)
    );
    let hash = uffs()
        .args(["hash", "--deleted", "--source"])
        .arg(&img)
        .arg("SwF87N")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&hash.stderr);
    assert!(said.contains("slack"), "hash does not say why: {said}");
    assert!(
        !String::from_utf8_lossy(&hash.stdout).contains("SwF87N"),
        "hash read a name from slack"
    );
    // The saved file holds "some bytes": grep finds it under its live name, never under the name from slack.
    let grep = uffs()
        .args(["grep", "--deleted", "--source"])
        .arg(&img)
        .args(["some bytes", "file-030.txt | SwF87N"])
        .output()
        .unwrap();
    let (out, said) = (
        String::from_utf8_lossy(&grep.stdout),
        String::from_utf8_lossy(&grep.stderr),
    );
    assert!(out.contains("/d/file-030.txt:"), "{out}");
    assert!(
        !out.contains("SwF87N") && said.contains("slack"),
        "{out} / {said}"
    );

    // An index updated after more changes answers as a fresh one; the names from slack it keeps as its build
    // found them (as NTFS's: an update reads records, not folders' slack), so they are compared apart.
    let idx = dir.join("d.uffs");
    run_ok(
        uffs()
            .arg("index")
            .arg(&img)
            .arg("-o")
            .arg(&idx)
            .arg("--deleted"),
    );
    debugfs_script(
        &img,
        &format!("cd d\nrm file-060.txt\nrm file-061.txt\nwrite {src} later.txt\n"),
        &dir,
    );
    run_ok(
        uffs()
            .arg("index")
            .arg(&img)
            .arg("-o")
            .arg(&idx)
            .args(["--deleted", "--update"]),
    );
    let rows_of = |source: &Path, slack: bool| -> BTreeSet<String> {
        let mut v: Vec<String> = export(source, &["--deleted"])
            .into_iter()
            .filter(|r| (r["from_index_slack"] == "true") == slack)
            .map(|r| {
                format!(
                    "{} {} {} {}",
                    r["path"], r["record"], r["deleted"], r["size"]
                )
            })
            .collect();
        v.sort();
        v.into_iter().collect()
    };
    assert_eq!(
        rows_of(&idx, false),
        rows_of(&img, false),
        "updated and fresh differ"
    );
    let slack_before: BTreeSet<String> = rows
        .iter()
        .flat_map(|(p, rs)| rs.iter().map(move |r| (p, r)))
        .filter(|(_, r)| r["from_index_slack"] == "true")
        .map(|(p, r)| format!("{p} {} {} {}", r["record"], r["deleted"], r["size"]))
        .collect();
    assert_eq!(
        rows_of(&idx, true),
        slack_before,
        "the update lost or made names from slack"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The kernel wipes a deleted entry (Linux 5.14 and later): writes, a rename over a file, an editor's save and
/// deletions in one folder leave no name to find; uffs lists exactly what fls does, and invents none.
#[test]
fn changes_the_kernel_makes_leave_no_names_and_none_are_invented() {
    let dir = scratch("ext-deleted-kernel");
    let img = dir.join("ext4.img");
    run_ok(
        tool("mkfs.ext4")
            .args(["-q", "-F", "-b", "1024"])
            // A fixed hash seed: the same htree, split at the same names, on every run; with this one the splits
            // leave copies of live names that debugfs lists as deleted (about one seed in three does).
            .args(["-E", "hash_seed=e4452d0e-7681-483a-80aa-fca56825dd8c"])
            .arg(&img)
            .arg("8M"),
    );
    let made = changed_by_the_kernel(&img, &dir.join("mnt"), |mnt| {
        let d = mnt.join("d");
        std::fs::create_dir(&d)?;
        for i in 0..80 {
            std::fs::write(d.join(format!("file-{i:03}.txt")), format!("{i}\n"))?;
        }
        std::fs::write(d.join("target"), "old\n")?;
        std::fs::write(d.join(".target.swp"), "new\n")?;
        std::fs::rename(d.join(".target.swp"), d.join("target"))?;
        std::fs::write(d.join(".fortune6.SwF87N"), "saved\n")?;
        std::fs::rename(d.join(".fortune6.SwF87N"), d.join("fortune"))?;
        for i in (0..80).step_by(7) {
            std::fs::remove_file(d.join(format!("file-{i:03}.txt")))?;
        }
        Ok(())
    });
    if !made {
        return;
    }
    let rows = uffs_rows(&img);
    let fls: BTreeSet<(String, bool)> = fls_names(&img).into_keys().collect();
    let ours: BTreeSet<(String, bool)> = rows
        .iter()
        .filter(|(p, _)| *p != "/" && !p.starts_with("/$"))
        .flat_map(|(p, rs)| rs.iter().map(|r| (p.clone(), r["deleted"] == "true")))
        .collect();
    assert_eq!(ours, fls);
    assert!(!rows
        .values()
        .flatten()
        .any(|r| r["from_index_slack"] == "true"));
    // Of debugfs's names, those made here (it reads the htree's index as names too).
    let made = |n: &str| {
        ["target", ".target.swp", "fortune", ".fortune6.SwF87N"].contains(&n)
            || n.strip_prefix("file-")
                .and_then(|n| n.strip_suffix(".txt"))
                .is_some_and(|n| n.len() == 3)
    };
    let missed = missed(&img, &["/d"], &[], &made);
    assert!(missed.is_empty(), "{missed:#?}");
    let copies = debugfs_names(&img, "/d")
        .into_iter()
        .filter(|(name, ino, deleted)| *deleted && lists(&rows, &format!("/d/{name}"), ino, false))
        .count();
    assert!(
        copies > 0,
        "no copy of a live name to leave out: the test checks less than it says"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// e2fsprogs' `r_inline_xattr` test image (an ext3 of 2008 written by a kernel, the input of e2fsprogs' resize
/// test): its root holds deleted names of each kind: inode 0, freed inodes, and `file1`, an entry of the folder's
/// first block before it became an htree, whose inode field the index's last entry (block 2) was written over
/// (fls and debugfs read that block number as its inode; uffs gives its inode as unknown).
#[test]
fn a_public_image_s_deleted_names() {
    let dir = scratch("ext-deleted-public");
    let img = dir.join("r_inline_xattr.img");
    let raw = run_ok(
        tool("gzip")
            .arg("-dc")
            .arg(data("ext-public/e2fsprogs-r_inline_xattr.img.gz")),
    );
    std::fs::write(&img, raw.stdout).unwrap();
    let missed = missed(&img, &["/"], &["/file1"], &|_| true);
    assert!(missed.is_empty(), "{missed:#?}");
    let rows = uffs_rows(&img);
    let slack: BTreeSet<&str> = rows
        .iter()
        .filter(|(_, rs)| rs.iter().any(|r| r["from_index_slack"] == "true"))
        .map(|(p, _)| p.as_str())
        .collect();
    // Pinned: the names listed from slack (fls: `* 0:`, and file1).
    let want: BTreeSet<&str> = [
        "/file1", "/file22", "/file35", "/file36", "/file37", "/file40", "/file41", "/file45",
        "/file46", "/file47", "/file50", "/file51", "/file55", "/file60", "/file61",
    ]
    .into_iter()
    .collect();
    assert_eq!(slack, want);
    let file1 = slack_row(&rows, "/file1");
    assert_eq!((&*file1["record"], &*file1["kind"]), ("", "file"));
    // file35 is also the name of freed inode 46 (in the folder's other block): both are listed.
    assert!(lists(&rows, "/file35", "46", true));
    std::fs::remove_dir_all(&dir).ok();
}
