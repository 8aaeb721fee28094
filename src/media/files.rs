//! The media directory: downloads land in `tmp/`, are hashed as they are
//! read back, and are filed under their SHA-256 (`ab/abcdef…`), so the same
//! file sent twice is stored once. Tools get a copy in the workspace.

use crate::workspace::beneath::{BeneathError, How};
use crate::workspace::Workspace;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use tokio::io::AsyncReadExt;

/// A file in the media directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// Lowercase hex SHA-256 of the content.
    pub hash: String,
    pub size: u64,
    /// The first bytes of the content (for sniffing its type).
    pub head: Vec<u8>,
}

/// How many bytes of a file are kept for sniffing.
const HEAD_LEN: usize = 8 * 1024;

/// Where the file with `hash` lives under `dir`.
pub fn path_of(dir: &Path, hash: &str) -> PathBuf {
    let shard = hash.get(..2).unwrap_or("00");
    dir.join(shard).join(hash)
}

/// A fresh temporary path under `dir/tmp` (created).
pub async fn temp_path(dir: &Path) -> std::io::Result<PathBuf> {
    let tmp = dir.join("tmp");
    tokio::fs::create_dir_all(&tmp).await?;
    Ok(tmp.join(uuid::Uuid::new_v4().simple().to_string()))
}

/// Hashes the file at `tmp` in bounded chunks and files it under its hash
/// (dropping `tmp` when that content is stored already).
pub async fn file_away(dir: &Path, tmp: &Path) -> std::io::Result<Stored> {
    let mut file = tokio::fs::File::open(tmp).await?;
    let mut hasher = Sha256::new();
    let mut head = Vec::with_capacity(HEAD_LEN);
    let mut size: u64 = 0;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        let chunk = &buf[..n];
        hasher.update(chunk);
        if head.len() < HEAD_LEN {
            let take = (HEAD_LEN - head.len()).min(n);
            head.extend_from_slice(&chunk[..take]);
        }
        size += n as u64;
    }
    drop(file);
    let hash = crate::hex::encode(&hasher.finalize());
    let dest = path_of(dir, &hash);
    if tokio::fs::try_exists(&dest).await? {
        tokio::fs::remove_file(tmp).await?;
        refresh(&dest).await;
    } else {
        if let Some(parent) = dest.parent() {
            tokio::fs::create_dir_all(parent).await?;
        }
        tokio::fs::rename(tmp, &dest).await?;
    }
    Ok(Stored { hash, size, head })
}

/// Files `bytes` (a resized image) under their hash; returns the hash.
pub async fn put(dir: &Path, bytes: &[u8]) -> std::io::Result<String> {
    let hash = crate::hex::encode(&Sha256::digest(bytes));
    let dest = path_of(dir, &hash);
    if tokio::fs::try_exists(&dest).await? {
        refresh(&dest).await;
    } else {
        if let Some(parent) = dest.parent() {
            tokio::fs::create_dir_all(parent).await?;
        }
        let tmp = temp_path(dir).await?;
        tokio::fs::write(&tmp, bytes).await?;
        tokio::fs::rename(&tmp, &dest).await?;
    }
    Ok(hash)
}

/// Marks a file filed again as written now, so the sweep's scan for
/// unrecorded leftovers (which goes by that time) does not take a file in
/// use for an old one while its record is being made.
async fn refresh(path: &Path) {
    let opened = tokio::fs::OpenOptions::new().write(true).open(path).await;
    let refreshed = match opened {
        Ok(file) => file
            .into_std()
            .await
            .set_modified(std::time::SystemTime::now()),
        Err(e) => Err(e),
    };
    if let Err(e) = refreshed {
        tracing::debug!(error = %e, "could not refresh a media file's time");
    }
}

/// Removes downloads left in `dir/tmp` by a crash more than a day ago;
/// returns how many went.
pub async fn remove_stale_temps(dir: &Path) -> usize {
    let Ok(mut entries) = tokio::fs::read_dir(dir.join("tmp")).await else {
        return 0;
    };
    let day = std::time::Duration::from_secs(86_400);
    let mut removed = 0;
    while let Ok(Some(entry)) = entries.next_entry().await {
        let old = entry
            .metadata()
            .await
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > day);
        if old && tokio::fs::remove_file(entry.path()).await.is_ok() {
            removed += 1;
        }
    }
    removed
}

/// A file name safe to create anywhere: the last path component of `name`,
/// without control or bidi/invisible formatting characters (a name that
/// reorders itself in the chat, `report<U+202E>fdp.exe`), leading dots or
/// separators, at most 100 characters; `fallback` when nothing usable is left.
pub fn clean_name(name: Option<&str>, fallback: &str) -> String {
    let base = name
        .and_then(|n| n.rsplit(['/', '\\']).next())
        .unwrap_or_default();
    let cleaned: String = base
        .chars()
        .filter(|c| {
            !c.is_control()
                && !is_format(*c)
                && !matches!(c, '/' | '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|')
        })
        .take(100)
        .collect();
    let cleaned = cleaned.trim().trim_start_matches('.').trim().to_owned();
    if cleaned.is_empty() {
        fallback.to_owned()
    } else {
        cleaned
    }
}

