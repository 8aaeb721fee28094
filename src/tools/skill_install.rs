//! Installing a skill from outside or from the chat: `preview_skill` fetches
//! a skill file under `web_fetch`'s rules (public addresses only, the
//! address connected to is the one vetted), at most 64 KB, and reports its
//! SHA-256; `install_skill` — on a card showing the full text, allow once or
//! deny — stores it as `SKILLS_DIR/<name>.md`: fetched again on approval and
//! installed only if the hash is the one pinned, or drafted in the chat
//! (`text`). A GitHub blob URL must name a 40-hex commit (a branch moves).
//! A skill may also come from a git repository pinned by commit (`repo`,
//! `commit`, `path`: fetched by a real `git`, see `skill_git`). Only the
//! users `TOOL_BUILDERS` allows may install.

use super::args::parse_args;
use super::grown::ToolBuilders;
use super::net_guard::{vet_target, Allowlist, Resolver, SystemResolver};
use super::skill_git::{fetch_git_skill, git_source, GitSource, Limits};
use super::spec::{Tool, ToolContext, ToolError, ToolSpec};
use crate::skills::{parse_skill, Skill, SkillLibrary};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Duration;
use url::Url;

/// The tool that installs (its calls are allowed once or denied).
pub const INSTALL_SKILL: &str = "install_skill";
/// The largest skill file fetched.
pub const MAX_SKILL_BYTES: usize = 64 * 1024;
const FETCH_TIMEOUT: Duration = Duration::from_secs(20);

/// The URL actually fetched for `raw`: a GitHub blob URL becomes its raw
/// file at the same commit, which must be a full commit id.
pub fn source_url(raw: &str) -> Result<Url, String> {
    let url = Url::parse(raw.trim()).map_err(|e| format!("`{raw}` is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("only http:// and https:// URLs can be installed".into());
    }
    let segments: Vec<&str> = url
        .path_segments()
        .map(Iterator::collect)
        .unwrap_or_default();
    let commit = |r: &str| r.len() == 40 && r.chars().all(|c| c.is_ascii_hexdigit());
    match url.host_str() {
        Some("github.com") => match segments.as_slice() {
            [owner, repo, "blob", reference, path @ ..] if !path.is_empty() => {
                if !commit(reference) {
                    return Err(format!(
                        "the GitHub URL names `{reference}`, not a commit: use the 40-character commit id (a branch or tag can change after you approve)"
                    ));
                }
                Url::parse(&format!(
                    "https://raw.githubusercontent.com/{owner}/{repo}/{reference}/{}",
                    path.join("/")
                ))
                .map_err(|e| e.to_string())
            }
            _ => Err("a GitHub URL must point at a file: github.com/<owner>/<repo>/blob/<commit>/<path>.md".into()),
        },
        Some("raw.githubusercontent.com") => match segments.as_slice() {
            [_, _, reference, ..] if commit(reference) => Ok(url),
            _ => Err("a raw GitHub URL must name a 40-character commit id, not a branch".into()),
        },
        _ => Ok(url),
    }
}

/// A fetched skill file.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub text: String,
    pub sha256: String,
    pub skill: Skill,
}

/// Hex SHA-256 of `bytes`.
fn sha256_hex(bytes: &[u8]) -> String {
    crate::hex::encode(&Sha256::digest(bytes))
}

/// Fetches and checks the skill file at `url` (already [`source_url`]).
pub async fn fetch_skill(
    url: &Url,
    allow: &Allowlist,
    resolver: &dyn Resolver,
) -> Result<Fetched, ToolError> {
    let vetted = vet_target(url, allow, INSTALL_SKILL, resolver).await?;
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(FETCH_TIMEOUT);
    if let Some((domain, addrs)) = &vetted {
        builder = builder.resolve_to_addrs(domain, addrs);
    }
    let client = builder.build().map_err(|e| ToolError::Failed {
        message: "could not set up the HTTP client".into(),
        diagnostics: Some(e.to_string()),
    })?;
    let failed = |e: reqwest::Error| ToolError::Failed {
        message: format!(
            "fetching the skill at {} failed",
            url.host_str().unwrap_or("?")
        ),
        diagnostics: Some(e.without_url().to_string()),
    };
    let mut resp = client.get(url.clone()).send().await.map_err(failed)?;
    if !resp.status().is_success() {
        return Err(ToolError::failed(format!(
            "the skill URL answered {} (a redirect is not followed: give the file's own URL)",
            resp.status()
        )));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(failed)? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_SKILL_BYTES {
            return Err(ToolError::Forbidden(format!(
                "the file is larger than {} KB; a skill is a short prompt",
                MAX_SKILL_BYTES / 1024
            )));
        }
    }
    let text =
        String::from_utf8(body).map_err(|_| ToolError::failed("the file is not UTF-8 text"))?;
    let skill = parsed(url, &text)?;
    Ok(Fetched {
        sha256: sha256_hex(text.as_bytes()),
        text,
        skill,
    })
}

