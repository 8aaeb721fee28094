//! Issue 38: a password in `LLM_BASE_URL` stays out of the database. The
//! catalogue row seeded from it keeps the URL without credentials and names
//! the variable; a turn on that catalogue model still authenticates with them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support::e2e::Harness;
use crate::support::fake_llm::{FakeLlm, Reply};
use base64::Engine;

const PASSWORD: &str = "url-pass-7c1e99d2";

#[tokio::test]
async fn the_models_table_holds_no_url_password_and_the_model_still_signs_in() {
    let llm = FakeLlm::start().await;
    let url = llm
        .base_url()
        .replacen("http://", &format!("http://ann:{PASSWORD}@"), 1);
    let h = Harness::with_llm(&[("LLM_BASE_URL", &url)], llm).await;
    let store = &h.running.store;
    let rows = store.models().await.unwrap();
    let seeded = rows.iter().find(|r| r.name == "fake-model").unwrap();
    assert!(!seeded.base_url.contains(PASSWORD), "{seeded:?}");
    assert!(!seeded.base_url.contains("ann@"), "{seeded:?}");
    assert_eq!(seeded.url_env.as_deref(), Some("LLM_BASE_URL"));

    // A turn on the catalogue's model (the default now) signs in with the
    // variable's credentials.
    store.set_default_model(Some("fake-model")).await.unwrap();
    h.llm.push(Reply::text("Signed in."));
    h.channel.dm(1, "hello").await;
    h.wait_for("the answer", |l| l.has_text("Signed in.")).await;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("ann:{PASSWORD}"));
    assert_eq!(
        h.llm.authorizations().last().cloned().flatten(),
        Some(format!("Basic {basic}"))
    );

    // Nowhere in the database files, whatever else was written.
    let dir = h.stop().await;
    for entry in std::fs::read_dir(dir.path().join("data")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("switchboard.db") && path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            let found = bytes
                .windows(PASSWORD.len())
                .any(|w| w == PASSWORD.as_bytes());
            assert!(!found, "the password is in {name}");
        }
    }
}
