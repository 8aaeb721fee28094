//! The intent guard (spec §2 "loop guard"): some requests must be answered from
//! a tool ("show my portfolio" → `portfolio`). When the model answers such a
//! request without calling the tool, the turn injects a corrective message and
//! asks again — at most [`MAX_CORRECTIONS`] times — and otherwise answers with a
//! warning in front, so a made-up answer is never passed off as checked.

use crate::llm::{Message, Role};
use regex::{Regex, RegexBuilder};
use serde::Deserialize;
use std::path::Path;
use std::sync::LazyLock;

/// Corrective messages per turn before the answer goes out with a warning.
pub const MAX_CORRECTIONS: usize = 2;

/// Marks the corrective message as the gateway's, not the user's.
const CORRECTION_MARK: &str = crate::markers::GATEWAY_CHECK;

/// Largest pattern accepted (compiled size is bounded too).
const MAX_PATTERN_CHARS: usize = 2_000;

/// What a follow-up is about when it does not say: a recent message of the
/// conversation on the portfolio.
const PORTFOLIO_TOPIC: &str = r"(?i)\b(portfolio|holdings|positions)\b|持仓|仓位|投资组合";
/// A follow-up that means "look again" ("and now?", "check again", "体检").
const LOOK_AGAIN: &str = r"(?i)^\W*(and\s+)?(now|again|refresh|update|re-?check|check again|what about now|how about now)\b|\b(check[- ]?up|health[- ]?check)\b|再看看|再查|刷新|现在呢|体检";
/// "Diagnose my portfolio", "a check-up of my holdings", "诊断持仓".
const DIAGNOSE_PATTERN: &str = r"(?i)\b(diagnos\w*|check[- ]?up|health[- ]?check|analy[sz]\w*|concentration|diversif\w*)\b.{0,40}\b(portfolio|holdings|positions)\b|(诊断|体检|分析).{0,10}(持仓|仓位|投资组合)";
/// A follow-up asking for the diagnosis ("do a check-up", "诊断一下").
const DIAGNOSE_FOLLOW_UP: &str = r"(?i)\b(diagnos\w*|check[- ]?up|health[- ]?check|analy[sz]e\s+(it|them|that)|how (diversified|concentrated))\b|体检|诊断|分析一下";
/// Recent messages a follow-up's topic is looked for in.
const FOLLOW_UP_WINDOW: usize = 6;

/// "Show my portfolio", "what's in my holdings", "我的持仓", "查看仓位".
const PORTFOLIO_PATTERN: &str = r"(?i)\b(my|our)\s+(stock\s+|crypto\s+)?(portfolio|holdings|positions)\b|\b(show|view|list|display|check|diagnose|analy[sz]e|review)\b.{0,40}\b(portfolio|holdings|positions)\b|我的?(持仓|仓位|投资组合)|(查看|看看|显示|列出|诊断|分析).{0,10}(持仓|仓位|投资组合)";

/// An argument a call must carry to count: `("action", "diagnose")`.
pub type Mode = (String, String);

/// One rule: a user message matching `pattern` — or a follow-up matching
/// `follow_up` in a conversation on its topic — needs a call of one of
/// `tools` (the first is the one named to the model and in the warning),
/// with `mode` when it names one.
#[derive(Debug, Clone)]
pub struct IntentRule {
    pub pattern: Regex,
    pub tools: Vec<String>,
    pub mode: Option<Mode>,
    pub follow_up: Option<FollowUp>,
}

/// A short follow-up ("do a check-up") that still needs the rule's tool when
/// the conversation just was on `topic` (or just used the tool).
#[derive(Debug, Clone)]
pub struct FollowUp {
    pub pattern: Regex,
    pub topic: Regex,
}

/// What one turn must do: call any of these tools (with the mode, if any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub tools: Vec<String>,
    pub mode: Option<Mode>,
}

impl Requirement {
    /// Any of `tools`, in any mode.
    pub fn any(tools: Vec<String>) -> Requirement {
        Requirement { tools, mode: None }
    }

