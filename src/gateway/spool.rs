//! The local spool: accepted messages that could not be stored in the inbox
//! (storage outage) are written as one JSON file each under
//! `DATA_DIR/spool/<process>/`, and removed when their turn starts; answered
//! exchanges that could not be saved to history, as one `.exchange` file each,
//! removed once saved. A process
//! crash or restart during the outage then loses nothing: the next process on
//! this data directory moves the files of processes that are gone into the
//! inbox, where they are taken like any abandoned message (exchanges go
//! into their session's history first: they happened before).
//!
//! Each process holds an exclusive lock on its own spool directory for its
//! whole life; a directory whose lock can be taken belongs to a process that
//! is gone. Moving a file is "insert the row, then delete the file", so a crash
//! between the two can deliver that one message twice, never lose it.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use switchboard_platform::InboundMessage;

use crate::domain::ProcessId;
use crate::llm::Message;
use crate::store::{SessionId, Store, StoreError};

const LOCK_FILE: &str = ".lock";
/// Extension of a spooled inbound message.
const MESSAGE: &str = "json";
/// Extension of a spooled answered exchange.
const EXCHANGE: &str = "exchange";

/// One spooled message on disk.
#[derive(Debug, Serialize, Deserialize)]
struct Spooled {
    /// When the message was accepted (ms since the epoch).
    received_at: i64,
    message: InboundMessage,
    /// Its platform may deliver it again: a copy kept meanwhile makes this
    /// one a repeat when it moves into the inbox.
    #[serde(default)]
    dedupe: bool,
}

/// One answered exchange on disk, for its session's history.
#[derive(Debug, Serialize, Deserialize)]
struct SpooledExchange {
    session_id: SessionId,
    messages: Vec<Message>,
}

/// This process's spool directory, locked while the process lives.
#[derive(Debug)]
pub(crate) struct Spool {
    root: PathBuf,
    dir: PathBuf,
    lock: File,
    next: AtomicU64,
}

/// A message kept in the spool: removed with [`Spool::remove`].
#[derive(Debug)]
pub(crate) struct SpoolFile(PathBuf);

/// Why spooled messages could not be moved into the inbox.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AdoptError {
    #[error("spool directory {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Spool {
    /// Creates and locks `root/<instance>`.
    pub(crate) fn open(root: &Path, instance: &ProcessId) -> io::Result<Spool> {
        let dir = root.join(instance.as_str());
        fs::create_dir_all(&dir)?;
        let lock = File::create(dir.join(LOCK_FILE))?;
        lock.try_lock().map_err(io::Error::other)?;
        Ok(Spool {
            root: root.to_owned(),
            dir,
            lock,
            next: AtomicU64::new(0),
        })
    }

    /// Writes `message` durably (written, synced, then renamed into place);
    /// `dedupe` as in [`crate::store::Intake`].
    pub(crate) fn put(&self, message: &InboundMessage, dedupe: bool) -> io::Result<SpoolFile> {
        let body = serde_json::to_vec(&Spooled {
            received_at: crate::store::now(),
            message: message.clone(),
            dedupe,
        })
        .map_err(io::Error::other)?;
        self.write(&body, MESSAGE)
    }

    /// Writes an answered exchange of `session` durably, until it is saved.
    pub(crate) fn put_exchange(
        &self,
        session: &SessionId,
        messages: &[Message],
    ) -> io::Result<SpoolFile> {
        let body = serde_json::to_vec(&SpooledExchange {
            session_id: session.clone(),
            messages: messages.to_vec(),
        })
        .map_err(io::Error::other)?;
        self.write(&body, EXCHANGE)
    }

    fn write(&self, body: &[u8], extension: &str) -> io::Result<SpoolFile> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        // Recreated if a clean stop emptied it meanwhile.
        fs::create_dir_all(&self.dir)?;
        let path = self.dir.join(format!("{n:020}.{extension}"));
        let partial = path.with_extension("partial");
        let mut file = File::create(&partial)?;
        file.write_all(body)?;
        file.sync_all()?;
        fs::rename(&partial, &path)?;
        Ok(SpoolFile(path))
    }

    /// Drops a message whose turn has started.
    pub(crate) fn remove(&self, file: SpoolFile) {
        if let Err(e) = fs::remove_file(&file.0) {
            tracing::warn!(path = %file.0.display(), error = %e, "could not remove a spooled message");
        }
    }

    /// Saves the exchanges and moves the messages of spools whose process is
    /// gone into the inbox, still the gone owner's (taken over like its other rows); returns how
    /// many messages were moved. Stops at
    /// the first storage error (the rest stay for the next attempt).
    pub(crate) async fn adopt(&self, store: &Store) -> Result<usize, AdoptError> {
        let io_err = |path: &Path| {
            let path = path.to_owned();
            move |source| AdoptError::Io { path, source }
        };
        let mut moved = 0;
        for entry in fs::read_dir(&self.root).map_err(io_err(&self.root))? {
            let dir = entry.map_err(io_err(&self.root))?.path();
            if dir == self.dir || !dir.is_dir() {
                continue;
            }
            // Only a process's folder is a spool; anything else is left alone.
            let Some(owner) = dir
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.parse::<ProcessId>().ok())
            else {
                tracing::warn!(dir = %dir.display(), "not a spool folder (no process id): left alone");
                continue;
            };
            let lock = match File::options()
                .create(true)
                .truncate(false)
                .write(true)
                .open(dir.join(LOCK_FILE))
            {
                Ok(lock) => lock,
                // Emptied and removed by another process just now.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => {
                    tracing::warn!(dir = %dir.display(), error = %e, "unreadable spool directory");
                    continue;
                }
            };
            // Locked: its process is alive and answers its own messages.
            if lock.try_lock().is_err() {
                continue;
            }
            moved += adopt_dir(store, &dir, &owner).await?;
            // Emptied while locked: nobody else can be writing here.
            let _ = fs::remove_file(dir.join(LOCK_FILE));
            let _ = fs::remove_dir(&dir);
        }
        Ok(moved)
    }

    /// At a clean shutdown: removes the directory when nothing is left in it,
    /// and unlocks it either way so the next process can take what is left.
    pub(crate) fn close(&self) {
        let empty = |ext| spooled_files(&self.dir, ext).is_ok_and(|f| f.is_empty());
        if empty(MESSAGE) && empty(EXCHANGE) {
            let _ = fs::remove_file(self.dir.join(LOCK_FILE));
            let _ = fs::remove_dir(&self.dir);
        }
        if let Err(e) = self.lock.unlock() {
            tracing::warn!(error = %e, "could not unlock the spool");
        }
    }
}

