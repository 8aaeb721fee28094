//! The long-poll offset on disk: the last update id Telegram returned and the
//! poller processed (forwarded to the core or skipped), written atomically
//! (temp file + rename) so a restart neither repeats nor skips updates.

use std::io;
use std::path::{Path, PathBuf};

pub(crate) struct OffsetStore {
    path: PathBuf,
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
    pub async fn load(&self) -> io::Result<Option<i64>> {
        match tokio::fs::read_to_string(&self.path).await {
            Ok(text) => match text.trim().parse::<i64>() {
                Ok(id) => Ok(Some(id)),
                Err(_) => {
                    tracing::warn!(path = %self.path.display(), "ignoring a corrupt Telegram offset file");
                    Ok(None)
                }
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub async fn save(&self, last_update_id: i64) -> io::Result<()> {
        let tmp = self.path.with_extension("tmp");
        tokio::fs::write(&tmp, format!("{last_update_id}\n")).await?;
        tokio::fs::rename(&tmp, &self.path).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn round_trips_and_tolerates_corruption() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let store = OffsetStore::new(dir.path(), 42);
        assert_eq!(store.load().await?, None);
        store.save(1234).await?;
        assert_eq!(store.load().await?, Some(1234));
        store.save(1235).await?;
        assert_eq!(store.load().await?, Some(1235));
        assert!(store.path().ends_with("telegram-offset-42"));
        tokio::fs::write(store.path(), "garbage").await?;
        assert_eq!(store.load().await?, None);
        Ok(())
    }
}
