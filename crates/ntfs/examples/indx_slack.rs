//! Lists the names in the slack of a folder's `$I30` index blocks: `indx_slack BLOCKS RECORD SEQUENCE [SIZE]`,
//! where BLOCKS is the folder's `$INDEX_ALLOCATION` as `icat VOLUME RECORD-160` writes it and SIZE the index
//! block size (4096 unless told). One line per name: the block, the file reference if its entry header survives,
//! and the name. A developer's probe of `uffs_ntfs::indx` on real volumes.

use uffs_ntfs::indx::{slack_names, Node};
use uffs_ntfs::record::{apply_fixups, FileRef};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: indx_slack BLOCKS RECORD SEQUENCE [SIZE]");
        std::process::exit(2);
    }
    let bytes = std::fs::read(&args[1]).expect("reading BLOCKS");
    let folder = FileRef::new(
        args[2].parse().expect("RECORD"),
        args[3].parse().expect("SEQUENCE"),
    );
    let size: usize = args.get(4).map_or(4096, |s| s.parse().expect("SIZE"));
    let latest = 134_500_000_000_000_000; // 2027
    for (i, chunk) in bytes.chunks_exact(size).enumerate() {
        let mut block = chunk.to_vec();
        if apply_fixups(&mut block).is_err() {
            continue;
        }
        let Ok(node) = Node::block(&block) else {
            continue;
        };
        for s in slack_names(&node, folder, latest) {
            let name = uffs_ntfs::utf16::decode(s.key.name);
            let file = s.file.map_or("-".to_string(), |f| {
                format!("{}-{}", f.record(), f.sequence())
            });
            println!("{i}\t{file}\t{name}");
        }
    }
}
