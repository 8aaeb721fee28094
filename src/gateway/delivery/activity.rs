//! A running turn's activity as chat lines: one per tool call (its display
//! name, a short masked summary of the arguments, ⏳ then ✓ or ✗ with the
//! duration), a sub-agent's steps nested under its line, a compaction note,
//! a fallback model's name and, at `full`, a clipped reasoning summary. Pure: the turn feeds events in
//! and puts what [`Activity::draft`] and [`Activity::head`] render above the
//! answer.

use std::time::Duration;

pub use crate::domain::Verbosity;

/// The longest argument summary, in characters.
pub(crate) const SUMMARY_CHARS: usize = 60;
/// The longest reasoning summary shown at `full`, in characters.
pub(crate) const REASONING_CHARS: usize = 280;
/// Reasoning kept while the turn runs: its start is shown at `full`, the
/// whole (up to this bound) is kept for the answer's 💭 button.
pub(crate) const REASONING_KEPT: usize = 60_000;
/// Sub-agent steps kept under a call's line (the latest).
const STEPS_SHOWN: usize = 3;
/// Argument names whose values are never shown.
const SECRET_KEYS: [&str; 8] = [
    "token",
    "password",
    "passwd",
    "secret",
    "key",
    "auth",
    "credential",
    "cookie",
];
const MASK: &str = "•••";

/// Where a tool call is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    /// Asked for by the model, not started yet (not shown).
    Planned,
    Running,
    Done(Duration),
    Failed(Duration),
}

#[derive(Debug, Clone)]
struct Call {
    id: String,
    label: String,
    summary: String,
    state: State,
    steps: Vec<String>,
}

/// What a turn did so far.
#[derive(Debug, Clone, Default)]
pub(crate) struct Activity {
    calls: Vec<Call>,
    /// Estimated context tokens before and after the last compaction.
    compaction: Option<(usize, usize)>,
    /// The model that took over when the one asked first failed.
    fallback: Option<String>,
    /// The model a routing rule chose for this turn, and why.
    routed: Option<String>,
    reasoning: String,
    /// `reasoning`'s length in characters.
    reasoning_chars: usize,
}

impl Activity {
    /// The model asked for call `id` of a tool shown as `label`, with the
    /// JSON `arguments`.
    pub(crate) fn planned(&mut self, id: &str, label: &str, arguments: &str) {
        if self.find(id).is_some() {
            return;
        }
        self.calls.push(Call {
            id: id.to_owned(),
            label: one_line(label),
            summary: summarize(arguments),
            state: State::Planned,
            steps: Vec::new(),
        });
    }

    pub(crate) fn started(&mut self, id: &str, label: &str) {
        self.call(id, label).state = State::Running;
    }

    pub(crate) fn finished(&mut self, id: &str, label: &str, ok: bool, took: Duration) {
        self.call(id, label).state = if ok {
            State::Done(took)
        } else {
            State::Failed(took)
        };
    }

    /// A step a running call reports (a sub-agent's progress line). A
    /// sub-agent's words in progress replace its previous words.
    pub(crate) fn step(&mut self, id: &str, label: &str, line: &str) {
        let line = crate::text::clip(&one_line(&crate::secrets::scrub(line)), 80);
        let call = self.call(id, label);
        let writes = |l: &str| {
            l.split_once(" — ")
                .is_some_and(|(_, detail)| detail.starts_with(crate::agent::WRITES))
        };
        match call.steps.last_mut() {
            Some(last) if writes(last) && writes(&line) => *last = line,
            Some(last) if *last == line => {}
            _ => call.steps.push(line),
        }
        let extra = call.steps.len().saturating_sub(STEPS_SHOWN);
        call.steps.drain(..extra);
    }

    pub(crate) fn compacted(&mut self, tokens_before: usize, tokens_after: usize) {
        self.compaction = Some((tokens_before, tokens_after));
    }

    /// A fallback model serves the turn: the one asked first failed.
    pub(crate) fn switched(&mut self, model: &str) {
        self.fallback = Some(one_line(model).replace('`', "'"));
    }

    /// A routing rule chose `model` for this turn.
    pub(crate) fn routed(&mut self, model: &str, why: &str) {
        self.routed = Some(format!("{} ({why})", one_line(model).replace('`', "'")));
    }

    /// Reasoning the model streamed (kept up to [`REASONING_KEPT`] characters).
    pub(crate) fn reasoned(&mut self, delta: &str) {
        let room = REASONING_KEPT.saturating_sub(self.reasoning_chars);
        let kept: String = delta.chars().take(room).collect();
        self.reasoning_chars += kept.chars().count();
        self.reasoning.push_str(&kept);
    }

