//! `switchboard approvals pending`: the approval cards still waiting for a decision.

use std::process::ExitCode;

use super::ApprovalsAction;
use switchboard::store::{ApprovalRecord, Store};

/// `approvals list` and `approvals revoke`: the "always allow" rules.
pub async fn rules(database_url: &str, action: ApprovalsAction) -> anyhow::Result<ExitCode> {
    let store = Store::open(database_url).await?;
    match action {
        ApprovalsAction::List => list_rules(&store).await?,
        ApprovalsAction::Pending => {}
        ApprovalsAction::Revoke { id } => {
            if !store.approvals().revoke_any_rule(id.trim()).await? {
                anyhow::bail!("no rule matches {id} (give at least 6 characters of a unique id)");
            }
            store
                .audit()
                .record("approval.rule_revoked", serde_json::json!({ "id": id }))
                .await;
            println!("Revoked rule {id}.");
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn list_rules(store: &Store) -> anyhow::Result<()> {
    let rules = store.approvals().all_rules().await?;
    if rules.is_empty() {
        println!("No \"always allow\" rules.");
    }
    for r in rules {
        println!(
            "{}  {} user {}  {}  {}",
            r.id.short(),
            r.platform,
            r.user,
            r.tool_name,
            switchboard::approvals::describe_rule(&r.pattern)
        );
    }
    Ok(())
}

/// Characters of an action's summary shown.
const SUMMARY_PREVIEW: usize = 100;

/// Prints every pending approval not yet expired, oldest first.
pub async fn pending(database_url: &str) -> anyhow::Result<ExitCode> {
    let store = Store::open(database_url).await?;
    let pending = store.approvals().pending(chrono::Utc::now()).await?;
    if pending.is_empty() {
        println!("No approvals are waiting for a decision.");
    }
    for a in &pending {
        print_pending(a);
    }
    if !pending.is_empty() {
        println!("Decide in the chat: the card's buttons, or /approve <id> allow|deny there.");
    }
    store.close().await;
    Ok(ExitCode::SUCCESS)
}

fn print_pending(a: &ApprovalRecord) {
    let thread = a
        .chat
        .thread
        .map(|t| format!(" thread {t}"))
        .unwrap_or_default();
    println!(
        "{}  {} chat {}{thread}  {}  requested by {} (user {})  expires {}",
        a.id.short(),
        a.chat.platform,
        a.chat.chat,
        a.tool_name,
        inert(&a.requester_name),
        a.requester,
        a.expires_at.format("%Y-%m-%d %H:%M:%S UTC"),
    );
    println!(
        "          {}",
        crate::cli::tasks::preview(&inert(&a.summary), SUMMARY_PREVIEW)
    );
}

/// Text from a chat printed on the operator's terminal: control characters
/// (escape sequences, carriage returns) shown as `�`, never run.
fn inert(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() && c != '\n' {
                '\u{fffd}'
            } else {
                c
            }
        })
        .collect()
}
