//! Recall: ranking (recency decay, pinning, codes, CJK queries) on the store,
//! injection into the model's input through the real gateway, and isolation
//! between users through recall, tools and commands.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::memory_common;
use crate::support;

use memory_common::{backends, harness};

use chrono::{Duration, Utc};
use serde_json::{json, Value};
use support::e2e::{messages, tool_result, Harness};
use support::fake_llm::Reply;
use switchboard::memory::{recall, record_access, terms, MemoryBook, MemoryConfig, MEMORY_NOTE};
use switchboard::store::{MemoryKind, MemoryOwner, NewMemory, Store};
use switchboard_platform::{Addressed, Platform, UserId};

fn owner(user: i64) -> MemoryOwner {
    MemoryOwner::new(Platform::Console, UserId(user))
}

fn memory(kind: MemoryKind, content: &str) -> NewMemory {
    NewMemory {
        kind,
        content: content.into(),
        source_ref: "test".into(),
        importance: 0.5,
        expires_at: None,
    }
}

/// Stores a memory as of `days` ago, without merging.
async fn add_at(store: &Store, user: i64, kind: MemoryKind, content: &str, days: i64) -> i64 {
    let at = Utc::now() - Duration::days(days);
    store
        .memories()
        .insert(owner(user), &memory(kind, content), &terms(content), at)
        .await
        .unwrap()
}

async fn recalled(store: &Store, user: i64, query: &str) -> Vec<(i64, bool, f64)> {
    let hits = recall(store, owner(user), query, 800, Utc::now())
        .await
        .unwrap();
    record_access(store, owner(user), &hits, Utc::now())
        .await
        .unwrap();
    hits.into_iter()
        .map(|h| (h.memory.id, h.pinned, h.relevance))
        .collect()
}

#[tokio::test]
async fn a_two_character_chinese_query_finds_the_chinese_memory() {
    for (store, _dir) in memory_common::stores().await {
        let coffee = add_at(
            &store,
            1,
            MemoryKind::Decision,
            "用户决定每天早上只喝一杯咖啡",
            1,
        )
        .await;
        add_at(&store, 1, MemoryKind::Decision, "用户决定周末去爬山", 1).await;
        let hits = recalled(&store, 1, "咖啡").await;
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), [coffee]);
        // A longer question in a sentence finds it too; a lone character falls back to substring search.
        assert_eq!(
            recalled(&store, 1, "我今天能喝咖啡吗？")
                .await
                .first()
                .map(|h| h.0),
            Some(coffee)
        );
        let mountain = recalled(&store, 1, "山").await;
        assert_eq!(mountain.len(), 1, "{mountain:?}");
    }
}

#[tokio::test]
async fn newer_memories_outrank_older_equally_relevant_ones() {
    for (store, _dir) in memory_common::stores().await {
        let old = add_at(
            &store,
            1,
            MemoryKind::Decision,
            "Deploy the billing service with blue green releases",
            90,
        )
        .await;
        let new = add_at(
            &store,
            1,
            MemoryKind::Decision,
            "Deploy the billing service with canary releases",
            2,
        )
        .await;
        let hits = recalled(&store, 1, "how do we deploy the billing service?").await;
        let order: Vec<i64> = hits.iter().map(|h| h.0).collect();
        assert_eq!(order, [new, old]);
    }
}

#[tokio::test]
async fn rarer_terms_weigh_more_than_common_ones() {
    for (store, _dir) in memory_common::stores().await {
        for i in 0..6 {
            add_at(
                &store,
                1,
                MemoryKind::Decision,
                &format!("The billing report v{i} goes to finance"),
                1,
            )
            .await;
        }
        let queue = add_at(
            &store,
            1,
            MemoryKind::Decision,
            "The billing queue must stay short",
            20,
        )
        .await;
        let hits = recalled(&store, 1, "how long is the billing queue?").await;
        assert_eq!(hits.first().map(|h| h.0), Some(queue), "{hits:?}");
    }
}

