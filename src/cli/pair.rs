//! `switchboard pair`: pairing requests from unknown users, and who is admitted.

use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use serde_json::json;
use switchboard::store::Store;

use crate::cli::memory::OwnerArgs;

#[derive(Debug, Subcommand)]
pub enum PairAction {
    /// List pending pairing codes and the users admitted so far.
    List,
    /// Admit the user who holds CODE.
    Approve { code: String },
    /// Refuse the request with CODE.
    Deny { code: String },
    /// Admit a user by id, without a pairing code.
    Admit {
        #[command(flatten)]
        user: OwnerArgs,
    },
    /// Take a user's admission back; their next message gets a new pairing code.
    Revoke {
        #[command(flatten)]
        user: OwnerArgs,
    },
}

pub async fn run(database_url: &str, action: PairAction) -> anyhow::Result<ExitCode> {
    let store = Store::open(database_url).await?;
    match action {
        PairAction::List => list(&store).await?,
        PairAction::Approve { code } | PairAction::Deny { code } if code.trim().is_empty() => {
            anyhow::bail!("give the pairing CODE")
        }
        PairAction::Approve { code } => decide(&store, &code, true).await?,
        PairAction::Deny { code } => decide(&store, &code, false).await?,
        PairAction::Admit { user } => {
            let (platform, user) = user.platform_user()?;
            store.admit(platform, user, "", "operator").await?;
            store
                .audit()
                .record(
                    "pairing.admitted",
                    json!({ "platform": platform.as_str(), "user": user.0 }),
                )
                .await;
            println!("Admitted {platform} user {user}.");
        }
        PairAction::Revoke { user } => {
            let (platform, user) = user.platform_user()?;
            if !store.revoke_admission(platform, user).await? {
                anyhow::bail!(
                    "{platform} user {user} is not admitted (see `switchboard pair list`)"
                );
            }
            store
                .audit()
                .record(
                    "pairing.revoked",
                    json!({ "platform": platform.as_str(), "user": user.0 }),
                )
                .await;
            println!("Revoked {platform} user {user}: their next message gets a new pairing code.");
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn list(store: &Store) -> anyhow::Result<()> {
    let pending = store.pending_pairings().await?;
    if pending.is_empty() {
        println!("No pending pairing requests.");
    } else {
        println!("Pending pairing requests:");
    }
    for p in pending {
        println!(
            "  {}  {} user {} ({})  expires {}",
            p.code,
            p.platform,
            p.user,
            p.display_name,
            p.expires_at.format("%H:%M UTC")
        );
    }
    let admitted = store.admitted_users().await?;
    if admitted.is_empty() {
        println!("No admitted users.");
        return Ok(());
    }
    println!("Admitted users:");
    for u in admitted {
        let name = if u.display_name.is_empty() {
            String::new()
        } else {
            format!(" ({})", u.display_name)
        };
        println!(
            "  {} user {}{name}  by {} on {}",
            u.platform,
            u.user,
            u.admitted_by,
            u.admitted_at.format("%Y-%m-%d %H:%M UTC")
        );
    }
    Ok(())
}

async fn decide(store: &Store, code: &str, approve: bool) -> anyhow::Result<()> {
    let p = store
        .decide_pairing(code, approve)
        .await?
        .with_context(|| format!("no pending, unexpired pairing code {code}"))?;
    let (kind, verb) = if approve {
        ("pairing.approved", "Admitted")
    } else {
        ("pairing.denied", "Denied")
    };
    store
        .audit()
        .record(
            kind,
            json!({ "platform": p.platform.as_str(), "user": p.user.0 }),
        )
        .await;
    println!(
        "{verb} {} user {} ({}).",
        p.platform, p.user, p.display_name
    );
    Ok(())
}
