//! `switchboard model`: the configured model and the context budget in use, offline.

use std::process::ExitCode;

use switchboard::agent::{reserve, threshold};
use switchboard::config::Config;
use switchboard::llm::ModelInfo;
use switchboard::store::redact_url;

/// Prints what the gateway would use, without calling the endpoint (`doctor` does).
pub fn run(config: &Config) -> ExitCode {
    let unset = crate::cli::config::unset_model_vars(config);
    if !unset.is_empty() {
        println!("No model is configured: {} not set.", unset.join(" and "));
        println!(
            "Set LLM_BASE_URL and LLM_MODEL (see .env.example), then `switchboard doctor` checks the endpoint answers."
        );
        return ExitCode::SUCCESS;
    }
    let llm = &config.llm;
    let info = ModelInfo::new(llm.model.clone(), llm.context_window);
    let source = match llm.context_window {
        Some(_) => "from LLM_CONTEXT_WINDOW",
        None => "inferred from the model name; set LLM_CONTEXT_WINDOW to override",
    };
    let window = info.context_window as usize;
    println!("model           {}", info.name);
    println!(
        "endpoint        {} ({} API)",
        redact_url(&llm.base_url),
        llm.api.name()
    );
    println!(
        "api key         {}",
        if llm.api_key.is_some() {
            "set (LLM_API_KEY)"
        } else {
            "none"
        }
    );
    println!("context window  {window} tokens ({source})");
    println!(
        "compaction      above {} estimated tokens (window − reserve of {})",
        threshold(window),
        reserve(window)
    );
    println!(
        "idle timeout    {} s (LLM_IDLE_TIMEOUT_SECS)",
        llm.idle_timeout.as_secs()
    );
    match llm.thinking_budget {
        Some(budget) => println!("thinking        {budget} tokens per call (LLM_THINKING_BUDGET)"),
        None => println!("thinking        the endpoint's default (LLM_THINKING_BUDGET unset)"),
    }
    for (i, f) in llm.fallbacks.iter().enumerate() {
        let window = ModelInfo::new(f.model.clone(), f.context_window).context_window;
        println!(
            "fallback {}      {} at {} ({} API, context window {window})",
            i + 1,
            f.model,
            redact_url(&f.base_url),
            f.api.name()
        );
    }
    ExitCode::SUCCESS
}
