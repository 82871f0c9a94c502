//! How fast uffs-hash hashes, to set against how fast a disk reads: each algorithm alone and the sets a run asks
//! for, on one core and on every core, against md5sum/sha1sum/sha256sum/hashdeep (and xxhsum if present)
//! hashing the same bytes from the page cache, measured in one run.
//!
//!     cargo run --release -p uffs-hash --example throughput [MIB]
//!
//! MB is 10^6 bytes. The buffer (default 512 MiB) is hashed in 1 MiB pieces, as the content reader hands data
//! over; each figure is the best of three runs. On one core the rate is of CPU time (user + system, the
//! peers' included), which a machine shared with other work disturbs far less than the clock; on every core it
//! is of the clock. The peers' input file is written under target/ and removed.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use uffs_hash::{Algos, Hasher};

const PIECE: usize = 1 << 20;

fn noise(len: usize) -> Vec<u8> {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        out.extend_from_slice(&seed.to_le_bytes());
    }
    out.truncate(len);
    out
}

fn best_of_3(mut f: impl FnMut()) -> Duration {
    (0..3)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap()
}

/// CPU time (user + system) of this process (`children` false) or of its waited-for children.
#[cfg(unix)]
fn cpu(children: bool) -> Duration {
    let who = if children {
        libc::RUSAGE_CHILDREN
    } else {
        libc::RUSAGE_SELF
    };
    // SAFETY: getrusage writes one rusage into the zeroed struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// The least CPU time of three runs of `f` (the clock where CPU time cannot be read).
fn best_cpu_of_3(children: bool, mut f: impl FnMut()) -> Duration {
    (0..3)
        .map(|_| {
            #[cfg(unix)]
            {
                let before = cpu(children);
                f();
                cpu(children) - before
            }
            #[cfg(not(unix))]
            {
                let _ = children;
                let t = Instant::now();
                f();
                t.elapsed()
            }
        })
        .min()
        .unwrap()
}

fn mbps(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

fn hash_all(algos: Algos, data: &[u8]) {
    let mut h = Hasher::new(algos);
    for piece in data.chunks(PIECE) {
        h.update(piece);
    }
    std::hint::black_box(h.finish());
}

fn main() {
    let mib: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("MiB"))
        .unwrap_or(512);
    let data = noise(mib << 20);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "{mib} MiB in {} KiB pieces, best of 3; {threads} cores",
        PIECE >> 10
    );
    println!(
        "{:<24} {:>18} {:>22}",
        "algorithms",
        "1 core MB/s (CPU)",
        format!("{threads} cores MB/s (clock)")
    );

    let sets = [
        "md5",
        "sha1",
        "sha256",
        "xxh3",
        "md5,sha256",
        "md5,sha1,sha256",
        "md5,sha1,sha256,xxh3",
    ];
    let mut one_core = Vec::new();
    for s in sets {
        let algos = Algos::parse(s).unwrap();
        let single = best_cpu_of_3(false, || hash_all(algos, &data));
        // Every core hashing its own stream (its own file), as the content reader's workers do.
        let per = data.len() / threads;
        let multi = best_of_3(|| {
            std::thread::scope(|sc| {
                for part in data.chunks(per) {
                    sc.spawn(move || hash_all(algos, part));
                }
            })
        });
        println!(
            "{s:<24} {:>18.0} {:>22.0}",
            mbps(data.len(), single),
            mbps(data.len(), multi)
        );
        one_core.push((s, single));
    }
    let alone: Duration = ["md5", "sha1", "sha256"]
        .iter()
        .map(|s| one_core.iter().find(|(n, _)| n == s).unwrap().1)
        .sum();
    let together = one_core
        .iter()
        .find(|(n, _)| *n == "md5,sha1,sha256")
        .unwrap()
        .1;
    println!(
        "md5+sha1+sha256: one pass {:.2} s, three passes {:.2} s (CPU; {:.2}x)",
        together.as_secs_f64(),
        alone.as_secs_f64(),
        alone.as_secs_f64() / together.as_secs_f64()
    );

    // The peers, on the same bytes from the page cache (read once first to warm it).
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/uffs-hash-throughput.bin");
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(&data))
        .expect("writing the peers' input");
    let _ = std::fs::read(&path);
    println!("\npeers on the same {mib} MiB from the page cache (one core each, CPU time):");
    println!(
        "{:<28} {:>10} {:>16}",
        "command", "MB/s", "uffs-hash speedup"
    );
    let peers: [(&str, &[&str], &str); 6] = [
        ("md5sum", &[], "md5"),
        ("sha1sum", &[], "sha1"),
        ("sha256sum", &[], "sha256"),
        ("hashdeep", &["-c", "md5,sha256"], "md5,sha256"),
        ("hashdeep", &["-c", "md5,sha1,sha256"], "md5,sha1,sha256"),
        ("xxhsum", &["-H3"], "xxh3"),
    ];
    for (tool, args, ours) in peers {
        let run = || {
            Command::new(tool)
                .args(args)
                .arg(&path)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
        };
        if run().map(|s| !s.success()).unwrap_or(true) {
            println!(
                "{:<28} {:>10}",
                format!("{tool} {}", args.join(" ")),
                "absent"
            );
            continue;
        }
        let theirs = best_cpu_of_3(true, || {
            run().unwrap();
        });
        let mine = one_core.iter().find(|(n, _)| *n == ours).unwrap().1;
        println!(
            "{:<28} {:>10.0} {:>16.2}",
            format!("{tool} {}", args.join(" ")),
            mbps(data.len(), theirs),
            theirs.as_secs_f64() / mine.as_secs_f64()
        );
    }
    let _ = std::fs::remove_file(&path);
}
