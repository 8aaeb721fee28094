//! The long-poll offset on disk: the last update id Telegram returned and the
//! poller processed (forwarded to the core or skipped), written atomically
//! (temp file + rename) so a restart neither repeats nor skips updates.
//!
//! While an album is held (see `album.rs`) the saved id stays below its
//! first part, so a restart gets the album again; updates after it that
//! were already forwarded are listed on a second line, so a restart does not
//! forward them twice.

use std::io;
use std::path::{Path, PathBuf};

pub(crate) struct OffsetStore {
    path: PathBuf,
}

/// What the file holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Saved {
    /// Every update up to this id is done.
    pub last: i64,
    /// Updates above `last` that are done too (forwarded while an earlier
    /// album was held).
    pub done: Vec<i64>,
}

impl OffsetStore {
    /// `state_dir/telegram-offset-<bot id>`: one file per bot.
    pub fn new(state_dir: &Path, bot_id: i64) -> Self {
        Self {
            path: state_dir.join(format!("telegram-offset-{bot_id}")),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The last processed update id; `None` on first start. A corrupt file is
    /// reported and treated as absent (Telegram then resends what it holds).
    pub async fn load(&self) -> io::Result<Option<Saved>> {
        match tokio::fs::read_to_string(&self.path).await {
            Ok(text) => {
                let mut lines = text.lines();
                let last = lines.next().and_then(|l| l.trim().parse::<i64>().ok());
                let done: Option<Vec<i64>> = lines
                    .next()
                    .unwrap_or_default()
                    .split_whitespace()
                    .map(|id| id.parse::<i64>().ok())
                    .collect();
                match (last, done) {
                    (Some(last), Some(done)) => Ok(Some(Saved { last, done })),
                    _ => {
                        tracing::warn!(path = %self.path.display(), "ignoring a corrupt Telegram offset file");
                        Ok(None)
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub async fn save(&self, saved: &Saved) -> io::Result<()> {
        let tmp = self.path.with_extension("tmp");
        let mut text = format!("{}\n", saved.last);
        if !saved.done.is_empty() {
            let done: Vec<String> = saved.done.iter().map(i64::to_string).collect();
            text.push_str(&done.join(" "));
            text.push('\n');
        }
        tokio::fs::write(&tmp, text).await?;
        tokio::fs::rename(&tmp, &self.path).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saved(last: i64, done: &[i64]) -> Saved {
        Saved {
            last,
            done: done.to_vec(),
        }
    }

    #[tokio::test]
    async fn round_trips_and_tolerates_corruption() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let store = OffsetStore::new(dir.path(), 42);
        assert_eq!(store.load().await?, None);
        store.save(&saved(1234, &[])).await?;
        assert_eq!(store.load().await?, Some(saved(1234, &[])));
        store.save(&saved(1235, &[1239, 1240])).await?;
        assert_eq!(store.load().await?, Some(saved(1235, &[1239, 1240])));
        assert!(store.path().ends_with("telegram-offset-42"));
        tokio::fs::write(store.path(), "garbage").await?;
        assert_eq!(store.load().await?, None);
        tokio::fs::write(store.path(), "12\n13 x\n").await?;
        assert_eq!(store.load().await?, None);
        // The format before albums: one id.
        tokio::fs::write(store.path(), "77\n").await?;
        assert_eq!(store.load().await?, Some(saved(77, &[])));
        Ok(())
    }
}