#[tokio::test]
async fn persona_and_preferences_are_pinned_before_matches() {
    for (store, _dir) in memory_common::stores().await {
        let persona = add_at(
            &store,
            1,
            MemoryKind::Persona,
            "A backend engineer who writes Rust",
            200,
        )
        .await;
        let pref = add_at(
            &store,
            1,
            MemoryKind::Preference,
            "The user prefers answers in bullet points",
            100,
        )
        .await;
        let fact = add_at(
            &store,
            1,
            MemoryKind::Fact,
            "The staging database is called orca",
            1,
        )
        .await;
        let hits = recalled(&store, 1, "what is the staging database?").await;
        assert_eq!(
            hits.iter().map(|h| (h.0, h.1)).collect::<Vec<_>>(),
            [(persona, true), (pref, true), (fact, false)]
        );
        // Unrelated chatter still carries the pinned ones, and nothing else.
        let hits = recalled(&store, 1, "hello there").await;
        assert_eq!(
            hits.iter().map(|h| h.0).collect::<Vec<_>>(),
            [persona, pref]
        );
    }
}

#[tokio::test]
async fn codes_and_ids_match_exactly() {
    for (store, _dir) in memory_common::stores().await {
        let moutai = add_at(
            &store,
            1,
            MemoryKind::Decision,
            "The user watches 600519 only for dividends",
            40,
        )
        .await;
        add_at(
            &store,
            1,
            MemoryKind::Decision,
            "The user watches 000001 for momentum trades",
            1,
        )
        .await;
        let ticket = add_at(
            &store,
            1,
            MemoryKind::Fact,
            "Ticket OPS-4411 tracks the disk alerts",
            10,
        )
        .await;
        assert_eq!(
            recalled(&store, 1, "what about 600519?")
                .await
                .first()
                .map(|h| h.0),
            Some(moutai)
        );
        assert_eq!(
            recalled(&store, 1, "status of OPS-4411")
                .await
                .first()
                .map(|h| h.0),
            Some(ticket)
        );
        let by_id = recalled(&store, 1, &format!("see #{ticket}")).await;
        assert!(
            by_id.iter().any(|h| h.0 == ticket && h.2 >= 1.0),
            "{by_id:?}"
        );
    }
}

#[tokio::test]
async fn recall_never_crosses_users_and_skips_expired_memories() {
    for (store, _dir) in memory_common::stores().await {
        let mine = add_at(&store, 1, MemoryKind::Fact, "项目代号是猎鹰", 1).await;
        let theirs = add_at(&store, 2, MemoryKind::Fact, "项目代号是海豚", 1).await;
        let mut expiring = memory(MemoryKind::Fact, "项目代号临时是鲸鱼");
        expiring.expires_at = Some(Utc::now() - Duration::hours(1));
        store
            .memories()
            .insert(owner(1), &expiring, &terms(&expiring.content), Utc::now())
            .await
            .unwrap();
        assert_eq!(
            recalled(&store, 1, "项目代号")
                .await
                .iter()
                .map(|h| h.0)
                .collect::<Vec<_>>(),
            [mine]
        );
        assert_eq!(
            recalled(&store, 2, "项目代号")
                .await
                .iter()
                .map(|h| h.0)
                .collect::<Vec<_>>(),
            [theirs]
        );
        assert!(recalled(&store, 1, &format!("#{theirs}")).await.is_empty());
        assert!(recalled(&store, 3, "项目代号").await.is_empty());
    }
}

#[tokio::test]
async fn recalled_memories_are_counted() {
    for (store, _dir) in memory_common::stores().await {
        let id = add_at(
            &store,
            1,
            MemoryKind::Fact,
            "The VPN endpoint is vpn.example.org",
            1,
        )
        .await;
        recalled(&store, 1, "vpn endpoint").await;
        recalled(&store, 1, "vpn endpoint").await;
        let m = store.memories().get(owner(1), id).await.unwrap().unwrap();
        assert_eq!(m.access_count, 2);
        assert!(m.last_access.is_some());
    }
}

