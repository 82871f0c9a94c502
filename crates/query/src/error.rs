use std::ops::Range;

use thiserror::Error;

/// A query that cannot be parsed: what is wrong and which part of the query text it is about.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct QueryError {
    pub message: String,
    /// Byte range of the offending term in the query.
    pub span: Range<usize>,
}

impl QueryError {
    pub(crate) fn new(message: impl Into<String>, span: Range<usize>) -> QueryError {
        QueryError {
            message: message.into(),
            span,
        }
    }

    /// The message with the query underneath and the offending part marked:
    ///
    /// ```text
    /// unknown size unit "xb" (use b, kb, mb, gb or tb)
    ///   foo size:>10xb
    ///       ^^^^^^^^^^
    /// ```
    pub fn render(&self, query: &str) -> String {
        let start = query
            .get(..self.span.start)
            .map_or(0, |s| s.chars().count());
        let width = query
            .get(self.span.clone())
            .map_or(1, |s| s.chars().count())
            .max(1);
        format!(
            "{}\n  {}\n  {}{}",
            self.message,
            query,
            " ".repeat(start),
            "^".repeat(width)
        )
    }
}