/// Fetches and checks the skill file of a git source, with its hash.
async fn fetch_git(
    source: &GitSource,
    allow: &Allowlist,
    resolver: &dyn Resolver,
) -> Result<Fetched, ToolError> {
    let limits = Limits {
        who: INSTALL_SKILL,
        max_bytes: MAX_SKILL_BYTES,
    };
    let (text, skill) = fetch_git_skill(source, allow, resolver, limits).await?;
    Ok(Fetched {
        sha256: sha256_hex(text.as_bytes()),
        text,
        skill,
    })
}

/// The skill of `text`, named by its front matter (else the file's stem).
fn parsed(url: &Url, text: &str) -> Result<Skill, ToolError> {
    let stem = url
        .path_segments()
        .and_then(|mut s| s.next_back())
        .and_then(|file| file.strip_suffix(".md"))
        .unwrap_or("");
    parse_skill(stem, text)
        .map_err(|e| ToolError::InvalidArguments(format!("not a skill file: {e}")))
}

/// `preview_skill`: the file at a URL, its hash and its skill — installs nothing.
pub struct PreviewSkillTool {
    spec: ToolSpec,
    allow: Allowlist,
    resolver: Arc<dyn Resolver>,
}

impl PreviewSkillTool {
    pub fn new(allow: &[String]) -> PreviewSkillTool {
        PreviewSkillTool {
            spec: ToolSpec {
                name: "preview_skill".into(),
                display_name: "Preview a skill".into(),
                description: "Fetch a skill file (Markdown with `name`/`description` front matter) from a public URL \
                              and show its full text and SHA-256, installing nothing. A GitHub URL must name a commit \
                              (github.com/<owner>/<repo>/blob/<40-char commit>/<path>.md). To install it, call \
                              install_skill with the same url and this sha256. From a git repository instead: \
                              `repo` (its http(s) URL), `commit` (the full 40-character id) and `path` (the .md file \
                              in it); install_skill then takes the same three."
                    .into(),
                parameters: json!({"type": "object", "additionalProperties": false,
                    "properties": {"url": {"type": "string"}, "repo": {"type": "string"},
                        "commit": {"type": "string"}, "path": {"type": "string"}}}),
                concurrency_safe: true,
                key_fields: Vec::new(),
                requires_approval: false,
                background: false,
            },
            allow: Allowlist::new(allow),
            resolver: Arc::new(SystemResolver),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PreviewArgs {
    url: Option<String>,
    repo: Option<String>,
    commit: Option<String>,
    path: Option<String>,
}

#[async_trait::async_trait]
impl Tool for PreviewSkillTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<String, ToolError> {
        let args: PreviewArgs = parse_args("preview_skill", args)?;
        let invalid = ToolError::InvalidArguments;
        if let (None, Some(repo), Some(commit), Some(path)) =
            (&args.url, &args.repo, &args.commit, &args.path)
        {
            let source = git_source(repo, commit, path).map_err(invalid)?;
            let f = fetch_git(&source, &self.allow, self.resolver.as_ref()).await?;
            return Ok(format!(
                "Skill `{}` — {}\nsource: {source}\nsha256: {}\nTo install: install_skill with the same repo, commit and path (the user approves it on a card).\n<skill-file>\n{}\n</skill-file>",
                f.skill.name, f.skill.description, f.sha256, f.text
            ));
        }
        let (Some(url), None, None, None) = (&args.url, &args.repo, &args.commit, &args.path)
        else {
            return Err(invalid(
                "give either `url`, or `repo` with `commit` and `path`".into(),
            ));
        };
        let url = source_url(url).map_err(invalid)?;
        let f = fetch_skill(&url, &self.allow, self.resolver.as_ref()).await?;
        Ok(format!(
            "Skill `{}` — {}\nurl: {url}\nsha256: {}\nTo install: install_skill with url and this sha256 (the user approves it on a card).\n<skill-file>\n{}\n</skill-file>",
            f.skill.name, f.skill.description, f.sha256, f.text
        ))
    }
}

/// `install_skill`: a fetched (pinned) or drafted skill into `SKILLS_DIR`.
pub struct InstallSkillTool {
    spec: ToolSpec,
    skills: Arc<SkillLibrary>,
    allow: Allowlist,
    builders: ToolBuilders,
    resolver: Arc<dyn Resolver>,
}

/// What to install.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InstallArgs {
    url: Option<String>,
    sha256: Option<String>,
    text: Option<String>,
    repo: Option<String>,
    commit: Option<String>,
    path: Option<String>,
}

enum Source {
    Url { url: Url, pinned: String },
    Git(GitSource),
    Drafted { text: String, skill: Skill },
}

impl InstallSkillTool {
    pub fn new(
        skills: Arc<SkillLibrary>,
        allow: &[String],
        builders: ToolBuilders,
    ) -> InstallSkillTool {
        InstallSkillTool {
            spec: ToolSpec {
                name: INSTALL_SKILL.into(),
                display_name: "Install a skill".into(),
                description: "Install a skill (a prompt template users run as /name) after the user approves it on a \
                              card showing its full text. Either `url` with the `sha256` preview_skill reported (the \
                              file is fetched again and installed only if unchanged), or `text`: the full Markdown \
                              of a skill you drafted — front matter `name` (lowercase, digits, _) and `description` \
                              between `---` lines, then the prompt, with {{args}} where the user's input goes. Or \
                              from a git repository: `repo` (http(s) URL), `commit` (full 40-character id), `path`."
                    .into(),
                parameters: json!({"type": "object", "additionalProperties": false, "properties": {
                    "url": {"type": "string"},
                    "repo": {"type": "string", "description": "A git repository's http(s) URL (with commit and path)."},
                    "commit": {"type": "string", "description": "The full 40-character commit id the skill is pinned to."},
                    "path": {"type": "string", "description": "The skill file's path in the repository."},
                    "sha256": {"type": "string", "description": "The file's SHA-256 as preview_skill reported it."},
                    "text": {"type": "string", "description": "A drafted skill file (instead of url)."}
                }}),
                concurrency_safe: false,
                key_fields: Vec::new(),
                requires_approval: true,
                background: false,
            },
            skills,
            allow: Allowlist::new(allow),
            builders,
            resolver: Arc::new(SystemResolver),
        }
    }

