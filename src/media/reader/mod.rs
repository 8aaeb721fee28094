//! The document reader: a PDF's text is extracted by a process of its own —
//! this binary again, as `switchboard extract-document` — so a document that
//! crashes the parser (a stack overflow aborts a process, and no unwinding
//! catches it) or runs away with memory or time costs that process, never
//! the gateway. The process starts with its address space and CPU time
//! limited, no environment, no descriptor but its pipes and no
//! capabilities; it confines itself further (`child`); the gateway kills it
//! past the wall-time limit and reads no more than the text cap from it.

mod child;

#[cfg(test)]
pub(crate) use child::STACK;
pub use child::{serve, ProcessLimits};

use super::config::ReaderConfig;
use super::document::{Text, MAX_TEXT_CHARS};
use super::pdf::{Limits, Refusal};
use crate::text::human_size;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::Semaphore;

/// The hidden subcommand the reader runs as.
pub const SUBCOMMAND: &str = "extract-document";
/// Readers running at once; more documents wait their turn.
const READERS_AT_ONCE: usize = 2;
/// What is kept of the reader's standard error (for the log).
const STDERR_CAP: usize = 4 << 10;
/// The reader's exit status when it refused the document itself.
pub(crate) const REFUSED_EXIT: u8 = 2;

/// Runs the document reader process for each PDF.
#[derive(Debug, Clone)]
pub struct DocumentReader {
    program: Option<PathBuf>,
    memory: u64,
    timeout: Duration,
    limits: Limits,
    slots: Arc<Semaphore>,
}

/// Why a document's text was not read, worded for the user (after "could
/// not read its text (…)").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("it is encrypted")]
    Encrypted,
    #[error("its structure nests more than {0} levels deep")]
    TooDeep(usize),
    #[error("it has more than {} objects", crate::text::grouped(*.0 as usize))]
    TooManyObjects(u64),
    #[error("its contents expand to more than {}", human_size(*.0))]
    TooLarge(u64),
    #[error("it is damaged or not a PDF I can read")]
    Unreadable,
    #[error("reading it took longer than {} s", .0.as_secs())]
    TimedOut(Duration),
    #[error("reading it needed more than {} of memory", human_size(*.0))]
    OutOfMemory(u64),
    #[error("the reader stopped on it, so it is probably damaged")]
    Crashed,
    #[error("documents cannot be read on this server right now")]
    Unavailable,
}

/// The binary this process runs, to be started again as the reader:
/// `/proc/self/exe` where there is one (it stays this binary after an
/// upgrade replaced the file), else its path.
pub fn own_binary() -> Option<PathBuf> {
    let proc = PathBuf::from("/proc/self/exe");
    if proc.exists() {
        return Some(proc);
    }
    std::env::current_exe().ok()
}

impl DocumentReader {
    /// A reader as `config` sets it, with the default document limits (a
    /// quarter of its memory for decoded streams).
    pub fn new(config: &ReaderConfig) -> DocumentReader {
        DocumentReader::with_limits(config, Limits::new(config.memory / 4))
    }

    /// A reader with the document limits `limits`.
    pub fn with_limits(config: &ReaderConfig, limits: Limits) -> DocumentReader {
        DocumentReader {
            program: config.program.clone(),
            memory: config.memory,
            timeout: config.timeout,
            limits,
            slots: Arc::new(Semaphore::new(READERS_AT_ONCE)),
        }
    }

