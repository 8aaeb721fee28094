//! Button, menu and modal-submit interactions: each is answered exactly once
//! and within Discord's 3 s.
//!
//! On receipt a timer is armed for `defer_after` (2.5 s) after Discord created
//! the interaction (its snowflake's time: one delivered late, say replayed
//! after a reconnect, is deferred at once, not 2.5 s after it arrived); if the
//! core has not answered by then, the adapter sends a deferred update (type 6)
//! itself — as it does at once when the core asks (`defer_press`) — and the
//! core's later answer becomes an edit of the original message (`Update`) or
//! an ephemeral followup (`Private`). A form (type 9) can only be the first
//! answer, and never to a modal submit: asked for later, it is refused with
//! `Unsupported` and the press still waits for its answer.

use crate::errors::{RestError, ALREADY_ACKNOWLEDGED};
use crate::normalize::Handle;
use crate::render;
use crate::rest::Rest;
use std::collections::HashMap;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;
use switchboard_platform::{PlatformError, PressAnswer};
use tokio::sync::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Received, nothing sent yet.
    Pending,
    /// We sent a deferred update; answers go through the webhook routes.
    Deferred,
    /// The core's answer went out.
    Answered,
}

struct Entry {
    state: Arc<Mutex<State>>,
    received: Instant,
    /// Whether a modal may answer it (a button press, not a modal submit).
    form: bool,
}

/// Discord's epoch (2015-01-01) in Unix milliseconds.
const DISCORD_EPOCH_MS: u64 = 1_420_070_400_000;

/// How long ago Discord created `interaction`, by its snowflake and our
/// clock (zero when our clock is behind).
fn age(interaction: u64) -> Duration {
    let created = (interaction >> 22).saturating_add(DISCORD_EPOCH_MS);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    Duration::from_millis(now.saturating_sub(created))
}

/// Tracks the interactions of this process. Presses answered by another
/// process (or after a restart) are untracked and answered optimistically.
pub(crate) struct Interactions {
    rest: Arc<Rest>,
    entries: StdMutex<HashMap<u64, Entry>>,
    defer_after: Duration,
    ttl: Duration,
    stop: CancellationToken,
}

impl Interactions {
    pub fn new(
        rest: Arc<Rest>,
        defer_after: Duration,
        ttl: Duration,
        stop: CancellationToken,
    ) -> Self {
        Self {
            rest,
            entries: StdMutex::new(HashMap::new()),
            defer_after,
            ttl,
            stop,
        }
    }

