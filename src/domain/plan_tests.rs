use super::*;

fn texts(s: &[&str]) -> Vec<StepDraft> {
    s.iter().map(|s| StepDraft::Text((*s).to_owned())).collect()
}

#[test]
fn a_plan_records_results_fails_retries_and_updates() {
    let mut p = Plan::create("ship the report", &texts(&["gather data", "draft", "send"])).unwrap();
    assert_eq!((p.current(), p.phase), (Some(0), Phase::Planning));
    assert!(p.record(PLAN_TOOL, "Plan created.").is_none());
    assert!(!p.start(PLAN_TOOL));
    assert!(p.start("read_file"));
    assert_eq!(
        (p.steps[0].state, p.phase),
        (StepState::Running, Phase::Executing)
    );
    assert!(!p.start("read_file"), "already running");
    let o = p.record("read_file", "12 rows\nmore").unwrap();
    assert_eq!((o.step, o.ok, o.observation.as_str()), (0, true, "12 rows"));
    assert_eq!((p.current(), p.phase), (Some(1), Phase::Executing));
    let o = p
        .record("exec_command", "error: the template is missing")
        .unwrap();
    assert!(!o.ok && o.observation == "the template is missing");
    assert_eq!(p.current(), Some(1), "a failed step holds the plan");
    assert!(p.skip(Some(1)).is_err(), "step 1 is done");
    p.retry(None).unwrap();
    assert_eq!(
        (p.steps[1].state, p.steps[1].retries),
        (StepState::Pending, 1)
    );
    p.record("exec_command", "error: still missing");
    p.update(
        "no template: write plain text",
        &texts(&["draft in plain text", "send"]),
    )
    .unwrap();
    assert_eq!(
        (p.revision, p.steps.len(), p.phase),
        (2, 4, Phase::Planning)
    );
    assert!(p.steps[1].passed && p.steps[1].state == StepState::Failed);
    assert_eq!(p.current(), Some(2));
    p.mark_done(None, Some("drafted")).unwrap();
    p.record("send_file", "sent");
    assert!(p.is_complete() && p.is_open());
    p.close(Some("sent"));
    assert_eq!(p.phase, Phase::FinalAnswer);
    assert!(p.record("exec_command", "late").is_none());
    assert!(p.update("", &texts(&["x"])).is_err());
    assert!(Plan::create("goal", &[]).is_err());
}

#[test]
fn a_typed_step_takes_only_its_own_tool_and_retries_are_bounded() {
    let drafts: Vec<StepDraft> = serde_json::from_value(serde_json::json!([
        {"text": "fetch", "tool": "web_fetch", "inputs": {"url": "https://example.com"}, "expected": "the page"},
        "summarize"
    ]))
    .unwrap();
    let mut p = Plan::create("news", &drafts).unwrap();
    assert!(p.record("read_file", "x").is_none(), "not the step's tool");
    for _ in 0..MAX_RETRIES {
        p.record("web_fetch", "error: timeout");
        p.retry(None).unwrap();
    }
    p.record("web_fetch", "error: timeout");
    assert!(p.retry(None).is_err());
    p.continue_past(None).unwrap();
    assert_eq!(p.current(), Some(1));
    assert!(p.continue_past(Some(2)).is_err(), "step 2 has not failed");
    let long = "x".repeat(2_000);
    p.record("anything", &long);
    assert_eq!(
        p.steps[1].observation.as_ref().unwrap().chars().count(),
        OBSERVATION_CHARS + 1
    );
    let huge = serde_json::json!([{"text": "a", "inputs": {"k": "y".repeat(2_000)}}]);
    let drafts: Vec<StepDraft> = serde_json::from_value(huge).unwrap();
    assert!(Plan::create("g", &drafts).is_err());
}

#[test]
fn waiting_on_the_user_and_the_reply() {
    let mut p = Plan::create("g", &texts(&["a"])).unwrap();
    p.wait_for_user("Which environment?");
    assert_eq!(p.phase, Phase::WaitingUser);
    p.user_replied("staging");
    assert_eq!(
        (p.phase, p.reply.as_deref()),
        (Phase::Executing, Some("staging"))
    );
    p.close(None);
    p.wait_for_user("late");
    assert_eq!(p.phase, Phase::FinalAnswer);
}
