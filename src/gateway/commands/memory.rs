//! `/memory` commands: list the user's memories, forget one, trace one to the
//! conversation it came from. Only ever the asking user's own memories, and in
//! a shared chat only the kinds `MEMORY_IN_SHARED_CHATS` lets surface there.

use crate::gateway::commands::Command;
use crate::gateway::Inner;
use crate::llm::Role;
use crate::memory::memory_line;
use crate::store::{MemoryKind, MemoryOwner, MemoryRecord, SessionId, SessionKey, StoreError};
use chrono::Utc;

const USAGE: &str =
    "Usage: `/memory` · `/memory forget <id>` · `/memory trace <id>` · `/memory pin <id>` · `/memory unpin <id>`";
/// Memories listed per kind at most.
const LIST_PER_KIND: usize = 10;
/// Source messages shown by a trace at most.
const TRACE_MESSAGES: usize = 6;

const ONLY_IN_DM: &str = "Other memories are shown only in a direct message with me.";

/// Runs `/memory …` for the user of `key`, in a chat that is `private` or shared.
pub(crate) async fn run(
    inner: &Inner,
    cmd: &Command<'_>,
    key: &SessionKey,
    private: bool,
) -> Result<String, StoreError> {
    let owner = MemoryOwner::of(key);
    let policy = inner.features.extractor.book().config().shared_chats;
    let visible = |kind| policy.shows(private, kind);
    match cmd.args.as_slice() {
        [] | ["list"] => list(inner, owner, &visible).await,
        ["forget", id] => Ok(match parse_id(id) {
            Some(id) if inner.store.memories().delete(owner, id).await? => {
                format!("Forgot memory #{id}.")
            }
            Some(id) => format!("You have no memory #{id}."),
            None => USAGE.to_owned(),
        }),
        [verb @ ("pin" | "unpin"), id] => Ok(match parse_id(id) {
            Some(id) => {
                let pin = *verb == "pin";
                match inner.store.memories().get(owner, id).await? {
                    Some(m)
                        if visible(m.kind)
                            && inner.store.memories().set_pinned(owner, id, pin).await? =>
                    {
                        if pin {
                            format!("Pinned memory #{id}: it is kept until you unpin or forget it.")
                        } else {
                            format!(
                                "Unpinned memory #{id}: it may be collected when its kind is full."
                            )
                        }
                    }
                    Some(_) => {
                        format!("Memory #{id} can be changed only in a direct message with me.")
                    }
                    None => format!("You have no memory #{id}."),
                }
            }
            None => USAGE.to_owned(),
        }),
        ["trace", id] => match parse_id(id) {
            Some(id) => {
                let here = Here { key, private };
                trace(inner, owner, id, &here, &visible).await
            }
            None => Ok(USAGE.to_owned()),
        },
        _ => Ok(USAGE.to_owned()),
    }
}

fn parse_id(raw: &str) -> Option<i64> {
    raw.trim_start_matches('#').parse().ok()
}

async fn list(
    inner: &Inner,
    owner: MemoryOwner,
    visible: &(dyn Fn(MemoryKind) -> bool + Sync),
) -> Result<String, StoreError> {
    let mut all = inner
        .store
        .memories()
        .of(owner, &[], 200, Utc::now())
        .await?;
    let stored = all.len();
    all.retain(|m| visible(m.kind));
    let hidden = if all.len() < stored { ONLY_IN_DM } else { "" };
    if all.is_empty() {
        return Ok(
            format!("I have no long-term memories about you to show here. {hidden}")
                .trim_end()
                .to_owned(),
        );
    }
    let mut out = format!("**Your memories** ({})", all.len());
    for kind in MemoryKind::ALL {
        let of_kind: Vec<&MemoryRecord> = all.iter().filter(|m| m.kind == kind).collect();
        if of_kind.is_empty() {
            continue;
        }
        out.push_str(&format!("\n_{}_ ({})", kind.as_str(), of_kind.len()));
        for m in of_kind.iter().take(LIST_PER_KIND) {
            let pin = if m.pinned { "📌 " } else { "" };
            out.push_str(&format!("\n`#{}` {pin}{}", m.id, clip(&m.content, 120)));
        }
        if of_kind.len() > LIST_PER_KIND {
            out.push_str(&format!("\n… and {} more", of_kind.len() - LIST_PER_KIND));
        }
    }
    if !hidden.is_empty() {
        out.push_str(&format!("\n{hidden}"));
    }
    out.push_str(&format!("\n\n{USAGE}"));
    Ok(out)
}

/// The chat a command runs in.
struct Here<'a> {
    key: &'a SessionKey,
    private: bool,
}

