//! The workspace directory and the part of it each caller sees.
//!
//! A chat user's file tools, uploads and commands act in that user's own
//! folder, `users/<platform>-<user>/` (created on first use): what the model
//! calls "the workspace" in their turns is that folder, and a path outside it
//! is refused. The operator at the machine (the console of `switchboard chat`,
//! an adapter with `local_operator`) and calls made outside any chat see the
//! whole workspace. Per user, not per chat: sessions are per user in groups
//! too, so one member's uploads and command outputs are not another's to read
//! — and a user's files follow them between their DM and their groups.
//!
//! Below the media and the tools (both copy or open files here): opening
//! without following links (`beneath`) and measuring a folder against its
//! quota (`quota`) live here too.

pub(crate) mod beneath;
pub(crate) mod quota;

pub use beneath::BeneathError;

use crate::domain::Conversation;
use beneath::Dir;
use std::io;
use std::path::{Component, Path, PathBuf};
use switchboard_platform::{Platform, UserId};

/// Why a path given for the workspace is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// Malformed (empty, a NUL byte).
    #[error("{0}")]
    Invalid(String),
    /// It leads outside the caller's view: `..`, an absolute path elsewhere,
    /// another user's folder, a symbolic link out.
    #[error("{0}")]
    Outside(String),
    /// It could not be looked at.
    #[error("{0}")]
    Unreadable(String),
}

/// The directory under the workspace root that holds the users' folders.
pub const USERS_DIR: &str = "users";

/// The workspace, or one user's folder of it (a *view*).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    /// The canonical root of the whole workspace.
    base: PathBuf,
    /// The absolute, non-canonical spelling of `base`, when it differs.
    alias: Option<PathBuf>,
    /// What this view's tools see: `base`, or a user's folder below it.
    root: PathBuf,
    /// The folder name (`telegram-42`) when this is a user's view.
    owner: Option<String>,
    /// Platforms whose users are the operator at the machine.
    operators: Vec<Platform>,
    /// Bytes a user's folder may hold (`WORKSPACE_QUOTA_MB`).
    quota: Option<u64>,
}

