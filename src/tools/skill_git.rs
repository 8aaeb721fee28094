//! A skill from a git repository, pinned by commit: the repository's
//! http(s) URL is vetted under `web_fetch`'s rules (public addresses only,
//! unless allowlisted; git connects to the vetted address only), then a real
//! `git` process fetches that one commit (depth 1, no tags, no redirects, no
//! credentials, no other protocols) into a temporary repository and reads
//! one file of it, at most 64 KB. A commit id names its content, so what the
//! card shows is what is installed.

use super::net_guard::{vet_target, Allowlist, Resolver};
use super::spec::ToolError;
use crate::skills::{parse_skill, Skill};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;
use url::Url;

/// How long one git command may run.
const GIT_TIMEOUT: Duration = Duration::from_secs(60);

/// A skill file in a git repository at one commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSource {
    pub repo: Url,
    pub commit: String,
    pub path: String,
}

impl std::fmt::Display for GitSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "git {} at commit {}, file {}",
            self.repo, self.commit, self.path
        )
    }
}

/// Checks a git source: an http(s) repository URL without credentials, a
/// full 40-hex commit id (a branch or tag moves), a relative `.md` path.
pub fn git_source(repo: &str, commit: &str, path: &str) -> Result<GitSource, String> {
    let url = Url::parse(repo.trim()).map_err(|e| format!("`{repo}` is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("only http:// and https:// git repositories can be installed from".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("the repository URL must not carry credentials".into());
    }
    let commit = commit.trim().to_ascii_lowercase();
    if commit.len() != 40 || !commit.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!(
            "`{commit}` is not a commit id: give the full 40-character commit (a branch or tag can change after you approve)"
        ));
    }
    let path = path.trim().trim_start_matches("./").to_owned();
    let bad = path.is_empty()
        || path.len() > 300
        || path.starts_with('/')
        || path
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
        || path
            .chars()
            .any(|c| c.is_control() || c == ':' || c == '\\')
        || !path.ends_with(".md");
    if bad {
        return Err(format!(
            "`{path}` is not a skill file's path in the repository (relative, ending in .md)"
        ));
    }
    Ok(GitSource {
        repo: url,
        commit,
        path,
    })
}

/// What the fetch may take and who asks (the tool named in a refusal).
#[derive(Debug, Clone, Copy)]
pub struct Limits<'a> {
    pub who: &'a str,
    pub max_bytes: usize,
}

/// Fetches `source`'s commit with git and reads its skill file: its text
/// and skill.
pub async fn fetch_git_skill(
    source: &GitSource,
    allow: &Allowlist,
    resolver: &dyn Resolver,
    limits: Limits<'_>,
) -> Result<(String, Skill), ToolError> {
    let vetted = vet_target(&source.repo, allow, limits.who, resolver).await?;
    let pins = pins(source, vetted.as_ref());
    let dir = tempfile::tempdir().map_err(|e| ToolError::Failed {
        message: "could not make a temporary folder for git".into(),
        diagnostics: Some(e.to_string()),
    })?;
    let git_dir = dir.path().join("repo.git");
    let git_dir_arg = git_dir.display().to_string();
    git(
        dir.path(),
        &[],
        &["init", "--quiet", "--bare", &git_dir_arg],
    )
    .await?;
    let fetch = [
        "--git-dir",
        &git_dir_arg,
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        "--depth=1",
        source.repo.as_str(),
        &source.commit,
    ];
    git(dir.path(), &pins, &fetch).await.map_err(|e| match e {
        ToolError::Failed { diagnostics, .. } => ToolError::Failed {
            message: format!(
                "git could not fetch commit {} from {}",
                &source.commit[..12],
                source.repo.host_str().unwrap_or("?")
            ),
            diagnostics,
        },
        other => other,
    })?;
    read_file(dir.path(), &git_dir_arg, source, limits.max_bytes).await
}

