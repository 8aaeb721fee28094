//! `switchboard memory list|forget|pin|unpin`: one user's long-term memories, for the operator;
//! `switchboard memory backfill`: embeddings for every memory (semantic recall).

use std::process::ExitCode;

use chrono::Utc;
use clap::{Args, Subcommand};
use switchboard::memory::semantic::{self, Embedder, EmbeddingsConfig};
use switchboard::store::{MemoryKind, MemoryOwner, MemoryRecord, Store};
use switchboard_platform::{Platform, UserId};

/// Memories read at most (the caps per kind keep a user well below this).
const LIST_MAX: u32 = 1_000;

#[derive(Debug, Subcommand)]
pub enum MemoryAction {
    /// List the user's live memories, grouped by kind (newest first in each; times in UTC).
    List {
        #[command(flatten)]
        owner: OwnerArgs,
    },
    /// Delete one of the user's memories by its id (as `list` shows it).
    Forget {
        #[command(flatten)]
        owner: OwnerArgs,
        /// The memory id, e.g. 17 or #17.
        id: String,
    },
    /// Pin one of the user's memories: never collected, no expiry.
    Pin {
        #[command(flatten)]
        owner: OwnerArgs,
        /// The memory id, e.g. 17 or #17.
        id: String,
    },
    /// Unpin one of the user's memories: collectable again by value.
    Unpin {
        #[command(flatten)]
        owner: OwnerArgs,
        /// The memory id, e.g. 17 or #17.
        id: String,
    },
    /// Embed every memory and chat message without a vector of
    /// EMBEDDINGS_MODEL (all users and sessions), with progress; stopped or
    /// failed, running it again resumes.
    Backfill,
}

/// Which user: a platform and its numeric user id.
#[derive(Debug, Args)]
pub struct OwnerArgs {
    /// telegram, discord or console.
    #[arg(long)]
    platform: String,
    /// The numeric user id on that platform.
    #[arg(long)]
    user: String,
}

impl OwnerArgs {
    pub fn new(platform: String, user: String) -> OwnerArgs {
        OwnerArgs { platform, user }
    }

    fn owner(&self) -> anyhow::Result<MemoryOwner> {
        let (platform, user) = self.platform_user()?;
        Ok(MemoryOwner::new(platform, user))
    }

    /// The platform and numeric user id, checked.
    pub fn platform_user(&self) -> anyhow::Result<(Platform, UserId)> {
        let platform = match Platform::parse(self.platform.trim().to_ascii_lowercase().as_str()) {
            Some(p @ (Platform::Telegram | Platform::Discord | Platform::Console)) => p,
            _ => anyhow::bail!(
                "unknown platform {:?}: use telegram, discord or console",
                self.platform
            ),
        };
        let user = self.user.trim().parse::<i64>().map_err(|_| {
            anyhow::anyhow!(
                "bad user id {:?}: give the numeric {platform} user id",
                self.user
            )
        })?;
        Ok((platform, UserId(user)))
    }
}

pub async fn run(
    database_url: &str,
    embeddings: Option<&EmbeddingsConfig>,
    action: MemoryAction,
) -> anyhow::Result<ExitCode> {
    match action {
        MemoryAction::Backfill => {
            let Some(embeddings) = embeddings else {
                anyhow::bail!(
                    "semantic recall is off: set EMBEDDINGS_BASE_URL and EMBEDDINGS_MODEL first"
                );
            };
            let store = Store::open(database_url).await?;
            backfill(&store, embeddings).await?;
        }
        MemoryAction::List { owner } => {
            let owner = owner.owner()?;
            let store = Store::open(database_url).await?;
            list(&store, owner).await?;
        }
        MemoryAction::Forget { owner, id } => {
            let owner = owner.owner()?;
            let id = parse_id(&id)?;
            let store = Store::open(database_url).await?;
            forget(&store, owner, id).await?;
        }
        MemoryAction::Pin { owner, id } => pin(database_url, &owner, &id, true).await?,
        MemoryAction::Unpin { owner, id } => pin(database_url, &owner, &id, false).await?,
    }
    Ok(ExitCode::SUCCESS)
}

