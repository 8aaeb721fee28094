//! Whether the directories and files the configuration names are usable; each
//! problem names its variable (for `switchboard doctor` and start-up).

use crate::text::safe_name;
use std::path::{Path, PathBuf};

/// A path from the configuration that cannot be used as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var} ({path}) {problem}; {fix}")]
pub struct PathProblem {
    /// The variable the path comes from.
    pub var: &'static str,
    pub path: String,
    pub problem: String,
    pub fix: &'static str,
}

const FIX_WRITABLE: &str = "set it to a directory this user can write (it is created when missing)";
const FIX_EXISTING_DIR: &str = "create the directory, or fix or unset the variable";
const FIX_EXISTING_FILE: &str = "create the file, or fix or unset the variable";

fn problem(var: &'static str, path: &Path, problem: String, fix: &'static str) -> PathProblem {
    PathProblem {
        var,
        path: path.display().to_string(),
        problem,
        fix,
    }
}

/// A directory the gateway writes into (`DATA_DIR`, `WORKSPACE_DIR`): an
/// existing writable directory, or one that can be created (its nearest
/// existing ancestor is a writable directory). Changes nothing on disk.
pub fn check_writable_dir(var: &'static str, path: &Path) -> Result<(), PathProblem> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => writable(path)
            .map_err(|e| problem(var, path, format!("is not writable: {e}"), FIX_WRITABLE)),
        Ok(_) => Err(problem(
            var,
            path,
            "is not a directory".into(),
            FIX_WRITABLE,
        )),
        // Missing, or below a file: what matters is where it would be created.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            let (ancestor, meta) = nearest_existing(path)
                .ok_or_else(|| problem(var, path, "has no existing parent".into(), FIX_WRITABLE))?;
            if !meta.is_dir() {
                return Err(problem(
                    var,
                    path,
                    format!(
                        "cannot be created: {} is not a directory",
                        ancestor.display()
                    ),
                    FIX_WRITABLE,
                ));
            }
            writable(&ancestor).map_err(|e| {
                problem(
                    var,
                    path,
                    format!("cannot be created in {}: {e}", ancestor.display()),
                    FIX_WRITABLE,
                )
            })
        }
        Err(e) => Err(problem(
            var,
            path,
            format!("cannot be read: {e}"),
            FIX_WRITABLE,
        )),
    }
}

/// Creates a directory the gateway writes into, or says which variable to fix.
pub fn ensure_writable_dir(var: &'static str, path: &Path) -> Result<(), PathProblem> {
    check_writable_dir(var, path)?;
    std::fs::create_dir_all(path)
        .map_err(|e| problem(var, path, format!("cannot be created: {e}"), FIX_WRITABLE))
}

/// A directory that must already exist and be readable (`SKILLS_DIR`,
/// `SCRIPT_TOOLS_DIR`).
pub fn check_existing_dir(var: &'static str, path: &Path) -> Result<(), PathProblem> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::read_dir(path)
            .map(|_| ())
            .map_err(|e| problem(var, path, format!("cannot be read: {e}"), FIX_EXISTING_DIR)),
        Ok(_) => Err(problem(
            var,
            path,
            "is not a directory".into(),
            FIX_EXISTING_DIR,
        )),
        Err(e) => Err(problem(var, path, missing(&e), FIX_EXISTING_DIR)),
    }
}

/// A file that must already exist and be readable (`HTTP_TOOLS_FILE`).
pub fn check_existing_file(var: &'static str, path: &Path) -> Result<(), PathProblem> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => std::fs::File::open(path)
            .map(|_| ())
            .map_err(|e| problem(var, path, format!("cannot be read: {e}"), FIX_EXISTING_FILE)),
        Ok(_) => Err(problem(
            var,
            path,
            "is not a file".into(),
            FIX_EXISTING_FILE,
        )),
        Err(e) => Err(problem(var, path, missing(&e), FIX_EXISTING_FILE)),
    }
}