/// Bidi controls, zero-width and other invisible formatting characters
/// (Unicode `Cf` in the ranges names meet).
fn is_format(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}' | '\u{E0000}'..='\u{E007F}')
}

/// Copies the stored file into `ws` (the sender's view of the workspace) as
/// `inbox/<chat>/<name>`, choosing `name-2.ext`, `name-3.ext`, … when another
/// file has the name; returns the path relative to the view, as the model
/// and its tools use it. Nothing on the way is followed if it is a link (a
/// command may have planted one): the copy is refused instead.
pub(crate) async fn copy_to_workspace(
    stored: &Path,
    ws: &Workspace,
    chat: &str,
    name: &str,
) -> Result<String, BeneathError> {
    let (stored, ws, chat, name) = (
        stored.to_path_buf(),
        ws.clone(),
        chat.to_owned(),
        name.to_owned(),
    );
    tokio::task::spawn_blocking(move || copy_blocking(&stored, &ws, &chat, &name))
        .await
        .map_err(|e| BeneathError::Io {
            path: PathBuf::from("inbox"),
            source: std::io::Error::other(e.to_string()),
        })?
}

fn copy_blocking(
    stored: &Path,
    ws: &Workspace,
    chat: &str,
    name: &str,
) -> Result<String, BeneathError> {
    let rel_dir = Path::new("inbox").join(chat);
    let dir = ws.open_root()?.descend(&rel_dir, true)?;
    let (stem, ext) = match name.rsplit_once('.') {
        Some((s, e)) if !s.is_empty() => (s.to_owned(), format!(".{e}")),
        _ => (name.to_owned(), String::new()),
    };
    for n in 1..1000u32 {
        let candidate = if n == 1 {
            name.to_owned()
        } else {
            format!("{stem}-{n}{ext}")
        };
        let rel = rel_dir.join(&candidate);
        match dir.open_file(Path::new(&candidate), How::CreateNew, false) {
            Ok(mut out) => {
                let io = |source| BeneathError::Io {
                    path: rel.clone(),
                    source,
                };
                let mut src = std::fs::File::open(stored).map_err(io)?;
                std::io::copy(&mut src, &mut out).map_err(io)?;
                return Ok(rel.to_string_lossy().into_owned());
            }
            Err(e) if e.io_kind() == Some(std::io::ErrorKind::AlreadyExists) => continue,
            Err(BeneathError::Link(_)) => return Err(BeneathError::Link(rel)),
            Err(e) => return Err(e),
        }
    }
    Err(BeneathError::Io {
        path: rel_dir,
        source: std::io::Error::other("too many files with that name"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_only_a_harmless_last_component() {
        assert_eq!(clean_name(Some("../../etc/passwd"), "f"), "passwd");
        assert_eq!(clean_name(Some("C:\\x\\report.csv"), "f"), "report.csv");
        assert_eq!(clean_name(Some(".hidden"), "f"), "hidden");
        assert_eq!(clean_name(Some("a\u{0}b\nc.txt"), "f"), "abc.txt");
        assert_eq!(clean_name(Some(".."), "file"), "file");
        assert_eq!(clean_name(None, "photo.jpg"), "photo.jpg");
        assert_eq!(
            clean_name(Some("report\u{202E}fdp.exe"), "f"),
            "reportfdp.exe"
        );
        assert_eq!(clean_name(Some("\u{200B}\u{2066}"), "file"), "file");
    }

    #[tokio::test]
    async fn the_same_content_is_stored_once_and_copies_do_not_clobber() {
        let dir = tempfile::tempdir().unwrap();
        let media = dir.path().join("media");
        let ws = dir.path().join("ws");
        let mut hashes = Vec::new();
        for _ in 0..2 {
            let tmp = temp_path(&media).await.unwrap();
            tokio::fs::write(&tmp, b"a,b\n1,2\n").await.unwrap();
            let stored = file_away(&media, &tmp).await.unwrap();
            assert!(!tmp.exists());
            assert_eq!(
                (stored.size, stored.head.as_slice()),
                (8, b"a,b\n1,2\n".as_slice())
            );
            hashes.push(stored.hash);
        }
        assert_eq!(hashes[0], hashes[1]);
        let path = path_of(&media, &hashes[0]);
        let ws = Workspace::new(&ws).unwrap();
        let first = copy_to_workspace(&path, &ws, "tg-1", "data.csv")
            .await
            .unwrap();
        let second = copy_to_workspace(&path, &ws, "tg-1", "data.csv")
            .await
            .unwrap();
        assert_eq!(first, "inbox/tg-1/data.csv");
        assert_eq!(second, "inbox/tg-1/data-2.csv");
        assert_eq!(
            std::fs::read(ws.root().join(&second)).unwrap(),
            b"a,b\n1,2\n"
        );
    }
}
