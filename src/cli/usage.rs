//! `switchboard usage --days N [--user platform:id]`: tokens, cache hits and
//! estimated cost per model, for the operator.

use std::process::ExitCode;
use switchboard::store::Store;
use switchboard_platform::{Platform, UserId};

pub async fn run(database_url: &str, days: u32, user: Option<&str>) -> anyhow::Result<ExitCode> {
    if !(1..=366).contains(&days) {
        anyhow::bail!("--days must be from 1 to 366");
    }
    let user = match user {
        None => None,
        Some(raw) => {
            let parsed = raw
                .split_once(':')
                .and_then(|(p, id)| Some((Platform::parse(p)?, UserId(id.trim().parse().ok()?))));
            Some(parsed.ok_or_else(|| {
                anyhow::anyhow!("--user {raw:?}: use platform:id, e.g. telegram:123456")
            })?)
        }
    };
    let store = Store::open(database_url).await?;
    let rows = store.usage().by_model(user, days).await?;
    let who = user.map_or("everybody".to_owned(), |(p, u)| format!("{p} user {u}"));
    let period = if days == 1 {
        "today".to_owned()
    } else {
        format!("the last {days} days")
    };
    println!(
        "{}",
        switchboard::gateway::usage_report(&format!("Usage of {who}, {period}"), &rows)
            .replace("**", "")
    );
    store.close().await;
    Ok(ExitCode::SUCCESS)
}
