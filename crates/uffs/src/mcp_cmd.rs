//! `uffs mcp`: the MCP server (`uffs_serve::mcp`) on stdin and stdout.

use anyhow::{Context, Result};

use crate::backend::BackendArgs;

#[derive(clap::Args, Debug)]
pub struct McpArgs {
    #[command(flatten)]
    pub from: BackendArgs,
}

pub fn run(a: &McpArgs) -> Result<()> {
    let backend = a.from.open()?;
    // stdout carries the protocol: whatever else is said goes to stderr.
    eprintln!("uffs mcp: answering from {} on stdio", a.from.describe());
    uffs_serve::mcp::serve_stdio(backend).context("serving MCP on stdio")
}
