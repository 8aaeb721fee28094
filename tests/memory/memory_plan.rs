//! The planner: a plan created through the `plan` tool, its current step shown
//! to the model each round, a step failing, "继续" resuming it at that step,
//! a replan with a reason, and `/plan` showing where it stands.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::memory_common::{backends, harness};
use crate::support::e2e::messages;
use crate::support::fake_llm::Reply;

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

#[tokio::test]
async fn a_plan_fails_a_step_resumes_on_continue_and_replans() {
    for db in backends().await {
        let h = harness(&[("MEMORY_LEARN", "off")], &db).await;
        h.llm.push(plan_call(
            "p1",
            json!({"action": "create", "goal": "Quarterly report", "steps": ["gather the numbers", "draft the report", "send it"]}),
        ));
        h.llm.push(plan_call(
            "p2",
            json!({"action": "done", "note": "12 rows"}),
        ));
        h.llm.push(plan_call(
            "p3",
            json!({"action": "fail", "reason": "the template is missing"}),
        ));
        h.llm
            .push(Reply::text("Drafting failed: the template is missing."));
        h.channel.dm(1, "Prepare the quarterly report").await;
        h.wait_for("the failure", |l| l.any_contains("Drafting failed"))
            .await;

        // Each round saw the plan as it stood then.
        let requests = h.llm.requests().await;
        assert!(
            !system(&requests[0]).contains("[Plan"),
            "no plan before it exists"
        );
        assert!(system(&requests[1]).contains("Current step 1: gather the numbers"));
        assert!(system(&requests[2]).contains("Current step 2: draft the report"));
        assert!(
            system(&requests[3]).contains("it FAILED (the template is missing)"),
            "{}",
            system(&requests[3])
        );

        h.channel.dm(1, "/plan").await;
        let log = h.wait_for("the plan", |l| l.any_contains("**Plan**")).await;
        let shown = log.find("**Plan**").unwrap().text.clone();
        assert!(
            shown.contains("✓ 1. gather the numbers — 12 rows"),
            "{shown}"
        );
        assert!(
            shown.contains("✗ 2. draft the report — the template is missing"),
            "{shown}"
        );

        // "继续" resumes at the failed step; the agent replans with a reason.
        h.llm.push(plan_call(
            "p4",
            json!({"action": "replan", "reason": "no template: write plain text", "steps": ["draft in plain text", "send it"]}),
        ));
        h.llm.push(plan_call("p5", json!({"action": "done"})));
        h.llm.push(Reply::text("Drafted in plain text."));
        h.channel.dm(1, "继续").await;
        h.wait_for("the resumed answer", |l| {
            l.any_contains("Drafted in plain text")
        })
        .await;
        let requests = h.llm.requests().await;
        let resumed = system(&requests[4]);
        assert!(
            resumed.contains("Resume the plan at step 2: draft the report"),
            "{resumed}"
        );
        assert!(system(&requests[5]).contains("(revision 2)"));

        h.channel.dm(1, "/plan").await;
        let log = h
            .wait_for("the replanned plan", |l| l.any_contains("Last replan"))
            .await;
        let shown = log.sent().last().unwrap().text.clone();
        assert!(shown.contains("revision 2"), "{shown}");
        assert!(shown.contains("✓ 2. draft in plain text"), "{shown}");
        assert!(shown.contains("▶ 3. send it"), "{shown}");
        assert!(
            shown.contains("Last replan: no template: write plain text"),
            "{shown}"
        );
        h.stop().await;
    }
}
