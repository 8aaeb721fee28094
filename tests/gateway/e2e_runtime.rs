//! End to end through `switchboard::start`: how a turn schedules its tool calls
//! (safe calls really in parallel, at most 5 at once; approval-gated calls one
//! after another, in order) and the `MAX_TOOL_ROUNDS` limit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::routing::get;
use axum::Router;
use serde_json::json;
use support::e2e::{messages, tool_result, tool_results, Harness};
use support::fake_llm::{last_user_text, Reply};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// A local HTTP server that holds every request until `release_at` requests
/// have arrived (or `hold` passed), and records how many were in flight at once.
struct HoldServer {
    addr: SocketAddr,
    shared: Arc<Hold>,
    stop: CancellationToken,
}

struct Hold {
    release_at: usize,
    hold: Duration,
    state: Mutex<HoldState>,
    arrived: Notify,
}

#[derive(Default)]
struct HoldState {
    arrived: usize,
    in_flight: usize,
    max_in_flight: usize,
    /// Request paths in arrival order.
    paths: Vec<String>,
}

/// Leaves the in-flight count when the handler ends (or is dropped).
struct InFlight(Arc<Hold>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.state.lock().unwrap().in_flight -= 1;
    }
}

impl HoldServer {
    async fn start(release_at: usize, hold: Duration) -> HoldServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Hold {
            release_at,
            hold,
            state: Mutex::new(HoldState::default()),
            arrived: Notify::new(),
        });
        let app = Router::new()
            .route("/page/{name}", get(held_page))
            .with_state(shared.clone());
        let stop = CancellationToken::new();
        let until = stop.clone().cancelled_owned();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(until)
                .await;
        });
        HoldServer { addr, shared, stop }
    }

    fn url(&self, name: &str) -> String {
        format!("http://{}/page/{name}", self.addr)
    }

    fn max_in_flight(&self) -> usize {
        self.shared.state.lock().unwrap().max_in_flight
    }

    fn paths(&self) -> Vec<String> {
        self.shared.state.lock().unwrap().paths.clone()
    }
}

impl Drop for HoldServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn held_page(State(hold): State<Arc<Hold>>, Path(name): Path<String>) -> String {
    {
        let mut s = hold.state.lock().unwrap();
        s.arrived += 1;
        s.in_flight += 1;
        s.max_in_flight = s.max_in_flight.max(s.in_flight);
        s.paths.push(name.clone());
    }
    let _in_flight = InFlight(hold.clone());
    hold.arrived.notify_waiters();
    let all_here = async {
        loop {
            let notified = hold.arrived.notified();
            if hold.state.lock().unwrap().arrived >= hold.release_at {
                return;
            }
            notified.await;
        }
    };
    match tokio::time::timeout(hold.hold, all_here).await {
        Ok(()) => format!("page {name}: released together"),
        Err(_) => format!("page {name}: gave up waiting for the others"),
    }
}

/// Config that lets `web_fetch` reach the local server.
const ALLOW_LOOPBACK: (&str, &str) = ("WEB_FETCH_ALLOW", "127.0.0.1");

#[tokio::test]
async fn safe_tools_of_one_round_really_run_at_the_same_time() {
    // Each request is held until both have arrived: run one after the other,
    // the first would give up waiting (15 s) and say so.
    let server = HoldServer::start(2, Duration::from_secs(15)).await;
    let h = Harness::with(&[ALLOW_LOOPBACK]).await;
    h.llm.push(Reply::tool_calls([
        ("call_a", "web_fetch", json!({"url": server.url("a")})),
        ("call_b", "web_fetch", json!({"url": server.url("b")})),
    ]));
    h.llm.push(Reply::text("Both pages fetched."));
    h.channel.dm(1, "fetch both pages").await;
    h.wait_for("the answer", |l| l.has_text("Both pages fetched."))
        .await;

    let requests = h.requests(2).await;
    let results = tool_results(&requests[1]);
    let ids: Vec<&str> = results.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["call_a", "call_b"], "results in call order");
    assert!(
        results[0].1.contains("page a: released together"),
        "{results:?}"
    );
    assert!(
        results[1].1.contains("page b: released together"),
        "{results:?}"
    );
    assert_eq!(server.max_in_flight(), 2);
    h.stop().await;
}

