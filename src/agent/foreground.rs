//! Running one approved call in the foreground: on a task of its own, within
//! the tool timeout and the turn's deadline, stopped with the turn, its
//! progress passed on, and a delegation's sub-agent pause handed back.

use super::events::RuntimeEvent;
use super::round::{Paused, RoundRunner};
use crate::llm::ToolCall;
use crate::tools::NestedResume;
use crate::tools::{Progress, ProgressSink, Tool, ToolContext, ToolError};
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::watch;
use tracing::Instrument;

impl RoundRunner<'_> {
    /// Runs the call on a task of its own, within the tool timeout and the
    /// turn's deadline, passing on what it reports. `Err(Paused)` when its
    /// sub-agent paused on an approval; `resumed` continues such a sub-agent.
    pub(super) async fn run_foreground(
        &self,
        call: &ToolCall,
        tool: Arc<dyn Tool>,
        args: Value,
        resumed: Option<NestedResume>,
    ) -> Result<Result<String, String>, Paused> {
        // Progress of a tool that shows it in the chat (a sub-agent's steps)
        // goes there as it happens; other tools report to nobody.
        let (progress, progress_rx) = if tool.progress_in_chat() {
            let (tx, rx) = watch::channel(Progress::default());
            (ProgressSink::new(tx), Some(rx))
        } else {
            (ProgressSink::default(), None)
        };
        let ctx = ToolContext {
            cancel: self.cancel.child_token(),
            progress,
            images: self.produced.sink_for(&call.id),
            session_id: self.session_id.to_owned(),
            origin: self.origin.cloned(),
            approvals: self.host.for_subagent(),
            resumed: resumed.map(Box::new),
            asked: self.asked.clone(),
        };
        // A panicking tool must not take the turn down: run it on its own task.
        // A hanging one must not hold the session: past the timeout it is told
        // to stop (its cancel token) and dropped.
        let cancel = ctx.cancel.clone();
        let mut running =
            tokio::spawn(async move { tool.call(args, &ctx).await }.in_current_span());
        // A stopped turn (`/stop`) does not wait for a tool that ignores its
        // cancel token (an operator's HTTP tool, a file read): it is told to
        // stop and dropped at once.
        let mut stopped = false;
        let waited = tokio::select! {
            finished = async {
                match progress_rx {
                    None => tokio::time::timeout(self.tool_timeout, &mut running).await.ok(),
                    Some(rx) => self.forward_progress(call, &mut running, rx).await,
                }
            } => Some(finished),
            () = self.deadline.reached() => None,
            () = self.cancel.cancelled() => {
                stopped = true;
                None
            }
        };
        let Some(finished) = waited else {
            cancel.cancel();
            running.abort();
            if stopped {
                tracing::info!(tool = %call.name, "tool stopped with its turn");
                return Ok(Err(ToolError::Cancelled.for_model()));
            }
            tracing::warn!(tool = %call.name, "tool stopped at the turn deadline");
            return Ok(Err(
                "error: the turn reached its time limit (TURN_DEADLINE_SECS) and this call was stopped."
                    .into(),
            ));
        };
        let Some(joined) = finished else {
            cancel.cancel();
            running.abort();
            tracing::warn!(tool = %call.name, timeout = ?self.tool_timeout, "tool timed out");
            return Ok(Err(ToolError::Timeout(self.tool_timeout).for_model()));
        };
        Ok(match joined {
            Ok(Ok(text)) => Ok(text),
            Ok(Err(ToolError::Paused(approval))) => return Err(Paused(approval)),
            Ok(Err(e)) => {
                tracing::info!(tool = %call.name, error = %e, "tool failed");
                Err(e.for_model())
            }
            Err(join) => {
                tracing::error!(tool = %call.name, error = %join, "tool crashed");
                Err("error: the tool crashed; the operator has the details.".into())
            }
        })
    }

    /// Waits for a tool (at most the tool timeout; `None` past it) while
    /// passing what it reports on as [`RuntimeEvent::ToolProgress`].
    async fn forward_progress<T>(
        &self,
        call: &ToolCall,
        running: &mut tokio::task::JoinHandle<T>,
        mut progress: watch::Receiver<Progress>,
    ) -> Option<Result<T, tokio::task::JoinError>> {
        let deadline = tokio::time::sleep(self.tool_timeout);
        tokio::pin!(deadline);
        let mut reporting = true;
        loop {
            tokio::select! {
                joined = &mut *running => return Some(joined),
                () = &mut deadline => return None,
                changed = progress.changed(), if reporting => {
                    if changed.is_err() {
                        reporting = false;
                        continue;
                    }
                    let update = progress.borrow_and_update().clone();
                    // A status line may be skipped, but must never hold the
                    // tool's deadline up behind a busy channel.
                    let _ = self.events.try_send(RuntimeEvent::ToolProgress {
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        progress: update,
                    });
                }
            }
        }
    }
}