    /// The text of the PDF at `path`, read by a reader process.
    pub async fn pdf_text(&self, path: &Path) -> Result<Text, ReadError> {
        let Some(program) = &self.program else {
            tracing::warn!("no document reader program is set (SWITCHBOARD_HELPER_BIN)");
            return Err(ReadError::Unavailable);
        };
        let _slot = self
            .slots
            .acquire()
            .await
            .map_err(|_| ReadError::Unavailable)?;
        let mut child = self.command(program, path).spawn().map_err(|e| {
            tracing::warn!(error = %e, program = %program.display(), "could not start the document reader");
            ReadError::Unavailable
        })?;
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let run = async {
            let (out, err) = tokio::join!(
                drain(stdout, MAX_TEXT_CHARS * 4 + 64),
                drain(stderr, STDERR_CAP)
            );
            (out, err, child.wait().await)
        };
        let ran = tokio::time::timeout(self.timeout, run).await;
        let Ok((out, err, status)) = ran else {
            let _ = child.kill().await;
            tracing::info!(
                secs = self.timeout.as_secs(),
                "the document reader ran out of time"
            );
            return Err(ReadError::TimedOut(self.timeout));
        };
        let status = status.map_err(|_| ReadError::Crashed)?;
        let result = self.outcome(status, out, &err.0);
        if let Err(e) = &result {
            let first = String::from_utf8_lossy(&err.0);
            let first = crate::text::clip(first.lines().next().unwrap_or_default(), 200);
            tracing::info!(%status, reason = %e, stderr = %first, "the document reader refused a document");
        }
        result
    }

    fn command(&self, program: &Path, path: &Path) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(program);
        cmd.arg(SUBCOMMAND)
            .arg("--max-depth")
            .arg(self.limits.max_depth.to_string())
            .arg("--max-objects")
            .arg(self.limits.max_objects.to_string())
            .arg("--max-inflated")
            .arg(self.limits.max_inflated.to_string())
            .arg("--memory")
            .arg(self.memory.to_string())
            .arg("--cpu-secs")
            .arg(self.timeout.as_secs().max(1).to_string())
            .arg("--")
            .arg(path)
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    /// What the reader's exit and output say.
    fn outcome(
        &self,
        status: ExitStatus,
        (out, over): (Vec<u8>, bool),
        err: &[u8],
    ) -> Result<Text, ReadError> {
        if over {
            return Err(ReadError::Crashed);
        }
        let (header, text) = match out.iter().position(|&b| b == b'\n') {
            Some(i) => (&out[..i], &out[i + 1..]),
            None => (&out[..], &[][..]),
        };
        let header = String::from_utf8_lossy(header);
        let mut words = header.split(' ');
        match (status.code(), words.next(), words.next()) {
            (Some(0), Some(child::OK), Some(cut)) => Ok(Text {
                text: String::from_utf8_lossy(text).into_owned(),
                cut: cut == "1",
            }),
            (Some(code), Some(child::REFUSED), Some(why)) if code == i32::from(REFUSED_EXIT) => {
                Err(match Refusal::from_code(why) {
                    Some(refusal) => self.refused(refusal),
                    None => ReadError::Crashed,
                })
            }
            _ => Err(self.died(status, err)),
        }
    }

    fn refused(&self, refusal: Refusal) -> ReadError {
        match refusal {
            Refusal::Encrypted => ReadError::Encrypted,
            Refusal::TooDeep => ReadError::TooDeep(self.limits.max_depth),
            Refusal::TooManyObjects => ReadError::TooManyObjects(self.limits.max_objects),
            Refusal::TooLarge => ReadError::TooLarge(self.limits.max_inflated),
            Refusal::OutOfMemory => ReadError::OutOfMemory(self.memory),
            Refusal::Unreadable => ReadError::Unreadable,
        }
    }

    /// A reader that ended without an answer: out of CPU time (the limit
    /// kills it), out of memory (the allocator says so before it aborts),
    /// or anything else.
    fn died(&self, status: ExitStatus, err: &[u8]) -> ReadError {
        if matches!(status.signal(), Some(libc::SIGXCPU | libc::SIGKILL)) {
            return ReadError::TimedOut(self.timeout);
        }
        if String::from_utf8_lossy(err).contains("memory allocation of") {
            return ReadError::OutOfMemory(self.memory);
        }
        ReadError::Crashed
    }
}

/// Reads `from` to its end, keeping at most `cap` bytes; whether more came.
async fn drain(from: Option<impl AsyncRead + Unpin>, cap: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut over = false;
    let Some(mut from) = from else {
        return (kept, over);
    };
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => return (kept, over),
            Ok(n) => {
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(buf.get(..n.min(room)).unwrap_or_default());
                over |= n > room;
            }
        }
    }
}
