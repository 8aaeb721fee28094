//! The intent guard (spec §2 "loop guard"): some requests must be answered from
//! a tool ("show my portfolio" → `portfolio`). When the model answers such a
//! request without calling the tool, the turn injects a corrective message and
//! asks again — at most [`MAX_CORRECTIONS`] times — and otherwise answers with a
//! warning in front, so a made-up answer is never passed off as checked.

use regex::{Regex, RegexBuilder};
use serde::Deserialize;
use std::path::Path;

/// Corrective messages per turn before the answer goes out with a warning.
pub const MAX_CORRECTIONS: usize = 2;

/// Marks the corrective message as the gateway's, not the user's.
const CORRECTION_MARK: &str = "[GATEWAY CHECK - NOT USER INPUT]";

/// Largest pattern accepted (compiled size is bounded too).
const MAX_PATTERN_CHARS: usize = 2_000;

/// "Show my portfolio", "what's in my holdings", "我的持仓", "查看仓位".
const PORTFOLIO_PATTERN: &str = r"(?i)\b(my|our)\s+(stock\s+|crypto\s+)?(portfolio|holdings|positions)\b|\b(show|view|list|display|check|diagnose|analy[sz]e|review)\b.{0,40}\b(portfolio|holdings|positions)\b|我的?(持仓|仓位|投资组合)|(查看|看看|显示|列出|诊断|分析).{0,10}(持仓|仓位|投资组合)";

/// One rule: a user message matching `pattern` needs a call of `tool`.
#[derive(Debug, Clone)]
pub struct IntentRule {
    pub pattern: Regex,
    pub tool: String,
}

/// The rules of a gateway: built-ins plus the operator's (`INTENT_RULES_FILE`).
#[derive(Debug, Clone, Default)]
pub struct IntentRules(Vec<IntentRule>);

/// A rules file entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleDef {
    pattern: String,
    tool: String,
}

/// Why a rules file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum IntentRulesError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not a JSON list of {{\"pattern\", \"tool\"}} objects: {source}")]
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
    /// The built-in rules (the portfolio ledger).
    pub fn builtin() -> IntentRules {
        IntentRules(
            compile(PORTFOLIO_PATTERN)
                .map(|pattern| IntentRule {
                    pattern,
                    tool: "portfolio".into(),
                })
                .into_iter()
                .collect(),
        )
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
            if def.tool.trim().is_empty() {
                return Err(problem("\"tool\" is empty".into()));
            }
            if def.pattern.chars().count() > MAX_PATTERN_CHARS {
                return Err(problem(format!(
                    "the pattern is longer than {MAX_PATTERN_CHARS} characters"
                )));
            }
            let pattern = compile(&def.pattern).map_err(|e| problem(e.to_string()))?;
            rules.0.push(IntentRule {
                pattern,
                tool: def.tool.trim().to_owned(),
            });
        }
        Ok(rules)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The tools `user_text` requires, among those `available`.
    pub fn required<'a>(
        &'a self,
        user_text: &str,
        available: impl Fn(&str) -> bool,
    ) -> Vec<&'a str> {
        let mut tools: Vec<&str> = Vec::new();
        for rule in &self.0 {
            if !tools.contains(&rule.tool.as_str())
                && available(&rule.tool)
                && rule.pattern.is_match(user_text)
            {
                tools.push(&rule.tool);
            }
        }
        tools
    }
}

fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern).size_limit(1 << 20).build()
}

/// The corrective message that asks the model to use the tools it skipped.
pub fn correction<S: AsRef<str>>(missing: &[S]) -> String {
    let names = tool_names(missing);
    format!(
        "{CORRECTION_MARK} This request has to be answered from the {names} tool, and you answered \
         without calling it. Call it now and answer from its result; do not guess."
    )
}

/// The warning put in front of an answer given without the required tools.
pub fn warning<S: AsRef<str>>(missing: &[S]) -> String {
    let names = tool_names(missing);
    format!("⚠️ Not checked with {names}: this answer may be inaccurate.\n\n")
}

fn tool_names<S: AsRef<str>>(tools: &[S]) -> String {
    tools
        .iter()
        .map(|t| format!("`{}`", t.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(_: &str) -> bool {
        true
    }

    #[test]
    fn portfolio_requests_need_the_portfolio_tool() {
        let rules = IntentRules::builtin();
        for text in [
            "show my portfolio",
            "What's in my holdings right now?",
            "Can you review the portfolio for risks",
            "看看我的持仓",
            "帮我诊断一下投资组合",
            "我的仓位怎么样",
        ] {
            assert_eq!(rules.required(text, all), vec!["portfolio"], "{text}");
        }
        for text in [
            "what is a portfolio?",
            "hello",
            "portfolio theory in two lines",
            "show me the weather",
        ] {
            assert!(rules.required(text, all).is_empty(), "{text}");
        }
    }

    #[test]
    fn rules_for_missing_tools_are_skipped() {
        let rules = IntentRules::builtin();
        assert!(rules
            .required("show my portfolio", |t| t != "portfolio")
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
        assert_eq!(rules.len(), 2);
        assert_eq!(rules.required("Weather in Oslo?", all), vec!["get_weather"]);

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
        assert!(correction(&["portfolio"]).contains("`portfolio`"));
        assert!(correction(&["portfolio"]).starts_with(CORRECTION_MARK));
        assert!(warning(&["a", "b"]).contains("`a`, `b`"));
    }
}
