//! The sessions' own state: each conversation's worker, and the turn each
//! runs now (its inbox rows and what it ran).

use crate::domain::SessionKey;
use crate::gateway::session::worker::SessionHandle;
use crate::gateway::turn::in_flight::InFlight;
use std::collections::HashMap;
use std::sync::Mutex;

/// The session workers and their turns in flight.
#[derive(Default)]
pub(crate) struct Sessions {
    pub(crate) workers: Mutex<HashMap<SessionKey, SessionHandle>>,
    /// Each session's running turn: its inbox rows and what it ran.
    pub(crate) in_flight: Mutex<HashMap<SessionKey, InFlight>>,
}