    /// Whether one of `called` (name, JSON arguments) meets it.
    pub fn met_by(&self, called: &[(String, String)]) -> bool {
        called
            .iter()
            .any(|(name, args)| self.tools.contains(name) && self.mode_in(args))
    }

    fn mode_in(&self, args: &str) -> bool {
        let Some((key, value)) = &self.mode else {
            return true;
        };
        serde_json::from_str::<serde_json::Value>(args)
            .ok()
            .and_then(|a| a.get(key).and_then(|v| v.as_str().map(|s| s == value)))
            .unwrap_or(false)
    }

    /// The tool that answers the request (the rule's first).
    pub fn primary(&self) -> &str {
        self.tools.first().map_or("", String::as_str)
    }

    /// How the model is told: "`portfolio` (with action \"diagnose\")".
    fn named(&self) -> String {
        let tools = quoted(&self.tools).join(" or ");
        match &self.mode {
            Some((k, v)) => format!("{tools} (with {k} \"{v}\")"),
            None => tools,
        }
    }
}

/// The rules of a gateway: built-ins plus the operator's (`INTENT_RULES_FILE`).
#[derive(Debug, Clone, Default)]
pub struct IntentRules {
    /// Whether the built-ins ([`BUILTIN`]) apply.
    builtin: bool,
    /// The operator's, after them.
    own: Vec<IntentRule>,
}

/// The built-in rules, compiled once: their Unicode patterns take ~10 ms
/// of CPU to compile, so start-up leaves that to [`IntentRules::warm_up`] on
/// a thread of its own instead of doing it before the first answer.
static BUILTIN: LazyLock<Vec<IntentRule>> = LazyLock::new(compile_builtin);

/// How many rules [`BUILTIN`] holds.
const BUILTIN_RULES: usize = 2;

/// A rules file entry; `tool` is one name or a list of alternatives.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleDef {
    pattern: String,
    tool: OneOrMore,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum OneOrMore {
    One(String),
    More(Vec<String>),
}

/// Why a rules file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum IntentRulesError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not a JSON list of {{\"pattern\", \"tool\"}} objects (tool: a name or a list of names): {source}")]
    Parse {
        path: String,
        source: serde_json::Error,
    },
    #[error("{path}, rule {index}: {problem}")]
    Rule {
        path: String,
        index: usize,
        problem: String,
    },
}

impl IntentRules {
    /// The built-in rules: questions about the portfolio are answered from
    /// the ledger (`portfolio`), or acted on (`update_portfolio`), also when
    /// a follow-up asks to look again; a diagnosis (also a follow-up "do a
    /// check-up" after portfolio talk) needs `portfolio` with action
    /// `diagnose`, not a plain view.
    pub fn builtin() -> IntentRules {
        IntentRules {
            builtin: true,
            own: Vec::new(),
        }
    }

    /// Compiles the built-in rules now (on the calling thread), so the first
    /// turn that checks them does not.
    pub fn warm_up() {
        LazyLock::force(&BUILTIN);
    }

    /// The rules in order: the built-ins, then the operator's.
    fn rules(&self) -> impl Iterator<Item = &IntentRule> {
        let builtin: &[IntentRule] = if self.builtin { &BUILTIN } else { &[] };
        builtin.iter().chain(&self.own)
    }

    /// No rules: the guard never intervenes.
    pub fn none() -> IntentRules {
        IntentRules::default()
    }

