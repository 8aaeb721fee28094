//! What the memory tests share: the backends to run on (SQLite always, a fresh
//! PostgreSQL database when `TEST_DATABASE_URL` names a server, as in CI) and
//! a gateway harness on one of them with memory and feedback switched on.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use crate::support::e2e::Harness;
pub use crate::support::postgres::fresh_postgres;

/// The harness turns memory and feedback off for other tests; these turn them on.
pub const ON: &[(&str, &str)] = &[("MEMORY_ENABLED", "true"), ("FEEDBACK_BUTTONS", "true")];

/// `None` for the harness's SQLite file, then a PostgreSQL URL when configured.
pub async fn backends() -> Vec<Option<String>> {
    let mut out = vec![None];
    if let Ok(admin) = std::env::var("TEST_DATABASE_URL") {
        out.push(Some(fresh_postgres(&admin).await));
    }
    out
}

/// A gateway with memory on, `vars` on top, on backend `db`.
pub async fn harness(vars: &[(&str, &str)], db: &Option<String>) -> Harness {
    let mut all: Vec<(&str, &str)> = ON.to_vec();
    all.extend_from_slice(vars);
    if let Some(url) = db {
        all.push(("DATABASE_URL", url.as_str()));
    }
    Harness::with(&all).await
}

/// The database URL of backend `db`: the PostgreSQL database, or a SQLite file
/// in `dir`. Each [`Store::open`] of it is a pool of its own, as in another process.
pub fn db_url(db: &Option<String>, dir: &std::path::Path) -> String {
    match db {
        Some(url) => url.clone(),
        None => format!("sqlite://{}", dir.join("switchboard.db").display()),
    }
}

/// A fresh migrated SQLite store, and a fresh PostgreSQL one when
/// `TEST_DATABASE_URL` names a server (CI sets it); each with the directory
/// its files live in (kept for as long as the store is used).
pub async fn stores() -> Vec<(switchboard::store::Store, tempfile::TempDir)> {
    let mut out = Vec::new();
    for db in backends().await {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(&db_url(&db, dir.path())).await;
        out.push((store, dir));
    }
    out
}

/// A store of its own on `url` (migrated), like one gateway process opens.
pub async fn open_store(url: &str) -> switchboard::store::Store {
    switchboard::store::Store::open(url).await.unwrap()
}

/// The real OpenAI-compatible provider, talking to `llm`.
pub fn provider(
    llm: &crate::support::fake_llm::FakeLlm,
) -> std::sync::Arc<dyn switchboard::llm::Provider> {
    use switchboard::llm::{EndpointConfig, ModelInfo, OpenAiProvider};
    let config = EndpointConfig::new(llm.base_url(), ModelInfo::new("fake-model", None));
    std::sync::Arc::new(OpenAiProvider::new(config).unwrap())
}