    fn source(&self, args: &Value) -> Result<Source, ToolError> {
        let args: InstallArgs = parse_args(INSTALL_SKILL, args.clone())?;
        let invalid = |s: &str| ToolError::InvalidArguments(s.to_owned());
        match (&args.repo, &args.commit, &args.path) {
            (None, None, None) => {}
            (Some(repo), Some(commit), Some(path))
                if args.url.is_none() && args.sha256.is_none() && args.text.is_none() =>
            {
                return git_source(repo, commit, path)
                    .map(Source::Git)
                    .map_err(ToolError::InvalidArguments);
            }
            _ => {
                return Err(invalid(
                    "give `repo`, `commit` and `path` together, and nothing else",
                ))
            }
        }
        match (args.url, args.sha256, args.text) {
            (Some(url), Some(pinned), None) => {
                let pinned = pinned.trim().to_ascii_lowercase();
                if pinned.len() != 64 || !pinned.chars().all(|c| c.is_ascii_hexdigit()) {
                    return Err(invalid("sha256 must be 64 hex digits, as preview_skill reports it"));
                }
                let url = source_url(&url).map_err(ToolError::InvalidArguments)?;
                Ok(Source::Url { url, pinned })
            }
            (Some(_), None, None) => Err(invalid(
                "give `sha256`: call preview_skill with this url first and pass the hash it reports",
            )),
            (None, None, Some(text)) => {
                if text.len() > MAX_SKILL_BYTES {
                    return Err(invalid("the skill is larger than 64 KB"));
                }
                let skill = parse_skill("", &text)
                    .map_err(|e| ToolError::InvalidArguments(format!("not a skill file: {e}")))?;
                Ok(Source::Drafted { text, skill })
            }
            _ => Err(invalid("give either `url` with `sha256`, or `text`")),
        }
    }

