//! Doom-loop guard: the same tool called with the same (or nearly the same)
//! arguments again and again within a short window.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashSet, VecDeque};
use std::hash::{Hash, Hasher};

const WINDOW: usize = 6;
const THRESHOLD: usize = 3;
const FUZZY_MIN_LEN: usize = 50;
const JACCARD_MIN: f64 = 0.8;

/// Tools that are expected to be called repeatedly with the same arguments.
const EXEMPT: &[&str] = &["check_background_tasks"];

struct Seen {
    tool: String,
    hash: u64,
    grams: Option<HashSet<[char; 3]>>,
}

/// Remembers the calls before the current one that share its window of
/// [`WINDOW`] (the current call counts as one of the six).
#[derive(Default)]
pub(crate) struct DoomLoopGuard {
    recent: VecDeque<Seen>,
}

impl DoomLoopGuard {
    /// Records a call and says whether it completes a loop: together with the
    /// calls in the window, the same tool with identical arguments (or, for
    /// arguments of 50+ chars, 3-gram Jaccard ≥ 0.8) appears [`THRESHOLD`] times.
    pub(crate) fn check(&mut self, tool: &str, arguments: &str) -> bool {
        if EXEMPT.contains(&tool) {
            return false;
        }
        let normalized = normalize(arguments);
        let mut h = DefaultHasher::new();
        normalized.hash(&mut h);
        let hash = h.finish();
        let grams = (normalized.chars().count() >= FUZZY_MIN_LEN).then(|| trigrams(&normalized));
        let similar = self
            .recent
            .iter()
            .filter(|s| s.tool == tool)
            .filter(|s| {
                s.hash == hash
                    || matches!((&s.grams, &grams), (Some(a), Some(b)) if jaccard(a, b) >= JACCARD_MIN)
            })
            .count();
        if self.recent.len() == WINDOW - 1 {
            self.recent.pop_front();
        }
        self.recent.push_back(Seen {
            tool: tool.to_owned(),
            hash,
            grams,
        });
        similar + 1 >= THRESHOLD
    }
}

/// Canonical JSON when the arguments parse (key order and spacing don't matter).
fn normalize(arguments: &str) -> String {
    serde_json::from_str::<serde_json::Value>(arguments)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| arguments.trim().to_owned())
}

fn trigrams(s: &str) -> HashSet<[char; 3]> {
    let chars: Vec<char> = s.chars().collect();
    chars.windows(3).map(|w| [w[0], w[1], w[2]]).collect()
}

fn jaccard(a: &HashSet<[char; 3]>, b: &HashSet<[char; 3]>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 1.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn third_identical_call_trips() {
        let mut g = DoomLoopGuard::default();
        assert!(!g.check("read_file", r#"{"path":"a"}"#));
        assert!(!g.check("read_file", r#"{ "path" : "a" }"#));
        assert!(g.check("read_file", r#"{"path":"a"}"#));
    }

    #[test]
    fn different_tools_or_args_do_not_trip() {
        let mut g = DoomLoopGuard::default();
        for i in 0..10 {
            assert!(!g.check("read_file", &format!(r#"{{"path":"{i}"}}"#)));
        }
        assert!(!g.check("a", "{}"));
        assert!(!g.check("b", "{}"));
        assert!(!g.check("c", "{}"));
    }

    #[test]
    fn near_identical_long_arguments_trip() {
        let mut g = DoomLoopGuard::default();
        let base = "search the web for the latest rust release notes and summarize them";
        assert!(!g.check("web_search", &format!(r#"{{"q":"{base} 1"}}"#)));
        assert!(!g.check("web_search", &format!(r#"{{"q":"{base} 2"}}"#)));
        assert!(g.check("web_search", &format!(r#"{{"q":"{base} 3"}}"#)));
    }

    #[test]
    fn short_similar_arguments_need_exact_match() {
        let mut g = DoomLoopGuard::default();
        assert!(!g.check("t", r#"{"a":1}"#));
        assert!(!g.check("t", r#"{"a":2}"#));
        assert!(!g.check("t", r#"{"a":3}"#));
    }

    #[test]
    fn the_window_is_six_calls_including_the_current_one() {
        let mut g = DoomLoopGuard::default();
        for call in ["a", "a", "x1", "x2", "x3"] {
            assert!(!g.check(call, "{}"));
        }
        assert!(g.check("a", "{}"), "a, a, …, a within six calls");
        let mut g = DoomLoopGuard::default();
        for call in ["a", "a", "x1", "x2", "x3", "x4"] {
            assert!(!g.check(call, "{}"));
        }
        assert!(!g.check("a", "{}"), "the first a is seven calls back");
    }

    #[test]
    fn window_forgets_old_calls_and_polling_is_exempt() {
        let mut g = DoomLoopGuard::default();
        assert!(!g.check("x", "{}"));
        assert!(!g.check("x", "{}"));
        for i in 0..6 {
            assert!(!g.check("y", &format!("{{\"i\":{i}}}")));
        }
        assert!(
            !g.check("x", "{}"),
            "the earlier two fell out of the window"
        );
        for _ in 0..5 {
            assert!(!g.check("check_background_tasks", "{}"));
        }
    }
}