/// Moves every message of `dir` (oldest first) into the inbox as `owner`'s
/// (a gone process's: taken over next).
async fn adopt_dir(store: &Store, dir: &Path, owner: &ProcessId) -> Result<usize, AdoptError> {
    let io_err = |source| AdoptError::Io {
        path: dir.to_owned(),
        source,
    };
    let mut moved = 0;
    for path in spooled_files(dir, EXCHANGE).map_err(io_err)? {
        let Some(exchange) = read::<SpooledExchange>(&path) else {
            continue;
        };
        store
            .history()
            .append(&exchange.session_id, &exchange.messages)
            .await?;
        if let Err(e) = fs::remove_file(&path) {
            tracing::warn!(path = %path.display(), error = %e, "could not remove a saved spooled exchange");
        }
        tracing::info!("saved an answered exchange a stopped process could not save");
    }
    let files = spooled_files(dir, MESSAGE).map_err(io_err)?;
    for path in files {
        let Some(spooled) = read::<Spooled>(&path) else {
            continue;
        };
        store
            .inbox()
            .restore(owner, &spooled.message, spooled.received_at, spooled.dedupe)
            .await?;
        if let Err(e) = fs::remove_file(&path) {
            tracing::warn!(path = %path.display(), error = %e, "could not remove a moved spooled message");
        }
        moved += 1;
    }
    Ok(moved)
}

/// The spooled record at `path`; `None` when unreadable, then set aside
/// (`.bad`) for the operator rather than retried forever.
fn read<T: serde::de::DeserializeOwned>(path: &Path) -> Option<T> {
    match fs::read(path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice::<T>(&b).map_err(|e| e.to_string()))
    {
        Ok(record) => Some(record),
        Err(e) => {
            tracing::error!(path = %path.display(), error = %e, "unreadable spooled file set aside");
            let _ = fs::rename(path, path.with_extension("bad"));
            None
        }
    }
}