    /// Whether anything would be shown at `tools`.
    fn is_empty(&self) -> bool {
        self.compaction.is_none()
            && self.fallback.is_none()
            && self.routed.is_none()
            && self.calls.iter().all(|c| c.state == State::Planned)
    }

    /// The lines shown above the streamed answer while the turn runs.
    pub(crate) fn draft(&self, verbosity: Verbosity) -> String {
        if verbosity == Verbosity::Off {
            return String::new();
        }
        let mut lines = Vec::new();
        if verbosity == Verbosity::Full {
            lines.extend(self.reasoning_quote());
        }
        for call in self.calls.iter().filter(|c| c.state != State::Planned) {
            lines.push(call_line(call));
            lines.extend(call.steps.iter().map(|s| format!("↳ _{}_", escape(s))));
        }
        lines.extend(self.compaction_note());
        lines.extend(self.routed.as_ref().map(|r| format!("↪ _model {r}_")));
        lines.extend(
            self.fallback
                .as_ref()
                .map(|m| format!("↪ _fallback model `{m}`_")),
        );
        lines.join("\n")
    }

    /// What stays above the final answer: one line (`🔧 3 tools · 4.2 s`),
    /// and at `full` the reasoning summary; nothing at `off` or when the turn
    /// used no tool and was not compacted.
    pub(crate) fn head(&self, verbosity: Verbosity) -> String {
        if verbosity == Verbosity::Off || (self.is_empty() && verbosity == Verbosity::Tools) {
            return String::new();
        }
        let mut lines = Vec::new();
        if verbosity == Verbosity::Full {
            lines.extend(self.reasoning_quote());
        }
        let ran: Vec<&Call> = self
            .calls
            .iter()
            .filter(|c| c.state != State::Planned)
            .collect();
        let mut parts = Vec::new();
        if !ran.is_empty() {
            let total: Duration = ran.iter().map(|c| c.took()).sum();
            let failed = ran
                .iter()
                .filter(|c| matches!(c.state, State::Failed(_)))
                .count();
            let noun = if ran.len() == 1 { "tool" } else { "tools" };
            let mut s = format!("🔧 {} {noun} · {}", ran.len(), seconds(total));
            if failed > 0 {
                s.push_str(&format!(" · {failed} failed"));
            }
            parts.push(s);
        }
        if let Some((before, after)) = self.compaction {
            parts.push(format!("🗜 {}", compaction_text(before, after)));
        }
        if let Some(routed) = &self.routed {
            parts.push(format!("↪ model {routed}"));
        }
        if let Some(model) = &self.fallback {
            parts.push(format!("↪ fallback model `{model}`"));
        }
        if !parts.is_empty() {
            lines.push(format!("_{}_", parts.join(" · ")));
        }
        lines.join("\n")
    }

    fn find(&self, id: &str) -> Option<usize> {
        self.calls.iter().position(|c| c.id == id)
    }

    /// The call `id`, added when the model's request for it was not seen
    /// (a call refused before it ran still gets its line).
    fn call(&mut self, id: &str, label: &str) -> &mut Call {
        let i = match self.find(id) {
            Some(i) => i,
            None => {
                self.planned(id, label, "");
                self.calls.len() - 1
            }
        };
        &mut self.calls[i]
    }

    fn compaction_note(&self) -> Option<String> {
        self.compaction
            .map(|(before, after)| format!("🗜 _{}_", compaction_text(before, after)))
    }

    /// The whole reasoning, secrets scrubbed, when its quote at `full` had
    /// to be clipped (none when it was shown whole).
    pub(crate) fn clipped_reasoning(&self) -> Option<String> {
        let text = crate::secrets::scrub(self.reasoning.trim());
        (one_line(&text).chars().count() > REASONING_CHARS).then(|| text.into_owned())
    }

    /// The start of the reasoning, masked and clipped, as a quote.
    fn reasoning_quote(&self) -> Option<String> {
        let text = one_line(&crate::secrets::scrub(self.reasoning.trim()));
        if text.is_empty() {
            return None;
        }
        let clipped = crate::text::clip(&text, REASONING_CHARS);
        Some(format!("> 💭 _{}_", escape(&clipped)))
    }
}

impl Call {
    fn took(&self) -> Duration {
        match self.state {
            State::Done(d) | State::Failed(d) => d,
            State::Planned | State::Running => Duration::ZERO,
        }
    }
}

/// `text` with `head` (activity lines) above it.
pub(crate) fn above(head: &str, text: &str) -> String {
    match (head.trim().is_empty(), text.trim().is_empty()) {
        (true, _) => text.to_owned(),
        (false, true) => head.to_owned(),
        (false, false) => format!("{head}\n\n{text}"),
    }
}

