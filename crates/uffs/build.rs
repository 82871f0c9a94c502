//! Links the `uffs` executable at a fixed address on x86-64 Linux with glibc. The code stays position
//! independent; only the executable is not: the linker then fills in the 34,000 pointers of its tables
//! (vtables, panic locations, string constants), which a position-independent executable has the dynamic loader
//! write at every start, copying the ~130 pages that hold them. That was a third of a one-shot query's time
//! (`uffs --version`: 2.7 -> 1.5 ms of CPU). The price is that the executable's own code and data are not placed
//! at random (its libraries, heap, stack and mappings still are): uffs is written in Rust, and the daemon takes
//! requests only from its own user.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("TARGET").as_deref() == Ok("x86_64-unknown-linux-gnu") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
