//! The scan for leftovers: files in the media directory no row records (those
//! written before every file was recorded, or whose record failed), removed
//! once older than the retention. A bounded number of files is looked at per
//! sweep, resuming where the last sweep stopped, so a large directory is
//! covered over several sweeps.

use crate::store::{Store, StoreError};
use std::path::Path;
use std::sync::Mutex;
use std::time::UNIX_EPOCH;

/// The most files one sweep looks at.
pub(super) const CHECKS_PER_SWEEP: usize = 2_000;

/// Where the next scan starts: after this hash (`None`: from the beginning).
#[derive(Debug, Default)]
pub(super) struct Cursor(Mutex<Option<String>>);

impl Cursor {
    fn get(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set(&self, after: Option<String>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = after;
    }
}

/// Looks at up to `limit` files under `dir` from `cursor` on and removes
/// those no row records that were last written before `before` (epoch ms);
/// returns how many went.
pub(super) async fn sweep(
    store: &Store,
    dir: &Path,
    before: i64,
    cursor: &Cursor,
    limit: usize,
) -> Result<usize, StoreError> {
    let after = cursor.get();
    let mut checked = 0;
    let mut removed = 0;
    for shard in names(dir, |n| n.len() == 2 && is_hex(n)).await {
        let first = after.as_deref().and_then(|a| a.get(..2));
        if first.is_some_and(|first| shard.as_str() < first) {
            continue;
        }
        let shard_dir = dir.join(&shard);
        let files = names(&shard_dir, |n| {
            n.len() == 64 && is_hex(n) && n.starts_with(shard.as_str())
        })
        .await;
        for hash in files {
            if after.as_deref().is_some_and(|a| hash.as_str() <= a) {
                continue;
            }
            if checked == limit {
                cursor.set(Some(hash_before(&hash)));
                return Ok(removed);
            }
            checked += 1;
            let path = shard_dir.join(&hash);
            if written_before(&path, before).await && !store.media().recorded(&hash).await? {
                match tokio::fs::remove_file(&path).await {
                    Ok(()) => removed += 1,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => tracing::warn!(error = %e, "could not remove a leftover media file"),
                }
            }
        }
    }
    // The whole directory was looked at: the next scan starts again.
    cursor.set(None);
    Ok(removed)
}

/// The sorted names in `dir` that `keep` accepts (none when it cannot be read).
async fn names(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(mut entries) = tokio::fs::read_dir(dir).await else {
        return found;
    };
    while let Ok(Some(entry)) = entries.next_entry().await {
        if let Ok(name) = entry.file_name().into_string() {
            if keep(&name) {
                found.push(name);
            }
        }
    }
    found.sort_unstable();
    found
}

/// Whether `path` is a regular file last written before `before` (epoch ms).
async fn written_before(path: &Path, before: i64) -> bool {
    let Ok(meta) = tokio::fs::symlink_metadata(path).await else {
        return false;
    };
    let written = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_millis()).ok());
    meta.is_file() && written.is_some_and(|ms| ms < before)
}

/// A cursor that resumes at `hash` itself (the first file not looked at).
fn hash_before(hash: &str) -> String {
    // Hashes are lowercase hex: every hash from `hash` on sorts after this.
    let mut before = hash.to_owned();
    before.pop();
    before
}

fn is_hex(name: &str) -> bool {
    name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::files;
    use crate::store::{now, test_store, MediaFile, MediaOrigin};

    #[tokio::test]
    async fn leftovers_go_a_bounded_number_per_sweep_recorded_files_stay() {
        let (store, _db) = test_store().await;
        let dir = tempfile::tempdir().unwrap();
        let mut hashes = Vec::new();
        for i in 0..5u8 {
            hashes.push(files::put(dir.path(), &[i; 8]).await.unwrap());
        }
        hashes.sort();
        let kept = MediaFile {
            hash: &hashes[2],
            mime: "image/png",
            size: 8,
            origin: MediaOrigin::Produced,
            session: None,
            sender: None,
        };
        store.media().touch(&kept).await.unwrap();
        let cursor = Cursor::default();
        let after_now = now() + 1_000;
        assert_eq!(
            sweep(&store, dir.path(), now() - 60_000, &cursor, 2)
                .await
                .unwrap(),
            0,
            "fresh"
        );
        cursor.set(None);
        // Two files looked at per sweep: 0 and 1, then 2 (recorded) and 3, then 4.
        for (removed, left) in [(2, 3), (1, 2), (1, 1)] {
            assert_eq!(
                sweep(&store, dir.path(), after_now, &cursor, 2)
                    .await
                    .unwrap(),
                removed
            );
            let on_disk = hashes
                .iter()
                .filter(|h| files::path_of(dir.path(), h).exists())
                .count();
            assert_eq!(on_disk, left);
        }
        assert!(files::path_of(dir.path(), &hashes[2]).exists(), "recorded");
        assert_eq!(cursor.get(), None, "the scan starts over");
    }
}