    /// The built-ins plus the rules of a JSON file:
    /// `[{"pattern": "(?i)\\bweather\\b", "tool": "get_weather"}]`.
    pub fn with_file(path: &Path) -> Result<IntentRules, IntentRulesError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| IntentRulesError::Read {
            path: shown.clone(),
            source,
        })?;
        let defs: Vec<RuleDef> =
            serde_json::from_str(&text).map_err(|source| IntentRulesError::Parse {
                path: shown.clone(),
                source,
            })?;
        let mut rules = IntentRules::builtin();
        for (i, def) in defs.into_iter().enumerate() {
            let problem = |problem: String| IntentRulesError::Rule {
                path: shown.clone(),
                index: i + 1,
                problem,
            };
            let tools: Vec<String> = match def.tool {
                OneOrMore::One(t) => vec![t],
                OneOrMore::More(ts) => ts,
            }
            .into_iter()
            .map(|t| t.trim().to_owned())
            .collect();
            if tools.is_empty() || tools.iter().any(String::is_empty) {
                return Err(problem("\"tool\" names no tool".into()));
            }
            if def.pattern.chars().count() > MAX_PATTERN_CHARS {
                return Err(problem(format!(
                    "the pattern is longer than {MAX_PATTERN_CHARS} characters"
                )));
            }
            let pattern = compile(&def.pattern).map_err(|e| problem(e.to_string()))?;
            rules.own.push(IntentRule {
                pattern,
                tools,
                mode: None,
                follow_up: None,
            });
        }
        Ok(rules)
    }

    pub fn len(&self) -> usize {
        usize::from(self.builtin) * BUILTIN_RULES + self.own.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What `user_text` requires, among the tools `available` (a rule none
    /// of whose tools is registered is skipped); `recent` is the conversation
    /// before it, for follow-ups.
    pub fn required(
        &self,
        user_text: &str,
        recent: &[Message],
        available: impl Fn(&str) -> bool,
    ) -> Vec<Requirement> {
        let recent = &recent[recent.len().saturating_sub(FOLLOW_UP_WINDOW)..];
        let mut out: Vec<Requirement> = Vec::new();
        for rule in self.rules() {
            let requirement = Requirement {
                tools: rule
                    .tools
                    .iter()
                    .filter(|t| available(t))
                    .cloned()
                    .collect(),
                mode: rule.mode.clone(),
            };
            if requirement.tools.is_empty() || out.contains(&requirement) {
                continue;
            }
            let follows_up = || {
                rule.follow_up.as_ref().is_some_and(|f| {
                    f.pattern.is_match(user_text) && on_topic(f, &rule.tools, recent)
                })
            };
            if rule.pattern.is_match(user_text) || follows_up() {
                out.push(requirement);
            }
        }
        out
    }
}

/// Whether `recent` was on the follow-up's topic: a user message about it,
/// or a call of one of the rule's tools.
fn on_topic(f: &FollowUp, tools: &[String], recent: &[Message]) -> bool {
    recent.iter().any(|m| match m.role {
        Role::User => f.topic.is_match(crate::memory::unwrap(&m.content)),
        Role::Assistant => m.tool_calls.iter().any(|c| tools.contains(&c.name)),
        _ => false,
    })
}

/// The built-in rules (see [`IntentRules::builtin`]); none if a pattern
/// would not compile (the tests make sure they do).
fn compile_builtin() -> Vec<IntentRule> {
    let (Ok(pattern), Ok(diagnose), Ok(topic), Ok(again), Ok(diagnose_again)) = (
        compile(PORTFOLIO_PATTERN),
        compile(DIAGNOSE_PATTERN),
        compile(PORTFOLIO_TOPIC),
        compile(LOOK_AGAIN),
        compile(DIAGNOSE_FOLLOW_UP),
    ) else {
        return Vec::new();
    };
    vec![
        IntentRule {
            pattern,
            tools: vec!["portfolio".into(), "update_portfolio".into()],
            mode: None,
            follow_up: Some(FollowUp {
                pattern: again,
                topic: topic.clone(),
            }),
        },
        IntentRule {
            pattern: diagnose,
            tools: vec!["portfolio".into()],
            mode: Some(("action".into(), "diagnose".into())),
            follow_up: Some(FollowUp {
                pattern: diagnose_again,
                topic,
            }),
        },
    ]
}

fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern).size_limit(1 << 20).build()
}

