//! Local files as attachments: `/attach PATH [caption]`, or a path dropped
//! into the terminal on a line of its own. The console is the operator at
//! this machine, so any readable file they name may be sent.

use std::path::{Path, PathBuf};
use switchboard_platform::{Attachment, AttachmentKind, PlatformError};
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// A file to send and the text that goes with it.
#[derive(Debug)]
pub(crate) struct Attach {
    pub(crate) attachment: Attachment,
    pub(crate) caption: String,
}

/// What `line` asks to attach: `None` when it is not an attach line,
/// `Some(Err)` with what to tell the user when the file cannot be sent.
pub(crate) fn parse(line: &str) -> Option<Result<Attach, String>> {
    let trimmed = line.trim();
    if let Some(rest) = trimmed.strip_prefix("/attach") {
        if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
            return None; // another command, e.g. `/attachments`
        }
        let (path, caption) = split_path(rest.trim());
        if path.is_empty() {
            return Some(Err(
                "usage: /attach PATH [caption] — e.g. /attach ~/report.pdf summarise this".into(),
            ));
        }
        return Some(attach(&expand(&path), caption));
    }
    // A dropped file: the whole line is one existing path.
    let (path, rest) = split_path(trimmed);
    let looks_like_path = path.starts_with('/') || path.starts_with("~/") || path.starts_with("./");
    if !looks_like_path || !rest.is_empty() {
        return None;
    }
    let path = expand(&path);
    path.is_file().then(|| attach(&path, String::new()))
}

/// The first token (quoted with ' or ", or up to whitespace with `\ `
/// escapes, as terminals paste dropped files) and the rest of the line.
fn split_path(s: &str) -> (String, String) {
    let mut chars = s.chars().peekable();
    let mut path = String::new();
    match chars.peek() {
        Some(&q @ ('\'' | '"')) => {
            chars.next();
            for c in chars.by_ref() {
                if c == q {
                    break;
                }
                path.push(c);
            }
        }
        _ => {
            while let Some(c) = chars.next() {
                match c {
                    '\\' => path.extend(chars.next()),
                    c if c.is_whitespace() => break,
                    c => path.push(c),
                }
            }
        }
    }
    (path, chars.collect::<String>().trim().to_owned())
}

fn expand(path: &str) -> PathBuf {
    match path.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME").map_or_else(
            || PathBuf::from(path),
            |home| PathBuf::from(home).join(rest),
        ),
        None => PathBuf::from(path),
    }
}

fn attach(path: &Path, caption: String) -> Result<Attach, String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot attach {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("cannot attach {shown}: not a regular file"));
    }
    let path = path
        .canonicalize()
        .map_err(|e| format!("cannot attach {shown}: {e}"))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let mut attachment = Attachment::new(kind_of(&path), path.to_string_lossy().into_owned());
    attachment.name = name;
    attachment.size = Some(meta.len());
    Ok(Attach {
        attachment,
        caption,
    })
}

/// The kind a file's extension suggests (the core checks the bytes).
fn kind_of(path: &Path) -> AttachmentKind {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "png" | "jpg" | "jpeg" | "gif" | "webp" => AttachmentKind::Image,
        "ogg" | "oga" | "opus" => AttachmentKind::Voice,
        "mp3" | "wav" | "m4a" | "flac" | "aac" => AttachmentKind::Audio,
        "mp4" | "mov" | "webm" | "mkv" => AttachmentKind::Video,
        _ => AttachmentKind::Document,
    }
}

/// Copies the attached file (its handle is its absolute path) into `dest`,
/// at most `max` bytes.
pub(crate) async fn copy(
    attachment: &Attachment,
    dest: &mut (dyn AsyncWrite + Unpin + Send),
    max: u64,
) -> Result<u64, PlatformError> {
    let storage = PlatformError::Storage;
    let mut file = tokio::fs::File::open(&attachment.handle.0)
        .await
        .map_err(|_| PlatformError::NotFound)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut written = 0u64;
    loop {
        let n = file.read(&mut buf).await.map_err(storage)?;
        if n == 0 {
            break;
        }
        written += n as u64;
        if written > max {
            return Err(PlatformError::TooLarge { size: written, max });
        }
        dest.write_all(&buf[..n]).await.map_err(storage)?;
    }
    dest.flush().await.map_err(storage)?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attach_lines_and_dropped_paths() {
        let dir = std::env::temp_dir().join(format!("sb-attach-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("My Report.pdf");
        std::fs::write(&file, b"%PDF-1.4").unwrap();
        let quoted = format!("/attach '{}' summarise it", file.display());
        let a = parse(&quoted).unwrap().unwrap();
        assert_eq!(a.caption, "summarise it");
        assert_eq!(a.attachment.kind, AttachmentKind::Document);
        assert_eq!(a.attachment.name.as_deref(), Some("My Report.pdf"));
        assert_eq!(a.attachment.size, Some(8));
        let escaped = file.display().to_string().replace(' ', "\\ ");
        let dropped = parse(&escaped).unwrap().unwrap();
        assert_eq!(dropped.caption, "");
        assert!(parse("/help").is_none(), "commands are not paths");
        assert!(parse("/attachments").is_none());
        assert!(parse("/usr/bin is where things live").is_none());
        assert!(parse("/attach").unwrap().is_err());
        assert!(parse("/attach /no/such/file")
            .unwrap()
            .unwrap_err()
            .contains("cannot attach"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[tokio::test]
    async fn copies_within_the_limit() {
        let dir = std::env::temp_dir().join(format!("sb-copy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("a.txt");
        std::fs::write(&file, b"hello").unwrap();
        let a = parse(&format!("/attach {}", file.display()))
            .unwrap()
            .unwrap()
            .attachment;
        let mut out = Vec::new();
        assert_eq!(copy(&a, &mut out, 10).await.unwrap(), 5);
        assert_eq!(out, b"hello");
        assert!(matches!(
            copy(&a, &mut Vec::new(), 3).await,
            Err(PlatformError::TooLarge { .. })
        ));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
