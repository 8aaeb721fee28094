//! How much a user's workspace folder holds, against its quota
//! (`WORKSPACE_QUOTA_MB`): measured before the gateway copies an upload in,
//! before `write_file` writes, and while a command runs.

use crate::text::human_size;
use std::path::{Path, PathBuf};

/// Entries the measure looks at; a folder with more is measured by these.
const MAX_ENTRIES: usize = 1_000_000;

/// The bytes of the regular files under `dir` (their sizes; links are not
/// followed, directories count nothing). Blocking: see [`usage_of`].
pub(crate) fn usage(dir: &Path) -> u64 {
    let mut total = 0u64;
    let mut seen = 0usize;
    let mut pending: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                return total;
            }
            // The entry's own metadata: a symlink is not followed.
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                pending.push(entry.path());
            } else if meta.is_file() {
                total = total.saturating_add(meta.len());
            }
        }
    }
    total
}

/// [`usage`] on a blocking thread.
pub(crate) async fn usage_of(dir: &Path) -> u64 {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || usage(&dir))
        .await
        .unwrap_or(0)
}

/// What a folder holding `used` bytes with `quota` would hold after a
/// change that adds `added` and frees `freed`: `Err(total)` when over.
pub(crate) fn check(used: u64, added: u64, freed: u64, quota: u64) -> Result<(), u64> {
    let total = used.saturating_sub(freed).saturating_add(added);
    if total > quota && added > freed {
        Err(total)
    } else {
        Ok(())
    }
}

/// "2.1 GB, over its quota of 2 GB": the end of every quota refusal.
pub(crate) fn over_text(total: u64, quota: u64) -> String {
    format!(
        "{}, over its quota of {} (WORKSPACE_QUOTA_MB)",
        human_size(total),
        human_size(quota)
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn measures_files_below_without_following_links() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("big"), vec![0u8; 5000]).unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/one"), vec![0u8; 100]).unwrap();
        std::fs::write(dir.path().join("a/b/two"), vec![0u8; 23]).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("big"), dir.path().join("big")).unwrap();
        assert_eq!(usage(dir.path()), 123);
    }

    #[test]
    fn a_change_is_refused_only_when_it_grows_past_the_quota() {
        assert_eq!(check(90, 10, 0, 100), Ok(()));
        assert_eq!(check(90, 11, 0, 100), Err(101));
        assert_eq!(check(90, 20, 15, 100), Ok(()));
        // Already over: shrinking is allowed, growing is not.
        assert_eq!(check(150, 5, 10, 100), Ok(()));
        assert_eq!(check(150, 5, 0, 100), Err(155));
        assert!(over_text(2 << 30, 1 << 30).contains("quota of 1 GB"));
    }
}
