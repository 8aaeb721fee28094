//! Gateway faults a test can inject, each as Discord shows it to a client:
//! a zombie connection (heartbeats no longer ACKed), a close with a given code
//! (4007 and 4009 also end the session, as Discord's "start a new session"
//! says), op 7 RECONNECT, op 9 INVALID_SESSION (`d` = resumable), and the
//! gateway away (every connection attempt answered `503 Service Unavailable`
//! before the WebSocket upgrade, as during an outage) until it comes back.
//! Dispatches meanwhile are kept in the session for a resume to replay.

use super::gateway::{self, Out};
use super::{FakeDiscord, Shared, UserMessage};
use serde_json::json;
use std::collections::HashSet;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How [`FakeDiscord::disrupt`] breaks a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disruption {
    /// The TCP connection drops without a close frame: what a client
    /// reports as 1006 (abnormal closure, never sent on the wire).
    Drop,
    /// A close frame with this code (4007 and 4009 also end the session).
    Close(u16),
    /// op 7 RECONNECT.
    Reconnect,
    /// op 9 INVALID_SESSION; a session that is not resumable is ended.
    InvalidSession { resumable: bool },
}

/// The fault switches and what the fake saw while they were on.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    /// Connections whose heartbeats are not ACKed.
    pub zombie: HashSet<u64>,
    /// Heartbeats left unanswered.
    pub unacked: usize,
    /// Refuse every connection attempt.
    pub away: bool,
    /// Connection attempts refused while away.
    pub refused: usize,
    /// The `seq` of every Resume, accepted or not.
    pub resume_attempts: Vec<u64>,
    /// INVALID_SESSION answers (to a Resume, or sent by a test).
    pub invalid_sessions: usize,
    /// Dispatches replayed by accepted resumes.
    pub replayed: usize,
    /// Resumes wait unanswered (a slow gateway) while set.
    pub hold_resumes: bool,
    /// Resumes that had to wait.
    pub held: usize,
}

/// Whether a Resume arriving now must wait (and counts it).
pub(crate) fn hold_resume(shared: &Shared) -> bool {
    let mut inner = shared.lock();
    if inner.faults.hold_resumes {
        inner.faults.held += 1;
    }
    inner.faults.hold_resumes
}

pub(crate) fn resumes_held(shared: &Shared) -> bool {
    shared.lock().faults.hold_resumes
}

/// Whether a new connection is refused (and counted).
pub(crate) fn refuse(shared: &Shared) -> bool {
    let mut inner = shared.lock();
    if inner.faults.away {
        inner.faults.refused += 1;
    }
    inner.faults.away
}

/// Answers the upgrade request with a 503, as Discord's edge does in an outage.
pub(crate) async fn unavailable(mut stream: TcpStream) {
    let mut request = [0_u8; 2048];
    let _ = stream.read(&mut request).await;
    let response =
        "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// Forgets `shard`'s session when connection `conn` still holds it.
pub(crate) fn end_session(shared: &Shared, shard: Option<u32>, conn: u64) {
    let Some(shard) = shard else { return };
    let mut inner = shared.lock();
    if inner.sessions.get(&shard).is_some_and(|s| s.conn == conn) {
        inner.sessions.remove(&shard);
    }
}

impl FakeDiscord {
    /// `shard`'s current connection stops ACKing heartbeats (a zombie: it
    /// still delivers dispatches). Later connections are ACKed again.
    pub fn stop_acking(&self, shard: u32) -> bool {
        let mut inner = self.shared.lock();
        let Some(conn) = inner
            .sessions
            .get(&shard)
            .filter(|s| s.tx.is_some())
            .map(|s| s.conn)
        else {
            return false;
        };
        inner.faults.zombie.insert(conn);
        true
    }

    /// Disrupts `shard`'s connection as `what` says and, before the client
    /// can come back (under the same lock a Resume needs), dispatches
    /// `missed`: replayed by a resume, lost when the session ended (then
    /// their id is `None`, as Discord delivers them to no one).
    pub fn disrupt(
        &self,
        shard: u32,
        what: Disruption,
        missed: Vec<UserMessage>,
    ) -> (bool, Vec<Option<u64>>) {
        let mut inner = self.shared.lock();
        let (out, ends_session) = match what {
            Disruption::Drop => (Out::Drop, false),
            Disruption::Close(code) => (
                Out::Close(code, reason(code).to_owned()),
                matches!(code, 4007 | 4009),
            ),
            Disruption::Reconnect => (Out::Frame(json!({ "op": 7, "d": null }).to_string()), false),
            Disruption::InvalidSession { resumable } => {
                inner.faults.invalid_sessions += 1;
                (
                    Out::Frame(json!({ "op": 9, "d": resumable }).to_string()),
                    !resumable,
                )
            }
        };
        let sent = gateway::send(&inner, shard, out);
        if ends_session {
            inner.sessions.remove(&shard);
        }
        let ids = missed
            .into_iter()
            .map(|m| self.send_message_locked(&mut inner, m))
            .collect();
        (sent, ids)
    }

    /// New connection attempts are refused (503) until
    /// [`FakeDiscord::come_back`]; live ones go on.
    pub fn refuse_connections(&self) {
        self.shared.lock().faults.away = true;
    }

    /// The gateway goes away: live connections drop (no close frame) and
    /// every new attempt is refused until [`FakeDiscord::come_back`].
    pub fn go_away(&self) {
        let mut inner = self.shared.lock();
        inner.faults.away = true;
        for session in inner.sessions.values_mut() {
            if let Some(tx) = session.tx.take() {
                let _ = tx.send(Out::Drop);
            }
        }
    }

    /// Resumes wait unanswered (heartbeats are still ACKed) until called
    /// with `false`: a gateway slow to resume.
    pub fn hold_resumes(&self, hold: bool) {
        self.shared.lock().faults.hold_resumes = hold;
    }

    /// Resumes that waited.
    pub fn held_resumes(&self) -> usize {
        self.shared.lock().faults.held
    }

    pub fn come_back(&self) {
        self.shared.lock().faults.away = false;
    }

    /// Connection attempts refused while the gateway was away.
    pub fn refused_connections(&self) -> usize {
        self.shared.lock().faults.refused
    }

    /// Heartbeats a zombie connection left unanswered.
    pub fn unacked_heartbeats(&self) -> usize {
        self.shared.lock().faults.unacked
    }

    /// The `seq` each Resume carried, accepted or refused.
    pub fn resume_attempts(&self) -> Vec<u64> {
        self.shared.lock().faults.resume_attempts.clone()
    }

    /// INVALID_SESSION frames sent (refused resumes and injected ones).
    pub fn invalid_sessions(&self) -> usize {
        self.shared.lock().faults.invalid_sessions
    }

    /// Dispatches replayed to resumed sessions.
    pub fn replayed(&self) -> usize {
        self.shared.lock().faults.replayed
    }
}

/// Discord's reason text for the close codes tests use.
fn reason(code: u16) -> &'static str {
    match code {
        4000 => "Unknown error.",
        4007 => "Invalid seq.",
        4008 => "Rate limited.",
        4009 => "Session timed out.",
        _ => "",
    }
}
