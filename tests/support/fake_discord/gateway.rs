//! The fake's gateway: Hello → Identify (token, intents, shard checked) →
//! READY, heartbeat ACKs every time, Resume → RESUMED, and dispatches.

use super::{bot_user_json, Identify, Inner, Session, Shared, APP_ID, TOKEN};
use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
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
    /// Drop the TCP connection without a close handshake.
    Drop,
}

pub(crate) async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    while let Ok((stream, _)) = listener.accept().await {
        tokio::spawn(connection(stream, shared.clone()));
    }
}

/// Queues a dispatch on `shard`'s session; false when it is not connected.
pub(crate) fn dispatch(inner: &mut Inner, shard: u32, event: &str, data: Value) -> bool {
    let Some(session) = inner.sessions.get_mut(&shard) else {
        return false;
    };
    let Some(tx) = &session.tx else {
        return false;
    };
    session.seq += 1;
    let frame = json!({ "op": 0, "t": event, "s": session.seq, "d": data });
    tx.send(Out::Frame(frame.to_string())).is_ok()
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
    loop {
        tokio::select! {
            incoming = source.next() => {
                let text = match incoming {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                    Some(Ok(_)) => continue,
                };
                let Ok(payload) = serde_json::from_str::<Value>(&text) else {
                    let _ = sink.send(close(4002, "Decode error")).await;
                    break;
                };
                let reply = on_payload(&shared, &payload, conn, &tx, &mut shard);
                let closing = matches!(reply.last(), Some(Message::Close(_)));
                for message in reply {
                    if sink.send(message).await.is_err() {
                        break;
                    }
                }
                if closing {
                    break;
                }
            }
            out = rx.recv() => match out {
                Some(Out::Frame(text)) => {
                    if sink.send(Message::Text(text)).await.is_err() {
                        break;
                    }
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
    let session_id = d["session_id"].as_str().unwrap_or("");
    let found = inner
        .sessions
        .iter_mut()
        .find(|(_, s)| s.id == session_id)
        .map(|(id, s)| (*id, s));
    match (token_ok(&d["token"]), found) {
        (true, Some((id, session))) => {
            session.conn = conn;
            session.tx = Some(tx.clone());
            session.seq += 1;
            let resumed = json!({ "op": 0, "t": "RESUMED", "s": session.seq, "d": {} });
            *shard = Some(id);
            inner.resumes += 1;
            vec![Message::Text(resumed.to_string())]
        }
        (false, _) => vec![close(4004, "Authentication failed.")],
        (true, None) => vec![Message::Text(json!({ "op": 9, "d": false }).to_string())],
    }
}
