//! The sessions' own state: each conversation's worker, the turn each runs
//! now (its inbox rows and what it ran), and what the workers run turns with.

use crate::domain::SessionKey;
use crate::gateway::session::runner::Runner;
use crate::gateway::session::worker::SessionHandle;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The session workers and their turns in flight.
pub(crate) struct Sessions {
    pub(crate) workers: Mutex<HashMap<SessionKey, SessionHandle>>,
    /// Each session's running turn: its inbox rows and what it ran.
    pub(crate) in_flight: Mutex<HashMap<SessionKey, InFlight>>,
    /// What every worker runs its turns with (the turn stage).
    pub(crate) runner: Arc<dyn Runner>,
}

impl Sessions {
    /// No session yet; their workers will run turns with `runner`.
    pub(crate) fn new(runner: Arc<dyn Runner>) -> Sessions {
        Sessions {
            workers: Mutex::default(),
            in_flight: Mutex::default(),
            runner,
        }
    }
}

/// A running turn's inbox rows and what it ran (see
/// `crate::gateway::turn::in_flight`, which keeps them).
#[derive(Debug, Default)]
pub(in crate::gateway) struct InFlight {
    pub(in crate::gateway) rows: Vec<i64>,
    pub(in crate::gateway) ran: Vec<String>,
    /// Its answer began to reach the chat (recorded on the rows).
    pub(in crate::gateway) answering: bool,
}
