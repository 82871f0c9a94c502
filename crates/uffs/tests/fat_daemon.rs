//! The daemon keeps FAT32, exFAT and ext4 volumes current: each registered (with deleted entries), changed at
//! random by the real tools (mtools; the exfat-fuse mount; the kernel's ext4 driver on a loop mount), refreshed as
//! a delta, and after every round the daemon's answers equal those of a fresh index of the changed image.

#![cfg(unix)]

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::daemon::World;
use common::fatvol::*;
use common::*;

/// What the volume holds, as the test changed it.
struct Model {
    files: Vec<String>,
    dirs: Vec<String>,
    n: usize,
}

impl Model {
    fn new() -> Model {
        Model {
            files: tree()
                .into_iter()
                .map(|(p, _)| p)
                .filter(|p| {
                    !p.starts_with("to delete")
                        && p != "doomed.txt"
                        && p != "old name.txt"
                        && !["0", "2", "4", "6"]
                            .iter()
                            .any(|i| p == &format!("frag/piece{i}.bin"))
                })
                .collect(),
            dirs: vec![
                "deep".into(),
                "deep/level1".into(),
                "deep/level1/level2".into(),
                "deep/level1/level2/level3".into(),
                "frag".into(),
            ],
            n: 0,
        }
    }

    /// A parent folder ("" the root).
    fn dir(&self, rng: &mut Rng) -> String {
        let i = rng.below(self.dirs.len() + 1);
        self.dirs.get(i).cloned().unwrap_or_default()
    }

