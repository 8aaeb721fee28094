//! `switchboard identity show|edit|lock|restore`: the agent profile (name,
//! persona, style rules) the operator keeps, versioned and audited.

use std::process::ExitCode;

use chrono::Utc;
use clap::Subcommand;
use switchboard::identity::{Identity, ProfileEdit};
use switchboard::store::Store;

/// Versions `show` lists at most.
const HISTORY: u32 = 10;

#[derive(Debug, Subcommand)]
pub enum IdentityAction {
    /// Show the profile in use, its version and the latest versions.
    Show,
    /// Change the profile (a new version; fields not given are kept).
    Edit {
        /// The agent's name.
        #[arg(long)]
        name: Option<String>,
        /// A paragraph on who the agent is and how it works.
        #[arg(long)]
        persona: Option<String>,
        /// A style rule; repeat for several. Replaces every rule.
        #[arg(long = "style")]
        style: Vec<String>,
        /// Remove every style rule.
        #[arg(long, conflicts_with = "style")]
        clear_style: bool,
    },
    /// Snapshot the profile in use as a version to restore later; with
    /// --platform and --user, that user's persona and preferences too.
    Lock {
        /// telegram, discord or console (with --user).
        #[arg(long, requires = "user")]
        platform: Option<String>,
        /// The numeric user id on that platform (with --platform).
        #[arg(long, requires = "platform")]
        user: Option<String>,
        /// Why the snapshot is taken.
        #[arg(long, default_value = "")]
        note: String,
    },
    /// Return to a version: its profile, and for a lock of a user, their
    /// persona and preferences as they were.
    Restore {
        /// The version number, as `show` lists it (e.g. 3 or v3).
        version: String,
    },
}

pub async fn run(database_url: &str, action: IdentityAction) -> anyhow::Result<ExitCode> {
    let store = Store::open(database_url).await?;
    let identity = Identity::new(store);
    let now = Utc::now();
    match action {
        IdentityAction::Show => show(&identity).await?,
        IdentityAction::Edit {
            name,
            persona,
            style,
            clear_style,
        } => {
            let edit = ProfileEdit {
                name,
                persona,
                style: (clear_style || !style.is_empty()).then_some(style),
            };
            if edit == ProfileEdit::default() {
                anyhow::bail!(
                    "nothing to change: give --name, --persona, --style or --clear-style"
                );
            }
            let (version, profile) = identity.edit(&edit, now).await?;
            println!("Identity version {version}:\n{}", profile.describe());
        }
        IdentityAction::Lock {
            platform,
            user,
            note,
        } => {
            let owner = match (platform, user) {
                (Some(platform), Some(user)) => {
                    let args = crate::cli::memory::OwnerArgs::new(platform, user);
                    let (p, u) = args.platform_user()?;
                    Some(switchboard::store::MemoryOwner::new(p, u))
                }
                _ => None,
            };
            let version = identity.lock(owner, &note, now).await?;
            match owner {
                Some(o) => println!(
                    "Locked as version {version} (the profile, and the persona and preferences of {} user {}).",
                    o.platform, o.user
                ),
                None => println!("Locked as version {version}."),
            }
        }
        IdentityAction::Restore { version } => {
            let v = version
                .trim()
                .trim_start_matches(['v', 'V'])
                .parse::<i64>()
                .ok()
                .filter(|v| *v > 0)
                .ok_or_else(|| anyhow::anyhow!("bad version {version:?}: give the number `switchboard identity show` lists"))?;
            let r = identity.restore(v, now).await?;
            println!(
                "Restored version {v} as version {}:\n{}",
                r.version,
                r.profile.describe()
            );
            if let Some((o, n)) = r.memories {
                println!(
                    "Put back {n} persona and preference memories of {} user {}.",
                    o.platform, o.user
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn show(identity: &Identity) -> anyhow::Result<()> {
    let (version, profile) = identity.current().await?;
    if version == 0 {
        println!("No identity set: the system prompt alone defines the agent.");
        println!("Set one with `switchboard identity edit --name … --persona … --style …`.");
        return Ok(());
    }
    println!("Identity version {version}:\n{}", profile.describe());
    println!("\nVersions (newest first):");
    for v in identity.history(HISTORY).await? {
        let who = v
            .owner
            .map(|o| format!(" with {} user {}", o.platform, o.user))
            .unwrap_or_default();
        let note = if v.note.is_empty() {
            String::new()
        } else {
            format!(" — {}", v.note)
        };
        println!(
            "  v{:<4} {:<8} {}{who}{note}",
            v.version,
            v.action,
            v.created_at.format("%Y-%m-%d %H:%M UTC")
        );
    }
    Ok(())
}
