//! Reading settings from the environment: the error that names the variable
//! and its fix, and the value parsers the configuration of every part shares.
//! A leaf: configuration slices (memory, platforms) use it without depending
//! on the whole configuration.

/// A configuration problem, naming the variable and how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{var} is not set: {fix}")]
    Missing {
        var: &'static str,
        fix: &'static str,
    },
    #[error("{var} is invalid ({problem}): {fix}")]
    Invalid {
        var: &'static str,
        problem: String,
        fix: &'static str,
    },
    /// A platform adapter's own variables (its message names them).
    #[error("{0}")]
    Platform(String),
}

/// A positive whole number; `None` when unset.
pub fn positive(
    get: &dyn Fn(&str) -> Option<String>,
    var: &'static str,
) -> Result<Option<u64>, ConfigError> {
    match get(var) {
        None => Ok(None),
        Some(raw) => match raw.trim().parse::<u64>() {
            Ok(v) if v > 0 => Ok(Some(v)),
            _ => Err(ConfigError::Invalid {
                var,
                problem: format!("{raw:?} is not a positive number"),
                fix: "use a positive whole number, or unset it for the default",
            }),
        },
    }
}

/// A boolean variable: true/false, yes/no, on/off, 1/0; `None` when unset.
pub fn flag(
    get: &dyn Fn(&str) -> Option<String>,
    var: &'static str,
) -> Result<Option<bool>, ConfigError> {
    match get(var).map(|v| v.trim().to_ascii_lowercase()) {
        None => Ok(None),
        Some(v) if v.is_empty() => Ok(None),
        Some(v) => match v.as_str() {
            "1" | "true" | "yes" | "on" => Ok(Some(true)),
            "0" | "false" | "no" | "off" => Ok(Some(false)),
            _ => Err(ConfigError::Invalid {
                var,
                problem: format!("{v:?} is not a boolean"),
                fix: "use true or false",
            }),
        },
    }
}
