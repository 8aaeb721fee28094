//! The word search of `query_my_chat_history`: the calling session's
//! messages, newest first, read in batches, each kept when it is of the
//! asked roles and holds every word of the query (Chinese and other unspaced
//! scripts by character pairs, as memory recall does).

use super::read_back::storage;
use super::spec::{ToolContext, ToolError};
use crate::llm::{Message, Role};
use crate::memory::{query_terms, terms};
use crate::store::{HistoryRow, HistoryWindow, Store};
use std::collections::HashSet;

/// Matches shown per page.
pub(super) const PER_PAGE: usize = 10;
/// The last page that may be asked for.
pub(super) const MAX_PAGE: usize = 20;
/// Rows read per database round trip.
const BATCH: u32 = 500;
/// Rows read at most per call; beyond it the model is told to narrow by time.
pub(super) const MAX_SCANNED: usize = 20_000;

/// Whose messages a search covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Who {
    User,
    Assistant,
    Both,
    Tools,
}

impl Who {
    pub(super) fn parse(raw: Option<&str>) -> Result<Who, ToolError> {
        match raw {
            None | Some("both") => Ok(Who::Both),
            Some("user") => Ok(Who::User),
            Some("assistant") => Ok(Who::Assistant),
            Some("tools") => Ok(Who::Tools),
            Some(other) => Err(ToolError::InvalidArguments(format!(
                "who {other:?}: use user, assistant, both or tools"
            ))),
        }
    }

    /// The stored roles of the messages embedded for this search (`None`:
    /// tool results are not embedded).
    pub(super) fn roles(self) -> Option<[&'static str; 2]> {
        match self {
            Who::User => Some(["user", "user"]),
            Who::Assistant => Some(["assistant", "assistant"]),
            Who::Both => Some(["user", "assistant"]),
            Who::Tools => None,
        }
    }

    pub(super) fn covers(self, m: &Message) -> bool {
        match (self, &m.role) {
            (Who::User | Who::Both, Role::User) => true,
            (Who::Assistant | Who::Both, Role::Assistant) => !m.content.trim().is_empty(),
            (Who::Tools, Role::Tool) => true,
            _ => false,
        }
    }
}

/// What a message must contain to match: every word of the query.
pub(super) struct Needle {
    terms: Vec<String>,
}

impl Needle {
    pub(super) fn new(query: &str) -> Needle {
        Needle {
            terms: query_terms(query),
        }
    }

    pub(super) fn matches(&self, text: &str) -> bool {
        if self.terms.is_empty() {
            return true;
        }
        let have: HashSet<String> = terms(text).into_iter().collect();
        self.terms.iter().all(|t| {
            // A lone character (一 word of one CJK character) has no pair.
            have.contains(t) || (t.chars().count() == 1 && text.contains(t.as_str()))
        })
    }
}

/// One page of matches, and whether the search stopped at [`MAX_SCANNED`].
pub(super) struct Found {
    pub(super) hits: Vec<HistoryRow>,
    pub(super) more: bool,
    pub(super) cut_short: bool,
    /// Ranked by word and meaning together, not newest first.
    pub(super) ranked: bool,
}

/// The newest word matches of the calling session after the first `skip`,
/// `take` of them.
pub(super) async fn scan(
    store: &Store,
    ctx: &ToolContext,
    needle: &Needle,
    who: Who,
    mut window: HistoryWindow,
    (skip, take): (usize, usize),
) -> Result<Found, ToolError> {
    let (mut matched, mut scanned) = (0usize, 0usize);
    let mut hits = Vec::new();
    loop {
        let rows = store
            .history()
            .newest_first(&ctx.session_id, window, BATCH)
            .await
            .map_err(storage)?;
        let Some(last) = rows.last() else {
            return Ok(Found {
                hits,
                more: false,
                cut_short: false,
                ranked: false,
            });
        };
        window.before = Some(last.id);
        scanned += rows.len();
        for row in rows {
            if !(who.covers(&row.message) && needle.matches(&row.message.content)) {
                continue;
            }
            matched += 1;
            if matched > skip + take {
                return Ok(Found {
                    hits,
                    more: true,
                    cut_short: false,
                    ranked: false,
                });
            }
            if matched > skip {
                hits.push(row);
            }
        }
        if scanned >= MAX_SCANNED {
            return Ok(Found {
                hits,
                more: false,
                cut_short: true,
                ranked: false,
            });
        }
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_must_appear_and_chinese_matches_by_pairs() {
        let needle = Needle::new("new address");
        assert!(needle.matches("My NEW address is 12 Rue des Lilas"));
        assert!(!needle.matches("my address is old"));
        let chinese = Needle::new("地址");
        assert!(chinese.matches("我的新地址是北京市朝阳区"));
        assert!(!chinese.matches("我的电话是123"));
        assert!(Needle::new("京").matches("北京"));
        assert!(Needle::new("").matches("anything"));
    }
}