/// The corrective message that asks the model to use the tools it skipped.
pub fn correction(missing: &[Requirement]) -> String {
    let names = missing
        .iter()
        .map(Requirement::named)
        .collect::<Vec<_>>()
        .join(", and ");
    format!(
        "{CORRECTION_MARK} This request has to be answered with the {names} tool, and you answered \
         without calling it. Call it now and answer from its result; do not guess."
    )
}

/// The warning put in front of an answer given without the required tools.
pub fn warning(missing: &[Requirement]) -> String {
    let names: Vec<&str> = missing.iter().map(Requirement::primary).collect();
    format!(
        "⚠️ Not checked with {}: this answer may be inaccurate.\n\n",
        quoted(&names).join(", ")
    )
}

fn quoted<S: AsRef<str>>(tools: &[S]) -> Vec<String> {
    tools.iter().map(|t| format!("`{}`", t.as_ref())).collect()
}

/// Takes the answers the guard sent back, and its corrections, out of a turn's
/// new messages (`messages[0]` is the user's input, never a correction): they
/// were between the gateway and the model, not part of the conversation.
pub fn strip_corrections(messages: &mut Vec<Message>) {
    let mut i = 1;
    while i < messages.len() {
        if messages[i].role == Role::User && messages[i].content.starts_with(CORRECTION_MARK) {
            let refused = i > 1
                && messages[i - 1].role == Role::Assistant
                && messages[i - 1].tool_calls.is_empty();
            let from = if refused { i - 1 } else { i };
            messages.drain(from..=i);
            i = from.max(1);
        } else {
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(_: &str) -> bool {
        true
    }

    #[test]
    fn the_builtin_patterns_compile_and_are_counted() {
        assert_eq!(compile_builtin().len(), BUILTIN_RULES);
        assert_eq!(IntentRules::builtin().len(), BUILTIN_RULES);
        assert!(IntentRules::none().is_empty());
    }

    #[test]
    fn portfolio_requests_need_the_portfolio_tool() {
        let rules = IntentRules::builtin();
        for text in [
            "show my portfolio",
            "What's in my holdings right now?",
            "Can you review the portfolio for risks",
            "看看我的持仓",
            "我的仓位怎么样",
        ] {
            assert_eq!(rules.required(text, &[], all), vec![portfolio()], "{text}");
        }
        for text in [
            "what is a portfolio?",
            "hello",
            "portfolio theory in two lines",
            "show me the weather",
        ] {
            assert!(rules.required(text, &[], all).is_empty(), "{text}");
        }
    }

    #[test]
    fn rules_for_missing_tools_are_skipped() {
        let rules = IntentRules::builtin();
        assert_eq!(
            rules.required("show my portfolio", &[], |t| t != "portfolio"),
            vec![Requirement::any(vec!["update_portfolio".into()])]
        );
        assert!(rules
            .required("show my portfolio", &[], |t| !t.contains("portfolio"))
            .is_empty());
    }

    #[test]
    fn a_rules_file_adds_rules_and_names_the_broken_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("intents.json");
        std::fs::write(
            &path,
            r#"[{"pattern": "(?i)\\bweather\\b", "tool": "get_weather"}]"#,
        )
        .unwrap();
        let rules = IntentRules::with_file(&path).unwrap();
        assert_eq!(rules.len(), IntentRules::builtin().len() + 1);
        assert_eq!(
            rules.required("Weather in Oslo?", &[], all),
            vec![Requirement::any(vec!["get_weather".into()])]
        );
        std::fs::write(
            &path,
            r#"[{"pattern": "(?i)\\bforecast\\b", "tool": ["forecast", "get_weather"]}]"#,
        )
        .unwrap();
        let rules = IntentRules::with_file(&path).unwrap();
        assert_eq!(
            rules.required("the forecast?", &[], all)[0].tools,
            vec!["forecast".to_owned(), "get_weather".to_owned()]
        );

        std::fs::write(
            &path,
            r#"[{"pattern": "ok", "tool": "a"}, {"pattern": "(unclosed", "tool": "b"}]"#,
        )
        .unwrap();
        let e = IntentRules::with_file(&path).unwrap_err().to_string();
        assert!(e.contains("rule 2"), "{e}");
        std::fs::write(&path, r#"[{"pattern": "x", "tool": "a", "extra": 1}]"#).unwrap();
        assert!(matches!(
            IntentRules::with_file(&path),
            Err(IntentRulesError::Parse { .. })
        ));
    }

    #[test]
    fn texts_name_the_tools() {
        let c = correction(&[portfolio()]);
        assert!(c.starts_with(CORRECTION_MARK));
        assert!(c.contains("`portfolio` or `update_portfolio` tool"), "{c}");
        let w = warning(&[portfolio(), Requirement::any(vec!["b".into()])]);
        assert!(
            w.starts_with("⚠️ Not checked with `portfolio`, `b`:"),
            "{w}"
        );
    }

    #[test]
    fn corrections_are_stripped_but_never_the_input() {
        let marked = || Message::user(format!("{CORRECTION_MARK} call it"));
        let mut messages = vec![
            marked(),
            Message::assistant("guess"),
            marked(),
            Message::assistant("guess again"),
            marked(),
            Message::assistant("the answer"),
        ];
        strip_corrections(&mut messages);
        let texts: Vec<&str> = messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, [messages[0].content.as_str(), "the answer"]);
        assert_eq!(
            texts.len(),
            2,
            "a user's own message is kept even if it looks like one"
        );
    }

    fn portfolio() -> Requirement {
        Requirement::any(vec!["portfolio".into(), "update_portfolio".into()])
    }

    fn diagnose() -> Requirement {
        Requirement {
            tools: vec!["portfolio".into()],
            mode: Some(("action".into(), "diagnose".into())),
        }
    }

    fn calling(tool: &str, args: &str) -> Message {
        Message {
            tool_calls: vec![crate::llm::ToolCall {
                id: "c".into(),
                name: tool.into(),
                arguments: args.into(),
            }],
            ..Message::assistant("")
        }
    }

    #[test]
    fn a_diagnosis_needs_the_diagnose_mode_not_a_view() {
        let rules = IntentRules::builtin();
        assert_eq!(
            rules.required("please diagnose my portfolio", &[], all),
            vec![portfolio(), diagnose()]
        );
        let d = diagnose();
        let call = |args: &str| [("portfolio".to_owned(), args.to_owned())];
        assert!(!d.met_by(&call("{}")) && !d.met_by(&call(r#"{"action": "view"}"#)));
        assert!(d.met_by(&call(r#"{"action": "diagnose"}"#)));
        assert!(portfolio().met_by(&call("{}")));
        let c = correction(&[d]);
        assert!(
            c.contains("`portfolio` (with action \"diagnose\") tool"),
            "{c}"
        );
    }

    #[test]
    fn a_follow_up_after_portfolio_talk_still_needs_the_tool() {
        let rules = IntentRules::builtin();
        let talk = [
            Message::user("show my portfolio"),
            calling("portfolio", "{}"),
            Message::assistant("You hold 10 AAPL."),
        ];
        assert_eq!(
            rules.required("ok, now do a check-up", &talk, all),
            vec![portfolio(), diagnose()]
        );
        assert_eq!(rules.required("and now?", &talk, all), vec![portfolio()]);
        assert_eq!(rules.required("再看看", &talk, all), vec![portfolio()]);
        // Only after such talk: elsewhere a check-up is not about the ledger.
        let weather = [Message::user("will it rain?"), Message::assistant("No.")];
        assert!(rules.required("do a check-up", &weather, all).is_empty());
        assert!(rules.required("do a check-up", &[], all).is_empty());
        // A tool call alone puts the conversation on the topic.
        let called = [calling("portfolio", "{}")];
        assert_eq!(rules.required("诊断一下", &called, all), vec![diagnose()]);
    }
}
