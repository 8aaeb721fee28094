//! What sets a reload off: `SIGHUP` (everything is re-read) and changes of
//! the files themselves. The parent directories are watched, not the files,
//! so an editor that saves by writing a new file and renaming it over the
//! old one is followed; a burst of events is one reload once it is quiet.

use super::reload::{Reloader, Source};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How long the files must be quiet before a burst of changes is read.
const QUIET: Duration = Duration::from_millis(250);

/// Follows `SIGHUP` and the files until `shutdown` (on a task of its own).
pub(crate) fn spawn(reloader: Arc<Reloader>, shutdown: CancellationToken) {
    let (tx, mut changes) = mpsc::unbounded_channel::<PathBuf>();
    let watcher = watch_dirs(&reloader, tx);
    let mut hangups = hangups();
    tracing::info!(
        watching = watcher.is_some(),
        sighup = hangups.is_some(),
        "live reload ready: SIGHUP or a change of the files re-reads them"
    );
    tokio::spawn(async move {
        // Dropped at the end: the watching stops with the task.
        let _watcher = watcher;
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                Some(()) = next_hangup(&mut hangups) => {
                    tracing::info!("SIGHUP: re-reading the settings");
                    for source in Source::ALL {
                        reloader.reload(source, "SIGHUP").await;
                    }
                }
                Some(first) = changes.recv() => {
                    let mut sources = BTreeSet::new();
                    sources.extend(source_of(&reloader, &first));
                    // Collect the rest of the burst.
                    while let Ok(Some(path)) = tokio::time::timeout(QUIET, changes.recv()).await {
                        sources.extend(source_of(&reloader, &path));
                    }
                    for source in sources {
                        reloader.reload(source, "file change").await;
                    }
                }
            }
        }
    });
}

#[cfg(unix)]
type Hangups = Option<tokio::signal::unix::Signal>;
#[cfg(not(unix))]
type Hangups = Option<()>;

#[cfg(unix)]
fn hangups() -> Hangups {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::hangup()) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!(error = %e, "SIGHUP cannot be followed; edits of the files still reload");
            None
        }
    }
}

#[cfg(not(unix))]
fn hangups() -> Hangups {
    None
}

/// The next `SIGHUP` (never, when there is no handler).
async fn next_hangup(hangups: &mut Hangups) -> Option<()> {
    #[cfg(unix)]
    if let Some(s) = hangups {
        return s.recv().await;
    }
    let _ = hangups;
    std::future::pending().await
}

/// Watches the directories the sources live in; each event's paths go to `tx`.
fn watch_dirs(
    reloader: &Reloader,
    tx: mpsc::UnboundedSender<PathBuf>,
) -> Option<RecommendedWatcher> {
    let handler = move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event {
            if event.kind.is_access() {
                return;
            }
            for path in event.paths {
                let _ = tx.send(path);
            }
        }
    };
    let mut watcher = match notify::recommended_watcher(handler) {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(error = %e, "the settings files cannot be watched; SIGHUP still reloads");
            return None;
        }
    };
    let mut dirs = BTreeSet::new();
    for source in Source::ALL {
        let Some(path) = reloader.path(source) else {
            continue;
        };
        let dir = if source == Source::Skills {
            path.to_path_buf()
        } else {
            parent(path)
        };
        dirs.insert(dir);
    }
    for dir in dirs {
        if !dir.is_dir() {
            // e.g. the default ./skills, never created: nothing to follow.
            tracing::debug!(dir = %dir.display(), "not watched: no such directory");
            continue;
        }
        if let Err(e) = watcher.watch(&dir, RecursiveMode::NonRecursive) {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot watch for changes; SIGHUP still reloads");
        }
    }
    Some(watcher)
}

/// The directory holding `path` (`.` for a bare file name).
fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Which source a changed path belongs to, if any.
fn source_of(reloader: &Reloader, changed: &Path) -> Option<Source> {
    Source::ALL.into_iter().find(|&source| {
        let Some(path) = reloader.path(source) else {
            return false;
        };
        if source == Source::Skills {
            return same_dir(changed.parent(), path);
        }
        changed.file_name() == path.file_name() && same_dir(changed.parent(), &parent(path))
    })
}

/// Whether `a` is the directory `b` (compared as the filesystem resolves them).
fn same_dir(a: Option<&Path>, b: &Path) -> bool {
    let Some(a) = a else {
        return false;
    };
    let resolve = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    resolve(a) == resolve(b)
}
