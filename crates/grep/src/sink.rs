//! Two small `Sink`s for ripgrep's searcher: [`Counted`] passes everything to a printer's sink and counts the
//! matching lines (the summary printer does not say how many it saw), and [`FirstMatch`] stops the search at the
//! first matching line, for `is_match`.

use std::io;

use grep_searcher::{Searcher, Sink, SinkContext, SinkFinish, SinkMatch};

/// A printer's sink, and the number of matching lines the searcher reported to it.
pub(crate) struct Counted<S> {
    pub(crate) inner: S,
    pub(crate) lines: u64,
}

impl<S: Sink> Sink for Counted<S> {
    type Error = S::Error;

    fn matched(&mut self, searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, S::Error> {
        self.lines += mat.lines().count() as u64;
        self.inner.matched(searcher, mat)
    }

    fn context(&mut self, searcher: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, S::Error> {
        self.inner.context(searcher, ctx)
    }

    fn context_break(&mut self, searcher: &Searcher) -> Result<bool, S::Error> {
        self.inner.context_break(searcher)
    }

    fn binary_data(&mut self, searcher: &Searcher, offset: u64) -> Result<bool, S::Error> {
        self.inner.binary_data(searcher, offset)
    }

    fn begin(&mut self, searcher: &Searcher) -> Result<bool, S::Error> {
        self.inner.begin(searcher)
    }

    fn finish(&mut self, searcher: &Searcher, finish: &SinkFinish) -> Result<(), S::Error> {
        self.inner.finish(searcher, finish)
    }
}

/// Whether a line matched; the search stops at the first.
#[derive(Default)]
pub(crate) struct FirstMatch {
    pub(crate) matched: bool,
}

impl Sink for FirstMatch {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, _: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.matched = true;
        Ok(false)
    }
}
