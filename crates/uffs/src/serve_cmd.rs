//! `uffs serve`: the HTTP API and web page (from `uffs_serve::http`), answering from the daemon or from an
//! index file or source this process opens.

use std::io::Write;
use std::net::SocketAddr;

use anyhow::Result;
use uffs_serve::http::{Options, Server};

use crate::backend::BackendArgs;

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// The address to listen on (port 0: any free port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7980")]
    pub bind: SocketAddr,
    /// Allow binding an address other than loopback (other machines can then reach the server; the token
    /// still guards it, but travels unencrypted).
    #[arg(long)]
    pub allow_remote: bool,
    #[command(flatten)]
    pub from: BackendArgs,
}

pub fn run(a: ServeArgs) -> Result<()> {
    let backend = a.from.open()?;
    let server = Server::bind(&Options {
        bind: a.bind,
        allow_remote: a.allow_remote,
        runtime_dir: uffs_daemon::dirs::runtime_dir()?,
    })?;
    // The URL first, alone on its line: scripts and tests read it.
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", server.url())?;
        out.flush()?;
    }
    if !server.local_addr().ip().is_loopback() {
        eprintln!(
            "uffs serve: warning: listening on {}, which other machines may reach; the token guards it, but HTTP is not encrypted",
            server.local_addr()
        );
    }
    eprintln!(
        "uffs serve: answering from {} on http://{} (token in {}); Ctrl-C stops",
        a.from.describe(),
        server.local_addr(),
        server.token_file().display()
    );
    server.run(backend)?;
    Ok(())
}
