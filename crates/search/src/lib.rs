//! One search request, one executor. The command line maps its flags into a [`SearchRequest`]; the daemon
//! protocol, the HTTP API and MCP carry it as JSON (`docs/protocol.md`); all of them run it with [`run`] over
//! their volumes, which prints its answer through the results layer ([`uffs_results::Printer`]). A feature that
//! changes what a search can ask is a field here, and every front end has it.
//!
//! - [`request`]: [`SearchRequest`] and its parts, the public JSON form with its version;
//! - [`compile`]: the request's filters as one `uffs_query::Expr`;
//! - [`execute`](mod@execute): search the volumes, merge and page the hits, print the rows or the count;
//! - [`contents`]: the data terms (`content:`, `type:`, `hash:`), split off and decided by a [`Contents`];
//! - `facets`: groups of the matches and their totals; `du`: folder sizes; `scope`: paths with their volume
//!   named (`C:\Windows`), each volume's own.

mod compile;
pub mod contents;
mod du;
pub mod execute;
mod facets;
pub mod request;
mod scope;

pub use compile::compile;
pub use contents::{ContentFilter, Contents};
pub use execute::{run, run_with};
pub use request::{Case, DuRequest, DuSort, Facet, Kind, SearchRequest, Sort, PROTOCOL_VERSION};
/// A request's `output`, from the results layer.
pub use uffs_results::{Format, OutputArgs};

use uffs_query::Searcher;

/// The volumes a search runs over: each one's path prefix (`C:`, or empty for a lone volume) and searcher. A
/// volume under a delta is two targets with the same prefix, the base and the delta, in that order.
pub type Targets<'a> = [(&'a str, &'a Searcher)];

/// Why a request was not answered.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request is wrong (a bad query, an unknown column, volume or folder): the message says what, and the
    /// client can correct it.
    #[error("{0}")]
    BadRequest(String),
    /// Anything else: reading an index failed, writing the answer failed.
    #[error("{0}")]
    Failed(String),
}

impl Error {
    /// Any error, as a failure of the search (not of the request), with its causes.
    pub fn failed(e: impl std::error::Error) -> Error {
        let mut msg = e.to_string();
        let mut cause = e.source();
        while let Some(c) = cause {
            msg += &format!(": {c}");
            cause = c.source();
        }
        Error::Failed(msg)
    }
}

impl From<uffs_results::Error> for Error {
    fn from(e: uffs_results::Error) -> Error {
        match e {
            uffs_results::Error::UnknownColumn(..) | uffs_results::Error::Unsupported(_) => {
                Error::BadRequest(e.to_string())
            }
            e => Error::failed(e),
        }
    }
}
