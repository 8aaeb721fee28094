//! A log writer that scrubs known secrets from every line before it is written.

use std::io::{self, Write};
use tracing_subscriber::fmt::MakeWriter;

/// Wraps a [`MakeWriter`]: each formatted event (one `write` call) has the
/// known secrets replaced before it reaches `inner`. The last line of
/// defence: whatever a dependency logs at any level, no known secret is written.
#[derive(Debug, Clone)]
pub struct ScrubbingWriter<M> {
    inner: M,
}

impl<M> ScrubbingWriter<M> {
    pub fn new(inner: M) -> ScrubbingWriter<M> {
        ScrubbingWriter { inner }
    }
}

/// One writer of [`ScrubbingWriter`].
pub struct Scrubbed<W> {
    inner: W,
}

impl<W: Write> Write for Scrubbed<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let scrubbed = super::scrub(&text);
        self.inner.write_all(scrubbed.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<'a, M> MakeWriter<'a> for ScrubbingWriter<M>
where
    M: MakeWriter<'a>,
{
    type Writer = Scrubbed<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        Scrubbed {
            inner: self.inner.make_writer(),
        }
    }
}