#[tokio::test]
async fn at_most_five_safe_tools_run_at_once() {
    // Requests are held until all 7 are in flight. With the cap, only 5 can
    // be: they give up after the hold, then the last 2 run. Without a cap all
    // 7 would be in flight at once.
    let server = HoldServer::start(7, Duration::from_secs(2)).await;
    let h = Harness::with(&[ALLOW_LOOPBACK]).await;
    let calls: Vec<(String, &str, serde_json::Value)> = (1..=7)
        .map(|i| {
            (
                format!("call_{i}"),
                "web_fetch",
                json!({"url": server.url(&i.to_string())}),
            )
        })
        .collect();
    h.llm.push(Reply::tool_calls(calls));
    h.llm.push(Reply::text("Seven pages fetched."));
    h.channel.dm(1, "fetch seven pages").await;
    h.wait_for("the answer", |l| l.has_text("Seven pages fetched."))
        .await;

    assert_eq!(
        server.max_in_flight(),
        5,
        "the server saw {} requests in flight at once",
        server.max_in_flight()
    );
    let mut paths = server.paths();
    paths.sort();
    assert_eq!(paths, ["1", "2", "3", "4", "5", "6", "7"], "every call ran");
    let requests = h.requests(2).await;
    let results = tool_results(&requests[1]);
    let ids: Vec<String> = results.iter().map(|(id, _)| id.clone()).collect();
    let expected: Vec<String> = (1..=7).map(|i| format!("call_{i}")).collect();
    assert_eq!(ids, expected, "results in call order");
    for (i, (_, content)) in results.iter().enumerate() {
        assert!(
            content.contains(&format!("page {}:", i + 1)),
            "result {} is its own page: {content}",
            i + 1
        );
    }
    h.stop().await;
}

#[tokio::test]
async fn approval_gated_calls_run_one_after_another_in_order() {
    let h = Harness::start().await;
    // The first command is slow; if the two ran at once, the second card would
    // be up (and `second` could be written) before the first finished.
    h.llm.push(Reply::tool_calls([
        (
            "call_1",
            "exec_command",
            json!({"command": "sleep 0.5; echo first >> order.txt"}),
        ),
        (
            "call_2",
            "exec_command",
            json!({"command": "echo second >> order.txt"}),
        ),
    ]));
    h.llm.push(Reply::text("Both commands ran."));
    h.channel.dm(1, "run both").await;

    let first = h.channel.card().await;
    assert!(first.text.contains("sleep 0.5"), "{}", first.text);
    h.channel.press(1, &first.action('y')).await;
    let second = h.channel.next_card(first.id).await;
    assert!(second.text.contains("echo second"), "{}", second.text);
    let order = h.workspace().join("order.txt");
    assert_eq!(
        std::fs::read_to_string(&order).unwrap_or_default(),
        "first\n",
        "the second call is asked for only after the first one finished"
    );
    h.channel.press(1, &second.action('y')).await;
    h.wait_for("the answer", |l| l.has_text("Both commands ran."))
        .await;

    assert_eq!(std::fs::read_to_string(&order).unwrap(), "first\nsecond\n");
    assert_eq!(h.channel.log().cards_ever(), 2);
    let requests = h.requests(2).await;
    let results = tool_results(&requests[1]);
    let ids: Vec<&str> = results.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["call_1", "call_2"]);
    h.stop().await;
}

#[tokio::test]
async fn a_model_that_never_stops_calling_tools_is_stopped_after_15_rounds() {
    let h = Harness::start().await;
    for i in 1..=20 {
        h.write(&format!("r{i}.txt"), &format!("content of file {i}"));
    }
    // Always another tool call, with different arguments every round so the
    // doom-loop guard stays quiet.
    h.llm.set_responder(|request| {
        let n = messages(request)
            .iter()
            .filter(|m| m["role"] == "tool")
            .count()
            + 1;
        Reply::tool_calls([(
            format!("call_{n}"),
            "read_file",
            json!({"path": format!("r{n}.txt")}),
        )])
    });
    h.channel.dm(1, "keep reading files forever").await;
    let log = h
        .wait_for("the round-limit notice", |l| {
            l.any_contains("stopped after 15 tool rounds")
        })
        .await;
    h.idle().await;

    let notice = log.find("stopped after 15 tool rounds").unwrap();
    assert!(
        notice.text.contains("Tell me how to continue"),
        "{}",
        notice.text
    );
    let requests = h.llm.requests().await;
    assert_eq!(
        requests.len(),
        15,
        "one model call per round, none after the 15th"
    );
    for (round, request) in requests.iter().enumerate().skip(1) {
        assert!(
            tool_result(request, &format!("call_{round}"))
                .contains(&format!("content of file {round}")),
            "round {round} ran its call"
        );
    }

    // The session is still usable: the next message gets a normal answer, and
    // the stored turn (15 rounds, then the notice) replays as a valid request.
    h.llm.push(Reply::text("Fine, I'll stop."));
    h.channel.dm(1, "ok, stop").await;
    h.wait_for("an answer after the limit", |l| {
        l.has_text("Fine, I'll stop.")
    })
    .await;
    let requests = h.requests(16).await;
    let next = &requests[15];
    assert_eq!(last_user_text(next).as_deref(), Some("ok, stop"));
    assert!(tool_result(next, "call_15").contains("content of file 15"));
    assert!(
        messages(next).iter().any(|m| m["role"] == "assistant"
            && m["content"]
                .as_str()
                .is_some_and(|c| c.contains("stopped after 15 tool rounds"))),
        "the notice is part of the history"
    );
    h.stop().await;
}

