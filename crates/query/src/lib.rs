//! The uffs query language (Everything's syntax where it overlaps): parsed to an [`Expr`], planned so each term
//! uses the cheapest matcher, executed over an [`uffs_index::Index`] on all cores.

pub mod ast;
pub mod bitset;
mod dates;
mod error;
pub mod facets;
mod glob;
pub mod parse;
pub mod path_blocks;
pub mod reference;
pub mod search;
pub mod sql;
pub mod usage;

/// The longest parent walk the reference matcher takes (paths are far shorter; a damaged index may loop).
const MAX_WALK: usize = uffs_index::MAX_DEPTH;

pub use ast::Expr;
pub use bitset::Bitset;
pub use error::QueryError;
pub use parse::{parse, ParseOptions};
pub use search::{SearchOptions, Searcher, SortKey};