impl Workspace {
    /// Creates the directory if missing and canonicalizes it. No operator
    /// platforms and no quota until set.
    pub fn new(path: impl AsRef<Path>) -> io::Result<Self> {
        std::fs::create_dir_all(path.as_ref())?;
        let root = path.as_ref().canonicalize()?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("workspace {} is not a directory", root.display()),
            ));
        }
        let alias = std::path::absolute(path.as_ref())
            .ok()
            .filter(|a| *a != root);
        Ok(Self {
            base: root.clone(),
            alias,
            root,
            owner: None,
            operators: Vec::new(),
            quota: None,
        })
    }

    /// Users of these platforms see the whole workspace (the operator at the
    /// machine: adapters with `local_operator`).
    pub fn with_operators(mut self, platforms: Vec<Platform>) -> Self {
        self.operators = platforms;
        self
    }

    /// Each user's folder may hold at most `bytes`.
    pub fn with_quota(mut self, bytes: u64) -> Self {
        self.quota = Some(bytes);
        self
    }

    /// This view's root directory (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The root of the whole workspace (canonical).
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// Whether this is one user's folder rather than the whole workspace.
    pub fn is_user_folder(&self) -> bool {
        self.owner.is_some()
    }

    /// The bytes this view may hold: a user's folder's quota; `None` for the
    /// whole workspace.
    pub fn quota(&self) -> Option<u64> {
        self.owner.as_ref().and(self.quota)
    }

    /// The view of the turn's caller: the whole workspace for the operator or
    /// when there is no chat caller, else the user's own folder (created).
    pub fn view(&self, caller: Option<&Conversation>) -> Result<Workspace, BeneathError> {
        self.view_of(caller.map(|c| (c.key.platform, c.key.user)))
    }

    /// [`Workspace::view`] for `platform`'s user `user`.
    pub fn view_of(&self, caller: Option<(Platform, UserId)>) -> Result<Workspace, BeneathError> {
        let Some((platform, user)) = caller.filter(|(p, _)| !self.operators.contains(p)) else {
            return Ok(Workspace {
                root: self.base.clone(),
                owner: None,
                ..self.clone()
            });
        };
        let folder = folder_name(platform, user);
        let rel = Path::new(USERS_DIR).join(&folder);
        let top = Dir::open(&self.base).map_err(|e| BeneathError::Io {
            path: PathBuf::from("."),
            source: e,
        })?;
        top.descend(&rel, true)?;
        Ok(Workspace {
            root: self.base.join(rel),
            owner: Some(folder),
            ..self.clone()
        })
    }

    /// This view's root opened for walking down without following links
    /// (from the workspace root: a link in place of the user's folder is
    /// refused too).
    pub(crate) fn open_root(&self) -> Result<Dir, BeneathError> {
        let top = Dir::open(&self.base).map_err(|e| BeneathError::Io {
            path: PathBuf::from("."),
            source: e,
        })?;
        top.descend(
            self.root.strip_prefix(&self.base).unwrap_or(Path::new("")),
            false,
        )
    }

    /// `path` (from [`Workspace::resolve`]) relative to this view's root.
    pub(crate) fn relative<'a>(&self, path: &'a Path) -> &'a Path {
        path.strip_prefix(&self.root).unwrap_or(path)
    }

    /// Maps a model-supplied path (relative to this view's root, or absolute
    /// inside it) to a path inside the view.
    ///
    /// Refuses `..` escapes, absolute paths elsewhere, and symlinks (anywhere on the
    /// existing part of the path) that resolve outside the view. The existing part
    /// of the returned path is canonical, so it contains no symlinks.
    pub fn resolve(&self, input: &str) -> Result<PathBuf, PathError> {
        if input.trim().is_empty() {
            return Err(PathError::Invalid(
                "path is empty; give a path relative to the workspace root".into(),
            ));
        }
        if input.contains('\0') {
            return Err(PathError::Invalid("path contains a NUL byte".into()));
        }
        let given = Path::new(input);
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.root.join(given)
        };
        let mut lexical = PathBuf::new();
        for comp in joined.components() {
            match comp {
                Component::ParentDir => {
                    lexical.pop();
                }
                Component::CurDir => {}
                other => lexical.push(other),
            }
        }
        // The root as the operator spelled it (e.g. through a symlinked /tmp).
        if let Some(rest) = self
            .alias
            .as_ref()
            .and_then(|a| lexical.strip_prefix(a).ok())
        {
            lexical = self.base.join(rest);
        }
        if !lexical.starts_with(&self.root) {
            return Err(self.outside(input, &lexical));
        }

        // Canonicalize the deepest existing ancestor; the rest does not exist yet.
        let mut existing = lexical;
        let mut missing = Vec::new();
        loop {
            match std::fs::symlink_metadata(&existing) {
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    match existing.file_name() {
                        Some(name) => missing.push(name.to_os_string()),
                        None => return Err(self.outside(input, &existing)),
                    }
                    existing.pop();
                }
                Err(e) => return Err(unreadable(input, &e)),
            }
        }
        let canonical = existing.canonicalize().map_err(|_| {
            PathError::Outside(format!(
                "path `{input}` goes through a symbolic link whose target does not exist \
                 or cannot be resolved"
            ))
        })?;
        if !canonical.starts_with(&self.root) {
            return Err(PathError::Outside(format!(
                "path `{input}` resolves through a symbolic link to a location outside {}",
                self.what()
            )));
        }
        Ok(missing.into_iter().rev().fold(canonical, |p, n| p.join(n)))
    }

    /// The refusal of `input`, which is `lexical` outside this view.
    fn outside(&self, input: &str, lexical: &Path) -> PathError {
        if self.owner.is_some() && lexical.starts_with(&self.base) {
            return PathError::Outside(format!(
                "path `{input}` is outside your workspace folder: each user's file tools and \
                 commands see only that user's own folder, and other users' files are only \
                 the operator's to read. Use a path relative to your folder (e.g. \
                 `notes/todo.txt`)"
            ));
        }
        PathError::Outside(format!(
            "path `{input}` is outside {}; use a path relative to {} without `..` (e.g. \
             `notes/todo.txt`)",
            self.what(),
            if self.owner.is_some() {
                "your folder"
            } else {
                "the workspace root"
            }
        ))
    }

    fn what(&self) -> &'static str {
        if self.owner.is_some() {
            "your workspace folder"
        } else {
            "the workspace"
        }
    }

    /// The path relative to this view's root, for messages (`.` for the root itself).
    pub fn display(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }
}

/// Why `shown` could not be looked at.
fn unreadable(shown: &str, e: &io::Error) -> PathError {
    PathError::Unreadable(match e.kind() {
        io::ErrorKind::PermissionDenied => format!("permission denied for `{shown}`"),
        _ => format!("cannot access `{shown}`: {e}"),
    })
}

