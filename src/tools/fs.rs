//! read_file / write_file, confined to the workspace directory.

use super::args::parse_args;
use super::diff_summary::summarize;
use super::fs_error::io_failure;
use super::fs_open::{open_checked, Access};
use super::{Tool, ToolContext, ToolError, ToolSpec, Workspace};
use crate::domain::Conversation;
use serde::Deserialize;
use serde_json::{json, Value};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::io::AsyncWriteExt;

/// Largest file `read_file` returns (and `write_file` diffs against).
pub const MAX_READ_BYTES: u64 = 2 * 1024 * 1024;
/// Largest content `write_file` accepts.
pub const MAX_WRITE_BYTES: usize = 8 * 1024 * 1024;
const DEFAULT_MAX_LINES: usize = 2000;
const MAX_LINE_CHARS: usize = 2000;
const MAX_OUTPUT_CHARS: usize = 100_000;
const BINARY_SNIFF_BYTES: usize = 8192;

/// Why `bytes` is not returned as text, if it is not.
fn not_text_reason(bytes: &[u8]) -> Option<&'static str> {
    let sniff = &bytes[..bytes.len().min(BINARY_SNIFF_BYTES)];
    if sniff.contains(&0) {
        Some("appears to be a binary file (contains NUL bytes)")
    } else if std::str::from_utf8(bytes).is_err() {
        Some("is not valid UTF-8 text (binary or another encoding)")
    } else {
        None
    }
}

/// Reads an existing workspace file as text, or explains why it cannot. Only
/// regular files that live in the workspace are read ([`open_checked`]).
async fn read_text(ws: &Workspace, path: &Path, shown: &str) -> Result<String, ToolError> {
    let (ws, path, shown) = (ws.clone(), path.to_path_buf(), shown.to_owned());
    tokio::task::spawn_blocking(move || read_text_blocking(&ws, &path, &shown))
        .await
        .map_err(|e| ToolError::failed(format!("reading stopped: {e}")))?
}

