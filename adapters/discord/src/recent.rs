//! A bounded set of recent snowflakes: the oldest insertions are forgotten
//! first once it holds `capacity`.

use std::collections::{HashSet, VecDeque};

/// Remembers the last `capacity` ids inserted.
pub(crate) struct RecentIds {
    capacity: usize,
    order: VecDeque<u64>,
    set: HashSet<u64>,
}

impl RecentIds {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            order: VecDeque::new(),
            set: HashSet::new(),
        }
    }

    /// Remembers `id`; true when it was not remembered yet.
    pub fn insert(&mut self, id: u64) -> bool {
        if !self.set.insert(id) {
            return false;
        }
        self.order.push_back(id);
        while self.order.len() > self.capacity {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
        true
    }

    pub fn contains(&self, id: u64) -> bool {
        self.set.contains(&id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_insertions_are_forgotten_first() {
        let mut ids = RecentIds::new(2);
        assert!(ids.insert(1));
        assert!(!ids.insert(1), "a repeat");
        assert!(ids.insert(2));
        assert!(ids.insert(3));
        assert!(!ids.contains(1), "forgotten");
        assert!(ids.contains(2) && ids.contains(3));
        assert!(ids.insert(1), "new again once forgotten");
    }
}