/// Where the large result of tool call `call_id` in `session` is stored
/// (`DATA_DIR/results/<session>/<call>.txt`).
pub(crate) fn stored_result_path(
    data_dir: &Path,
    session: &crate::domain::SessionId,
    call_id: &str,
) -> PathBuf {
    data_dir
        .join("results")
        .join(safe_name(session.as_str()))
        .join(format!("{}.txt", safe_name(call_id)))
}

/// Whether the database is the default file inside `DATA_DIR` (no
/// `DATABASE_URL` of its own): then a database that cannot be opened is a
/// `DATA_DIR` problem.
pub fn database_in_data_dir(database_url: &str, data_dir: &Path) -> bool {
    database_url == default_database_url(data_dir)
}

/// The database URL used when `DATABASE_URL` is unset (as the configuration reads it).
fn default_database_url(data_dir: &Path) -> String {
    format!("sqlite://{}", data_dir.join("switchboard.db").display())
}

fn missing(e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::NotFound {
        "does not exist".into()
    } else {
        format!("cannot be read: {e}")
    }
}

fn writable(dir: &Path) -> Result<(), std::io::Error> {
    use rustix::fs::Access;
    rustix::fs::access(dir, Access::WRITE_OK | Access::EXEC_OK).map_err(std::io::Error::from)
}

/// The closest ancestor of `path` that exists (relative paths are taken from
/// the working directory).
fn nearest_existing(path: &Path) -> Option<(PathBuf, std::fs::Metadata)> {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(path)
    };
    absolute
        .ancestors()
        .skip(1)
        .find_map(|a| std::fs::metadata(a).ok().map(|m| (a.to_path_buf(), m)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn a_file_where_a_directory_belongs_names_the_variable() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("plain");
        std::fs::write(&file, "x").unwrap();
        let e = check_writable_dir("DATA_DIR", &file).unwrap_err();
        assert_eq!(e.var, "DATA_DIR");
        assert!(e.to_string().starts_with("DATA_DIR ("), "{e}");
        assert!(e.to_string().contains("is not a directory"), "{e}");
        let below = file.join("sub/dir");
        let e = check_writable_dir("WORKSPACE_DIR", &below).unwrap_err();
        assert!(e.to_string().contains("cannot be created"), "{e}");
        assert!(ensure_writable_dir("DATA_DIR", &below).is_err());
    }

    #[test]
    fn missing_writable_dirs_are_fine_and_created_on_demand() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        assert_eq!(check_writable_dir("DATA_DIR", &dir), Ok(()));
        assert!(!dir.exists(), "checking creates nothing");
        assert_eq!(ensure_writable_dir("DATA_DIR", &dir), Ok(()));
        assert!(dir.is_dir());
    }

    #[test]
    fn the_default_database_belongs_to_data_dir() {
        let get = |dir: &'static str, db: Option<&'static str>| {
            move |k: &str| match k {
                "LLM_BASE_URL" => Some("http://localhost:11434/v1".to_owned()),
                "LLM_MODEL" => Some("m".to_owned()),
                "DATA_DIR" => Some(dir.to_owned()),
                "DATABASE_URL" => db.map(str::to_owned),
                _ => None,
            }
        };
        let config = Config::from_lookup(get("/srv/sb", None)).unwrap();
        assert!(database_in_data_dir(&config.database_url, &config.data_dir));
        let config = Config::from_lookup(get("/srv/sb", Some("postgres://db/sb"))).unwrap();
        assert!(!database_in_data_dir(
            &config.database_url,
            &config.data_dir
        ));
    }

    #[test]
    fn inputs_must_exist() {
        let tmp = tempfile::tempdir().unwrap();
        let gone = tmp.path().join("gone");
        let e = check_existing_dir("SCRIPT_TOOLS_DIR", &gone).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        let e = check_existing_file("HTTP_TOOLS_FILE", &gone).unwrap_err();
        assert!(e.to_string().starts_with("HTTP_TOOLS_FILE ("), "{e}");
        assert_eq!(check_existing_dir("SKILLS_DIR", tmp.path()), Ok(()));
        assert!(check_existing_file("HTTP_TOOLS_FILE", tmp.path()).is_err());
    }
}