impl Here<'_> {
    /// Whether messages of `source` (a session of the same user) may be quoted
    /// here: anywhere in a direct message, and in a shared chat only when they
    /// were said in that same chat, never a DM's words in a group.
    fn may_quote(&self, source: &SessionKey) -> bool {
        self.private || (source.platform == self.key.platform && source.chat == self.key.chat)
    }
}

async fn trace(
    inner: &Inner,
    owner: MemoryOwner,
    id: i64,
    here: &Here<'_>,
    visible: &(dyn Fn(MemoryKind) -> bool + Sync),
) -> Result<String, StoreError> {
    let Some(m) = inner.store.memories().get(owner, id).await? else {
        return Ok(format!("You have no memory #{id}."));
    };
    if !visible(m.kind) {
        return Ok(format!(
            "Memory #{id} is shown only in a direct message with me."
        ));
    }
    let mut out = format!(
        "{}\nsaved {} · updated {} · recalled {} times · importance {:.2}",
        memory_line(&m).trim_start_matches("- "),
        m.created_at.format("%Y-%m-%d %H:%M UTC"),
        m.updated_at.format("%Y-%m-%d %H:%M UTC"),
        m.access_count,
        m.importance
    );
    if let Some(e) = m.expires_at {
        out.push_str(&format!(" · expires {}", e.format("%Y-%m-%d")));
    }
    if m.pinned {
        out.push_str(" · 📌 pinned");
    }
    if m.kind == MemoryKind::Preference {
        if let Some(s) = inner.store.memories().stats(owner, id).await? {
            out.push_str(&format!(
                "\nseen {} time{} · last seen {} · confidence {:.2}",
                s.seen_count,
                if s.seen_count == 1 { "" } else { "s" },
                s.last_seen
                    .unwrap_or(m.updated_at)
                    .format("%Y-%m-%d %H:%M UTC"),
                s.confidence
            ));
        }
    }
    for source in m.source_ref.split_whitespace() {
        out.push_str(&format!("\n\n**Source** `{source}`"));
        out.push_str(&source_excerpt(inner, owner, here, source).await?);
    }
    Ok(out)
}

/// The messages a `chat:<session>#<from>-<to>` source points at, if they are
/// still there and belong to the same user.
async fn source_excerpt(
    inner: &Inner,
    owner: MemoryOwner,
    here: &Here<'_>,
    source: &str,
) -> Result<String, StoreError> {
    let Some(rest) = source.strip_prefix("chat:") else {
        return Ok(match source.split(':').next() {
            Some("layers") => {
                "\nDistilled from your preferences and decisions listed there.".into()
            }
            Some("tool") => "\nSaved by the assistant when asked to remember it.".into(),
            Some("learn") => "\nLearned from your messages as you chatted.".into(),
            _ => String::new(),
        });
    };
    let (session, range) = rest.split_once('#').unwrap_or((rest, ""));
    let Ok(session) = session.parse::<SessionId>() else {
        return Ok("\n(That conversation no longer exists.)".into());
    };
    match inner.store.sessions().key(&session).await? {
        Some(k) if MemoryOwner::of(&k) != owner => {
            return Ok("\n(That conversation no longer exists.)".into())
        }
        Some(k) if !here.may_quote(&k) => {
            return Ok("\n(Said in another chat; ask me in a direct message to see it.)".into())
        }
        Some(_) => {}
        None => return Ok("\n(That conversation no longer exists.)".into()),
    }
    let Some((from, to)) = range
        .split_once('-')
        .and_then(|(a, b)| Some((a.parse::<i64>().ok()?, b.parse::<i64>().ok()?)))
    else {
        return Ok("\n(Saved during a conversation; no message range recorded.)".into());
    };
    let rows = inner
        .store
        .history()
        .between(&session, from, to, 200)
        .await?;
    let lines: Vec<String> = rows
        .iter()
        .filter(|(_, m)| {
            matches!(m.role, Role::User | Role::Assistant) && !m.content.trim().is_empty()
        })
        .map(|(_, m)| {
            format!(
                "> {}: {}",
                if m.role == Role::User { "you" } else { "me" },
                clip(m.content.trim(), 160)
            )
        })
        .collect();
    if lines.is_empty() {
        return Ok("\n(Those messages were cleared since.)".into());
    }
    let skip = lines.len().saturating_sub(TRACE_MESSAGES);
    Ok(format!("\n{}", lines[skip..].join("\n")))
}

/// `s` on one line, clipped.
fn clip(s: &str, max: usize) -> String {
    crate::text::clip(&s.replace('\n', " "), max)
}
