//! The uffs query language (Everything's syntax where it overlaps): parsed to an [`Expr`], planned so each term
//! uses the cheapest matcher, executed over an [`uffs_index::Index`] on all cores.

pub mod ast;
mod dates;
mod error;
pub mod parse;

pub use ast::Expr;
pub use error::QueryError;
pub use parse::{parse, ParseOptions};
