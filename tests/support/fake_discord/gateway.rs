//! The fake's gateway: Hello → Identify (token, intents, shard checked) →
//! READY, heartbeat ACKs, dispatches with sequence numbers, and Resume →
//! the missed dispatches replayed in order, then RESUMED — or INVALID_SESSION
//! (`d: false`) for an unknown session or a `seq` it cannot replay from, as
//! Discord does. A session outlives its connection (dispatches meanwhile are
//! kept for the resume) unless the client closed with 1000/1001 or the fake
//! closed with 4007/4009. Faults to inject are in `outage.rs`.

use super::{bot_user_json, outage, Identify, Inner, Session, Shared, APP_ID, TOKEN};
use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

/// What a connection task is asked to do.
#[derive(Debug)]
pub(crate) enum Out {
    /// Send this text frame.
    Frame(String),
    /// Drop the TCP connection without a close handshake (the client sees
    /// what it reports as 1006, abnormal closure).
    Drop,
    /// Send a close frame with this code and reason, then hang up.
    Close(u16, String),
}

/// How often a held Resume checks whether it may be answered.
const HELD_CHECK: std::time::Duration = std::time::Duration::from_millis(5);

/// How many dispatches a session keeps for a resume.
const REPLAY_LOG: usize = 1_000;

pub(crate) async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    while let Ok((stream, _)) = listener.accept().await {
        if outage::refuse(&shared) {
            tokio::spawn(outage::unavailable(stream));
            continue;
        }
        tokio::spawn(connection(stream, shared.clone()));
    }
}

/// Dispatches on `shard`'s session: sent at once on its connection, and kept
/// for a resume (so one sent while disconnected is replayed). False when the
/// shard has no session (never identified, or invalidated).
pub(crate) fn dispatch(inner: &mut Inner, shard: u32, event: &str, data: Value) -> bool {
    let Some(session) = inner.sessions.get_mut(&shard) else {
        return false;
    };
    session.seq += 1;
    let frame = json!({ "op": 0, "t": event, "s": session.seq, "d": data }).to_string();
    if session.log.len() == REPLAY_LOG {
        session.log.pop_front();
    }
    session.log.push_back((session.seq, frame.clone()));
    if let Some(tx) = &session.tx {
        // A connection going away loses it here; the resume replays it.
        let _ = tx.send(Out::Frame(frame));
    }
    true
}

pub(crate) fn send(inner: &Inner, shard: u32, out: Out) -> bool {
    inner
        .sessions
        .get(&shard)
        .and_then(|s| s.tx.as_ref())
        .is_some_and(|tx| tx.send(out).is_ok())
}

fn close(code: u16, reason: &str) -> Message {
    Message::Close(Some(CloseFrame {
        code: CloseCode::from(code),
        reason: reason.to_owned().into(),
    }))
}

async fn connection(stream: TcpStream, shared: Arc<Shared>) {
    let Ok(ws) = tokio_tungstenite::accept_async(stream).await else {
        return;
    };
    let (mut sink, mut source) = ws.split();
    let conn = {
        let mut inner = shared.lock();
        inner.next_conn += 1;
        inner.next_conn
    };
    let interval = shared.options.heartbeat_interval_ms;
    let hello = json!({ "op": 10, "s": null, "t": null, "d": { "heartbeat_interval": interval } });
    if sink.send(Message::Text(hello.to_string())).await.is_err() {
        return;
    }
    let (tx, mut rx) = mpsc::unbounded_channel::<Out>();
    let mut shard: Option<u32> = None;
    let mut held: Option<Value> = None;
    loop {
        tokio::select! {
            incoming = source.next() => {
                let text = match incoming {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Close(frame))) => {
                        // Discord: closing with 1000 or 1001 ends the session.
                        let code = frame.map(|f| u16::from(f.code));
                        if matches!(code, Some(1000 | 1001)) {
                            outage::end_session(&shared, shard, conn);
                        }
                        break;
                    }
                    Some(Err(_)) | None => break,
                    Some(Ok(_)) => continue,
                };
                let Ok(payload) = serde_json::from_str::<Value>(&text) else {
                    let _ = sink.send(close(4002, "Decode error")).await;
                    break;
                };
                if payload["op"] == 6 && outage::hold_resume(&shared) {
                    held = Some(payload);
                    continue;
                }
                let reply = on_payload(&shared, &payload, conn, &tx, &mut shard);
                if !answer(&mut sink, reply).await {
                    break;
                }
            }
            // A held Resume is answered once the test lets resumes through
            // (heartbeats are still ACKed meanwhile).
            () = tokio::time::sleep(HELD_CHECK), if held.is_some() => {
                if outage::resumes_held(&shared) {
                    continue;
                }
                let Some(payload) = held.take() else { continue };
                let reply = on_payload(&shared, &payload, conn, &tx, &mut shard);
                if !answer(&mut sink, reply).await {
                    break;
                }
            }
            out = rx.recv() => match out {
                Some(Out::Frame(text)) => {
                    if sink.send(Message::Text(text)).await.is_err() {
                        break;
                    }
                }
                Some(Out::Close(code, reason)) => {
                    let _ = sink.send(close(code, &reason)).await;
                    break;
                }
                Some(Out::Drop) | None => break,
            },
        }
    }
    // Keep the session for resume; only detach this connection from it.
    if let Some(shard) = shard {
        let mut inner = shared.lock();
        if let Some(session) = inner.sessions.get_mut(&shard) {
            if session.conn == conn {
                session.tx = None;
            }
        }
    }
}