/// The folder name of `platform`'s user `user`: `telegram-42` (a negative id
/// reads `n…`).
pub fn folder_name(platform: Platform, user: UserId) -> String {
    let id = user.get();
    let sign = if id < 0 { "n" } else { "" };
    format!("{}-{sign}{}", platform.as_str(), id.unsigned_abs())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ws() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path().join("ws")).unwrap();
        (dir, ws)
    }

    #[test]
    fn resolve_accepts_inside_paths() {
        let (_d, ws) = ws();
        assert_eq!(ws.resolve("a/b.txt").unwrap(), ws.root().join("a/b.txt"));
        assert_eq!(ws.resolve("./a/../c").unwrap(), ws.root().join("c"));
        let abs = ws.root().join("x.txt");
        assert_eq!(ws.resolve(abs.to_str().unwrap()).unwrap(), abs);
        assert_eq!(ws.resolve(".").unwrap(), ws.root());
    }

    #[test]
    fn resolve_accepts_the_root_as_spelled_through_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("alias")).unwrap();
        let ws = Workspace::new(dir.path().join("alias")).unwrap();
        let via_alias = dir.path().join("alias/a.txt");
        let resolved = ws.resolve(via_alias.to_str().unwrap()).unwrap();
        assert_eq!(resolved, ws.root().join("a.txt"));
        assert!(ws.root().ends_with("real"));
        let escape = dir.path().join("alias/../x");
        assert!(ws.resolve(escape.to_str().unwrap()).is_err());
        // A user's folder, through the alias too.
        let mine = ws.view_of(Some((Platform::Telegram, UserId(7)))).unwrap();
        let inside = dir.path().join("alias/users/telegram-7/a.txt");
        assert_eq!(
            mine.resolve(inside.to_str().unwrap()).unwrap(),
            mine.root().join("a.txt")
        );
    }

    #[test]
    fn resolve_refuses_escapes() {
        let (_d, ws) = ws();
        for bad in ["../x", "a/../../x", "/etc/passwd", "..", "/"] {
            let err = ws.resolve(bad).unwrap_err();
            assert!(matches!(err, PathError::Outside(_)), "{bad}: {err}");
            assert!(err.to_string().contains("outside the workspace"), "{err}");
        }
        assert!(matches!(ws.resolve(""), Err(PathError::Invalid(_))));
        assert!(matches!(ws.resolve("a\0b"), Err(PathError::Invalid(_))));
    }

    #[test]
    fn resolve_refuses_symlinks_outside() {
        let (dir, ws) = ws();
        let outside = dir.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(&outside, ws.root().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), ws.root().join("f")).unwrap();
        std::os::unix::fs::symlink(outside.join("nope"), ws.root().join("dangling")).unwrap();
        for bad in ["link/secret", "link/new/file", "f", "dangling"] {
            let err = ws.resolve(bad).unwrap_err();
            assert!(matches!(err, PathError::Outside(_)), "{bad}: {err}");
        }
        std::fs::create_dir(ws.root().join("real")).unwrap();
        std::os::unix::fs::symlink(ws.root().join("real"), ws.root().join("inner")).unwrap();
        assert_eq!(ws.resolve("inner/x").unwrap(), ws.root().join("real/x"));
    }

    #[test]
    fn users_get_their_own_folder_and_the_operator_the_whole() {
        let (_d, ws) = ws();
        let ws = ws.with_operators(vec![Platform::Console]).with_quota(10);
        let a = ws.view_of(Some((Platform::Telegram, UserId(42)))).unwrap();
        let b = ws.view_of(Some((Platform::Telegram, UserId(-43)))).unwrap();
        assert_eq!(a.root(), ws.base().join("users/telegram-42"));
        assert_eq!(b.root(), ws.base().join("users/telegram-n43"));
        assert!(a.root().is_dir() && a.is_user_folder());
        assert_eq!((a.quota(), ws.quota()), (Some(10), None));
        assert_eq!(a.resolve("x").unwrap(), a.root().join("x"));
        for bad in ["../telegram-n43/x", "/etc/passwd"] {
            assert!(a.resolve(bad).is_err(), "{bad}");
        }
        let theirs = b.root().join("x");
        let err = a.resolve(theirs.to_str().unwrap()).unwrap_err();
        assert!(err.to_string().contains("other users' files"), "{err}");
        // A link in my folder to theirs leads nowhere.
        std::os::unix::fs::symlink(b.root(), a.root().join("peek")).unwrap();
        assert!(a.resolve("peek/x").is_err());

        let operator = ws.view_of(Some((Platform::Console, UserId(1)))).unwrap();
        assert_eq!(operator.root(), ws.base());
        assert!(operator.resolve("users/telegram-n43/x").is_ok());
        assert_eq!(ws.view_of(None).unwrap().root(), ws.base());
    }

    #[test]
    fn a_link_in_place_of_a_users_folder_is_refused() {
        let (dir, ws) = ws();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::create_dir_all(ws.base().join(USERS_DIR)).unwrap();
        std::os::unix::fs::symlink(&elsewhere, ws.base().join("users/discord-5")).unwrap();
        let err = ws
            .view_of(Some((Platform::Discord, UserId(5))))
            .unwrap_err();
        assert!(matches!(err, BeneathError::Link(_)), "{err}");
    }
}