/// `git -c http.curloptResolve=…`: git connects to the vetted addresses of
/// a host name only (none for an IP literal).
fn pins(source: &GitSource, vetted: Option<&(String, Vec<SocketAddr>)>) -> Vec<String> {
    let Some((domain, addrs)) = vetted else {
        return Vec::new();
    };
    let port = source.repo.port_or_known_default().unwrap_or(443);
    let list: Vec<String> = addrs
        .iter()
        .map(|a| match a.ip() {
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
            std::net::IpAddr::V4(ip) => ip.to_string(),
        })
        .collect();
    vec![format!(
        "http.curloptResolve={domain}:{port}:{}",
        list.join(",")
    )]
}

/// Reads the skill file of the fetched commit (at most the size limit).
async fn read_file(
    cwd: &Path,
    git_dir: &str,
    source: &GitSource,
    max_bytes: usize,
) -> Result<(String, Skill), ToolError> {
    let object = format!("{}:{}", source.commit, source.path);
    let size = git(cwd, &[], &["--git-dir", git_dir, "cat-file", "-s", &object])
        .await
        .map_err(|_| {
            ToolError::failed(format!(
                "commit {} has no file {}",
                &source.commit[..12],
                source.path
            ))
        })?;
    if size.trim().parse::<usize>().map_or(true, |n| n > max_bytes) {
        return Err(ToolError::Forbidden(format!(
            "the file is larger than {} KB; a skill is a short prompt",
            max_bytes / 1024
        )));
    }
    let text = git(
        cwd,
        &[],
        &["--git-dir", git_dir, "cat-file", "blob", &object],
    )
    .await?;
    let stem = Path::new(&source.path)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("");
    let skill = parse_skill(stem, &text)
        .map_err(|e| ToolError::InvalidArguments(format!("not a skill file: {e}")))?;
    Ok((text, skill))
}

/// Runs git with a clean environment (no user or system config, no prompts,
/// no credential helpers, only http(s), no redirects); its stdout as text.
async fn git(cwd: &Path, pins: &[String], args: &[&str]) -> Result<String, ToolError> {
    let mut cmd = tokio::process::Command::new("git");
    cmd.current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", cwd)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "/bin/false")
        .env("GIT_PROTOCOL_FROM_USER", "0")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    for c in [
        "protocol.allow=never",
        "protocol.http.allow=always",
        "protocol.https.allow=always",
        "http.followRedirects=false",
        "credential.helper=",
        "core.askPass=/bin/false",
        "protocol.version=2",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain(pins.iter().cloned())
    {
        cmd.arg("-c").arg(c);
    }
    cmd.args(args);
    let out = tokio::time::timeout(GIT_TIMEOUT, cmd.output())
        .await
        .map_err(|_| ToolError::failed("git took too long"))?
        .map_err(|e| ToolError::Failed {
            message: "could not run git".into(),
            diagnostics: Some(e.to_string()),
        })?;
    if !out.status.success() {
        return Err(ToolError::Failed {
            message: "git failed".into(),
            diagnostics: Some(crate::text::clip(
                &String::from_utf8_lossy(&out.stderr),
                500,
            )),
        });
    }
    String::from_utf8(out.stdout).map_err(|_| ToolError::failed("the file is not UTF-8 text"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_needs_http_a_full_commit_and_a_relative_md_path() {
        let commit = "0123456789abcdef0123456789abcdef01234567";
        let ok = git_source("https://example.com/r.git", commit, "./skills/x.md").unwrap();
        assert_eq!(ok.path, "skills/x.md");
        for (repo, c, path) in [
            ("ssh://example.com/r.git", commit, "x.md"),
            ("file:///etc", commit, "x.md"),
            ("https://u:p@example.com/r.git", commit, "x.md"),
            ("https://example.com/r.git", "main", "x.md"),
            ("https://example.com/r.git", commit, "../x.md"),
            ("https://example.com/r.git", commit, "/x.md"),
            ("https://example.com/r.git", commit, "a:b.md"),
            ("https://example.com/r.git", commit, "x.txt"),
        ] {
            assert!(git_source(repo, c, path).is_err(), "{repo} {c} {path}");
        }
    }
}
