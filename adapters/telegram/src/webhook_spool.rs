//! The webhook's spool: a delivery is written to disk (and synced) before it
//! is answered 200, and removed once it has been forwarded to the core, so an
//! update Telegram counts as delivered survives a crash of the process — the
//! next start forwards what is left, in `update_id` order. A body that does
//! not parse is kept too (size-capped, the latest few) for the operator.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Bytes of a malformed body kept.
const BAD_BODY_KEPT: usize = 64 * 1024;
/// Malformed bodies kept (the oldest are removed).
const BAD_BODIES_KEPT: usize = 50;

pub(crate) struct Spool {
    dir: PathBuf,
    /// Bumped each time an update leaves the spool (wakes [`Spool::wait_done`]).
    left: tokio::sync::watch::Sender<u64>,
}

impl Spool {
    /// `state_dir/telegram-webhook-<bot id>/`, created if needed.
    pub fn open(state_dir: &Path, bot_id: i64) -> io::Result<Spool> {
        let dir = state_dir.join(format!("telegram-webhook-{bot_id}"));
        std::fs::create_dir_all(dir.join("bad"))?;
        Ok(Spool {
            dir,
            left: tokio::sync::watch::Sender::new(0),
        })
    }

    fn file(&self, update_id: i64) -> PathBuf {
        // Zero-padded so names sort like ids (ids are positive).
        self.dir.join(format!("{update_id:020}.json"))
    }

    /// Keeps `body` as update `update_id`, durably (written, synced,
    /// renamed into place, directory synced). `false`: it is already kept
    /// (Telegram repeated a delivery still waiting here).
    pub fn put(&self, update_id: i64, body: &[u8]) -> io::Result<bool> {
        let path = self.file(update_id);
        if path.exists() {
            return Ok(false);
        }
        let tmp = self
            .dir
            .join(format!(".{update_id}.{}.tmp", std::process::id()));
        {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(body)?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, &path)?;
        std::fs::File::open(&self.dir)?.sync_all()?;
        Ok(true)
    }

    /// Update `update_id` has been forwarded: it is no longer kept.
    pub fn done(&self, update_id: i64) {
        let removed = std::fs::remove_file(self.file(update_id));
        self.left.send_modify(|n| *n = n.wrapping_add(1));
        match removed {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(update_id, error = %e, "could not remove a forwarded webhook update from the spool")
            }
        }
    }

    /// Waits until update `update_id` has left the spool (the core has it),
    /// at most `within`; whether it did.
    pub async fn wait_done(&self, update_id: i64, within: std::time::Duration) -> bool {
        let mut left = self.left.subscribe();
        let gone = async {
            loop {
                if !self.file(update_id).exists() {
                    return;
                }
                if left.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        };
        tokio::time::timeout(within, gone).await.is_ok()
    }

    /// The updates kept and not forwarded (a previous run's), oldest first.
    pub fn pending(&self) -> io::Result<Vec<(i64, Vec<u8>)>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some(id) = name
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
                .and_then(|n| n.parse::<i64>().ok())
            else {
                continue;
            };
            out.push((id, std::fs::read(entry.path())?));
        }
        out.sort_by_key(|(id, _)| *id);
        Ok(out)
    }

    /// Keeps a malformed body for the operator (its start, the latest few).
    pub fn keep_bad(&self, body: &[u8]) {
        let bad = self.dir.join("bad");
        let name = format!("{}.json", chrono::Utc::now().format("%Y%m%dT%H%M%S%.6f"));
        let kept = &body[..body.len().min(BAD_BODY_KEPT)];
        if let Err(e) = std::fs::write(bad.join(&name), kept) {
            tracing::warn!(error = %e, "could not keep a malformed webhook body");
            return;
        }
        tracing::warn!(file = %bad.join(&name).display(), bytes = body.len(), "malformed webhook body kept for the operator");
        let Ok(entries) = std::fs::read_dir(&bad) else {
            return;
        };
        let mut names: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        names.sort();
        let excess = names.len().saturating_sub(BAD_BODIES_KEPT);
        for old in names.into_iter().take(excess) {
            let _ = std::fs::remove_file(old);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_updates_come_back_in_order_until_done() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::open(dir.path(), 7).unwrap();
        assert!(spool.put(12, b"{\"update_id\":12}").unwrap());
        assert!(spool.put(9, b"{\"update_id\":9}").unwrap());
        assert!(
            !spool.put(12, b"again").unwrap(),
            "a repeated delivery is kept once"
        );
        let ids: Vec<i64> = spool
            .pending()
            .unwrap()
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(ids, [9, 12]);
        spool.done(9);
        spool.done(9);
        let again = Spool::open(dir.path(), 7).unwrap();
        let pending = again.pending().unwrap();
        assert_eq!(pending, vec![(12, b"{\"update_id\":12}".to_vec())]);
        for _ in 0..(BAD_BODIES_KEPT + 5) {
            again.keep_bad(&vec![b'x'; BAD_BODY_KEPT + 10]);
        }
        let bad: Vec<_> = std::fs::read_dir(dir.path().join("telegram-webhook-7/bad"))
            .unwrap()
            .collect();
        assert!(bad.len() <= BAD_BODIES_KEPT);
    }
}
