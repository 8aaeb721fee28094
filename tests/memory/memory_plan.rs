//! The planner as code: a plan with typed steps kept in the plans table, each
//! tool result recorded on the current step, every model call told the latest
//! outcome and the next action, a failed step put to the user and re-planned,
//! a plan waiting on the user resumed after a restart, the live state read
//! for a settings request instead of the stale task summary, a legacy plan
//! moved on first read, and `/plan` / `/clear`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::memory_common::{backends, db_url, harness};
use crate::support::e2e::{files_under, messages, tool_result};
use crate::support::fake_llm::{last_user_text, Reply};
use switchboard::agent::{Phase, Plan, StepDraft, StepState};
use switchboard::store::StateDoc;

use serde_json::{json, Value};

fn system(request: &Value) -> String {
    messages(request)[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn plan_call(id: &str, args: Value) -> Reply {
    Reply::tool_calls([(id, "plan", args)])
}

fn read(id: &str, path: &str) -> Reply {
    Reply::tool_calls([(id, "read_file", json!({ "path": path }))])
}

#[tokio::test]
async fn a_three_step_plan_fails_at_step_two_is_replanned_and_ends_in_a_final_answer() {
    for db in backends().await {
        let h = harness(&[("MEMORY_LEARN", "off")], &db).await;
        h.write("data.txt", "12 rows of sales");
        h.write("notes.txt", "plain notes");
        h.llm.push(plan_call(
            "p1",
            json!({"action": "create", "goal": "Quarterly report", "steps": [
                {"text": "read the data", "tool": "read_file", "inputs": {"path": "data.txt"}, "expected": "the rows"},
                {"text": "read the template", "tool": "read_file", "inputs": {"path": "template.md"}},
                {"text": "write the report"}
            ]}),
        ));
        h.llm.push(read("r1", "data.txt"));
        h.llm.push(read("r2", "template.md"));
        h.llm.push(Reply::text(
            "Reading the template failed. Shall I retry, continue without it, or skip it?",
        ));
        h.channel.dm(1, "Prepare the quarterly report").await;
        h.wait_for("the question", |l| l.any_contains("Shall I retry"))
            .await;
        h.idle().await;

        let requests = h.llm.requests().await;
        assert!(
            !system(&requests[0]).contains("[Plan"),
            "no plan before it exists"
        );
        let first = system(&requests[1]);
        assert!(
            first.contains("(revision 1, planning)")
                && first.contains("carry out step 1: read the data with `read_file` ({\"path\":\"data.txt\"}); it should give: the rows"),
            "{first}"
        );
        let second = system(&requests[2]);
        assert!(
            second.contains("Latest outcome: step 1 (read_file) done: ")
                && second.contains("12 rows of sales")
                && second.contains("re-plan with this result")
                && second.contains("carry out step 2: read the template"),
            "{second}"
        );
        let third = system(&requests[3]);
        assert!(
            third.contains("Latest outcome: step 2 (read_file) FAILED")
                && third
                    .contains("ask the user whether to retry it, continue without it or skip it"),
            "{third}"
        );

        h.channel.dm(1, "/plan").await;
        let log = h.wait_for("the plan", |l| l.any_contains("**Plan**")).await;
        let shown = log.find("**Plan**").unwrap().text.clone();
        assert!(shown.contains("waiting_user"), "{shown}");
        assert!(
            shown.contains("✓ 1. read the data [read_file] (done) — ")
                && shown.contains("12 rows of sales"),
            "{shown}"
        );
        assert!(
            shown.contains("✗ 2. read the template [read_file] (failed) — "),
            "{shown}"
        );

        // The user chooses; the model re-plans with the outcome and finishes.
        h.llm.push(plan_call(
            "p2",
            json!({"action": "update", "reason": "no template: use the notes", "steps": [
                {"text": "read the notes", "tool": "read_file", "inputs": {"path": "notes.txt"}}
            ]}),
        ));
        h.llm.push(read("r3", "notes.txt"));
        h.llm.push(plan_call(
            "p3",
            json!({"action": "close", "note": "report from data and notes"}),
        ));
        h.llm
            .push(Reply::text("The report is ready: 12 rows, with the notes."));
        h.channel.dm(1, "skip the template, use my notes").await;
        h.wait_for("the final answer", |l| {
            l.any_contains("The report is ready")
        })
        .await;
        let requests = h.llm.requests().await;
        let resumed = system(&requests[4]);
        assert!(
            resumed.contains(
                "they replied \"skip the template, use my notes\": resume the plan at step 2"
            ),
            "{resumed}"
        );
        assert!(system(&requests[5]).contains("(revision 2, planning)"));
        assert!(tool_result(&requests[6], "r3").contains("plain notes"));
        assert!(
            system(&requests[6]).contains("every step is finished: call `plan` with action=close")
        );
        assert!(
            !system(&requests[7]).contains("[Plan"),
            "a closed plan is not shown"
        );

        let session = h.session(1, 1).await;
        let plan = h
            .running
            .store
            .plans()
            .of_session(&session)
            .await
            .unwrap()
            .unwrap();
        assert_eq!((plan.phase, plan.revision), (Phase::FinalAnswer, 2));
        let states: Vec<StepState> = plan.steps.iter().map(|s| s.state).collect();
        assert_eq!(
            states,
            [StepState::Done, StepState::Failed, StepState::Done]
        );
        assert!(plan.steps[1].passed);
        assert_eq!(plan.answer.as_deref(), Some("report from data and notes"));

        // Each recorded result is traced.
        let traces: String = files_under(&h.data_dir().join("scratchpad"))
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect();
        let outcomes: Vec<Value> = traces
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v.to_string().contains("plan_outcome"))
            .collect();
        assert_eq!(outcomes.len(), 3, "{traces}");
        assert!(outcomes
            .iter()
            .any(|o| o.to_string().contains("\"ok\":false")));

        h.channel.dm(1, "/clear").await;
        h.wait_for("cleared", |l| l.any_contains("Cleared this conversation"))
            .await;
        assert!(h
            .running
            .store
            .plans()
            .of_session(&session)
            .await
            .unwrap()
            .is_none());
        h.stop().await;
    }
}

#[tokio::test]
async fn a_plan_waiting_on_the_user_survives_a_restart_and_resumes() {
    for db in backends().await {
        let dir = tempfile::tempdir().unwrap();
        let url = db_url(&db, dir.path());
        let vars = [("MEMORY_LEARN", "off"), ("DATABASE_URL", url.as_str())];
        let h = harness(&vars, &None).await;
        h.write("draft.txt", "the draft");
        h.llm.push(plan_call(
            "p1",
            json!({"action": "create", "goal": "Publish the post", "steps": [
                {"text": "read the draft", "tool": "read_file"},
                {"text": "ask which format", "tool": "ask_user"},
                {"text": "publish in that format"}
            ]}),
        ));
        h.llm.push(read("r1", "draft.txt"));
        h.llm.push(Reply::tool_calls([(
            "a1",
            "ask_user",
            json!({"question": "Markdown or HTML?"}),
        )]));
        h.channel.dm(1, "publish my post").await;
        h.wait_for("the question", |l| l.any_contains("Markdown or HTML?"))
            .await;
        h.idle().await;
        let session = h.session(1, 1).await;
        h.stop().await;

        // Another process on the same database.
        let h = harness(&vars, &None).await;
        let plan = h
            .running
            .store
            .plans()
            .of_session(&session)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(plan.phase, Phase::WaitingUser);
        assert_eq!(plan.current(), Some(2));
        h.llm.push(plan_call(
            "p2",
            json!({"action": "done", "note": "published as HTML"}),
        ));
        h.llm.push(Reply::text("Published as HTML."));
        h.channel.dm(1, "HTML").await;
        h.wait_for("the answer", |l| l.any_contains("Published as HTML."))
            .await;
        let requests = h.llm.requests().await;
        let resumed = system(&requests[0]);
        assert!(
            resumed.contains("you asked the user \"Markdown or HTML?\" and they replied \"HTML\": resume the plan at step 3"),
            "{resumed}"
        );
        assert!(
            resumed.contains("✓ 1. read the draft") && resumed.contains("✓ 2. ask which format")
        );
        h.idle().await;
        let plan = h
            .running
            .store
            .plans()
            .of_session(&session)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            plan.phase,
            Phase::FinalAnswer,
            "every step finished: the answer closes it"
        );
        h.stop().await;
    }
}

