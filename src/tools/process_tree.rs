//! A command's whole process tree, found through `/proc` by parent links:
//! stopped (so nothing forks meanwhile) and then killed. Catches what a
//! process-group kill misses: descendants that moved to a session of their
//! own (`setsid`, daemons). The command's process is a child subreaper (set
//! in the sandbox), so double-forked daemons stay in its tree while it lives.

use rustix::process::{kill_process, Pid, Signal};
use std::collections::{HashMap, HashSet};

/// Most rounds of looking for new descendants before killing what was found.
const ROUNDS: usize = 16;

/// Every process's parent, from `/proc/<pid>/stat`.
fn parents() -> HashMap<i32, i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return HashMap::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // After the command name (which may hold spaces and parentheses):
            // state, then the parent's pid.
            let ppid = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((pid, ppid))
        })
        .collect()
}

/// `root` and its descendants alive now.
pub(crate) fn tree(root: i32) -> HashSet<i32> {
    let parents = parents();
    let mut found = HashSet::from([root]);
    loop {
        let before = found.len();
        for (pid, ppid) in &parents {
            if found.contains(ppid) {
                found.insert(*pid);
            }
        }
        if found.len() == before {
            return found;
        }
    }
}

/// Stops `root` and every descendant, looking again until no new one
/// appears, then kills them all.
pub(crate) fn kill_tree(root: i32) {
    let mut stopped: HashSet<i32> = HashSet::new();
    for _ in 0..ROUNDS {
        let fresh: Vec<i32> = tree(root).difference(&stopped).copied().collect();
        if fresh.is_empty() {
            break;
        }
        for pid in fresh {
            signal(pid, Signal::STOP);
            stopped.insert(pid);
        }
    }
    for pid in stopped {
        signal(pid, Signal::KILL);
    }
}

fn signal(pid: i32, sig: Signal) {
    if let Some(pid) = Pid::from_raw(pid) {
        // ESRCH (already gone) is fine.
        let _ = kill_process(pid, sig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_in_its_own_tree_and_its_parent_is_not() {
        let me = i32::try_from(std::process::id()).unwrap_or(0);
        let t = tree(me);
        assert!(t.contains(&me));
        let parent = rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get());
        assert!(!t.contains(&parent));
    }
}