async fn backfill(store: &Store, embeddings: &EmbeddingsConfig) -> anyhow::Result<()> {
    let embedder = Embedder::new(embeddings.clone());
    let start = store
        .memories()
        .embedding_progress(embedder.model())
        .await?;
    println!(
        "Embedding memories with {}: {} done, {} waiting",
        embedder.model(),
        start.embedded,
        start.waiting
    );
    let done = semantic::backfill(store, &embedder, &mut |settled, waiting| {
        println!("  {settled} embedded, {waiting} waiting");
    })
    .await
    .map_err(|e| anyhow::anyhow!("{e}; run `switchboard memory backfill` again to resume"))?;
    if done.requeued > 0 {
        println!(
            "{} memories of another model were embedded again",
            done.requeued
        );
    }
    println!(
        "Done: {} embedded by this run, {} memories have a vector of {}",
        done.settled,
        done.embedded,
        embedder.model()
    );
    backfill_history(store, &embedder).await
}

async fn backfill_history(store: &Store, embedder: &Embedder) -> anyhow::Result<()> {
    let start = store.history().embedding_progress(embedder.model()).await?;
    println!(
        "Embedding chat messages: {} done, {} waiting",
        start.embedded, start.waiting
    );
    let done = semantic::backfill_history(store, embedder, &mut |settled, waiting| {
        println!("  {settled} settled, {waiting} waiting");
    })
    .await
    .map_err(|e| anyhow::anyhow!("{e}; run `switchboard memory backfill` again to resume"))?;
    if done.requeued > 0 {
        println!(
            "{} message vectors of another model were dropped and embedded again",
            done.requeued
        );
    }
    println!(
        "Done: {} messages settled by this run (tool results and empty texts without a vector), {} have a vector of {}",
        done.settled,
        done.embedded,
        embedder.model()
    );
    Ok(())
}

fn parse_id(raw: &str) -> anyhow::Result<i64> {
    raw.trim()
        .trim_start_matches('#')
        .parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "bad memory id {raw:?}: give the number `switchboard memory list` shows (e.g. 17)"
            )
        })
}

fn who(owner: MemoryOwner) -> String {
    format!("{} user {}", owner.platform, owner.user)
}

async fn list(store: &Store, owner: MemoryOwner) -> anyhow::Result<()> {
    let all = store
        .memories()
        .of(owner, &[], LIST_MAX, Utc::now())
        .await?;
    if all.is_empty() {
        println!("No memories of {}.", who(owner));
        return Ok(());
    }
    let noun = if all.len() == 1 { "memory" } else { "memories" };
    println!("{} {noun} of {}", all.len(), who(owner));
    for kind in MemoryKind::ALL {
        let of_kind: Vec<&MemoryRecord> = all.iter().filter(|m| m.kind == kind).collect();
        if of_kind.is_empty() {
            continue;
        }
        println!("{} ({})", kind.as_str(), of_kind.len());
        for m in of_kind {
            let last = m.last_access.map_or_else(
                || "never".to_owned(),
                |t| t.format("%Y-%m-%d %H:%M").to_string(),
            );
            println!(
                "  #{:<6}{} importance {:.2}  last access {:<16}  {}",
                m.id,
                if m.pinned { " pinned" } else { "" },
                m.importance,
                last,
                m.content.split_whitespace().collect::<Vec<_>>().join(" ")
            );
        }
    }
    Ok(())
}

async fn pin(database_url: &str, owner: &OwnerArgs, id: &str, pinned: bool) -> anyhow::Result<()> {
    let owner = owner.owner()?;
    let id = parse_id(id)?;
    let store = Store::open(database_url).await?;
    if !store.memories().set_pinned(owner, id, pinned).await? {
        anyhow::bail!("{} has no memory #{id}", who(owner));
    }
    store
        .audit()
        .record(
            if pinned {
                "memory.pinned"
            } else {
                "memory.unpinned"
            },
            serde_json::json!({
                "platform": owner.platform.as_str(),
                "user": owner.user.0,
                "id": id,
            }),
        )
        .await;
    let verb = if pinned { "Pinned" } else { "Unpinned" };
    println!("{verb} #{id} of {}", who(owner));
    Ok(())
}

async fn forget(store: &Store, owner: MemoryOwner, id: i64) -> anyhow::Result<()> {
    let memory = store.memories().get(owner, id).await?;
    let deleted = match &memory {
        Some(_) => store.memories().delete(owner, id).await?,
        None => false,
    };
    let Some(memory) = memory.filter(|_| deleted) else {
        anyhow::bail!("{} has no memory #{id}", who(owner));
    };
    store
        .audit()
        .record(
            "memory.forgotten",
            serde_json::json!({
                "platform": owner.platform.as_str(),
                "user": owner.user.0,
                "id": id,
                "kind": memory.kind.as_str(),
            }),
        )
        .await;
    println!(
        "Forgot {} #{id} of {}: {}",
        memory.kind.as_str(),
        who(owner),
        crate::cli::tasks::preview(&memory.content, 80)
    );
    Ok(())
}
