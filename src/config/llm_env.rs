//! The model endpoint's variables (`LLM_*`) and its fallbacks
//! (`LLM_FALLBACK_<n>_*`), checked.

use super::{
    number, ConfigError, FallbackEndpoint, LlmConfig, Lookup, FALLBACK_VARS, FIX_LLM_BASE_URL,
};
use crate::llm::{ApiKind, TextToolCalls};
use std::time::Duration;
use switchboard_platform::Secret;

/// The model endpoint (`LLM_*`) and its fallbacks.
pub(super) fn llm(
    get: &Lookup<'_>,
    base_url: String,
    model: String,
) -> Result<LlmConfig, ConfigError> {
    let max_output_tokens = number(&get, "LLM_MAX_OUTPUT_TOKENS")?;
    let text_tool_calls =
        text_tool_calls("LLM_TEXT_TOOL_CALLS", get("LLM_TEXT_TOOL_CALLS"))?.unwrap_or_default();
    let fallbacks = fallbacks(&get, text_tool_calls)?;
    let anthropic = std::iter::once(api_kind("LLM_API", get("LLM_API"))?)
        .chain(fallbacks.iter().map(|f| f.api))
        .any(|api| api == ApiKind::Anthropic);
    let thinking_budget = thinking_budget(&get, max_output_tokens, anthropic)?;
    Ok(LlmConfig {
        api: api_kind("LLM_API", get("LLM_API"))?,
        base_url,
        api_key: get("LLM_API_KEY").map(Secret::new),
        model,
        context_window: number(&get, "LLM_CONTEXT_WINDOW")?,
        idle_timeout: Duration::from_secs(number(&get, "LLM_IDLE_TIMEOUT_SECS")?.unwrap_or(60)),
        frequency_penalty: frequency_penalty(get("LLM_FREQUENCY_PENALTY"))?,
        max_output_tokens,
        thinking_budget,
        text_tool_calls,
        fallbacks,
    })
}

/// An OpenAI-style base URL over http(s).
pub(super) fn check_base_url(var: &'static str, raw: &str) -> Result<(), ConfigError> {
    let parsed = url::Url::parse(raw).map_err(|e| ConfigError::Invalid {
        var,
        problem: e.to_string(),
        fix: FIX_LLM_BASE_URL,
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(ConfigError::Invalid {
            var,
            problem: format!("scheme {} is not http(s)", parsed.scheme()),
            fix: FIX_LLM_BASE_URL,
        });
    }
    Ok(())
}

/// `LLM_FALLBACK_1_*`, `LLM_FALLBACK_2_*`, ...: the first one without a base
/// URL ends the list.
fn fallbacks(
    get: &impl Fn(&str) -> Option<String>,
    primary_text_tool_calls: TextToolCalls,
) -> Result<Vec<FallbackEndpoint>, ConfigError> {
    let mut out = Vec::new();
    for [url_var, model_var, key_var, window_var, api_var, text_var] in FALLBACK_VARS {
        let Some(base_url) = get(url_var) else { break };
        check_base_url(url_var, &base_url)?;
        let model = get(model_var).ok_or(ConfigError::Missing {
            var: model_var,
            fix: "a fallback endpoint needs the model name it serves",
        })?;
        out.push(FallbackEndpoint {
            api: api_kind(api_var, get(api_var))?,
            base_url,
            api_key: get(key_var).map(Secret::new),
            model,
            context_window: number(get, window_var)?,
            text_tool_calls: text_tool_calls(text_var, get(text_var))?
                .unwrap_or(primary_text_tool_calls),
        });
    }
    Ok(out)
}

/// `LLM_THINKING_BUDGET`, checked against Anthropic's rules when an endpoint
/// speaks its protocol: at least 1,024 tokens, and below the output bound.
fn thinking_budget(
    get: &impl Fn(&str) -> Option<String>,
    max_output_tokens: Option<u32>,
    anthropic: bool,
) -> Result<Option<u32>, ConfigError> {
    if get("LLM_THINKING_BUDGET").is_some_and(|v| v.trim() == "0") {
        return Ok(None);
    }
    let Some(budget) = number::<u32>(get, "LLM_THINKING_BUDGET")? else {
        return Ok(None);
    };
    if anthropic && budget < crate::llm::MIN_THINKING_BUDGET {
        return Err(ConfigError::Invalid {
            var: "LLM_THINKING_BUDGET",
            problem: format!("{budget} is below Anthropic's minimum thinking budget"),
            fix: "use at least 1024, or 0 to turn extended thinking off",
        });
    }
    if max_output_tokens.is_some_and(|max| budget >= max) {
        return Err(ConfigError::Invalid {
            var: "LLM_THINKING_BUDGET",
            problem: format!("{budget} is not below LLM_MAX_OUTPUT_TOKENS"),
            fix: "thinking counts against the output bound: raise LLM_MAX_OUTPUT_TOKENS or lower the budget",
        });
    }
    Ok(Some(budget))
}

/// `LLM_API` (or a fallback's `_API`): the protocol, OpenAI-compatible when unset.
fn api_kind(var: &'static str, raw: Option<String>) -> Result<ApiKind, ConfigError> {
    let Some(raw) = raw else {
        return Ok(ApiKind::default());
    };
    ApiKind::parse(&raw).ok_or(ConfigError::Invalid {
        var,
        problem: format!("unknown API {raw:?}"),
        fix: "use openai (default; any OpenAI-compatible server), anthropic or gemini",
    })
}

/// `LLM_TEXT_TOOL_CALLS` (or a fallback's): auto, on or off; `None` when unset.
fn text_tool_calls(
    var: &'static str,
    raw: Option<String>,
) -> Result<Option<TextToolCalls>, ConfigError> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    TextToolCalls::parse(&raw)
        .map(Some)
        .ok_or(ConfigError::Invalid {
            var,
            problem: format!("unknown setting {raw:?}"),
            fix: "use auto (default: only an answer that is nothing but tool calls), on or off",
        })
}

/// `LLM_FREQUENCY_PENALTY`: a number from -2.0 to 2.0 (OpenAI's range).
fn frequency_penalty(raw: Option<String>) -> Result<Option<f32>, ConfigError> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    match raw.parse::<f32>() {
        Ok(v) if (-2.0..=2.0).contains(&v) => Ok(Some(v)),
        _ => Err(ConfigError::Invalid {
            var: "LLM_FREQUENCY_PENALTY",
            problem: format!("{raw:?} is not a number from -2.0 to 2.0"),
            fix: "use e.g. LLM_FREQUENCY_PENALTY=0.3 (discourages repetition), or unset it",
        }),
    }
}
