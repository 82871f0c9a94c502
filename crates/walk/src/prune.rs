//! What a walk does not enter: pseudo file systems (never), and updatedb's prune rules (`PRUNEPATHS`, `PRUNEFS`,
//! `PRUNENAMES` of `updatedb.conf`), with the values Debian's plocate ships as defaults. A pruned folder is
//! listed; what is in it is not. The folder a walk is given is walked whatever the rules say of it.

/// File systems whose entries are the kernel's state, not files: never walked.
const PSEUDO: &[&str] = &[
    "proc",
    "sysfs",
    "cgroup",
    "cgroup2",
    "devpts",
    "debugfs",
    "tracefs",
    "securityfs",
    "bpf",
    "pstore",
    "configfs",
    "fusectl",
    "mqueue",
    "binfmt_misc",
    "autofs",
    "efivarfs",
    "selinuxfs",
    "nsfs",
    "rpc_pipefs",
    "hugetlbfs",
    "devtmpfs",
];

/// Whether file system type `fstype` (as the mount table names it) is a pseudo file system.
pub fn is_pseudo(fstype: &str) -> bool {
    PSEUDO.contains(&fstype)
}

/// updatedb's prune rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prune {
    /// Absolute folders not entered (`PRUNEPATHS`).
    pub paths: Vec<String>,
    /// File system types not entered when a walk crosses into them (`PRUNEFS`, matched without regard to case).
    pub filesystems: Vec<String>,
    /// Folder names not entered wherever they are (`PRUNENAMES`).
    pub names: Vec<String>,
}

impl Prune {
    /// The rules of the `updatedb.conf` Debian's plocate installs.
    pub fn updatedb() -> Prune {
        let words = |s: &str| s.split_whitespace().map(str::to_string).collect();
        Prune {
            paths: words(
                "/tmp /var/spool /media /var/lib/os-prober /var/lib/ceph /home/.ecryptfs /var/lib/schroot",
            ),
            filesystems: words(
                "NFS afs autofs binfmt_misc ceph cgroup cgroup2 cifs coda configfs curlftpfs debugfs devfs devpts \
                 devtmpfs ecryptfs ftpfs fuse.ceph fuse.cryfs fuse.encfs fuse.glusterfs fuse.gocryptfs \
                 fuse.gvfsd-fuse fuse.mfs fuse.rclone fuse.rozofs fuse.sshfs fusectl fusesmb hugetlbfs iso9660 \
                 lustre lustre_lite mfs mqueue ncpfs nfs nfs4 ocfs2 proc pstore rpc_pipefs securityfs shfs smbfs \
                 sysfs tmpfs tracefs udev udf usbfs",
            ),
            names: words(".git .bzr .hg .svn"),
        }
    }

    /// No rule at all.
    pub fn none() -> Prune {
        Prune::default()
    }

    /// Whether a folder named `name` at `path` (absolute) is left unentered.
    pub fn folder(&self, path: &[u8], name: &[u8]) -> bool {
        self.names.iter().any(|n| n.as_bytes() == name)
            || self
                .paths
                .iter()
                .any(|p| p.trim_end_matches('/').as_bytes() == path)
    }

    /// Whether a walk that crosses into a file system of type `fstype` leaves it unentered.
    pub fn filesystem(&self, fstype: &str) -> bool {
        is_pseudo(fstype)
            || self
                .filesystems
                .iter()
                .any(|f| f.eq_ignore_ascii_case(fstype))
    }

    /// What `uffs info` says of the rules.
    pub fn facts(&self) -> Vec<(String, String)> {
        let list = |v: &[String]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(" ")
            }
        };
        vec![
            ("Pruned paths".into(), list(&self.paths)),
            ("Pruned names".into(), list(&self.names)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        let p = Prune::updatedb();
        assert!(p.folder(b"/home/ana/src/.git", b".git"));
        assert!(p.folder(b"/tmp", b"tmp"));
        assert!(!p.folder(b"/home/ana/tmp", b"tmp"));
        assert!(p.filesystem("NFS") && p.filesystem("tmpfs") && p.filesystem("proc"));
        assert!(!p.filesystem("xfs"));
        assert!(
            Prune::none().filesystem("sysfs"),
            "pseudo file systems are never walked"
        );
        assert!(!Prune::none().folder(b"/tmp", b"tmp"));
    }
}