    fn fresh_name(&mut self, rng: &mut Rng) -> String {
        self.n += 1;
        let names = ["new file", "Ünï", "日本", "x"];
        format!("{} {}", names[rng.below(names.len())], self.n)
    }
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// One change through `apply`, which is given (operation, paths) and does it with the platform's tool.
#[derive(Debug)]
enum Op {
    Create(String, Vec<u8>),
    Delete(String),
    Rename(String, String),
    MoveFile(String, String),
    Mkdir(String),
    RmTree(String),
    Append(String, Vec<u8>),
}

fn random_op(m: &mut Model, rng: &mut Rng) -> Op {
    loop {
        match rng.below(7) {
            0 => {
                let d = m.dir(rng);
                let p = join(&d, &format!("{}.txt", m.fresh_name(rng)));
                m.files.push(p.clone());
                let len = rng.below(9000);
                return Op::Create(p, pattern(len, rng.next() as u8));
            }
            1 if !m.files.is_empty() => {
                let p = m.files.remove(rng.below(m.files.len()));
                return Op::Delete(p);
            }
            2 if !m.files.is_empty() => {
                let i = rng.below(m.files.len());
                let old = m.files[i].clone();
                let dir = old.rsplit_once('/').map(|x| x.0).unwrap_or("");
                let new = join(dir, &format!("{} renamed.txt", m.fresh_name(rng)));
                m.files[i] = new.clone();
                return Op::Rename(old, new);
            }
            3 if !m.files.is_empty() => {
                let i = rng.below(m.files.len());
                let old = m.files[i].clone();
                let name = old.rsplit('/').next().unwrap().to_string();
                let d = m.dir(rng);
                let new = join(&d, &name);
                if new == old || m.files.contains(&new) {
                    continue;
                }
                m.files[i] = new.clone();
                return Op::MoveFile(old, new);
            }
            4 => {
                let d = m.dir(rng);
                let p = join(&d, &format!("{} dir", m.fresh_name(rng)));
                m.dirs.push(p.clone());
                return Op::Mkdir(p);
            }
            5 if m.dirs.len() > 4 => {
                let p = m.dirs[rng.below(m.dirs.len())].clone();
                let pre = format!("{p}/");
                m.dirs.retain(|d| d != &p && !d.starts_with(&pre));
                m.files.retain(|f| !f.starts_with(&pre));
                return Op::RmTree(p);
            }
            6 if !m.files.is_empty() => {
                let p = m.files[rng.below(m.files.len())].clone();
                let len = 1 + rng.below(6000);
                return Op::Append(p, pattern(len, 3));
            }
            _ => {}
        }
    }
}

/// The change made with mtools on a FAT image.
fn apply_fat(img: &Path, t: &Tmp, op: &Op) {
    let at = |p: &str| format!("::/{p}");
    let local = t.path("piece");
    match op {
        Op::Create(p, b) => {
            std::fs::write(&local, b).unwrap();
            mtools("mcopy", img, &[path_str(&local), &at(p)]);
        }
        Op::Delete(p) => mtools("mdel", img, &[&at(p)]),
        Op::Rename(a, b) => {
            let name = b.rsplit('/').next().unwrap();
            mtools("mren", img, &[&at(a), name]);
        }
        Op::MoveFile(a, b) => mtools("mmove", img, &[&at(a), &at(b)]),
        Op::Mkdir(p) => mtools("mmd", img, &[&at(p)]),
        Op::RmTree(p) => mtools("mdeltree", img, &[&at(p)]),
        Op::Append(p, more) => {
            // mtools cannot append: the file is read back, grown and written over itself.
            let mut b = out("mtype", &["-i", path_str(img), &at(p)]);
            b.extend_from_slice(more);
            std::fs::write(&local, b).unwrap();
            mtools("mcopy", img, &["-o", path_str(&local), &at(p)]);
        }
    }
}

/// The change made through the mounted exFAT volume.
fn apply_mount(root: &Path, op: &Op) {
    use std::io::Write;
    match op {
        Op::Create(p, b) => std::fs::write(root.join(p), b).unwrap(),
        Op::Delete(p) => std::fs::remove_file(root.join(p)).unwrap(),
        Op::Rename(a, b) | Op::MoveFile(a, b) => {
            std::fs::rename(root.join(a), root.join(b)).unwrap()
        }
        Op::Mkdir(p) => std::fs::create_dir(root.join(p)).unwrap(),
        Op::RmTree(p) => std::fs::remove_dir_all(root.join(p)).unwrap(),
        Op::Append(p, more) => std::fs::OpenOptions::new()
            .append(true)
            .open(root.join(p))
            .unwrap()
            .write_all(more)
            .unwrap(),
    }
}

const COLUMNS: &str = "path,kind,size,modified,attributes,mode,uid,gid,link_target";

/// The answer, as a set of CSV lines with `NAME:` left off the paths.
fn answer(o: &std::process::Output, prefix: &str) -> BTreeSet<String> {
    assert!(
        o.status.code().unwrap_or(9) < 2,
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .skip(1)
        .map(|l| l.replacen(prefix, "", 1))
        .collect()
}

fn check(w: &World, name: &str, img: &Path, round: usize) {
    // Every entry; and those a `~` finds, which on FAT are the ones whose 8.3 alias (`NEWFIL~1`) has it.
    for (query, deleted) in [("*", false), ("*", true), ("~", false)] {
        let mut args = vec![
            query,
            "--volume",
            name,
            "--format",
            "csv",
            "--columns",
            COLUMNS,
        ];
        if deleted {
            args.push("--deleted");
        }
        let got = answer(&w.run(&args), &format!("{name}:"));
        let mut fresh = uffs();
        fresh
            .args([query, "--source", path_str(img), "--format", "csv"])
            .args(["--columns", COLUMNS]);
        if deleted {
            fresh.arg("--deleted");
        }
        let want = answer(&fresh.output().unwrap(), "");
        // Every entry is more than the root and metadata; after a round of changes, FAT has aliases with `~`.
        let enough = match query {
            "*" => 3,
            _ if name == "fatvol" && round > 0 => 0,
            _ => usize::MAX,
        };
        assert!(
            enough == usize::MAX || want.len() > enough,
            "{name}, round {round}, {query}: {want:?}"
        );
        let only_daemon: Vec<_> = got.difference(&want).collect();
        let only_fresh: Vec<_> = want.difference(&got).collect();
        assert!(
            only_daemon.is_empty() && only_fresh.is_empty(),
            "{name}, round {round}, {query} deleted {deleted}: only the daemon: {only_daemon:#?}\nonly a fresh index: {only_fresh:#?}\nlog:\n{}",
            w.log()
        );
    }
}

/// An ext4 image of the same tree, written by `mkfs.ext4 -d`.
fn build_ext4(t: &Tmp) -> std::path::PathBuf {
    let src = t.path("ext-tree");
    for (p, b) in tree() {
        let f = src.join(&p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, b).unwrap();
    }
    let img = t.path("ext4.img");
    run_ok(
        std::process::Command::new("mkfs.ext4")
            .args(["-q", "-F", "-d"])
            .arg(&src)
            .arg(&img)
            .arg("16M"),
    );
    img
}

/// Runs `f` on the ext4 image mounted through a loop device by the kernel; false when it cannot be mounted here.
fn with_ext_mount(img: &Path, dir: &Path, f: impl FnOnce(&Path)) -> bool {
    std::fs::create_dir_all(dir).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-o", "loop"])
        .arg(img)
        .arg(dir)
        .status()
        .is_ok_and(|s| s.success());
    if mounted {
        f(dir);
        run_ok(std::process::Command::new("umount").arg(dir));
    }
    mounted
}

#[test]
fn daemon_follows_random_changes_to_fat32_exfat_and_ext4_as_a_fresh_index() {
    let t = Tmp::new("daemon");
    let fat = build_fat(&t, 32);
    let Some(ex) = build_exfat(&t) else { return };
    let ext = build_ext4(&t);
    if !with_ext_mount(&ext, &t.path("ext-mnt"), |_| {}) {
        cannot_run("mounting an ext4 image through a loop device (needs root and the ext4 driver)");
        return;
    }
    let w = World::new("fatvols");
    for (img, name) in [(&fat, "fatvol"), (&ex, "exvol"), (&ext, "extvol")] {
        w.ok(&[
            "volumes",
            "add",
            path_str(img),
            "--name",
            name,
            "--deleted",
            "--refresh",
            "never",
        ]);
    }
    w.start();
    w.wait_ready(60);
    check(&w, "fatvol", &fat, 0);
    check(&w, "exvol", &ex, 0);
    check(&w, "extvol", &ext, 0);

    let mut rng = Rng(0x5eed_fa7d_2026);
    let (mut mf, mut me, mut mx) = (Model::new(), Model::new(), Model::new());
    for round in 1..=6 {
        for _ in 0..8 {
            let op = random_op(&mut mf, &mut rng);
            apply_fat(&fat, &t, &op);
        }
        let m = Mount::new(&ex, &t.path("mnt")).expect("mount the exFAT volume");
        for _ in 0..8 {
            let op = random_op(&mut me, &mut rng);
            apply_mount(&m.dir, &op);
        }
        m.unmount();
        with_ext_mount(&ext, &t.path("ext-mnt"), |root| {
            for _ in 0..8 {
                let op = random_op(&mut mx, &mut rng);
                apply_mount(root, &op);
            }
            // What only ext keeps: a file's permissions and owner changed, a symlink made.
            if !mx.files.is_empty() {
                use std::os::unix::fs::PermissionsExt;
                let f = root.join(&mx.files[rng.below(mx.files.len())]);
                let mode = 0o600 | (rng.below(0o100) as u32);
                std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
                std::os::unix::fs::chown(&f, Some(1000 + round as u32), Some(round as u32))
                    .unwrap();
            }
            std::os::unix::fs::symlink(
                format!("target {round}"),
                root.join(format!("link {round}")),
            )
            .unwrap();
        });
        for name in ["fatvol", "exvol", "extvol"] {
            let r = w.ok(&["volumes", "refresh", name]);
            assert!(
                r.contains("applied") && r.contains("delta") && !r.contains("rebuil"),
                "{name}, round {round}: not a delta: {r}"
            );
        }
        check(&w, "fatvol", &fat, round);
        check(&w, "exvol", &ex, round);
        check(&w, "extvol", &ext, round);
    }
}