/// The complete files of `dir` with this extension, oldest first (names are
/// zero-padded sequence numbers).
fn spooled_files(dir: &Path, extension: &str) -> io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == extension) {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_spool_is_locked_against_a_second_opener() {
        let root = tempfile::tempdir().unwrap();
        let spool = Spool::open(root.path(), &ProcessId::named("a")).unwrap();
        assert!(Spool::open(root.path(), &ProcessId::named("a")).is_err());
        spool.close();
    }

    #[test]
    fn close_removes_an_empty_spool_and_keeps_one_with_messages() {
        let root = tempfile::tempdir().unwrap();
        Spool::open(root.path(), &ProcessId::named("empty"))
            .unwrap()
            .close();
        assert!(!root
            .path()
            .join(ProcessId::named("empty").as_str())
            .exists());

        let spool = Spool::open(root.path(), &ProcessId::named("full")).unwrap();
        let file = spool
            .put(&crate::store::test_message("hello"), false)
            .unwrap();
        spool.close();
        assert!(file.0.exists());
        assert_eq!(
            spooled_files(
                &root.path().join(ProcessId::named("full").as_str()),
                MESSAGE
            )
            .unwrap()
            .len(),
            1
        );
    }

    #[tokio::test]
    async fn a_gone_process_spool_is_moved_into_the_inbox_once() {
        let (store, _db) = crate::store::test_store().await;
        let root = tempfile::tempdir().unwrap();
        let gone = Spool::open(root.path(), &ProcessId::named("gone")).unwrap();
        gone.put(&crate::store::test_message("first"), false)
            .unwrap();
        gone.put(&crate::store::test_message("second"), false)
            .unwrap();
        let live = Spool::open(root.path(), &ProcessId::named("live")).unwrap();
        live.put(&crate::store::test_message("mine"), false)
            .unwrap();
        let me = Spool::open(root.path(), &ProcessId::named("me")).unwrap();

        assert_eq!(me.adopt(&store).await.unwrap(), 0, "both owners are alive");
        drop(gone); // the process dies: its lock goes with it
        assert_eq!(me.adopt(&store).await.unwrap(), 2);
        assert!(!root.path().join(ProcessId::named("gone").as_str()).exists());
        assert!(root.path().join(ProcessId::named("live").as_str()).exists());
        assert_eq!(me.adopt(&store).await.unwrap(), 0, "moved once");

        let taken = store
            .inbox()
            .take_over(
                &ProcessId::named("gone"),
                &ProcessId::named("me"),
                &[switchboard_platform::Platform::Console],
            )
            .await
            .unwrap();
        let texts: Vec<_> = taken.iter().map(|e| e.message.text.as_str()).collect();
        assert_eq!(texts, ["first", "second"]);
    }

    #[tokio::test]
    async fn a_folder_named_by_no_process_id_is_left_alone() {
        let (store, _db) = crate::store::test_store().await;
        let root = tempfile::tempdir().unwrap();
        // Unlocked and full of spooled messages, but named by no process.
        let stray = root.path().join("backup");
        std::fs::create_dir(&stray).unwrap();
        let gone = Spool::open(root.path(), &ProcessId::named("gone")).unwrap();
        gone.put(&crate::store::test_message("kept"), false)
            .unwrap();
        drop(gone);
        let gone_dir = root.path().join(ProcessId::named("gone").as_str());
        for file in spooled_files(&gone_dir, MESSAGE).unwrap() {
            std::fs::copy(&file, stray.join(file.file_name().unwrap())).unwrap();
        }
        let me = Spool::open(root.path(), &ProcessId::named("me")).unwrap();
        assert_eq!(
            me.adopt(&store).await.unwrap(),
            1,
            "only the process's folder"
        );
        assert!(!gone_dir.exists());
        assert_eq!(
            spooled_files(&stray, MESSAGE).unwrap().len(),
            1,
            "left alone"
        );
    }

    #[tokio::test]
    async fn a_gone_process_exchange_is_saved_to_its_history_once() {
        use crate::llm::Message;
        let (store, _db) = crate::store::test_store().await;
        let key = crate::store::SessionKey {
            platform: switchboard_platform::Platform::Console,
            chat: switchboard_platform::ChatId(1),
            thread: None,
            user: switchboard_platform::UserId(1),
        };
        let session = store.sessions().open(&key).await.unwrap();
        let root = tempfile::tempdir().unwrap();
        let gone = Spool::open(root.path(), &ProcessId::named("gone")).unwrap();
        let exchange = [Message::user("question"), Message::assistant("answer")];
        gone.put_exchange(&session, &exchange).unwrap();
        let me = Spool::open(root.path(), &ProcessId::named("me")).unwrap();
        drop(gone);

        assert_eq!(me.adopt(&store).await.unwrap(), 0, "no message moved");
        assert_eq!(me.adopt(&store).await.unwrap(), 0);
        assert!(!root.path().join(ProcessId::named("gone").as_str()).exists());
        let history = store.history().recent(&session, 10).await.unwrap();
        let texts: Vec<_> = history.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["question", "answer"], "saved once");
    }

    #[test]
    fn an_unreadable_file_is_set_aside() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join(ProcessId::named("gone").as_str())).unwrap();
        std::fs::write(
            root.path()
                .join(ProcessId::named("gone").as_str())
                .join("00000000000000000000.json"),
            b"{not json",
        )
        .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let (store, _db) = crate::store::test_store().await;
            let me = Spool::open(root.path(), &ProcessId::named("me")).unwrap();
            assert_eq!(me.adopt(&store).await.unwrap(), 0);
        });
        assert!(root
            .path()
            .join(ProcessId::named("gone").as_str())
            .join("00000000000000000000.bad")
            .exists());
    }

    #[test]
    fn files_sort_in_the_order_they_were_put() {
        let root = tempfile::tempdir().unwrap();
        let spool = Spool::open(root.path(), &ProcessId::named("p")).unwrap();
        let paths: Vec<_> = (0..12)
            .map(|_| {
                spool
                    .put(&crate::store::test_message("hello"), false)
                    .unwrap()
                    .0
            })
            .collect();
        assert_eq!(
            spooled_files(&root.path().join(ProcessId::named("p").as_str()), MESSAGE).unwrap(),
            paths
        );
        spool.remove(SpoolFile(paths[3].clone()));
        assert_eq!(
            spooled_files(&root.path().join(ProcessId::named("p").as_str()), MESSAGE)
                .unwrap()
                .len(),
            11
        );
    }
}