    /// Starts the 3-second clock of an interaction that will be forwarded to
    /// the core; `form` says whether a modal may answer it.
    pub fn received(self: &Arc<Self>, handle: Handle, form: bool) {
        let state = Arc::new(Mutex::new(State::Pending));
        {
            let mut entries = self.lock();
            let ttl = self.ttl;
            entries.retain(|_, e| e.received.elapsed() < ttl);
            entries.insert(
                handle.interaction,
                Entry {
                    state: state.clone(),
                    received: Instant::now(),
                    form,
                },
            );
        }
        // Discord's 3 s run from the interaction's creation, not its arrival.
        let wait = self.defer_after.saturating_sub(age(handle.interaction));
        let this = Arc::clone(self);
        tokio::spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(wait) => this.defer(&handle, &state).await,
                () = this.stop.cancelled() => {}
            }
        });
    }

    /// Defers the interaction now (type 6) unless it is answered already:
    /// the core's answer will take a while.
    pub async fn defer_now(&self, handle: &Handle) -> Result<(), PlatformError> {
        let (state, _) = self.entry_of(handle.interaction);
        let mut state = state.lock().await;
        if *state != State::Pending {
            return Ok(());
        }
        let body = render::deferred_update_callback();
        match self
            .rest
            .interaction_callback(handle.interaction, &handle.token, &body)
            .await
        {
            Ok(()) => {}
            Err(e) if e.has_code(ALREADY_ACKNOWLEDGED) => {}
            Err(e) => return Err(e.into()),
        }
        *state = State::Deferred;
        Ok(())
    }

    /// Acknowledges a press the core will never see (unknown `custom_id`), so
    /// the user does not get "This interaction failed".
    pub async fn acknowledge_ignored(&self, handle: &Handle) {
        let body = render::deferred_update_callback();
        if let Err(e) = self
            .rest
            .interaction_callback(handle.interaction, &handle.token, &body)
            .await
        {
            tracing::debug!(error = %e, "could not acknowledge an ignored interaction");
        }
    }

    /// Carries out the core's answer: in the interaction response while it is
    /// pending, through the webhook routes once deferred.
    pub async fn answer(&self, handle: &Handle, answer: PressAnswer) -> Result<(), PlatformError> {
        let (state, form_allowed) = self.entry_of(handle.interaction);
        let mut state = state.lock().await;
        match *state {
            State::Answered => Err(PlatformError::Rejected(
                "this button press was already answered".into(),
            )),
            State::Deferred => {
                self.after_deferral(handle, &answer).await?;
                *state = State::Answered;
                Ok(())
            }
            State::Pending if matches!(answer, PressAnswer::Form(_)) && !form_allowed => Err(
                PlatformError::Unsupported("open a form in answer to a form"),
            ),
            State::Pending => {
                let body = match &answer {
                    PressAnswer::Ack => render::deferred_update_callback(),
                    PressAnswer::Update(message) => render::update_callback(message)?,
                    PressAnswer::Private(text) => render::private_callback(text),
                    PressAnswer::Form(form) => crate::forms::modal_callback(form)?,
                };
                match self
                    .rest
                    .interaction_callback(handle.interaction, &handle.token, &body)
                    .await
                {
                    Ok(()) => {}
                    // Someone (another instance, a timer before a restart) deferred it.
                    Err(e) if e.has_code(ALREADY_ACKNOWLEDGED) => {
                        *state = State::Deferred;
                        self.after_deferral(handle, &answer).await?;
                    }
                    Err(e) => return Err(e.into()),
                }
                *state = State::Answered;
                Ok(())
            }
        }
    }

    async fn defer(&self, handle: &Handle, state: &Mutex<State>) {
        let mut state = state.lock().await;
        if *state != State::Pending {
            return;
        }
        let body = render::deferred_update_callback();
        match self
            .rest
            .interaction_callback(handle.interaction, &handle.token, &body)
            .await
        {
            Ok(()) => *state = State::Deferred,
            Err(e) if e.has_code(ALREADY_ACKNOWLEDGED) => *state = State::Deferred,
            Err(e) => tracing::warn!(error = %e, "could not defer an interaction"),
        }
    }

    async fn after_deferral(
        &self,
        handle: &Handle,
        answer: &PressAnswer,
    ) -> Result<(), PlatformError> {
        let result: Result<(), RestError> = match answer {
            PressAnswer::Ack => Ok(()),
            PressAnswer::Update(message) => {
                let body = render::edit_data(message)?;
                self.rest
                    .edit_original(handle.interaction, handle.application, &handle.token, &body)
                    .await
            }
            PressAnswer::Private(text) => {
                let body = render::private_data(text);
                self.rest
                    .followup(handle.interaction, handle.application, &handle.token, &body)
                    .await
            }
            // A modal is only ever the first response.
            PressAnswer::Form(_) => {
                return Err(PlatformError::Unsupported(
                    "open a form once the press was acknowledged",
                ))
            }
        };
        result.map_err(PlatformError::from)
    }

    /// The state of `interaction` and whether a form may answer it; one
    /// this process did not receive is taken as pending (Discord says
    /// otherwise if it is not).
    fn entry_of(&self, interaction: u64) -> (Arc<Mutex<State>>, bool) {
        let mut entries = self.lock();
        let entry = entries.entry(interaction).or_insert_with(|| Entry {
            state: Arc::new(Mutex::new(State::Pending)),
            received: Instant::now(),
            form: true,
        });
        (entry.state.clone(), entry.form)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}