    /// The text to install and its skill; a URL's file fetched now must
    /// still have the pinned hash.
    async fn resolve(&self, source: Source) -> Result<(String, Skill, String), ToolError> {
        match source {
            Source::Drafted { text, skill } => Ok((text, skill, "drafted in the chat".into())),
            Source::Git(source) => {
                let f = fetch_git(&source, &self.allow, self.resolver.as_ref()).await?;
                Ok((
                    f.text,
                    f.skill,
                    format!("from {source}, sha256 {}", f.sha256),
                ))
            }
            Source::Url { url, pinned } => {
                let f = fetch_skill(&url, &self.allow, self.resolver.as_ref()).await?;
                if f.sha256 != pinned {
                    return Err(ToolError::Forbidden(format!(
                        "the file at {url} changed since it was pinned (sha256 {}… → {}…), so it was not installed; preview it again",
                        &pinned[..12],
                        &f.sha256[..12]
                    )));
                }
                Ok((f.text, f.skill, format!("from {url}, sha256 {pinned}")))
            }
        }
    }

    fn check_name(&self, skill: &Skill) -> Result<(), ToolError> {
        if self.skills.reserved().contains(&skill.name.as_str()) {
            return Err(ToolError::InvalidArguments(format!(
                "/{} is a built-in command; give the skill another name",
                skill.name
            )));
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Tool for InstallSkillTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, args: &Value) -> Result<(), ToolError> {
        match self.source(args)? {
            Source::Drafted { skill, .. } => self.check_name(&skill),
            Source::Url { .. } | Source::Git(_) => Ok(()),
        }
    }

    async fn approval_summary(&self, args: &Value) -> String {
        let shown = match self.source(args) {
            Ok(source) => self.resolve(source).await,
            Err(e) => Err(e),
        };
        match shown {
            Ok((text, skill, origin)) => {
                let replaces = if self.skills.book().get(&skill.name).is_some() {
                    " (replaces the skill of that name)"
                } else {
                    ""
                };
                format!(
                    "Install the skill /{}{replaces}, {origin}:\n{}",
                    skill.name, text
                )
            }
            Err(e) => format!("Install a skill — it cannot be shown: {}", e.for_model()),
        }
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let user = ctx.origin.as_ref().map(|o| &o.user);
        if !user.is_some_and(|u| self.builders.allows(u)) {
            return Err(ToolError::Forbidden(
                "Only the users allowed to add tools (TOOL_BUILDERS) may install skills.".into(),
            ));
        }
        let (text, skill, origin) = self.resolve(self.source(&args)?).await?;
        self.check_name(&skill)?;
        let skills = Arc::clone(&self.skills);
        let name = skill.name.clone();
        tokio::task::spawn_blocking(move || skills.install(&name, &text))
            .await
            .map_err(|e| ToolError::failed(format!("installing failed: {e}")))?
            .map_err(|e| ToolError::Failed {
                message: "the skill could not be written to SKILLS_DIR".into(),
                diagnostics: Some(e.to_string()),
            })?;
        Ok(format!(
            "Installed the skill /{} ({origin}); users run it as /{} <input>.",
            skill.name, skill.name
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_urls_must_name_a_commit() {
        let commit = "0123456789abcdef0123456789abcdef01234567";
        let raw = source_url(&format!("https://github.com/o/r/blob/{commit}/skills/x.md")).unwrap();
        assert_eq!(
            raw.as_str(),
            format!("https://raw.githubusercontent.com/o/r/{commit}/skills/x.md")
        );
        assert!(source_url("https://github.com/o/r/blob/main/x.md")
            .unwrap_err()
            .contains("not a commit"));
        assert!(source_url("https://raw.githubusercontent.com/o/r/main/x.md").is_err());
        assert!(source_url("ftp://example.com/x.md").is_err());
        assert!(source_url("https://example.com/skills/x.md").is_ok());
    }
}
