//! Starting and resuming turns: a request becomes the loop's [`Drive`],
//! run on a task of its own whose events arrive on a channel.

use super::events::RuntimeEvent;
use super::requests::{Drive, ResumeRequest, TurnRequest};
use super::runtime::Agent;
use std::sync::Arc;
use tokio::sync::mpsc;

impl Agent {
    /// Runs one turn on its own task; events arrive on the returned channel and
    /// the last one is always [`RuntimeEvent::Done`].
    pub fn run_turn(self: &Arc<Self>, request: TurnRequest) -> mpsc::Receiver<RuntimeEvent> {
        let trace_id = request.session_id.to_string();
        self.start_turn(request, trace_id)
    }

    /// Runs a sub-agent's turn for the session of `request`: its tools act
    /// for that session (its memories, its stored results), and its trace is
    /// filed under `{session}:{role}`.
    pub(crate) fn run_delegated(
        self: &Arc<Self>,
        request: TurnRequest,
        role: &str,
    ) -> mpsc::Receiver<RuntimeEvent> {
        let trace_id = format!("{}:{role}", request.session_id);
        self.start_turn(request, trace_id)
    }

    fn start_turn(
        self: &Arc<Self>,
        request: TurnRequest,
        trace_id: String,
    ) -> mpsc::Receiver<RuntimeEvent> {
        let TurnRequest {
            session_id,
            origin,
            mut history,
            input,
            host,
            cancel,
            system_context,
            model,
        } = request;
        let new_from = history.len();
        history.push(input);
        let model = model.unwrap_or_else(|| self.own_model());
        self.spawn(Drive {
            session_id,
            trace_id,
            origin,
            messages: history,
            new_from,
            pending: None,
            resolved: None,
            host,
            cancel,
            system_context,
            model,
        })
    }

    /// Resumes a turn paused on an approval (in this process or another, before
    /// or after a restart): runs the round's remaining calls, then continues.
    pub fn resume_turn(self: &Arc<Self>, request: ResumeRequest) -> mpsc::Receiver<RuntimeEvent> {
        let trace_id = request.session_id.to_string();
        self.continue_turn(request, trace_id)
    }

    /// Resumes a sub-agent's turn paused on an approval (see
    /// [`Agent::run_delegated`]).
    pub(crate) fn resume_delegated(
        self: &Arc<Self>,
        request: ResumeRequest,
        role: &str,
    ) -> mpsc::Receiver<RuntimeEvent> {
        let trace_id = format!("{}:{role}", request.session_id);
        self.continue_turn(request, trace_id)
    }

    fn continue_turn(
        self: &Arc<Self>,
        request: ResumeRequest,
        trace_id: String,
    ) -> mpsc::Receiver<RuntimeEvent> {
        let ResumeRequest {
            session_id,
            origin,
            messages,
            new_from,
            remaining,
            round,
            system_context,
            resolution,
            nested,
            host,
            cancel,
            model,
        } = request;
        let model = model.unwrap_or_else(|| self.own_model());
        let resolved = remaining.first().map(|call| super::round::Resumed {
            call_id: call.id.clone(),
            resolution,
            nested,
        });
        self.spawn(Drive {
            trace_id,
            session_id,
            origin,
            messages,
            new_from,
            pending: Some((round.max(1), remaining)),
            resolved,
            host,
            cancel,
            system_context,
            model,
        })
    }
}