#[tokio::test]
async fn a_settings_request_does_not_see_the_stale_task_summary() {
    for db in backends().await {
        let h = harness(&[("MEMORY_LEARN", "off")], &db).await;
        let store = &h.running.store;
        let session = h.session(1, 1).await;
        let stale = json!({
            "current_goal": "Keep the daily report at 09:00",
            "important_facts": ["The daily report schedule runs at 09:00"]
        });
        store
            .sessions()
            .set_doc(&session, StateDoc::Task, Some(&stale.to_string()))
            .await
            .unwrap();
        // The planner's explicit check: the model names what the request
        // touches (the fake's default names nothing).
        h.llm.set_check_responder(|req| {
            if last_user_text(req).unwrap_or_default().contains("schedule") {
                Reply::text(r#"{"reads": ["schedules"], "changes": ["schedules"]}"#)
            } else {
                Reply::text(r#"{"reads": [], "changes": []}"#)
            }
        });
        h.llm.push(Reply::text("We talked about the report."));
        h.llm.push(Reply::text("There is no schedule to change."));
        h.channel.dm(1, "what were we doing?").await;
        h.wait_for("first", |l| l.any_contains("We talked about"))
            .await;
        h.channel
            .dm(1, "change the daily report schedule to 10:00")
            .await;
        h.wait_for("second", |l| l.any_contains("no schedule to change"))
            .await;
        let requests = h.llm.requests().await;
        assert!(
            system(&requests[0]).contains("runs at 09:00"),
            "an ordinary request sees it"
        );
        let settings = system(&requests[1]);
        assert!(
            !settings.contains("09:00") && !settings.contains("[Task state"),
            "{settings}"
        );
        assert!(
            settings.contains("Schedules in this conversation: none."),
            "{settings}"
        );

        // An open plan whose step changes schedules: a bare "yes" is a
        // settings request too — the plan's steps say so, not the words.
        let drafts: Vec<StepDraft> = serde_json::from_value(json!([
            {"text": "move the report", "tool": "schedule", "inputs": {"action": "update"}}
        ]))
        .unwrap();
        let mut plan = Plan::create("Move the daily report", &drafts).unwrap();
        plan.wait_for_user("Move it to 10:00?");
        store.plans().save(&session, &plan).await.unwrap();
        h.llm.push(Reply::text("Nothing to move."));
        h.channel.dm(1, "yes").await;
        h.wait_for("third", |l| l.any_contains("Nothing to move."))
            .await;
        let requests = h.llm.requests().await;
        let yes = system(&requests[2]);
        assert!(
            !yes.contains("09:00") && yes.contains("Schedules in this conversation: none."),
            "{yes}"
        );
        assert!(yes.contains("they replied \"yes\""), "{yes}");
        // One check per request that is not plain chat; "yes" had none.
        let checks = h.llm.live_checks();
        assert_eq!(checks.len(), 2, "{checks:?}");
        assert!(last_user_text(&checks[1])
            .unwrap()
            .contains("change the daily report schedule"));
        h.stop().await;
    }
}

#[tokio::test]
async fn a_plan_kept_in_the_execution_state_moves_to_the_plans_table_on_first_read() {
    for db in backends().await {
        let h = harness(&[("MEMORY_LEARN", "off")], &db).await;
        let store = &h.running.store;
        let session = h.session(1, 1).await;
        let legacy = json!({"goal": "g", "status": "completed", "steps": [], "current_step": 0,
            "observations": [], "question": null, "last_error": null,
            "plan": {"goal": "Quarterly report", "revision": 2, "reasons": ["no template"], "steps": [
                {"text": "gather the numbers", "status": "done", "note": "12 rows"},
                {"text": "send it", "status": "pending"}]}});
        store
            .sessions()
            .set_doc(&session, StateDoc::Execution, Some(&legacy.to_string()))
            .await
            .unwrap();
        h.channel.dm(1, "/plan").await;
        let log = h.wait_for("the plan", |l| l.any_contains("**Plan**")).await;
        let shown = log.find("**Plan**").unwrap().text.clone();
        assert!(
            shown.contains("✓ 1. gather the numbers (done) — 12 rows"),
            "{shown}"
        );
        assert!(
            shown.contains("▶ 2. send it (pending)") && shown.contains("revision 2"),
            "{shown}"
        );
        let doc = store
            .sessions()
            .state(&session)
            .await
            .unwrap()
            .execution_state
            .unwrap();
        assert!(!doc.contains("Quarterly report"), "moved out: {doc}");
        assert!(store.plans().of_session(&session).await.unwrap().is_some());
        h.stop().await;
    }
}

/// The planner's check broke its contract (prose, not the JSON) or hung:
/// the turn goes on with every kind of live state read now, the summary
/// kept (nothing says the request changes any), and the check's tokens
/// are counted in the user's usage.
#[tokio::test]
async fn a_garbage_or_hung_live_state_check_falls_back_to_every_kind() {
    for db in backends().await {
        let h = harness(&[("MEMORY_LEARN", "off")], &db).await;
        let store = &h.running.store;
        let session = h.session(1, 1).await;
        let summary = json!({"current_goal": "Plan the trip to Lyon"});
        store
            .sessions()
            .set_doc(&session, StateDoc::Task, Some(&summary.to_string()))
            .await
            .unwrap();
        h.llm.set_check_responder(|req| {
            if last_user_text(req).unwrap_or_default().contains("hang") {
                Reply::text("{").then_stall()
            } else {
                Reply::text("Sure! It touches the schedules.").with_usage(100_000, 7, 0)
            }
        });
        h.llm.push(Reply::text("Here is where things stand."));
        h.channel.dm(1, "what is set up for me right now?").await;
        h.wait_for("first", |l| l.any_contains("where things stand"))
            .await;
        let requests = h.llm.requests().await;
        let first = system(&requests[0]);
        for kind in [
            "Portfolio: no holdings.",
            "Schedules in this conversation: none.",
            "Background tasks in this conversation: none.",
            "\"always allow\" rules: none.",
        ] {
            assert!(first.contains(kind), "{kind}: {first}");
        }
        assert!(first.contains("Plan the trip to Lyon"), "{first}");
        let owner = switchboard_platform::UserId(1);
        let (_, usage) = store
            .usage()
            .today(switchboard_platform::Platform::Console, owner)
            .await
            .unwrap();
        assert!(usage.input_tokens >= 100_000, "the check counts: {usage:?}");

        h.llm.push(Reply::text("Still here."));
        h.channel
            .dm(1, "please hang on and list my reminders")
            .await;
        h.wait_for("second", |l| l.any_contains("Still here."))
            .await;
        let second = system(&h.llm.requests().await[1]);
        assert!(
            second.contains("Schedules in this conversation: none.")
                && second.contains("Portfolio: no holdings."),
            "{second}"
        );
        assert_eq!(h.llm.live_checks().len(), 2);
        h.stop().await;
    }
}
