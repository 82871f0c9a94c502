//! The daemon commands where the daemon does not run yet: everywhere but Unix (the Windows named pipe is still
//! to be written). Every command says so; searching with `--index` or `--source` works everywhere.

use anyhow::{bail, Result};

use crate::query_cmd::SearchArgs;

const WHY: &str =
    "the uffs daemon runs only on Unix so far; search an index or a source with --index FILE or \
--source SOURCE";

pub fn query(_: &SearchArgs) -> Result<bool> {
    bail!("{WHY}")
}
pub fn start() -> Result<()> {
    bail!("{WHY}")
}
pub fn stop() -> Result<()> {
    bail!("{WHY}")
}
pub fn status(_: bool) -> Result<()> {
    bail!("{WHY}")
}
pub fn run_foreground() -> Result<()> {
    bail!("{WHY}")
}
pub fn volumes_add(_: &[String], _: Option<String>, _: Option<u32>, _: bool) -> Result<()> {
    bail!("{WHY}")
}
pub fn volumes_list(_: bool) -> Result<()> {
    bail!("{WHY}")
}
pub fn volumes_remove(_: &[String]) -> Result<()> {
    bail!("{WHY}")
}