#[tokio::test]
async fn a_research_sub_agent_works_with_its_own_tools_and_reports_back() {
    let h = Harness::start().await;
    std::fs::create_dir_all(h.workspace()).unwrap();
    std::fs::write(h.workspace().join("notes.txt"), "X is 42.\n").unwrap();
    h.llm.push(
        Reply::tool_calls([(
            "call_d",
            "delegate_to_research",
            json!({"task": "What is X? Look in notes.txt."}),
        )])
        .with_usage(10, 1, 0),
    );
    // The sub-agent: a tool outside its role first, then its own.
    h.llm.push(
        Reply::tool_calls([("sub_1", "exec_command", json!({"command": "cat notes.txt"}))])
            .with_usage(1000, 100, 0),
    );
    h.llm.push(
        Reply::tool_calls([("sub_2", "read_file", json!({"path": "notes.txt"}))])
            .with_usage(1000, 100, 0),
    );
    h.llm
        .push(Reply::text("X is 42 (source: notes.txt).").with_usage(1000, 100, 0));
    h.llm.push(Reply::text("X is 42.").with_usage(10, 1, 0));
    h.channel.dm(1, "what is X?").await;
    let log = h.wait_for("the answer", |l| l.has_text("X is 42.")).await;
    // The sub-agent's steps showed in the answer's draft while it worked.
    let answer = log.find("X is 42.").unwrap();
    let shown = log.history_of(answer.id);
    assert!(
        shown
            .iter()
            .any(|t| t.starts_with("⏳ research sub-agent — step 1: read_file")),
        "{shown:?}"
    );

    let requests = h.requests(5).await;
    let tool_names = |r: &serde_json::Value| -> Vec<String> {
        r["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let main_tools = tool_names(&requests[0]);
    assert!(main_tools.contains(&"delegate_to_research".to_owned()));
    let sub_tools = tool_names(&requests[1]);
    let mut sorted = sub_tools.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        ["read_file", "read_stored_result", "recall", "web_fetch"],
        "the role's tools only"
    );
    let sub_system = messages(&requests[1])[0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        sub_system.starts_with("You are a research assistant"),
        "{sub_system}"
    );
    assert_eq!(
        messages(&requests[1]).len(),
        2,
        "the sub-agent sees its task, not the conversation"
    );
    // …and the user's own words beside the delegating model's brief, as data.
    assert!(
        sub_system.contains("The user's own message that led to this task")
            && sub_system.contains("what is X?"),
        "{sub_system}"
    );
    let refused = tool_result(&requests[2], "sub_1");
    assert!(refused.contains("exec_command"), "{refused}");
    assert!(tool_result(&requests[3], "sub_2").contains("X is 42."));
    let findings = tool_result(&requests[4], "call_d");
    assert!(
        findings.starts_with("Findings of the research sub-agent (after 3 model rounds):")
            && findings.contains("X is 42 (source: notes.txt)."),
        "{findings}"
    );
    assert_eq!(h.channel.log().cards_ever(), 0, "a sub-agent never asks");
    // The sub-agent's tokens count for the user who asked, as one turn
    // (once it has ended: `/usage` answers at once, even mid-turn).
    h.idle().await;
    h.channel.dm(1, "/usage").await;
    h.wait_for("the usage", |l| {
        l.any_contains("`fake-model`: 1 turns · 3020 in / 302 out tokens · cache hits 0 % (0 read, 0 written) · $0.00")
    })
    .await;
    h.stop().await;
}

#[tokio::test]
async fn a_sub_agent_reads_the_sessions_stored_results_and_memories() {
    let h = Harness::with(&[("MEMORY_ENABLED", "true")]).await;
    // Over 50,000 chars: the parent's read is stored, only a preview kept.
    let lines: Vec<String> = (0..900)
        .map(|i| format!("line {i:04} {}", "x".repeat(60)))
        .collect();
    h.write(
        "big.txt",
        &format!("{}\nthe total is 4217\n", lines.join("\n")),
    );
    h.llm.push(Reply::tool_calls([
        ("call_big", "read_file", json!({"path": "big.txt"})),
        (
            "call_mem",
            "remember",
            json!({"content": "The user reports figures in euros"}),
        ),
    ]));
    h.llm.push(Reply::tool_calls([(
        "call_d",
        "delegate_to_analysis",
        json!({"task": "Find the total at the end of stored result call_big; recall the user's currency."}),
    )]));
    // The sub-agent reads the tail of the parent's stored result and recalls.
    h.llm.push(Reply::tool_calls([
        (
            "sub_1",
            "read_stored_result",
            json!({"call_id": "call_big", "offset": 60000}),
        ),
        ("sub_2", "recall", json!({"query": "euros"})),
    ]));
    h.llm.push(Reply::text("The total is 4217 euros."));
    h.llm.push(Reply::text("4217 euros."));
    h.channel.dm(1, "what is the total in big.txt?").await;
    h.wait_for("the answer", |l| l.has_text("4217 euros."))
        .await;

    let requests = h.requests(5).await;
    let preview = tool_result(&requests[1], "call_big");
    assert!(preview.starts_with("[Large result:"), "{preview}");
    assert!(tool_result(&requests[1], "call_mem").starts_with("Saved as memory #"));
    let read = tool_result(&requests[3], "sub_1");
    assert!(read.contains("the total is 4217"), "{read}");
    let recalled = tool_result(&requests[3], "sub_2");
    assert!(recalled.contains("euros"), "{recalled}");
    // The sub-agent's trace is still its own.
    let session = h.session(1, 1).await;
    let traces = h.data_dir().join("scratchpad");
    let names: Vec<String> = std::fs::read_dir(&traces)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .any(|n| n.ends_with("analysis") && n.contains(&session.to_string())),
        "{names:?}"
    );
    h.stop().await;
}