fn read_text_blocking(ws: &Workspace, path: &Path, shown: &str) -> Result<String, ToolError> {
    let (file, meta) = open_checked(ws, path, shown, Access::Read)?;
    if meta.len() > MAX_READ_BYTES {
        return Err(ToolError::failed(format!(
            "`{shown}` is {} bytes, over the {} byte read_file limit; read parts of it with \
             exec_command (e.g. `head`, `sed -n '1,200p'`, `grep -n`)",
            meta.len(),
            MAX_READ_BYTES
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // The file may grow after the check: never read past the limit.
    file.take(MAX_READ_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| io_failure(shown, &e))?;
    if let Some(reason) = not_text_reason(&bytes) {
        return Err(ToolError::failed(format!(
            "`{shown}` {reason}; read_file only returns text (inspect it with exec_command, \
             e.g. `file` or `xxd | head`)"
        )));
    }
    String::from_utf8(bytes).map_err(|_| ToolError::failed(format!("`{shown}` is not UTF-8")))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    path: String,
    offset_line: Option<usize>,
    max_lines: Option<usize>,
}

/// `read_file`: returns a text file from the workspace with line numbers.
pub struct ReadFileTool {
    ws: Arc<Workspace>,
    spec: ToolSpec,
}

impl ReadFileTool {
    pub fn new(ws: Arc<Workspace>) -> Self {
        let spec = ToolSpec {
            name: "read_file".into(),
            display_name: "Read file".into(),
            description: format!(
                "Read a UTF-8 text file from the workspace directory (in a chat user's turns, \
                 that user's own folder). `path` is relative to the workspace root (paths \
                 outside it are refused). Each returned line is \
                 prefixed with its 1-based line number and a tab (`     7\\tcontent`); the \
                 numbers are not part of the file. Returns up to `max_lines` lines (default \
                 {DEFAULT_MAX_LINES}) starting at `offset_line` (default 1) and says how to \
                 continue when more remain. Binary files and files over {} MiB are refused.",
                MAX_READ_BYTES / (1024 * 1024)
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace root."},
                    "offset_line": {"type": "integer", "minimum": 1, "description": "First line to return (1-based). Default 1."},
                    "max_lines": {"type": "integer", "minimum": 1, "description": format!("Maximum number of lines to return. Default {DEFAULT_MAX_LINES}.")}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
            concurrency_safe: true,
            requires_approval: false,
            background: false,
            key_fields: Vec::new(),
        };
        Self { ws, spec }
    }
}

#[async_trait::async_trait]
impl Tool for ReadFileTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: ReadArgs = parse_args("read_file", args)?;
        let offset = args.offset_line.unwrap_or(1);
        if offset == 0 {
            return Err(ToolError::InvalidArguments(
                "offset_line starts at 1 (the first line)".into(),
            ));
        }
        let max_lines = args.max_lines.unwrap_or(DEFAULT_MAX_LINES);
        if max_lines == 0 {
            return Err(ToolError::InvalidArguments(
                "max_lines must be at least 1".into(),
            ));
        }
        let ws = self.ws.view(ctx.origin.as_ref())?;
        let path = ws.resolve(&args.path)?;
        let shown = ws.display(&path);
        let text = read_text(&ws, &path, &shown).await?;
        number_lines(&text, &shown, offset, max_lines)
    }
}

fn number_lines(
    text: &str,
    shown: &str,
    offset: usize,
    max_lines: usize,
) -> Result<String, ToolError> {
    let total = text.lines().count();
    if total == 0 {
        return Ok(format!("(`{shown}` is empty)"));
    }
    if offset > total {
        return Err(ToolError::InvalidArguments(format!(
            "offset_line {offset} is past the end of `{shown}` ({total} lines)"
        )));
    }
    let mut out = String::new();
    let mut last = offset - 1;
    for (idx, line) in text.lines().enumerate().skip(offset - 1).take(max_lines) {
        if out.len() >= MAX_OUTPUT_CHARS {
            break;
        }
        let line = line.strip_suffix('\r').unwrap_or(line);
        let count = line.chars().count();
        if count > MAX_LINE_CHARS {
            out.push_str(&format!(
                "{:>6}\t{} [line truncated: {count} chars]\n",
                idx + 1,
                crate::text::clip(line, MAX_LINE_CHARS)
            ));
        } else {
            out.push_str(&format!("{:>6}\t{line}\n", idx + 1));
        }
        last = idx + 1;
    }
    if last < total {
        out.push_str(&format!(
            "[showing lines {offset}-{last} of {total}; call read_file with offset_line={} to \
             continue]\n",
            last + 1
        ));
    }
    Ok(out)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    path: String,
    content: String,
    #[serde(default)]
    append: bool,
}

/// `write_file`: creates, replaces or appends to a workspace file (approval).
pub struct WriteFileTool {
    ws: Arc<Workspace>,
    spec: ToolSpec,
}

impl WriteFileTool {
    pub fn new(ws: Arc<Workspace>) -> Self {
        let spec = ToolSpec {
            name: "write_file".into(),
            display_name: "Write file".into(),
            description: "Write a UTF-8 text file in the workspace directory (needs the \
                user's approval). `path` is relative to the workspace root; missing parent \
                directories are created. Replaces the whole file with `content`, or appends \
                `content` when `append` is true. `content` is the literal file text (no line \
                numbers). Returns the number of bytes written."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace root."},
                    "content": {"type": "string", "description": "The full text to write (or to append)."},
                    "append": {"type": "boolean", "description": "Append to the file instead of replacing it. Default false."}
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
            concurrency_safe: false,
            requires_approval: true,
            background: false,
            key_fields: Vec::new(),
        };
        Self { ws, spec }
    }

    /// The arguments checked, and the path resolved in `ws` (the caller's view).
    fn check(&self, ws: &Workspace, args: Value) -> Result<(WriteArgs, PathBuf), ToolError> {
        let args: WriteArgs = parse_args("write_file", args)?;
        if args.content.len() > MAX_WRITE_BYTES {
            return Err(ToolError::InvalidArguments(format!(
                "content is {} bytes, over the {MAX_WRITE_BYTES} byte write_file limit; write \
                 it in parts with append=true",
                args.content.len()
            )));
        }
        let path = ws.resolve(&args.path)?;
        if path == ws.root() || path.is_dir() {
            return Err(ToolError::failed(format!(
                "`{}` is a directory; give a file path",
                ws.display(&path)
            )));
        }
        Ok((args, path))
    }

    /// Refuses a write that would take the caller's folder over its quota.
    async fn within_quota(
        &self,
        ws: &Workspace,
        shown: &str,
        before: Option<u64>,
        args: &WriteArgs,
    ) -> Result<(), ToolError> {
        let Some(quota) = ws.quota() else {
            return Ok(());
        };
        let used = crate::workspace::quota::usage_of(ws.root()).await;
        let added = args.content.len() as u64;
        let freed = if args.append { 0 } else { before.unwrap_or(0) };
        crate::workspace::quota::check(used, added, freed, quota).map_err(|total| {
            ToolError::Forbidden(format!(
                "writing `{shown}` would take your workspace folder to {}; nothing was \
                 written. Delete files that are no longer needed (exec_command `rm`, `du -sh *` \
                 to find them) or ask the operator for more space",
                crate::workspace::quota::over_text(total, quota)
            ))
        })
    }
}

#[async_trait::async_trait]
impl Tool for WriteFileTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, args: &Value) -> Result<(), ToolError> {
        self.validate_for(args, None)
    }

    fn validate_for(&self, args: &Value, caller: Option<&Conversation>) -> Result<(), ToolError> {
        let ws = self.ws.view(caller)?;
        self.check(&ws, args.clone()).map(drop)
    }

    async fn approval_summary(&self, args: &Value) -> String {
        self.approval_summary_for(args, None).await
    }

    async fn approval_summary_for(&self, args: &Value, caller: Option<&Conversation>) -> String {
        let checked = self
            .ws
            .view(caller)
            .map_err(ToolError::from)
            .and_then(|ws| self.check(&ws, args.clone()).map(|ok| (ws, ok)));
        let (ws, (args, path)) = match checked {
            Ok(ok) => ok,
            Err(e) => return format!("write_file (will be refused): {}", e.for_model()),
        };
        let shown = ws.display(&path);
        let body = match tokio::fs::metadata(&path).await {
            Err(_) => summarize(None, &args.content, args.append),
            Ok(meta) => match read_text(&ws, &path, &shown).await {
                Ok(old) => summarize(Some(&old), &args.content, args.append),
                Err(_) => format!(
                    "{} existing {}-byte file that is binary or too large to diff; new \
                     content: {} bytes\n",
                    if args.append { "append to" } else { "replace" },
                    meta.len(),
                    args.content.len()
                ),
            },
        };
        format!("write_file `{shown}`\n{body}")
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let ws = self.ws.view(ctx.origin.as_ref())?;
        let (args, path) = self.check(&ws, args)?;
        let shown = ws.display(&path);
        let before = tokio::fs::symlink_metadata(&path)
            .await
            .ok()
            .map(|m| m.len());
        self.within_quota(&ws, &shown, before, &args).await?;
        let (view, target, file_shown) = (ws.clone(), path.clone(), shown.clone());
        let access = Access::Write {
            append: args.append,
        };
        let (file, _) =
            tokio::task::spawn_blocking(move || open_checked(&view, &target, &file_shown, access))
                .await
                .map_err(|e| ToolError::failed(format!("writing stopped: {e}")))??;
        let mut file = tokio::fs::File::from_std(file);
        file.write_all(args.content.as_bytes())
            .await
            .map_err(|e| io_failure(&shown, &e))?;
        file.flush().await.map_err(|e| io_failure(&shown, &e))?;
        let n = args.content.len();
        Ok(match (before, args.append) {
            (None, _) => format!("wrote {n} bytes to `{shown}` (new file)"),
            (Some(old), true) => {
                format!(
                    "appended {n} bytes to `{shown}` (now {} bytes)",
                    old + n as u64
                )
            }
            (Some(old), false) => {
                format!("wrote {n} bytes to `{shown}` (replaced the previous {old} bytes)")
            }
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn numbering_and_paging() {
        let text = "a\nb\r\nc\n";
        assert_eq!(
            number_lines(text, "t", 1, 10).unwrap(),
            "     1\ta\n     2\tb\n     3\tc\n"
        );
        let page = number_lines(text, "t", 2, 1).unwrap();
        assert!(page.starts_with("     2\tb\n"), "{page}");
        assert!(page.contains("offset_line=3"), "{page}");
        assert!(number_lines(text, "t", 9, 1).is_err());
        assert!(number_lines("", "t", 1, 1).unwrap().contains("empty"));
        let long = "x".repeat(MAX_LINE_CHARS + 5);
        assert!(number_lines(&long, "t", 1, 1)
            .unwrap()
            .contains("[line truncated"));
    }

    #[test]
    fn binary_detection() {
        assert!(not_text_reason(b"hello\n").is_none());
        assert!(not_text_reason(b"he\0llo").is_some());
        assert!(not_text_reason(&[0xff, 0xfe, 0x41]).is_some());
    }
}
