//! `uffs serve`: the HTTP API and web page (from `uffs_serve::http`), answering from the daemon or from an
//! index file or source this process opens.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use uffs_serve::http::{Options, Server};
use uffs_serve::Backend;

use crate::backend::{DaemonBackend, LocalBackend};

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// The address to listen on (port 0: any free port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7980")]
    pub bind: SocketAddr,
    /// Allow binding an address other than loopback (other machines can then reach the server; the token
    /// still guards it, but travels unencrypted).
    #[arg(long)]
    pub allow_remote: bool,
    /// Answer from this index file instead of the daemon.
    #[arg(long, value_name = "FILE", conflicts_with = "source")]
    pub index: Option<PathBuf>,
    /// Answer from this source (indexed first) instead of the daemon.
    #[arg(long, value_name = "SOURCE")]
    pub source: Option<String>,
    #[arg(long, value_name = "N", requires = "source")]
    pub partition: Option<u32>,
}

pub fn run(a: ServeArgs) -> Result<()> {
    let backend: Arc<dyn Backend> = match (&a.index, &a.source) {
        (Some(f), _) => {
            // Checked wholly once: the server answers many queries from it.
            let parts = crate::common::read_index_file(f)?;
            Arc::new(LocalBackend::new(
                f.display().to_string(),
                crate::common::searchers(parts),
            ))
        }
        (None, Some(s)) => {
            let parts = crate::common::load_indexes(s, a.partition, false)?;
            Arc::new(LocalBackend::new(
                s.clone(),
                crate::common::searchers(parts),
            ))
        }
        (None, None) => Arc::new(DaemonBackend::new()?),
    };
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
        match (&a.index, &a.source) {
            (Some(f), _) => f.display().to_string(),
            (None, Some(s)) => s.clone(),
            (None, None) => "the daemon".into(),
        },
        server.local_addr(),
        server.token_file().display()
    );
    server.run(backend)?;
    Ok(())
}