/// Sends `reply`; false when the connection is over (a close frame was
/// sent, or sending failed).
async fn answer<S>(sink: &mut S, reply: Vec<Message>) -> bool
where
    S: futures::Sink<Message> + Unpin,
{
    let closing = matches!(reply.last(), Some(Message::Close(_)));
    for message in reply {
        if sink.send(message).await.is_err() {
            return false;
        }
    }
    !closing
}

/// Handles one client payload; returns the frames to send back.
fn on_payload(
    shared: &Shared,
    payload: &Value,
    conn: u64,
    tx: &mpsc::UnboundedSender<Out>,
    shard: &mut Option<u32>,
) -> Vec<Message> {
    let mut inner = shared.lock();
    match payload["op"].as_u64() {
        Some(1) => {
            inner.heartbeats += 1;
            if inner.faults.zombie.contains(&conn) {
                inner.faults.unacked += 1;
                return Vec::new();
            }
            vec![Message::Text(json!({ "op": 11, "d": null }).to_string())]
        }
        Some(2) => identify(shared, &mut inner, &payload["d"], conn, tx, shard),
        Some(6) => resume(&mut inner, &payload["d"], conn, tx, shard),
        // Presence updates, member requests…: accepted, ignored.
        Some(3 | 4 | 8) => Vec::new(),
        _ => vec![close(4001, "Unknown opcode")],
    }
}

fn token_ok(raw: &Value) -> bool {
    let token = raw.as_str().unwrap_or("");
    token.strip_prefix("Bot ").unwrap_or(token) == TOKEN
}

fn identify(
    shared: &Shared,
    inner: &mut Inner,
    d: &Value,
    conn: u64,
    tx: &mpsc::UnboundedSender<Out>,
    shard: &mut Option<u32>,
) -> Vec<Message> {
    let ok = token_ok(&d["token"]);
    let intents = d["intents"].as_u64().unwrap_or(0);
    let pair = d["shard"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_u64)
                .map(|n| n as u32)
                .collect::<Vec<_>>()
        })
        .unwrap_or_else(|| vec![0, 1]);
    let [id, total] = pair.as_slice() else {
        return vec![close(4010, "Invalid shard.")];
    };
    inner.identifies.push(Identify {
        shard: [*id, *total],
        intents,
        token_ok: ok,
    });
    if !ok {
        return vec![close(4004, "Authentication failed.")];
    }
    if *total != shared.options.shards || id >= total {
        return vec![close(4010, "Invalid shard.")];
    }
    if intents & !shared.options.allowed_intents != 0 {
        return vec![close(4014, "Disallowed intent(s).")];
    }
    let session_id = format!("session-{id}-{conn}");
    inner.sessions.insert(
        *id,
        Session {
            id: session_id.clone(),
            seq: 1,
            conn,
            tx: Some(tx.clone()),
            log: VecDeque::new(),
        },
    );
    *shard = Some(*id);
    let ready = json!({
        "op": 0, "t": "READY", "s": 1,
        "d": {
            "v": 10,
            "user": bot_user_json(),
            "guilds": [],
            "session_id": session_id,
            "resume_gateway_url": shared.gateway_url,
            "shard": [id, total],
            "application": { "id": APP_ID.to_string(), "flags": 0 },
        },
    });
    vec![Message::Text(ready.to_string())]
}

fn resume(
    inner: &mut Inner,
    d: &Value,
    conn: u64,
    tx: &mpsc::UnboundedSender<Out>,
    shard: &mut Option<u32>,
) -> Vec<Message> {
    if !token_ok(&d["token"]) {
        return vec![close(4004, "Authentication failed.")];
    }
    let session_id = d["session_id"].as_str().unwrap_or("");
    let seq = d["seq"].as_u64();
    let found = inner
        .sessions
        .iter_mut()
        .find(|(_, s)| s.id == session_id)
        .map(|(id, s)| (*id, s));
    let replay = found.and_then(|(id, session)| {
        let missed = replayable(session, seq?)?;
        session.conn = conn;
        session.tx = Some(tx.clone());
        session.seq += 1;
        Some((id, missed, session.seq))
    });
    inner.faults.resume_attempts.push(seq.unwrap_or(0));
    let Some((id, missed, resumed_seq)) = replay else {
        inner.faults.invalid_sessions += 1;
        return vec![Message::Text(json!({ "op": 9, "d": false }).to_string())];
    };
    *shard = Some(id);
    inner.resumes += 1;
    inner.faults.replayed += missed.len();
    let resumed = json!({ "op": 0, "t": "RESUMED", "s": resumed_seq, "d": {} });
    missed
        .into_iter()
        .map(Message::Text)
        .chain([Message::Text(resumed.to_string())])
        .collect()
}

/// The dispatches after `seq`, in order; `None` when `seq` is not one this
/// session can resume from (before READY, past the last, or already dropped
/// from the log): Discord then answers INVALID_SESSION.
fn replayable(session: &Session, seq: u64) -> Option<Vec<String>> {
    let first_kept = session.log.front().map_or(session.seq + 1, |(s, _)| *s);
    // READY is seq 1: a client that saw nothing of this session cannot resume it.
    if seq == 0 || seq > session.seq || seq + 1 < first_kept {
        return None;
    }
    Some(
        session
            .log
            .iter()
            .filter(|(s, _)| *s > seq)
            .map(|(_, frame)| frame.clone())
            .collect(),
    )
}
