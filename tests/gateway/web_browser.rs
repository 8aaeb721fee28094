//! The web console in a real browser (headless Chromium over the DevTools
//! protocol): sign in, see the approval a Telegram conversation is waiting
//! on, find Approve refused without the token re-entered, type it next to
//! Approve, and find the Telegram card edited and the tool run;
//! watch the background task's progress bar advance with live refresh; no
//! console error or CSP violation on any page. Screenshots of every page go
//! to `target/web-screenshots/`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::cdp::{Browser, Page};
use crate::support::fake_llm::{FakeLlm, Reply, FAKE_MODEL};
use crate::support::fake_telegram::{FakeTelegram, FakeUser, Where, TOKEN as BOT_TOKEN};
use crate::web_client::TOKEN;
use serde_json::json;
use std::collections::HashMap;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use switchboard::Config;
use switchboard_platform::{PlatformAdapter, Quota};
use switchboard_telegram::{TelegramAdapter, TelegramLimits};
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(30);

fn screenshots() -> PathBuf {
    option_env!("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"))
        .join("web-screenshots")
}

async fn shoot(page: &Page, name: &str, problems: &mut Vec<String>) {
    page.screenshot(&screenshots().join(format!("{name}.png")))
        .await;
    for p in page.problems().await {
        problems.push(format!("{name}: {p}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_in_a_real_browser_and_watch_the_task() {
    let Some(chromium) = crate::cdp::binary() else {
        crate::support::skip::unavailable(
            "SWITCHBOARD_TEST_REQUIRE_BROWSER",
            "no browser (install chromium or set CHROMIUM)",
        );
        return;
    };
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let vars: HashMap<&str, String> = HashMap::from([
        ("LLM_BASE_URL", llm.base_url()),
        ("LLM_MODEL", FAKE_MODEL.to_owned()),
        ("DATA_DIR", dir.path().display().to_string()),
        ("ACCESS_POLICY", "allowlist".to_owned()),
        ("TELEGRAM_ALLOWED_USERS", "900".to_owned()),
        ("TELEGRAM_BOT_TOKEN", BOT_TOKEN.to_owned()),
        ("TELEGRAM_API_URL", tg.api_url()),
        ("CHAT_VERBOSITY", "off".to_owned()),
        ("MEMORY_ENABLED", "false".to_owned()),
        ("FEEDBACK_BUTTONS", "false".to_owned()),
        ("WEB_LISTEN", "127.0.0.1:0".to_owned()),
        ("WEB_TOKEN", TOKEN.to_owned()),
        // Every approval asks for the token, as after the re-entry window.
        ("WEB_REAUTH_SECS", "0".to_owned()),
    ]);
    let config = Config::from_lookup(|k| vars.get(k).cloned()).unwrap();
    let mut tcfg = config.platforms.telegram.clone().unwrap();
    tcfg.poll_timeout_secs = 1;
    let fast = Quota::per_second(NonZeroU32::new(1_000).unwrap());
    tcfg.limits = TelegramLimits {
        per_chat: fast,
        per_group: fast,
        per_bot: fast,
    };
    let adapter = Arc::new(TelegramAdapter::connect(tcfg).await.unwrap());
    let shutdown = CancellationToken::new();
    let adapters: Vec<Arc<dyn PlatformAdapter>> = vec![adapter];
    let running = switchboard::start(&config, adapters, shutdown.clone())
        .await
        .unwrap();
    let base = format!("http://{}", running.web_addr.unwrap());

    let browser = Browser::launch(&chromium).await;
    let page = browser.page().await;
    let mut problems = Vec::new();

    // Sign in.
    page.goto(&format!("{base}/login")).await;
    shoot(&page, "login", &mut problems).await;
    page.eval(&format!(
        "document.getElementById('token').value = {}; document.querySelector('form button').click(); true",
        json!(TOKEN)
    ))
    .await;
    page.wait_for("the overview after sign-in", "location.pathname === '/' && document.readyState === 'complete' && !!document.querySelector('h1')")
        .await;
    assert_eq!(
        page.eval("document.querySelector('h1').textContent").await,
        "Overview"
    );

    // Ann asks for a long job; the model wants it in the background.
    let ann = FakeUser::new(900, "Ann");
    let command = "for i in 10 20 30 40 50 60 70 80 90 100; do echo \"step $i%\"; sleep 1; done; echo finished > job.txt";
    llm.push(Reply::tool_calls([(
        "call_job",
        "exec_command",
        json!({ "command": command, "background": true }),
    )]));
    llm.push(Reply::text("Started the job."));
    llm.push(Reply::text("The job is done."));
    tg.message(Where::Dm, &ann, "run the long job please");
    assert!(
        tg.wait_until(WAIT, |t| t
            .bot_messages(900)
            .iter()
            .any(|m| m.text.contains("requested by")))
            .await,
        "no approval card in Telegram"
    );
    let card = tg
        .bot_messages(900)
        .into_iter()
        .find(|m| m.text.contains("requested by"))
        .unwrap();

    // The pending approval, with its exact command, and Approve.
    page.goto(&format!("{base}/approvals")).await;
    page.wait_for(
        "the pending approval",
        "!!document.querySelector('article.approval button.approve')",
    )
    .await;
    let shown = page
        .eval("document.querySelector('article.approval pre').textContent")
        .await;
    assert!(shown.as_str().unwrap().contains("sleep 1; done"), "{shown}");
    shoot(&page, "approvals", &mut problems).await;
    // Approve without the token (what a program holding a session can do)
    // is refused, and the page says why.
    page.eval("document.querySelector('article.approval button.approve').click(); true")
        .await;
    page.wait_for(
        "the refusal",
        "location.search.includes('flash=reauth') && document.readyState === 'complete' && !!document.querySelector('p.flash')",
    )
    .await;
    let flash = page
        .eval("document.querySelector('p.flash').textContent")
        .await;
    assert!(
        flash.as_str().unwrap().contains("needs the console token"),
        "{flash}"
    );
    shoot(&page, "approvals-reauth", &mut problems).await;
    // The operator types the token next to Approve.
    page.eval(&format!(
        "var f = document.querySelector('article.approval form.decide'); f.querySelector('input[name=token]').value = {}; f.querySelector('button.approve').click(); true",
        json!(TOKEN)
    ))
    .await;
    page.wait_for(
        "the decision to be recorded",
        "location.search.includes('flash=decided') && document.readyState === 'complete'",
    )
    .await;
    assert!(
        tg.wait_until(WAIT, |t| t
            .stored(900, card.message_id)
            .is_some_and(
                |m| m.text.contains("Allowed once") && m.text.contains("web operator")
            ))
        .await,
        "the Telegram card was not edited: {:?}",
        tg.stored(900, card.message_id)
    );

    // The task's progress bar advances without a reload (live refresh).
    page.goto(&format!("{base}/tasks")).await;
    page.eval("window.__same_document = true").await;
    let mut seen: Vec<f64> = Vec::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    while tokio::time::Instant::now() < deadline {
        let value = page
            .eval("(function () { var p = document.querySelector('#running progress[value]'); return p ? p.value : -1; })()")
            .await
            .as_f64()
            .unwrap_or(-1.0);
        if value >= 0.0 && seen.last() != Some(&value) {
            seen.push(value);
            if seen.len() == 2 {
                shoot(&page, "tasks", &mut problems).await;
            }
        }
        if seen.len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(seen.len() >= 2, "the progress bar never advanced: {seen:?}");
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    assert_eq!(
        page.eval("window.__same_document === true").await,
        true,
        "refreshed in place"
    );

    // The tool ran to the end and Ann was told.
    assert!(
        tg.wait_until(WAIT, |t| t
            .bot_messages(900)
            .iter()
            .any(|m| m.text.contains("The job is done.")))
            .await,
        "no final notification"
    );
    // Ann's command ran in her own workspace folder.
    let job = dir.path().join("workspace/users/telegram-900/job.txt");
    assert_eq!(std::fs::read_to_string(&job).unwrap(), "finished\n");

    // Every other page, with screenshots.
    page.goto(&format!("{base}/")).await;
    shoot(&page, "overview", &mut problems).await;
    page.goto(&format!("{base}/conversations")).await;
    shoot(&page, "conversations", &mut problems).await;
    page.eval("document.querySelector('td a[href^=\"/conversations/\"]').click(); true")
        .await;
    page.wait_for(
        "a conversation",
        "location.pathname.startsWith('/conversations/') && document.readyState === 'complete'",
    )
    .await;
    let history = page
        .eval("document.querySelector('ol.history').textContent")
        .await;
    assert!(
        history
            .as_str()
            .unwrap()
            .contains("run the long job please"),
        "{history}"
    );
    shoot(&page, "conversation", &mut problems).await;
    page.goto(&format!("{base}/users")).await;
    shoot(&page, "users", &mut problems).await;
    page.goto(&format!("{base}/audit")).await;
    let audit = page
        .eval("document.querySelector('table.audit').textContent")
        .await;
    assert!(
        audit.as_str().unwrap().contains("web.approval_decide"),
        "{audit}"
    );
    shoot(&page, "audit", &mut problems).await;
    page.goto(&format!("{base}/tasks")).await;
    shoot(&page, "tasks-done", &mut problems).await;
    assert!(problems.is_empty(), "browser problems: {problems:#?}");

    // The checks see a violation when there is one: an inline script is
    // refused by the policy and reported.
    page.eval("var s = document.createElement('script'); s.textContent = 'window.__inline = 1'; document.body.appendChild(s); true")
        .await;
    page.wait_for("the violation report", "window.__csp.length > 0")
        .await;
    assert_eq!(page.eval("window.__inline === undefined").await, true);

    shutdown.cancel();
    let _ = tokio::time::timeout(WAIT, running.wait()).await;
}
