//! Files sent to the console: written into an outbox directory, their path printed.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use switchboard_platform::{OutgoingFile, PlatformError};

/// The largest file the console writes (it is local: generous, but bounded).
pub(crate) const MAX_FILE_BYTES: usize = 100 << 20;

/// Where files go: `<dir>/<n>-<name>`, so two files of one name never clash.
pub(crate) struct Outbox {
    dir: PathBuf,
    next: AtomicU64,
}

impl Outbox {
    pub(crate) fn new(dir: PathBuf) -> Outbox {
        Outbox {
            dir,
            next: AtomicU64::new(1),
        }
    }

    /// The default outbox: `switchboard-outbox` in the system's temporary
    /// directory, one sub-directory per process.
    pub(crate) fn default_dir() -> PathBuf {
        std::env::temp_dir()
            .join("switchboard-outbox")
            .join(std::process::id().to_string())
    }

    /// Writes the file and returns its path.
    pub(crate) async fn write(&self, file: &OutgoingFile) -> Result<PathBuf, PlatformError> {
        if file.bytes.len() > MAX_FILE_BYTES {
            return Err(PlatformError::TooLong {
                len: file.bytes.len(),
                max: MAX_FILE_BYTES,
            });
        }
        tokio::fs::create_dir_all(&self.dir)
            .await
            .map_err(|e| io_error(&self.dir, &e))?;
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.join(format!("{n}-{}", safe_name(&file.name)));
        tokio::fs::write(&path, &file.bytes)
            .await
            .map_err(|e| io_error(&path, &e))?;
        Ok(path)
    }
}

fn io_error(path: &Path, e: &std::io::Error) -> PlatformError {
    PlatformError::Rejected(format!("could not write {}: {e}", path.display()))
}

/// The name without any directory part or control character: a file name
/// from the core never leaves the outbox.
fn safe_name(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let cleaned: String = base
        .chars()
        .filter(|c| !c.is_control())
        .collect::<String>()
        .trim_start_matches('.')
        .to_owned();
    if cleaned.is_empty() {
        "file".to_owned()
    } else {
        cleaned
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_platform::{ChatAddress, ChatId, Platform};

    #[test]
    fn names_stay_inside_the_outbox() {
        assert_eq!(safe_name("../../etc/passwd"), "passwd");
        assert_eq!(safe_name("..\\x.txt"), "x.txt");
        assert_eq!(safe_name(".."), "file");
        assert_eq!(safe_name("a\u{1b}[2Jb.md"), "a[2Jb.md");
    }

    #[tokio::test]
    async fn a_file_is_written_with_its_bytes() {
        let dir = std::env::temp_dir().join(format!("sb-outbox-test-{}", std::process::id()));
        let outbox = Outbox::new(dir.clone());
        let to = ChatAddress::new(Platform::Console, ChatId(0), None);
        let path = outbox
            .write(&OutgoingFile::document(to, "answer.md", b"hello".to_vec()))
            .await
            .unwrap();
        assert!(path.starts_with(&dir));
        assert_eq!(std::fs::read(&path).unwrap(), b"hello");
        let _ = std::fs::remove_dir_all(dir);
    }
}