fn call_line(call: &Call) -> String {
    let mut line = match call.state {
        State::Planned | State::Running => format!("⏳ {}", escape(&call.label)),
        State::Done(_) => format!("✓ {}", escape(&call.label)),
        State::Failed(_) => format!("✗ {}", escape(&call.label)),
    };
    if !call.summary.is_empty() {
        line.push_str(&format!(" · `{}`", call.summary));
    }
    if let State::Done(d) | State::Failed(d) = call.state {
        line.push_str(&format!(" · {}", seconds(d)));
    }
    line
}

fn compaction_text(before: usize, after: usize) -> String {
    format!(
        "context compacted: {} → {} tokens",
        thousands(before),
        thousands(after)
    )
}

/// `4.2 s`.
fn seconds(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// `48K` from 48 213; small counts as they are.
fn thousands(n: usize) -> String {
    if n >= 1000 {
        format!("{}K", (n + 500) / 1000)
    } else {
        n.to_string()
    }
}

/// A short, safe summary of a call's JSON arguments: the value alone when
/// there is one, else `name: value` pairs; values of secret-named arguments
/// masked, known secrets scrubbed, one line, at most [`SUMMARY_CHARS`]
/// characters, no backticks (it is shown as inline code).
pub(crate) fn summarize(arguments: &str) -> String {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str(arguments) else {
        return String::new();
    };
    let shown: Vec<(String, String)> = map
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| {
            let value = if is_secret_key(k) {
                MASK.to_owned()
            } else {
                match v {
                    serde_json::Value::String(s) => crate::secrets::shown_url(s),
                    other => other.to_string(),
                }
            };
            (k.clone(), value)
        })
        .collect();
    let text = match shown.as_slice() {
        [] => String::new(),
        [(k, v)] if !is_secret_key(k) => v.clone(),
        pairs => pairs
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join(", "),
    };
    let text = crate::secrets::scrub(&one_line(&text)).replace('`', "'");
    crate::text::clip(text.trim(), SUMMARY_CHARS - 1)
}

