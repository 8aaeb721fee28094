//! The live skill set: a background task looks at `SKILLS_DIR` every second
//! (on a blocking thread) and re-reads it when a file was added, changed or
//! removed — so editing a skill needs no restart. Readers never touch the disk.

use super::{SkillBook, SkillProblem};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often the directory is looked at.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// The `*.md` files of the directory with a hash of their contents (symlinks
/// followed; an edit that keeps size and time still counts).
type Stamp = Vec<(PathBuf, u64)>;

/// Skills that follow their directory.
#[derive(Debug)]
pub struct SkillLibrary {
    dir: PathBuf,
    reserved: &'static [&'static str],
    book: RwLock<Arc<SkillBook>>,
    stamp: Mutex<Stamp>,
    /// Counts reloads, for those who follow the set (the command menus).
    reloads: tokio::sync::watch::Sender<u64>,
}

impl SkillLibrary {
    /// Loads the skills (see [`SkillBook::load`]) and remembers the directory.
    pub fn load(
        dir: &Path,
        reserved: &'static [&'static str],
    ) -> (SkillLibrary, Vec<SkillProblem>) {
        let stamp = stamp(dir);
        let (book, problems) = SkillBook::load(dir, reserved);
        let library = SkillLibrary {
            dir: dir.to_owned(),
            reserved,
            book: RwLock::new(Arc::new(book)),
            stamp: Mutex::new(stamp),
            reloads: tokio::sync::watch::Sender::new(0),
        };
        (library, problems)
    }

    /// The skills as they are now.
    pub fn book(&self) -> Arc<SkillBook> {
        Arc::clone(&self.book.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Re-reads the directory when its files changed; `true` if it did. Blocking
    /// file I/O: [`SkillLibrary::watch`] runs it on a blocking thread.
    pub fn refresh(&self) -> bool {
        let mut last = self.stamp.lock().unwrap_or_else(PoisonError::into_inner);
        let now = stamp(&self.dir);
        if now == *last {
            return false;
        }
        let (book, problems) = SkillBook::load(&self.dir, self.reserved);
        for p in &problems {
            tracing::warn!(path = %p.path.display(), problem = %p.problem, "skill skipped");
        }
        tracing::info!(dir = %self.dir.display(), skills = book.len(), "skills reloaded");
        *self.book.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(book);
        *last = now;
        self.reloads.send_modify(|n| *n += 1);
        true
    }

    /// The names a skill cannot take (the gateway's own commands).
    pub fn reserved(&self) -> &'static [&'static str] {
        self.reserved
    }

    /// Writes `text` as `SKILLS_DIR/<name>.md` (created when missing; the
    /// file replaced whole, never half-written) and reloads the skills.
    /// Blocking file I/O. `name` must be a valid skill name.
    pub fn install(&self, name: &str, text: &str) -> std::io::Result<()> {
        if !super::valid_name(name) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{name:?} is not a skill name"),
            ));
        }
        std::fs::create_dir_all(&self.dir)?;
        let path = self.dir.join(format!("{name}.md"));
        let partial = self.dir.join(format!(".{name}.md.partial"));
        std::fs::write(&partial, text)?;
        std::fs::rename(&partial, &path)?;
        self.refresh();
        Ok(())
    }

    /// Changes whenever the skills are reloaded.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.reloads.subscribe()
    }

    /// Keeps the skills in step with their directory until `shutdown` (on a
    /// task of its own).
    pub fn watch(self: &Arc<Self>, shutdown: CancellationToken) {
        let library = Arc::clone(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(CHECK_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    _ = tick.tick() => {}
                }
                let library = Arc::clone(&library);
                if let Err(e) = tokio::task::spawn_blocking(move || library.refresh()).await {
                    tracing::warn!(error = %e, "skills check failed");
                }
            }
        });
    }
}

fn stamp(dir: &Path) -> Stamp {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut stamp: Stamp = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|path| {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            std::fs::read(&path).ok().hash(&mut hasher);
            (path, hasher.finish())
        })
        .collect();
    stamp.sort();
    stamp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_changed_and_removed_files_are_picked_up() {
        let dir = tempfile::tempdir().unwrap();
        let (library, problems) = SkillLibrary::load(dir.path(), &["help"]);
        assert!(problems.is_empty());
        assert!(!library.refresh(), "nothing changed");
        assert!(library.book().get("standup").is_none());

        let file = dir.path().join("standup.md");
        std::fs::write(&file, "---\ndescription: Stand-up\n---\nNotes: {{args}}").unwrap();
        assert!(
            library.book().get("standup").is_none(),
            "readers see the last refresh"
        );
        assert!(library.refresh());
        assert_eq!(
            library.book().get("standup").unwrap().description,
            "Stand-up"
        );

        // Same size, same second: the contents still tell.
        std::fs::write(&file, "---\ndescription: Stand-UP\n---\nNotes: {{args}}").unwrap();
        assert!(library.refresh());
        assert_eq!(
            library.book().get("standup").unwrap().description,
            "Stand-UP"
        );

        std::fs::remove_file(&file).unwrap();
        assert!(library.refresh());
        assert!(library.book().get("standup").is_none());
        assert!(library.book().get("summarize").is_some(), "built-ins stay");
    }

    #[cfg(unix)]
    #[test]
    fn symlinked_files_are_followed() {
        let dir = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let target = data.path().join("real.md");
        std::fs::write(&target, "---\ndescription: One\n---\nx").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("linked.md")).unwrap();
        let (library, _) = SkillLibrary::load(dir.path(), &[]);
        assert_eq!(library.book().get("linked").unwrap().description, "One");
        std::fs::write(&target, "---\ndescription: Two\n---\nx").unwrap();
        assert!(library.refresh());
        assert_eq!(library.book().get("linked").unwrap().description, "Two");
    }
}