fn system_prompt(request: &Value) -> String {
    messages(request)[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn last_user(request: &Value) -> String {
    messages(request)
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

async fn seed(h: &Harness, user: i64, kind: MemoryKind, content: &str) -> i64 {
    let book = MemoryBook::new(h.running.store.clone(), MemoryConfig::default());
    book.save(owner(user), memory(kind, content), Utc::now())
        .await
        .unwrap()
        .id()
}

#[tokio::test]
async fn the_model_sees_memories_around_the_message_and_history_keeps_it_plain() {
    for db in backends().await {
        let h = harness(&[], &db).await;
        seed(&h, 1, MemoryKind::Preference, "用户喜欢喝咖啡，不加糖").await;
        seed(&h, 1, MemoryKind::Decision, "用户决定用 Rust 重写计费服务").await;
        seed(&h, 2, MemoryKind::Preference, "用户二号只喝咖啡因饮料").await;
        h.llm.push(Reply::text("来一杯美式吧。"));
        h.channel.dm(1, "推荐一杯咖啡？").await;
        h.wait_for("the answer", |l| l.any_contains("来一杯美式吧。"))
            .await;
        h.idle().await;

        let request = &h.requests(1).await[0];
        let input = last_user(request);
        assert!(input.starts_with("<relevant-memories>\n"), "{input}");
        assert!(input.contains("用户喜欢喝咖啡，不加糖"), "{input}");
        assert!(
            input.ends_with("<current-user-message>\n推荐一杯咖啡？\n</current-user-message>"),
            "{input}"
        );
        assert!(
            !input.contains("二号"),
            "another user's memory leaked: {input}"
        );
        assert!(system_prompt(request).contains(MEMORY_NOTE));

        let session = h.session(1, 1).await;
        let history = h
            .running
            .store
            .history()
            .recent(&session, 10)
            .await
            .unwrap();
        assert_eq!(
            history[0].content, "推荐一杯咖啡？",
            "history keeps the plain message"
        );
        h.stop().await;
    }
}

#[tokio::test]
async fn without_memories_the_message_goes_unwrapped() {
    for db in backends().await {
        let h = harness(&[], &db).await;
        h.llm.push(Reply::text("Hi!"));
        h.channel.dm(5, "hello").await;
        h.wait_for("the answer", |l| l.any_contains("Hi!")).await;
        let request = &h.requests(1).await[0];
        assert_eq!(last_user(request), "hello");
        assert!(!system_prompt(request).contains(MEMORY_NOTE));
        h.stop().await;
    }
}

#[tokio::test]
async fn recall_can_ask_for_important_memories_only() {
    for db in backends().await {
        let h = harness(&[], &db).await;
        let minor = seed(
            &h,
            1,
            MemoryKind::Fact,
            "The staging server is called gamma",
        )
        .await;
        let book = MemoryBook::new(h.running.store.clone(), MemoryConfig::default());
        let mut vital = memory(MemoryKind::Fact, "The production server is called omega");
        vital.importance = 0.9;
        let vital = book.save(owner(1), vital, Utc::now()).await.unwrap().id();
        h.llm.push(Reply::tool_calls([
            (
                "c1",
                "recall",
                json!({"query": "server called", "min_importance": 0.8}),
            ),
            ("c2", "recall", json!({"query": "server called"})),
            (
                "c3",
                "recall",
                json!({"query": "server", "min_importance": 2}),
            ),
        ]));
        h.llm.push(Reply::text("Done."));
        h.channel.dm(1, "which servers?").await;
        h.wait_for("the answer", |l| l.any_contains("Done.")).await;
        let second = &h.requests(2).await[1];
        let important = tool_result(second, "c1");
        assert!(
            important.contains(&format!("#{vital}")) && !important.contains(&format!("#{minor}")),
            "{important}"
        );
        let all = tool_result(second, "c2");
        assert!(
            all.contains(&format!("#{vital}")) && all.contains(&format!("#{minor}")),
            "{all}"
        );
        assert!(tool_result(second, "c3").contains("min_importance"));
        h.stop().await;
    }
}

#[tokio::test]
async fn tools_reach_only_the_calling_users_memories() {
    for db in backends().await {
        let h = harness(&[], &db).await;
        let mine = seed(&h, 1, MemoryKind::Fact, "The deploy key rotates monthly").await;
        let theirs = seed(&h, 2, MemoryKind::Fact, "The deploy window is Friday night").await;
        h.llm.push(Reply::tool_calls([
        ("c1", "recall", json!({"query": "deploy"})),
        ("c2", "forget", json!({"id": theirs})),
        (
            "c3",
            "remember",
            json!({"content": "The user's release train leaves on Tuesdays", "kind": "decision"}),
        ),
        (
            "c4",
            "remember",
            json!({"content": "my password is hunter2"}),
        ),
    ]));
        h.llm.push(Reply::text("Done."));
        h.channel.dm(1, "check my deploy notes").await;
        h.wait_for("the answer", |l| l.any_contains("Done.")).await;
        h.idle().await;

        let second = &h.requests(2).await[1];
        let found = tool_result(second, "c1");
        assert!(
            found.contains(&format!("#{mine}")) && !found.contains("Friday"),
            "{found}"
        );
        assert!(
            tool_result(second, "c2").starts_with("error:"),
            "{}",
            tool_result(second, "c2")
        );
        assert!(tool_result(second, "c3").starts_with("Saved as memory #"));
        assert!(
            tool_result(second, "c4").contains("secret"),
            "{}",
            tool_result(second, "c4")
        );

        let store = &h.running.store;
        assert!(
            store
                .memories()
                .get(owner(2), theirs)
                .await
                .unwrap()
                .is_some(),
            "user 2's memory survived"
        );
        let user1: Vec<String> = store
            .memories()
            .of(owner(1), &[], 10, Utc::now())
            .await
            .unwrap()
            .into_iter()
            .map(|m| m.content)
            .collect();
        assert!(
            user1.iter().any(|c| c.contains("Tuesdays"))
                && !user1.iter().any(|c| c.contains("hunter2")),
            "{user1:?}"
        );
        let remembered = store
            .memories()
            .of(owner(1), &[MemoryKind::Decision], 10, Utc::now())
            .await
            .unwrap();
        assert!(remembered[0].source_ref.starts_with("tool:"));
        h.stop().await;
    }
}

#[tokio::test]
async fn memory_commands_list_forget_and_trace_only_your_own() {
    for db in backends().await {
        let h = harness(&[], &db).await;
        let mine = seed(&h, 1, MemoryKind::Preference, "Prefers metric units").await;
        let theirs = seed(&h, 2, MemoryKind::Preference, "Prefers imperial units").await;

        h.channel.dm(1, "/memory").await;
        let log = h
            .wait_for("the list", |l| l.any_contains("Your memories"))
            .await;
        let list = log.find("Your memories").unwrap().text.clone();
        assert!(
            list.contains(&format!("`#{mine}` Prefers metric units")) && !list.contains("imperial"),
            "{list}"
        );

        for (command, expected) in [
            (
                format!("/memory trace {theirs}"),
                format!("You have no memory #{theirs}."),
            ),
            (
                format!("/memory forget {theirs}"),
                format!("You have no memory #{theirs}."),
            ),
            (
                format!("/memory trace {mine}"),
                "Prefers metric units".to_owned(),
            ),
            (
                format!("/memory forget #{mine}"),
                format!("Forgot memory #{mine}."),
            ),
        ] {
            let before = h.channel.log().sent().len();
            h.channel.dm(1, &command).await;
            let log = h.wait_for(&command, |l| l.sent().len() > before).await;
            let reply = &log.sent().last().unwrap().text;
            assert!(reply.contains(&expected), "{command}: {reply}");
        }
        assert!(h
            .running
            .store
            .memories()
            .get(owner(2), theirs)
            .await
            .unwrap()
            .is_some());
        assert!(h
            .running
            .store
            .memories()
            .get(owner(1), mine)
            .await
            .unwrap()
            .is_none());
        assert!(
            h.llm.requests().await.is_empty(),
            "commands never reach the model"
        );
        h.stop().await;
    }
}

#[tokio::test]
async fn shared_chats_see_only_preferences_by_default() {
    for db in backends().await {
        let h = harness(&[], &db).await;
        let pref = seed(
            &h,
            1,
            MemoryKind::Preference,
            "Prefers answers about coffee in French",
        )
        .await;
        let fact = seed(
            &h,
            1,
            MemoryKind::Fact,
            "The coffee budget is 900 euros, private",
        )
        .await;
        let group = 500;

        // The model's input in the group: the preference, not the fact.
        h.llm.push(Reply::tool_calls([(
            "c1",
            "recall",
            json!({"query": "coffee budget"}),
        )]));
        h.llm.push(Reply::text("Voilà."));
        h.channel
            .group(
                1,
                group,
                Addressed::Mention,
                "what about coffee and the budget?",
            )
            .await;
        h.wait_for("the group answer", |l| l.any_contains("Voilà."))
            .await;
        h.idle().await;
        let requests = h.requests(2).await;
        let input = last_user(&requests[0]);
        assert!(input.contains("Prefers answers about coffee"), "{input}");
        assert!(
            !input.contains("900 euros"),
            "a DM-grade memory reached a group: {input}"
        );
        // The recall tool in the group holds back the same.
        let found = tool_result(&requests[1], "c1");
        assert!(!found.contains("900 euros"), "{found}");

        // `/memory` in the group lists only what may show there.
        h.channel
            .group(1, group, Addressed::Command, "/memory")
            .await;
        let log = h
            .wait_for("the list", |l| l.any_contains("Your memories"))
            .await;
        let list = log.find("Your memories").unwrap().text.clone();
        assert!(list.contains(&format!("`#{pref}`")), "{list}");
        assert!(!list.contains("900 euros"), "{list}");
        assert!(list.contains("only in a direct message"), "{list}");
        let before = h.channel.log().sent().len();
        h.channel
            .group(
                1,
                group,
                Addressed::Command,
                &format!("/memory trace {fact}"),
            )
            .await;
        let log = h.wait_for("the trace", |l| l.sent().len() > before).await;
        let reply = &log.sent().last().unwrap().text;
        assert!(
            reply.contains("only in a direct message") && !reply.contains("900"),
            "{reply}"
        );

        // In a direct message everything is there.
        h.llm.push(Reply::text("Bien sûr."));
        h.channel.dm(1, "what about coffee and the budget?").await;
        h.wait_for("the DM answer", |l| l.any_contains("Bien sûr."))
            .await;
        let input = last_user(&h.requests(3).await[2]);
        assert!(input.contains("900 euros"), "{input}");
        h.stop().await;
    }
}

#[tokio::test]
async fn shared_chats_can_be_given_everything_or_nothing() {
    for (policy, fact_shown, pref_shown) in [("all", true, true), ("none", false, false)] {
        let h = harness(&[("MEMORY_IN_SHARED_CHATS", policy)], &None).await;
        seed(
            &h,
            1,
            MemoryKind::Preference,
            "Prefers answers about tea in Dutch",
        )
        .await;
        seed(
            &h,
            1,
            MemoryKind::Fact,
            "The tea stash is in the blue cupboard",
        )
        .await;
        h.llm.push(Reply::text("Alstublieft."));
        h.channel
            .group(1, 600, Addressed::Mention, "where is the tea?")
            .await;
        h.wait_for("the answer", |l| l.any_contains("Alstublieft."))
            .await;
        let input = last_user(&h.requests(1).await[0]);
        assert_eq!(
            input.contains("blue cupboard"),
            fact_shown,
            "{policy}: {input}"
        );
        assert_eq!(input.contains("in Dutch"), pref_shown, "{policy}: {input}");
        h.stop().await;
    }
}

#[tokio::test]
async fn caps_are_soft_limits_collected_by_value() {
    for (store, _dir) in memory_common::stores().await {
        let book = MemoryBook::new(store.clone(), MemoryConfig::default());
        let t0 = Utc::now() - Duration::days(5);
        for i in 0..(MemoryKind::Decision.cap() + 3) {
            let content = format!("decision number {i} about module m{i}");
            book.save(
                owner(1),
                memory(MemoryKind::Decision, &content),
                t0 + Duration::minutes(i64::from(i)),
            )
            .await
            .unwrap();
        }
        // Past the cap (the soft limit) inserts go in; the background pass
        // trims back. Equally important and never recalled, the least
        // valuable are the least recent.
        assert_eq!(
            store
                .memories()
                .count(owner(1), MemoryKind::Decision, Utc::now())
                .await
                .unwrap(),
            33
        );
        assert_eq!(book.collect_marked(Utc::now()).await.unwrap(), 3);
        let kept = store
            .memories()
            .of(owner(1), &[MemoryKind::Decision], 100, Utc::now())
            .await
            .unwrap();
        assert_eq!(kept.len(), 30);
        assert!(kept.iter().all(|m| !m.content.ends_with(" m0")
            && !m.content.ends_with(" m1")
            && !m.content.ends_with(" m2")));
        assert_eq!(
            store
                .memories()
                .count(owner(2), MemoryKind::Decision, Utc::now())
                .await
                .unwrap(),
            0
        );
    }
}
