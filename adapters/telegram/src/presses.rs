//! Callback queries awaiting their one answer, with an empty answer as the
//! fallback when the core has not answered in time.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// Callback query ids forwarded to the core and not answered yet. Whoever
/// takes an id out (the core's answer or the timeout) answers it, so each
/// query is answered exactly once.
#[derive(Default)]
pub(crate) struct PendingPresses {
    ids: Mutex<HashSet<String>>,
}

impl PendingPresses {
    pub fn insert(&self, id: &str) {
        self.lock().insert(id.to_owned());
    }

    /// `true` when the caller now owns the answer.
    pub fn take(&self, id: &str) -> bool {
        self.lock().remove(id)
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.ids.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Shared so spawned timeout tasks can take ids too.
pub(crate) type Presses = Arc<PendingPresses>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_taken_once() {
        let p = PendingPresses::default();
        p.insert("q1");
        assert!(p.take("q1"));
        assert!(!p.take("q1"));
        assert!(!p.take("unknown"));
        assert_eq!(p.len(), 0);
    }
}