fn is_secret_key(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_KEYS.iter().any(|k| name.contains(k)) || crate::secrets::is_secret_name(&name)
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Markdown's emphasis and link characters taken literally.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(
            c,
            '*' | '_' | '`' | '[' | ']' | '\\' | '~' | '|' | '<' | '>'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_call_runs_then_shows_its_result_and_time() {
        let mut a = Activity::default();
        a.planned("c1", "Read file", r#"{"path":"notes/a.txt"}"#);
        assert_eq!(a.draft(Verbosity::Tools), "", "planned calls are not shown");
        a.started("c1", "Read file");
        assert_eq!(a.draft(Verbosity::Tools), "⏳ Read file · `notes/a.txt`");
        a.finished("c1", "Read file", true, ms(1234));
        assert_eq!(
            a.draft(Verbosity::Tools),
            "✓ Read file · `notes/a.txt` · 1.2 s"
        );
        a.planned("c2", "Run a command", r#"{"command":"ls","timeout":5}"#);
        a.started("c2", "Run a command");
        a.finished("c2", "Run a command", false, ms(3000));
        assert_eq!(
            a.draft(Verbosity::Tools).lines().nth(1),
            Some("✗ Run a command · `command: ls, timeout: 5` · 3.0 s")
        );
        assert_eq!(a.head(Verbosity::Tools), "_🔧 2 tools · 4.2 s · 1 failed_");
        assert_eq!(a.draft(Verbosity::Off), "");
        assert_eq!(a.head(Verbosity::Off), "");
    }

    #[test]
    fn secret_arguments_are_masked_and_the_summary_is_short() {
        let s = summarize(
            r#"{"url":"https://api.x/v1","api_key":"sk-live-123456789","password":"hunter2"}"#,
        );
        assert!(!s.contains("sk-live") && !s.contains("hunter2"), "{s}");
        assert!(s.contains("api_key: •••"), "{s}");
        let s = summarize(r#"{"token":"abcdef"}"#);
        assert_eq!(s, "token: •••");
        let s = summarize(r#"{"url":"https://user:pw123456@host.example/x"}"#);
        assert!(!s.contains("pw123456"), "{s}");
        let long = format!(r#"{{"text":"{}"}}"#, "word ".repeat(40));
        let s = summarize(&long);
        assert!(s.chars().count() <= SUMMARY_CHARS, "{s}");
        assert!(s.ends_with('…'));
        assert_eq!(summarize(r#"{"cmd":"echo `x`\nls"}"#), "echo 'x' ls");
        assert_eq!(summarize("not json"), "");
    }

    #[test]
    fn sub_agent_steps_nest_under_their_call() {
        let mut a = Activity::default();
        a.planned("d", "Ask the research sub-agent", r#"{"task":"find x"}"#);
        a.started("d", "Ask the research sub-agent");
        for n in 1..=5 {
            a.step(
                "d",
                "x",
                &format!("research sub-agent — step {n}: web_fetch"),
            );
        }
        let draft = a.draft(Verbosity::Tools);
        let lines: Vec<&str> = draft.lines().collect();
        assert_eq!(lines[0], "⏳ Ask the research sub-agent · `find x`");
        assert_eq!(lines.len(), 1 + STEPS_SHOWN, "{draft}");
        assert_eq!(lines[3], "↳ _research sub-agent — step 5: web\\_fetch_");
    }

    #[test]
    fn a_sub_agents_words_replace_each_other_under_its_call() {
        let mut a = Activity::default();
        a.started("d", "Ask the research sub-agent");
        a.step("d", "x", "research sub-agent — writes: The notes");
        a.step("d", "x", "research sub-agent — writes: The notes say buy");
        a.step("d", "x", "research sub-agent — step 1: read_file");
        a.step("d", "x", "research sub-agent — writes: Done");
        let draft = a.draft(Verbosity::Tools);
        let lines: Vec<&str> = draft.lines().skip(1).collect();
        assert_eq!(
            lines,
            [
                "↳ _research sub-agent — writes: The notes say buy_",
                "↳ _research sub-agent — step 1: read\\_file_",
                "↳ _research sub-agent — writes: Done_",
            ],
            "{draft}"
        );
    }

    #[test]
    fn compaction_is_noted_while_running_and_in_the_collapsed_line() {
        let mut a = Activity::default();
        a.compacted(48_213, 9_100);
        assert_eq!(
            a.draft(Verbosity::Tools),
            "🗜 _context compacted: 48K → 9K tokens_"
        );
        assert_eq!(
            a.head(Verbosity::Tools),
            "_🗜 context compacted: 48K → 9K tokens_"
        );
    }

    #[test]
    fn a_fallback_model_is_named() {
        let mut a = Activity::default();
        a.switched("backup-model");
        assert_eq!(
            a.draft(Verbosity::Tools),
            "↪ _fallback model `backup-model`_"
        );
        assert_eq!(
            a.head(Verbosity::Tools),
            "_↪ fallback model `backup-model`_"
        );
        assert_eq!(a.head(Verbosity::Off), "");
    }

    #[test]
    fn nothing_is_added_to_a_plain_answer() {
        let a = Activity::default();
        assert_eq!(a.head(Verbosity::Tools), "");
        assert_eq!(above("", "Hi"), "Hi");
        assert_eq!(
            above("_🔧 1 tool · 0.1 s_", "Hi"),
            "_🔧 1 tool · 0.1 s_\n\nHi"
        );
    }

    #[test]
    fn full_adds_a_clipped_reasoning_quote() {
        let mut a = Activity::default();
        a.reasoned(&"think ".repeat(500));
        a.planned("c", "Read file", r#"{"path":"a"}"#);
        a.started("c", "Read file");
        a.finished("c", "Read file", true, ms(100));
        let head = a.head(Verbosity::Full);
        let quote = head.lines().next().unwrap_or_default();
        assert!(quote.starts_with("> 💭 _think"), "{head}");
        assert!(quote.chars().count() < REASONING_CHARS + 20, "{quote}");
        assert!(head.ends_with("_🔧 1 tool · 0.1 s_"), "{head}");
        assert!(!a.head(Verbosity::Tools).contains("💭"));
        let whole = a.clipped_reasoning().unwrap();
        assert_eq!(
            whole,
            "think ".repeat(500).trim(),
            "kept whole for the button"
        );
    }

    #[test]
    fn short_reasoning_is_shown_whole_and_long_is_kept_bounded() {
        let mut a = Activity::default();
        a.reasoned("A short thought.");
        assert_eq!(a.clipped_reasoning(), None);
        assert!(a.head(Verbosity::Full).contains("A short thought."));
        let mut a = Activity::default();
        for _ in 0..100 {
            a.reasoned(&"x".repeat(1_000));
        }
        let whole = a.clipped_reasoning().unwrap();
        assert_eq!(whole.chars().count(), REASONING_KEPT);
    }

    #[test]
    fn verbosity_names_parse() {
        for v in Verbosity::ALL {
            assert_eq!(Verbosity::parse(v.as_str()), Some(v));
        }
        assert_eq!(Verbosity::parse(" FULL "), Some(Verbosity::Full));
        assert_eq!(Verbosity::parse("loud"), None);
        assert_eq!(Verbosity::default(), Verbosity::Tools);
    }
}
