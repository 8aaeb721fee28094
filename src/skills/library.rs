//! The live skill set: `SKILLS_DIR` is looked at again (at most once a second)
//! whenever skills are used, and re-read when a file was added, changed or
//! removed — so editing a skill needs no restart.

use super::{SkillBook, SkillProblem};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

/// How often the directory is looked at, at most.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// The `*.md` files of the directory with their modification time and size.
type Stamp = Vec<(PathBuf, Option<SystemTime>, u64)>;

/// Skills that follow their directory.
#[derive(Debug)]
pub struct SkillLibrary {
    dir: PathBuf,
    reserved: &'static [&'static str],
    check_every: Duration,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    book: Arc<SkillBook>,
    stamp: Stamp,
    checked: Instant,
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
            check_every: CHECK_EVERY,
            state: Mutex::new(State {
                book: Arc::new(book),
                stamp,
                checked: Instant::now(),
            }),
        };
        (library, problems)
    }

    /// The skills as they are now.
    pub fn book(&self) -> Arc<SkillBook> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.checked.elapsed() >= self.check_every {
            state.checked = Instant::now();
            let now = stamp(&self.dir);
            if now != state.stamp {
                let (book, problems) = SkillBook::load(&self.dir, self.reserved);
                for p in &problems {
                    tracing::warn!(path = %p.path.display(), problem = %p.problem, "skill skipped");
                }
                tracing::info!(dir = %self.dir.display(), skills = book.len(), "skills reloaded");
                state.book = Arc::new(book);
                state.stamp = now;
            }
        }
        Arc::clone(&state.book)
    }
}

fn stamp(dir: &Path) -> Stamp {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut stamp: Stamp = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "md"))
        .map(|e| {
            let meta = e.metadata().ok();
            (
                e.path(),
                meta.as_ref().and_then(|m| m.modified().ok()),
                meta.map_or(0, |m| m.len()),
            )
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
        let (mut library, problems) = SkillLibrary::load(dir.path(), &["help"]);
        assert!(problems.is_empty());
        library.check_every = Duration::ZERO;
        assert!(library.book().get("standup").is_none());

        let file = dir.path().join("standup.md");
        std::fs::write(&file, "---\ndescription: Stand-up\n---\nNotes: {{args}}").unwrap();
        assert_eq!(
            library.book().get("standup").unwrap().description,
            "Stand-up"
        );

        std::fs::write(
            &file,
            "---\ndescription: Daily stand-up\n---\nNotes: {{args}}",
        )
        .unwrap();
        assert_eq!(
            library.book().get("standup").unwrap().description,
            "Daily stand-up"
        );

        std::fs::remove_file(&file).unwrap();
        assert!(library.book().get("standup").is_none());
        assert!(library.book().get("summarize").is_some(), "built-ins stay");
    }

    #[test]
    fn the_directory_is_not_looked_at_more_than_once_a_second() {
        let dir = tempfile::tempdir().unwrap();
        let (library, _) = SkillLibrary::load(dir.path(), &[]);
        std::fs::write(dir.path().join("new.md"), "---\ndescription: New\n---\nx").unwrap();
        assert!(
            library.book().get("new").is_none(),
            "checked less than a second ago"
        );
    }
}
