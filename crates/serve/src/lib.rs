//! uffs's network front ends, above the daemon client: the MCP server (`uffs mcp` on stdio, and under
//! `uffs serve` as streamable HTTP) and the HTTP API with its web page (`uffs serve`).
//!
//! Both answer through a [`Backend`]: the daemon, or indexes the serving process holds itself. Each builds a
//! [`uffs_search::SearchRequest`] from its parameters, so every front end runs the same search and prints rows
//! through the same results layer as the command line.

pub mod backend;
pub mod http;
pub mod mcp;

pub use backend::{Backend, Error, GrepAnswer, GrepLine, GrepRequest, Stop, StopOnDrop};
