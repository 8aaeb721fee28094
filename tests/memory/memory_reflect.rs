//! Reflection notes on explicit clock readings: a user's clock starts when
//! the reflector first sees them, a note is due `REFLECTION_EVERY_HOURS`
//! later if they were active, two reflectors racing write it once, and the
//! note reaches that user's direct-message system prompt.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::memory_common::{backends, harness, provider};
use crate::support::e2e::messages;
use crate::support::fake_llm::Reply;

use chrono::{Duration, Utc};
use serde_json::Value;
use switchboard::memory::{schedule_checkin, Extractor, MemoryBook, MemoryConfig};
use switchboard::store::{MemoryKind, MemoryOwner};
use switchboard_platform::{Platform, UserId};

fn system(request: &Value) -> String {
    messages(request)[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn is_reflection(request: &Value) -> bool {
    system(request).starts_with("You write a short private reflection note")
}

#[tokio::test]
async fn a_note_is_written_once_when_due_and_reaches_the_prompt() {
    for db in backends().await {
        // The gateway's own sweeper stays out of it: the test drives the clock.
        let h = harness(
            &[("MEMORY_LEARN", "off"), ("REFLECTION_EVERY_HOURS", "off")],
            &db,
        )
        .await;
        h.llm.set_responder(|req| {
            if is_reflection(req) {
                Reply::text(r#"{"note": "The user starts a new job on Monday.", "open_loops": ["send the CV to HR"], "risks": []}"#)
            } else {
                Reply::text("Good luck!")
            }
        });
        h.channel.dm(1, "Hello there, nice to meet you").await;
        h.wait_for("the answer", |l| l.any_contains("Good luck!"))
            .await;
        h.idle().await;

        let extractor = |_: u8| {
            Extractor::new(
                MemoryBook::new(h.running.store.clone(), MemoryConfig::default()),
                provider(&h.llm),
            )
        };
        let (a, b) = (extractor(0), extractor(1));
        let every = Duration::hours(6);
        let t0 = Utc::now();
        assert!(
            a.reflect_due(every, t0).await.unwrap().is_empty(),
            "the clock starts"
        );
        // Active since the clock started.
        h.channel
            .dm(
                1,
                "I start my new job on Monday and still need to send my CV to HR",
            )
            .await;
        h.wait_for("the second answer", |l| l.sent().len() >= 2)
            .await;
        // The answer shows before the turn stores its messages.
        h.idle().await;
        assert!(
            a.reflect_due(every, t0 + Duration::hours(5))
                .await
                .unwrap()
                .is_empty(),
            "not due yet"
        );
        // Due: two reflectors at once write one note.
        let at = t0 + Duration::hours(7);
        let (ra, rb) = tokio::join!(a.reflect_due(every, at), b.reflect_due(every, at));
        let notes: Vec<_> = ra.unwrap().into_iter().chain(rb.unwrap()).collect();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert_eq!(notes[0].open_loops, ["send the CV to HR"]);
        let calls = || async {
            h.llm
                .requests()
                .await
                .iter()
                .filter(|r| is_reflection(r))
                .count()
        };
        assert_eq!(calls().await, 1);
        let owner = MemoryOwner::new(Platform::Console, UserId(1));
        let kept = h
            .running
            .store
            .memories()
            .of(owner, &[MemoryKind::Reflection], 10, Utc::now())
            .await
            .unwrap();
        assert_eq!(kept.len(), 1);
        assert!(
            kept[0].content.contains("Open loops: send the CV to HR"),
            "{}",
            kept[0].content
        );
        // No activity since the note: nothing more is due.
        assert!(a
            .reflect_due(every, t0 + Duration::hours(14))
            .await
            .unwrap()
            .is_empty());
        assert_eq!(calls().await, 1);

        h.channel.dm(1, "Any advice for the first day?").await;
        h.wait_for("the third answer", |l| l.sent().len() >= 3)
            .await;
        let requests = h.llm.requests().await;
        let last = requests.iter().rev().find(|r| !is_reflection(r)).unwrap();
        let prompt = system(last);
        assert!(
            prompt.contains("[Reflection — your latest private note"),
            "{prompt}"
        );
        assert!(prompt.contains("starts a new job on Monday"), "{prompt}");
        h.stop().await;
    }
}

#[tokio::test]
async fn a_second_note_is_written_beside_the_previous_one_and_says_what_changed() {
    use crate::support::fake_llm::last_user_text;

    for db in backends().await {
        let h = harness(
            &[("MEMORY_LEARN", "off"), ("REFLECTION_EVERY_HOURS", "off")],
            &db,
        )
        .await;
        h.llm.set_responder(|req| {
            if !is_reflection(req) {
                return Reply::text("Noted!");
            }
            let input = last_user_text(req).unwrap_or_default();
            if input.contains("[Your previous note on this user") {
                Reply::text(r#"{"note": "The user moved to Lyon.", "open_loops": [], "risks": [], "changed": "Lives in Lyon now, no longer in Paris."}"#)
            } else {
                Reply::text(r#"{"note": "The user lives in Paris.", "open_loops": [], "risks": []}"#)
            }
        });
        let extractor = Extractor::new(
            MemoryBook::new(h.running.store.clone(), MemoryConfig::default()),
            provider(&h.llm),
        );
        let every = Duration::hours(6);
        // Readings in the past, so the chat's activity (now) is after each note.
        let t0 = Utc::now() - Duration::hours(20);
        h.channel.dm(1, "Hi, I live in Paris").await;
        h.wait_for("the answer", |l| !l.sent().is_empty()).await;
        h.idle().await;
        assert!(extractor.reflect_due(every, t0).await.unwrap().is_empty());
        let mut sent = 1;
        let mut say = |text: &'static str| {
            sent += 1;
            let (h, n) = (&h, sent);
            async move {
                h.channel.dm(1, text).await;
                h.wait_for("the answer", |l| l.sent().len() >= n).await;
                h.idle().await;
            }
        };
        say("Still in Paris this week").await;
        let first = extractor
            .reflect_due(every, t0 + Duration::hours(7))
            .await
            .unwrap();
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].changed, "", "a first note compares with nothing");
        say("I moved to Lyon yesterday").await;
        let second = extractor
            .reflect_due(every, t0 + Duration::hours(14))
            .await
            .unwrap();
        assert_eq!(second.len(), 1, "{second:?}");
        assert_eq!(second[0].changed, "Lives in Lyon now, no longer in Paris.");

        let inputs: Vec<String> = h
            .llm
            .requests()
            .await
            .iter()
            .filter(|r| is_reflection(r))
            .map(|r| last_user_text(r).unwrap())
            .collect();
        assert_eq!(inputs.len(), 2);
        assert!(!inputs[0].contains("[Your previous note"), "{}", inputs[0]);
        assert!(
            inputs[1].starts_with("[Your previous note on this user, written ")
                && inputs[1].contains("The user lives in Paris."),
            "{}",
            inputs[1]
        );
        let owner = MemoryOwner::new(Platform::Console, UserId(1));
        let kept = h
            .running
            .store
            .memories()
            .of(owner, &[MemoryKind::Reflection], 10, Utc::now())
            .await
            .unwrap();
        assert!(
            kept.iter().any(|m| m.content
                == "The user moved to Lyon. Changed since the last note: Lives in Lyon now, no longer in Paris."),
            "{kept:?}"
        );
        h.stop().await;
    }
}

#[tokio::test]
async fn a_note_with_an_open_loop_schedules_one_opt_in_check_in() {
    use crate::support::fake_llm::last_user_text;
    use switchboard_platform::Addressed;

    for db in backends().await {
        let h = harness(
            &[("MEMORY_LEARN", "off"), ("REFLECTION_EVERY_HOURS", "off")],
            &db,
        )
        .await;
        h.llm.set_responder(|req| {
            if is_reflection(req) {
                Reply::text(r#"{"note": "The user is job hunting.", "open_loops": ["send the CV to HR"], "risks": ["the deadline is Friday"]}"#)
            } else if last_user_text(req).is_some_and(|t| t.contains("Check-in the user turned on")) {
                Reply::text("Hi! Did you manage to send your CV?")
            } else {
                Reply::text("Noted.")
            }
        });
        // Never in groups; on in the DM at 09:00 UTC.
        h.channel
            .group(1, -500, Addressed::Command, "/checkins on")
            .await;
        h.wait_for("the group refusal", |l| {
            l.any_contains("direct message only")
        })
        .await;
        h.channel.dm(1, "/checkins on 09:00 UTC").await;
        h.wait_for("check-ins on", |l| l.any_contains("Check-ins are on"))
            .await;

        let extractor = |_: u8| {
            Extractor::new(
                MemoryBook::new(h.running.store.clone(), MemoryConfig::default()),
                provider(&h.llm),
            )
        };
        let (a, b) = (extractor(0), extractor(1));
        let every = Duration::hours(6);
        let t0 = Utc::now();
        a.reflect_due(every, t0).await.unwrap();
        h.channel
            .dm(1, "I still need to send my CV to HR by Friday")
            .await;
        h.wait_for("the answer", |l| l.any_contains("Noted.")).await;
        h.idle().await;
        let at = t0 + Duration::hours(7);
        let (ra, rb) = tokio::join!(a.reflect_due(every, at), b.reflect_due(every, at));
        let notes: Vec<_> = ra.unwrap().into_iter().chain(rb.unwrap()).collect();
        assert_eq!(notes.len(), 1, "{notes:?}");
        let scheduled = notes[0].checkin.clone().expect("a check-in is scheduled");

        let session = h.session(1, 1).await;
        let schedules = h
            .running
            .store
            .schedules()
            .of_session(&session)
            .await
            .unwrap();
        assert_eq!(schedules.len(), 1);
        let s = &schedules[0];
        assert_eq!(s.id, scheduled);
        assert!(s.origin.kind.is_private());
        assert!(
            s.prompt.contains("open loop: send the CV to HR")
                && s.prompt.contains("risk: the deadline is Friday")
        );
        let due = chrono::DateTime::<Utc>::from_timestamp_millis(s.next_run_at.unwrap()).unwrap();
        assert_eq!(due.format("%H:%M").to_string(), "09:00");
        assert!(due > at && due <= at + Duration::days(1));

        // Rate-limited: the same note an hour later schedules nothing more.
        let again = schedule_checkin(&h.running.store, &notes[0], at + Duration::hours(1))
            .await
            .unwrap();
        assert_eq!(again, None);
        assert_eq!(
            h.running
                .store
                .schedules()
                .of_session(&session)
                .await
                .unwrap()
                .len(),
            1
        );

        // Delivered through the schedules machinery: the same occurrence, due now.
        let mut now_due = s.clone();
        now_due.id = format!("{}x", s.id).parse().unwrap();
        now_due.next_run_at = Some(Utc::now().timestamp_millis());
        now_due.spec = Utc::now().to_rfc3339();
        h.running
            .store
            .schedules()
            .cancel(&session, s.id.as_str())
            .await
            .unwrap();
        h.running.store.schedules().insert(&now_due).await.unwrap();
        h.wait_for("the check-in", |l| {
            l.any_contains("Did you manage to send your CV?")
        })
        .await;

        h.channel.dm(1, "/checkins off").await;
        h.wait_for("check-ins off", |l| l.any_contains("Check-ins are off."))
            .await;
        h.stop().await;
    }
}
