//! [`Pacer::run_if_free`]: calls with a budget of their own that give way to
//! every queued call and take only tokens no queued call wants (Telegram's
//! message drafts).

use super::*;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex as StdMutex;

fn per_second(n: u32) -> Quota {
    Quota::per_second(NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN))
}

/// A free call for `key` that goes at once or not at all.
async fn free(pacer: &Pacer<i64>, key: i64, quiet: i64) -> Option<Result<Instant, &'static str>> {
    free_within(pacer, key, quiet, Duration::ZERO).await
}

async fn free_within(
    pacer: &Pacer<i64>,
    key: i64,
    quiet: i64,
    within: Duration,
) -> Option<Result<Instant, &'static str>> {
    pacer
        .run_if_free(
            &key,
            &[&quiet],
            within,
            || async { Ok(Instant::now()) },
            |_| Retry::No,
        )
        .await
}

/// Key 2 holds the drafts of chat 1: one per second of their own, not
/// counted against the chat's messages.
#[tokio::test(start_paused = true)]
async fn a_free_call_keeps_its_own_quota_and_spares_the_chats() {
    let pacer: Pacer<i64> = Pacer::new(per_second(1000), |_| vec![per_second(1)]);
    assert!(free(&pacer, 2, 1).await.is_some_and(|r| r.is_ok()));
    assert!(
        free(&pacer, 2, 1).await.is_none(),
        "its own quota: a second one within the second gives way"
    );
    let message: Result<Instant, ()> = pacer
        .run(&1, || async { Ok(Instant::now()) }, |_| Retry::No)
        .await;
    let start = Instant::now();
    assert!(
        message.is_ok_and(|at| at == start),
        "the chat's message did not wait for the draft's quota"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(free(&pacer, 2, 1).await.is_some_and(|r| r.is_ok()));
}

/// A 429 is not retried; it pauses the draft lane only.
#[tokio::test(start_paused = true)]
async fn a_429_pauses_the_free_lane_without_a_retry() {
    let pacer: Pacer<i64> = Pacer::new(per_second(1000), |_| Vec::new());
    let calls = AtomicU32::new(0);
    let refused: Option<Result<(), &str>> = pacer
        .run_if_free(
            &2,
            &[&1],
            Duration::from_secs(1),
            || async {
                calls.fetch_add(1, Ordering::SeqCst);
                Err("429")
            },
            |_| Retry::After {
                delay: Duration::from_secs(3),
                global: false,
            },
        )
        .await;
    assert_eq!(refused, Some(Err("429")));
    assert_eq!(calls.load(Ordering::SeqCst), 1, "not retried");
    assert_eq!(pacer.rate_limited_count(), 1);
    assert!(free(&pacer, 2, 1).await.is_none(), "paused");
    let message: Result<(), ()> = pacer.run(&1, || async { Ok(()) }, |_| Retry::No).await;
    assert!(message.is_ok(), "the chat itself is not paused");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(free(&pacer, 2, 1).await.is_some());
}

/// A free call never takes a token a queued call waits for, nor goes while
/// its chat's message is on its way.
#[tokio::test(start_paused = true)]
async fn free_calls_give_way_to_queued_and_running_messages() {
    let bot = Quota::with_period(Duration::from_millis(100)).unwrap_or(per_second(10));
    let pacer: Arc<Pacer<i64>> = Arc::new(Pacer::new(bot, |_| Vec::new()));
    let mut queued = Vec::new();
    for key in 10..15_i64 {
        let pacer = pacer.clone();
        queued.push(tokio::spawn(async move {
            let r: Result<(), ()> = pacer.run(&key, || async { Ok(()) }, |_| Retry::No).await;
            r.is_ok()
        }));
        tokio::task::yield_now().await;
    }
    let mut went = 0;
    for _ in 0..40 {
        went += usize::from(free(&pacer, 2, 1).await.is_some());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(went, 0, "a draft went while messages waited for the bot");
    for q in queued {
        assert!(q.await.is_ok_and(|ok| ok));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;

    let release = Arc::new(tokio::sync::Notify::new());
    let held = release.clone();
    let p = pacer.clone();
    let message = tokio::spawn(async move {
        let r: Result<(), ()> = p
            .run(
                &1,
                || async {
                    held.notified().await;
                    Ok(())
                },
                |_| Retry::No,
            )
            .await;
        r.is_ok()
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        free(&pacer, 2, 1).await.is_none(),
        "the chat's message is on its way"
    );
    release.notify_one();
    assert!(message.await.is_ok_and(|ok| ok));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(free(&pacer, 2, 1).await.is_some());
}

/// Given time, a free call takes the first token no queued call wants:
/// after a backlog of messages, never before one of them; free calls of
/// several keys go in arrival order, one a bot-wide period; one that
/// cannot go in time gives up without running.
#[tokio::test(start_paused = true)]
async fn a_free_call_waits_for_a_token_no_queued_call_wants() {
    let bot = Quota::with_period(Duration::from_millis(100)).unwrap_or(per_second(10));
    let pacer: Arc<Pacer<i64>> = Arc::new(Pacer::new(bot, |_| vec![per_second(1)]));
    let sent = Arc::new(StdMutex::new(Vec::new()));
    let tasks = super::tests::backlog(&pacer, 10..14, &sent).await;
    let start = Instant::now();
    let mut drafts = Vec::new();
    for key in [20_i64, 21, 22] {
        let pacer = pacer.clone();
        drafts.push(tokio::spawn(async move {
            free_within(&pacer, key, key + 100, Duration::from_secs(2)).await
        }));
        tokio::task::yield_now().await;
    }
    let late = free_within(&pacer, 23, 123, Duration::from_millis(150)).await;
    assert!(late.is_none(), "no token free within 150 ms");
    for t in tasks {
        assert!(t.await.is_ok_and(|ok| ok));
    }
    let last_message = sent
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .max()
        .copied()
        .unwrap_or(start);
    let mut at = Vec::new();
    for d in drafts {
        let went = d.await.ok().flatten().and_then(Result::ok);
        at.push(went.expect("each went within its time"));
    }
    assert!(at[0] > last_message, "after every queued message");
    assert!(at[0] < at[1] && at[1] < at[2], "in arrival order: {at:?}");
    assert!(at[2].duration_since(at[0]) >= Duration::from_millis(190));
}
