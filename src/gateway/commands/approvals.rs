//! `/approvals`: the cards still waiting for a decision in this chat and the
//! user's "always allow" rules; `/approvals revoke <id>` for a rule.

use crate::gateway::commands::Command;
use crate::gateway::Inner;
use crate::store::{ApprovalRecord, SessionKey, StoreError};
use crate::text::clip;
use crate::visible::visible;

/// Characters of an action shown per pending card.
const SUMMARY_CHARS: usize = 80;

pub(crate) async fn run(
    inner: &Inner,
    cmd: &Command<'_>,
    key: &SessionKey,
) -> Result<String, StoreError> {
    if let ["revoke", id] = cmd.args.as_slice() {
        return revoke(inner, key, id).await;
    }
    let mut out = Vec::new();
    let pending: Vec<ApprovalRecord> = inner
        .store
        .approvals()
        .pending(inner.approvals.now())
        .await?
        .into_iter()
        .filter(|a| {
            a.chat.platform == key.platform
                && a.chat.chat == key.chat
                && a.chat.thread == key.thread
        })
        .collect();
    if !pending.is_empty() {
        out.push(
            "**Waiting for a decision** (the card's buttons, or `/approve <id> allow|deny`)"
                .to_owned(),
        );
        out.extend(pending.iter().map(pending_line));
    }
    let rules = inner
        .store
        .approvals()
        .rules(key.platform, key.user)
        .await?;
    if rules.is_empty() {
        out.push("You have no \"always allow\" rules.".into());
    } else {
        out.push("**Always-allow rules** (revoke with `/approvals revoke <id>`)".into());
        out.extend(rules.iter().map(|r| {
            format!(
                "`{}` {}: {}",
                r.id.short(),
                r.tool_name,
                crate::approvals::describe_rule(&r.pattern)
            )
        }));
    }
    Ok(out.join("\n"))
}

/// `` `ab12cd34` Run command (exec_command) for Ann, until 12:30 UTC: `ls` ``
fn pending_line(a: &ApprovalRecord) -> String {
    // Shown as the card shows it: nothing hidden, nothing that closes the code span.
    let summary = visible(&a.summary.replace('\n', " "))
        .text
        .replace('`', "ʼ");
    format!(
        "`{}` {} ({}) for {}, until {}: `{}`",
        a.id.short(),
        a.tool_display,
        a.tool_name,
        visible(&a.requester_name).text,
        a.expires_at.format("%H:%M UTC"),
        clip(&summary, SUMMARY_CHARS)
    )
}

async fn revoke(inner: &Inner, key: &SessionKey, id: &str) -> Result<String, StoreError> {
    Ok(
        if inner
            .store
            .approvals()
            .revoke_rule(key.platform, key.user, id)
            .await?
        {
            let detail = serde_json::json!({
                "id": id, "platform": key.platform.as_str(), "user": key.user.0,
            });
            inner
                .store
                .audit()
                .record("approval.rule_revoked", detail)
                .await;
            format!("Revoked rule `{id}`. That action will ask again.")
        } else {
            format!("No rule `{id}` of yours (give at least 6 characters of the id).")
        },
    )
}
