//! Whether the process owning a row is alive, asked of the database itself
//! rather than of a lease that must lapse first: a process holds a claim
//! that ends the moment it dies, and a peer (or the restarted process) that
//! can take the claim knows its owner is gone.
//!
//! - PostgreSQL: a session-level advisory lock on a key derived from the
//!   process id, held on a connection of its own for the process's life.
//!   PostgreSQL ends the session — and the lock — when the process dies
//!   (its socket closes; a machine that vanishes is noticed by TCP
//!   keepalive). A peer asks with `pg_try_advisory_xact_lock` in a
//!   transaction it rolls back.
//! - SQLite: an exclusive lock on `<database>.live/<process>.lock`, which
//!   the kernel drops when the process dies. Several processes may share the
//!   file only on one machine, so a file lock is as good as the database's.
//!   In memory, every other owner is gone.

use super::{Backend, Store, StoreError};
use crate::domain::ProcessId;
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often the claim's connection is checked, and re-made when it broke.
const CHECK_EVERY: Duration = Duration::from_secs(5);

/// This process's claim to be alive; it ends when dropped (or the process dies).
#[derive(Debug)]
pub struct LivenessClaim {
    hold: Hold,
}

#[derive(Debug)]
enum Hold {
    /// The locked file, and its path (removed at a clean end).
    File(std::fs::File, PathBuf),
    /// The task keeping the PostgreSQL session; cancelled on drop.
    Session(CancellationToken),
    None,
}

impl Drop for LivenessClaim {
    fn drop(&mut self) {
        match &self.hold {
            Hold::File(file, path) => {
                let _ = std::fs::remove_file(path);
                let _ = file.unlock();
            }
            Hold::Session(stop) => stop.cancel(),
            Hold::None => {}
        }
    }
}

/// The advisory lock key of `owner`: the first 8 bytes of its SHA-256.
fn lock_key(owner: &str) -> i64 {
    let digest = Sha256::digest(owner.as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(bytes)
}

/// A file name for `owner`'s lock: its hex digest, whatever the owner is.
fn lock_file_name(owner: &str) -> String {
    format!("{:016x}.lock", lock_key(owner))
}

impl Store {
    /// Where SQLite processes keep their liveness locks; `None` in memory.
    fn liveness_dir(&self) -> Option<PathBuf> {
        let path = self.file.as_ref()?.path();
        let mut name = path.file_name()?.to_owned();
        name.push(".live");
        Some(path.with_file_name(name))
    }

    /// Claims `owner` (this process) alive until the claim is dropped.
    pub async fn claim_liveness(&self, owner: &ProcessId) -> Result<LivenessClaim, StoreError> {
        let hold = match self.backend {
            Backend::Postgres => {
                let key = lock_key(owner.as_str());
                let conn = self.locked_session(key).await?;
                let stop = CancellationToken::new();
                tokio::spawn(keep_session(self.clone(), conn, key, stop.clone()));
                Hold::Session(stop)
            }
            Backend::Sqlite => match self.liveness_dir() {
                None => Hold::None,
                Some(dir) => {
                    std::fs::create_dir_all(&dir).map_err(|e| liveness_io(&dir, e))?;
                    let path = dir.join(lock_file_name(owner.as_str()));
                    let file = std::fs::File::create(&path).map_err(|e| liveness_io(&path, e))?;
                    file.try_lock()
                        .map_err(|e| liveness_io(&path, std::io::Error::other(e)))?;
                    Hold::File(file, path)
                }
            },
        };
        Ok(LivenessClaim { hold })
    }

    /// A connection of its own, out of the pool, holding `key`'s session lock.
    async fn locked_session(&self, key: i64) -> Result<sqlx::AnyConnection, StoreError> {
        let mut conn = self.pool.acquire().await?.detach();
        let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(key)
            .fetch_one(&mut conn)
            .await?;
        if !locked {
            return Err(StoreError::Corrupt(
                "another session holds this process's liveness lock".into(),
            ));
        }
        Ok(conn)
    }

    /// Which of `owners` (other processes) are gone: their claim can be taken.
    pub async fn gone_owners(&self, owners: &[ProcessId]) -> Result<Vec<ProcessId>, StoreError> {
        if owners.is_empty() {
            return Ok(Vec::new());
        }
        match self.backend {
            Backend::Postgres => {
                let mut tx = self.pool.begin().await?;
                let mut gone = Vec::new();
                for owner in owners {
                    // Taken: nobody holds it. Released at the rollback below.
                    let free: bool = sqlx::query_scalar("SELECT pg_try_advisory_xact_lock($1)")
                        .bind(lock_key(owner.as_str()))
                        .fetch_one(&mut *tx)
                        .await?;
                    if free {
                        gone.push(owner.clone());
                    }
                }
                tx.rollback().await?;
                Ok(gone)
            }
            Backend::Sqlite => {
                let Some(dir) = self.liveness_dir() else {
                    return Ok(owners.to_vec());
                };
                Ok(owners
                    .iter()
                    .filter(|owner| file_lock_is_free(&dir.join(lock_file_name(owner.as_str()))))
                    .cloned()
                    .collect())
            }
        }
    }
}

/// Whether nobody holds the lock file at `path` (a missing file is free).
fn file_lock_is_free(path: &std::path::Path) -> bool {
    let file = match std::fs::File::options().write(true).open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return true,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot read a liveness lock; taking its owner for alive");
            return false;
        }
    };
    match file.try_lock() {
        Ok(()) => {
            // Its owner is gone: the file goes too.
            let _ = std::fs::remove_file(path);
            let _ = file.unlock();
            true
        }
        Err(_) => false,
    }
}

fn liveness_io(path: &std::path::Path, e: std::io::Error) -> StoreError {
    StoreError::Open {
        path: path.display().to_string(),
        reason: format!("cannot hold this process's liveness lock: {e}"),
    }
}

/// Keeps the claim's session until `stop`: checked every [`CHECK_EVERY`];
/// a broken connection (the server restarted, the network cut) is re-made
/// and the lock taken again.
async fn keep_session(
    store: Store,
    mut conn: sqlx::AnyConnection,
    key: i64,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(CHECK_EVERY) => {}
        }
        let alive = sqlx::query("SELECT 1").execute(&mut conn).await.is_ok();
        if alive {
            continue;
        }
        tracing::error!("lost the database session holding this process's liveness claim; other processes may take its queued work over until it is back");
        loop {
            match store.locked_session(key).await {
                Ok(fresh) => {
                    conn = fresh;
                    tracing::info!("liveness claim held again");
                    break;
                }
                Err(e) => tracing::warn!(error = %e, "cannot renew the liveness claim yet"),
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
    }
    let _ = sqlx::Connection::close(conn).await;
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_claim_keeps_its_owner_alive_until_dropped() {
        let (store, _dir) = crate::store::test_store().await;
        let a = ProcessId::new();
        let claim = store.claim_liveness(&a).await.unwrap();
        let never_started = ProcessId::new();
        let owners = [a, never_started.clone()];
        assert_eq!(store.gone_owners(&owners).await.unwrap(), [never_started]);
        drop(claim);
        assert_eq!(store.gone_owners(&owners).await.unwrap(), owners);
    }

    #[test]
    fn keys_are_stable_and_distinct() {
        assert_eq!(lock_key("a"), lock_key("a"));
        assert_ne!(lock_key("a"), lock_key("b"));
        assert!(lock_file_name("x/../y").ends_with(".lock"));
        assert!(!lock_file_name("x/../y").contains('/'));
    }
}
