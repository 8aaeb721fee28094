//! The real binary on a terminal: `switchboard chat` in a tmux pane of a
//! private tmux server, driven with keys (Ctrl-C included) and read back from
//! the screen.
#![allow(dead_code)]

use super::piped::{Env, HANG};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// Printed by the pane's shell once `chat` exited, with its status.
pub const SHELL_PROMPT: &str = "SHELL-PROMPT:";

/// A tmux server of its own with one pane running `switchboard chat`.
pub struct Pane {
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Pane {
    /// Whether tmux can run here (the tests say so and pass when not).
    pub fn available() -> bool {
        Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success())
    }

    /// Starts `switchboard chat` with `env`'s variables in a 100×50 pane;
    /// after it exits the shell prints [`SHELL_PROMPT`] and its status.
    pub fn chat(env: &Env) -> Pane {
        let dir = tempfile::tempdir().unwrap();
        let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
        let vars: Vec<String> = env
            .vars
            .iter()
            .map(|(k, v)| format!("{k}={}", quote(v)))
            .collect();
        let script = format!(
            "cd {}\nenv -i PATH={} HOME={} TERM=\"$TERM\" {} {} chat\necho \"{SHELL_PROMPT}$?\"\nexec sleep 600\n",
            quote(&env.dir.path().display().to_string()),
            quote(&std::env::var("PATH").unwrap_or_default()),
            quote(&env.dir.path().display().to_string()),
            vars.join(" "),
            quote(env!("CARGO_BIN_EXE_switchboard")),
        );
        let script_path = dir.path().join("chat.sh");
        std::fs::write(&script_path, script).unwrap();
        let socket = dir.path().join("tmux.sock");
        let status = Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args([
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "100",
                "-y",
                "50",
            ])
            .arg(format!("bash {}", script_path.display()))
            .status()
            .unwrap();
        assert!(status.success(), "tmux started");
        Pane { socket, _dir: dir }
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// What the pane shows, scrollback included.
    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-S", "-500"])
    }

    /// Types `text` and Enter.
    pub fn line(&self, text: &str) {
        self.tmux(&["send-keys", "-l", text]);
        self.tmux(&["send-keys", "Enter"]);
    }

    /// Presses a key: `C-c`, `C-d`, …
    pub fn key(&self, key: &str) {
        self.tmux(&["send-keys", key]);
    }

    /// Waits until the screen shows `needle` `times` times or more.
    pub fn wait_for_count(&self, needle: &str, times: usize) -> String {
        self.wait_until(&format!("{needle:?} ×{times}"), |screen| {
            screen.matches(needle).count() >= times
        })
    }

    /// Waits until `needle` shows and, below it, the prompt waits for a line:
    /// the answer is complete, so a key now goes to the prompt, not the answer.
    pub fn wait_for_prompt_after(&self, needle: &str) -> String {
        self.wait_until(&format!("the prompt after {needle:?}"), |screen| {
            let mut lines = screen.lines().map(str::trim_end).filter(|l| !l.is_empty());
            lines.next_back() == Some(">") && lines.any(|l| l.contains(needle))
        })
    }

    fn wait_until(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            if start.elapsed() > HANG {
                panic!("the pane never showed {what}\n--- screen ---\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn wait_for(&self, needle: &str) -> String {
        self.wait_for_count(needle, 1)
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}
