//! The model settings: who may switch models, the routing rules and the
//! daily budgets (`MODELS_USER_SELECTABLE`, `MODEL_ROUTE_*`, `BUDGET_*`).

use crate::env::{positive, ConfigError};
use regex::Regex;

/// What the search rule matches when `MODEL_ROUTE_SEARCH_PATTERN` is unset:
/// asks for fresh information (in English, or with the seed's Chinese cues:
/// 新闻, 最新, 今天, 实时, 现在, 目前, 最近, 天气, 股价, 行情, 汇率), or a link.
pub const DEFAULT_SEARCH_PATTERN: &str = r"(?i)\b(latest|news|today|tonight|this week|current(ly)?|right now|price of|weather)\b|新闻|最新|今天|今日|实时|现在|目前|最近|天气|股价|行情|汇率|https?://";
/// Messages up to this many characters are chit-chat for the cheap rule.
pub const DEFAULT_CHEAP_MAX_CHARS: usize = 40;

/// Which models users may pick with `/model`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Selectable {
    /// Only the default (the operator's choice).
    #[default]
    None,
    /// Every catalogue model.
    All,
    /// These names.
    Named(Vec<String>),
}

impl Selectable {
    pub fn allows(&self, name: &str) -> bool {
        match self {
            Selectable::None => false,
            Selectable::All => true,
            Selectable::Named(names) => names.iter().any(|n| n == name),
        }
    }
}

/// The routing rules; a rule without its model is off.
#[derive(Debug, Clone, Default)]
pub struct Routes {
    /// A message with images, when the session's model cannot see.
    pub vision: Option<String>,
    /// A message matching `search_pattern`.
    pub search: Option<String>,
    pub search_pattern: Option<Regex>,
    /// Short chit-chat (at most `cheap_max_chars`, no files, not a command).
    pub cheap: Option<String>,
    pub cheap_max_chars: usize,
}

/// Daily budgets in micro-dollars (none: no limit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Budgets {
    pub user_daily_micros: Option<i64>,
    pub total_daily_micros: Option<i64>,
}

#[derive(Debug, Clone, Default)]
pub struct ModelSettings {
    pub selectable: Selectable,
    pub routes: Routes,
    pub budgets: Budgets,
}

impl ModelSettings {
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> Result<ModelSettings, ConfigError> {
        let selectable = match get("MODELS_USER_SELECTABLE") {
            None => Selectable::None,
            Some(raw) if raw.trim() == "*" => Selectable::All,
            Some(raw) => Selectable::Named(
                raw.split(',')
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned)
                    .collect(),
            ),
        };
        let search_pattern = match get("MODEL_ROUTE_SEARCH_PATTERN") {
            Some(raw) => Some(Regex::new(&raw).map_err(|e| ConfigError::Invalid {
                var: "MODEL_ROUTE_SEARCH_PATTERN",
                problem: e.to_string(),
                fix: "use a regular expression, e.g. (?i)\\b(news|today)\\b, or unset it for the default",
            })?),
            None => Regex::new(DEFAULT_SEARCH_PATTERN).ok(),
        };
        let cheap_max_chars = positive(get, "MODEL_ROUTE_CHEAP_MAX_CHARS")?
            .map_or(DEFAULT_CHEAP_MAX_CHARS, |n| {
                usize::try_from(n).unwrap_or(usize::MAX)
            });
        Ok(ModelSettings {
            selectable,
            routes: Routes {
                vision: get("MODEL_ROUTE_VISION"),
                search: get("MODEL_ROUTE_SEARCH"),
                search_pattern,
                cheap: get("MODEL_ROUTE_CHEAP"),
                cheap_max_chars,
            },
            budgets: Budgets {
                user_daily_micros: usd(get, "BUDGET_USER_DAILY_USD")?,
                total_daily_micros: usd(get, "BUDGET_TOTAL_DAILY_USD")?,
            },
        })
    }
}

/// A positive amount of dollars, as micro-dollars.
fn usd(
    get: &dyn Fn(&str) -> Option<String>,
    var: &'static str,
) -> Result<Option<i64>, ConfigError> {
    let Some(raw) = get(var) else {
        return Ok(None);
    };
    match raw.trim().trim_start_matches('$').parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(Some((v * 1e6).round() as i64)),
        _ => Err(ConfigError::Invalid {
            var,
            problem: format!("{raw:?} is not a positive amount of dollars"),
            fix: "use dollars, e.g. 2.50, or unset it for no budget",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(vars: &[(&str, &str)]) -> Result<ModelSettings, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        ModelSettings::from_lookup(&|k| map.get(k).cloned())
    }

    #[test]
    fn settings_parse_with_defaults_and_refuse_bad_values() {
        let d = read(&[]).unwrap();
        assert_eq!(d.selectable, Selectable::None);
        assert!(d
            .routes
            .search_pattern
            .as_ref()
            .unwrap()
            .is_match("any news today?"));
        assert!(d
            .routes
            .search_pattern
            .as_ref()
            .unwrap()
            .is_match("read https://example.com"));
        assert!(!d
            .routes
            .search_pattern
            .as_ref()
            .unwrap()
            .is_match("write me a poem"));
        assert_eq!(d.budgets, Budgets::default());
        let s = read(&[
            ("MODELS_USER_SELECTABLE", "a, b"),
            ("BUDGET_USER_DAILY_USD", "$1.50"),
        ])
        .unwrap();
        assert!(s.selectable.allows("b") && !s.selectable.allows("c"));
        assert_eq!(s.budgets.user_daily_micros, Some(1_500_000));
        assert!(read(&[("MODELS_USER_SELECTABLE", "*")])
            .unwrap()
            .selectable
            .allows("x"));
        assert!(read(&[("BUDGET_TOTAL_DAILY_USD", "-1")]).is_err());
        assert!(read(&[("MODEL_ROUTE_SEARCH_PATTERN", "(")]).is_err());
    }
}