#[tokio::test]
async fn a_sub_agent_can_work_in_the_background_and_report_by_notification() {
    let h = Harness::start().await;
    h.llm.push(Reply::tool_calls([(
        "call_d",
        "delegate_to_analysis",
        json!({"task": "Compare a.csv and b.csv.", "background": true}),
    )]));
    h.llm.set_responder(|request| {
        let system = messages(request)[0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let last = last_user_text(request).unwrap_or_default();
        Reply::text(if system.starts_with("You are an analyst") {
            "The files agree."
        } else if last.contains("<task-notification>") {
            "The analysis is done: the files agree."
        } else {
            "I started the analysis."
        })
    });
    h.channel.dm(1, "compare the files").await;
    h.wait_for("the notification answer", |l| {
        l.has_text("I started the analysis.")
            && l.has_text("The analysis is done: the files agree.")
    })
    .await;
    h.idle().await;
    let requests = h.llm.requests().await;
    let notification = requests
        .iter()
        .filter_map(last_user_text)
        .find(|t| t.contains("<task-notification>"))
        .unwrap();
    assert!(
        notification.contains("tool: delegate_to_analysis")
            && notification.contains("Findings of the analysis sub-agent")
            && notification.contains("The files agree."),
        "{notification}"
    );
    h.stop().await;
}

/// Issue 23 item 8: one model round started 150 background sub-agents without
/// approval. A user has at most `MAX_TASKS_PER_USER` (default 5) unfinished
/// background tasks across all their chats; calls past it get a clear error
/// and start nothing. Another user has their own allowance.
#[tokio::test]
async fn one_round_asking_for_150_background_sub_agents_starts_only_the_users_cap() {
    // The sub-agents stall on their model call: they stay running.
    let h = Harness::with(&[("LLM_IDLE_TIMEOUT_SECS", "300")]).await;
    h.llm.set_responder(|request| {
        let all = messages(request);
        if all[0]["content"]
            .as_str()
            .unwrap_or_default()
            .starts_with("You are an analyst")
        {
            return Reply::text("working on it").then_stall();
        }
        if all.last().is_some_and(|m| m["role"] == "tool") {
            return Reply::text("Started what I could.");
        }
        let n = match last_user_text(request).unwrap_or_default().as_str() {
            "start 150" => 150,
            _ => 1,
        };
        let user = last_user_text(request).unwrap_or_default().len();
        Reply::tool_calls((0..n).map(|i| {
            (
                format!("call_{user}_{i}"),
                "delegate_to_analysis",
                json!({"task": format!("t{i}"), "background": true}),
            )
        }))
    });
    h.channel.dm(1, "start 150").await;
    h.wait_for("the answer", |l| l.has_text("Started what I could."))
        .await;
    let requests = h.llm.requests().await;
    let main = requests
        .iter()
        .find(|r| tool_results(r).len() == 150)
        .expect("the round's 150 results");
    let results = tool_results(main);
    let started = results
        .iter()
        .filter(|(_, r)| r.starts_with("Started background task"))
        .count();
    let refused = results
        .iter()
        .filter(|(_, r)| r.contains("the limit is 5 per user") && r.contains("not started"))
        .count();
    assert_eq!((started, refused), (5, 145), "{results:#?}");
    let session = h.session(1, 1).await;
    let tasks = h
        .running
        .store
        .tasks()
        .of_session(&session, 500)
        .await
        .unwrap();
    assert_eq!(tasks.len(), 5, "only the admitted tasks were recorded");

    // The same user in a group: still at the cap (it is per user, not per chat).
    h.channel
        .group(1, 900, switchboard_platform::Addressed::Mention, "one more")
        .await;
    h.wait_for("the group answer", |l| {
        l.count_containing("Started what I could.") == 2
    })
    .await;
    let more = first_result(&h, "call_8_0").await;
    assert!(more.contains("the limit is 5 per user"), "{more}");

    // Another user is not held back by user 1's tasks.
    h.channel.dm(2, "go").await;
    h.wait_for("user 2's answer", |l| {
        l.count_containing("Started what I could.") == 3
    })
    .await;
    let other = first_result(&h, "call_2_0").await;
    assert!(other.starts_with("Started background task"), "{other}");
    h.stop().await;
}

/// The result of tool call `id` in whichever request carried it.
async fn first_result(h: &Harness, id: &str) -> String {
    h.llm
        .requests()
        .await
        .iter()
        .flat_map(tool_results)
        .find(|(call, _)| call == id)
        .map(|(_, result)| result)
        .unwrap_or_else(|| panic!("no result for {id}"))
}

/// Issue 23 item 8: a model stream that keeps sending content had no overall
/// deadline (the idle timeout never fires while chunks arrive). The turn ends
/// at `TURN_DEADLINE_SECS` (default 600 s) and the user is told. The stream
/// sends one word a second for 2,000 s, on a paused clock that the test moves:
/// started after the gateway (its SQLite pool waits on a thread, which a
/// paused clock would skip past) and moved by hand while the test task keeps
/// the runtime busy, so it never jumps on its own.
#[tokio::test]
async fn a_stream_that_keeps_sending_ends_at_the_turn_deadline_and_the_user_is_told() {
    let h = Harness::start().await;
    let endless = vec!["word"; 2_000].join(" ");
    h.llm
        .push(Reply::text(&endless).with_chunk_delay(Duration::from_secs(1)));
    h.llm
        .push(Reply::text("a second model call must not happen"));
    h.channel.dm(1, "tell me everything").await;
    h.requests(1).await;
    tokio::time::pause();
    let began = tokio::time::Instant::now();
    let told = loop {
        if let Some(sent) = h.channel.log().find("time limit of 600 s") {
            break sent.text.clone();
        }
        assert!(
            began.elapsed() < Duration::from_secs(2_000),
            "the stream ran to its end without the turn stopping\n{}",
            h.channel.log()
        );
        tokio::time::advance(Duration::from_millis(100)).await;
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::resume();
    assert!(told.contains("TURN_DEADLINE_SECS"), "{told}");
    assert!(
        began.elapsed() >= Duration::from_secs(590),
        "stopped by the deadline, not before (on the test's clock)"
    );
    h.idle().await;
    assert_eq!(h.llm.requests().await.len(), 1, "one model call, cut short");
    assert_eq!(h.llm.remaining(), 1);
    h.stop().await;
}
