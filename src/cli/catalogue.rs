//! `switchboard model add|remove|list|default|fallback`: the model catalogue
//! in the database (the running gateway reads it at each turn), and
//! `switchboard usage`: tokens and estimated cost per model.

use clap::{Args, Subcommand};
use std::process::ExitCode;
use switchboard::llm::ApiKind;
use switchboard::store::{ModelRow, Prices, Store};

#[derive(Debug, Subcommand)]
pub enum ModelAction {
    /// List the catalogue (default and fallbacks first, prices per 1M tokens).
    List,
    /// Add a model, or replace the entry of that name.
    Add(AddArgs),
    /// Remove a model from the catalogue.
    Remove { name: String },
    /// Make a model the default (`env`: back to the LLM_* variables).
    Default { name: String },
    /// The default's fallbacks, in order (none: no fallbacks).
    Fallback { names: Vec<String> },
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The model's name as its endpoint knows it (e.g. gpt-4o).
    pub name: String,
    /// openai, anthropic or gemini.
    #[arg(long, default_value = "openai")]
    pub api: String,
    /// Base URL with the version segment (e.g. https://api.openai.com/v1),
    /// without credentials (see --base-url-env).
    #[arg(long)]
    pub base_url: String,
    /// The environment variable holding the base URL with its credentials
    /// (`https://user:pass@host/v1`, `?key=`); the catalogue stores none.
    #[arg(long)]
    pub base_url_env: Option<String>,
    /// The environment variable holding its key (the key itself is never stored).
    #[arg(long)]
    pub key_env: Option<String>,
    /// Context window in tokens (default: inferred from the name).
    #[arg(long)]
    pub context: Option<u32>,
    /// USD per 1M input tokens.
    #[arg(long, default_value_t = 0.0)]
    pub price_in: f64,
    /// USD per 1M output tokens.
    #[arg(long, default_value_t = 0.0)]
    pub price_out: f64,
    /// USD per 1M input tokens read from the cache (default: the input price).
    #[arg(long, default_value_t = 0.0)]
    pub price_cache_read: f64,
    /// USD per 1M input tokens written to the cache (default: the input price).
    #[arg(long, default_value_t = 0.0)]
    pub price_cache_write: f64,
    /// It takes images.
    #[arg(long)]
    pub vision: bool,
    /// It cannot call tools.
    #[arg(long)]
    pub no_tools: bool,
    /// It reasons (LLM_THINKING_BUDGET applies to it).
    #[arg(long)]
    pub reasoning: bool,
}

pub async fn run(database_url: &str, action: ModelAction) -> anyhow::Result<ExitCode> {
    let store = Store::open(database_url).await?;
    match action {
        ModelAction::List => list(&store).await?,
        ModelAction::Add(a) => add(&store, a).await?,
        ModelAction::Remove { name } => remove(&store, &name).await?,
        ModelAction::Default { name } => set_default(&store, &name).await?,
        ModelAction::Fallback { names } => set_fallbacks(&store, &names).await?,
    }
    store.close().await;
    Ok(ExitCode::SUCCESS)
}

/// Checks what `model add` was given, refusing what the catalogue must not hold.
fn check_add(a: &AddArgs) -> anyhow::Result<()> {
    if ApiKind::parse(&a.api).is_none() {
        anyhow::bail!("--api {:?} is not one of {}", a.api, ApiKind::NAMES);
    }
    if url::Url::parse(&a.base_url).is_err() {
        anyhow::bail!(
            "--base-url {:?} is not a URL",
            switchboard::secrets::shown_url(&a.base_url)
        );
    }
    if switchboard::models::without_credentials(&a.base_url).1 {
        anyhow::bail!(
            "--base-url holds credentials, which the catalogue does not store: put the whole URL in a variable of the gateway's environment, pass --base-url-env VAR, and --base-url without them"
        );
    }
    let prices = [
        a.price_in,
        a.price_out,
        a.price_cache_read,
        a.price_cache_write,
    ];
    if prices.iter().any(|p| !p.is_finite() || *p < 0.0) {
        anyhow::bail!("prices are dollars per million tokens, 0 or more");
    }
    let a_variable = |v: &String| v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if a.key_env.as_ref().is_some_and(|v| !a_variable(v)) {
        anyhow::bail!("--key-env names a variable (like OPENAI_API_KEY), not the key itself");
    }
    if a.base_url_env.as_ref().is_some_and(|v| !a_variable(v)) {
        anyhow::bail!("--base-url-env names a variable (like PROXY_LLM_URL), not the URL itself");
    }
    Ok(())
}

async fn add(store: &Store, a: AddArgs) -> anyhow::Result<()> {
    check_add(&a)?;
    store
        .put_model(&ModelRow {
            name: a.name.clone(),
            api: a.api.to_ascii_lowercase(),
            base_url: a.base_url,
            key_env: a.key_env,
            url_env: a.base_url_env,
            context_window: a.context,
            prices: Prices {
                input: a.price_in,
                output: a.price_out,
                cache_read: a.price_cache_read,
                cache_write: a.price_cache_write,
            },
            vision: a.vision,
            tools: !a.no_tools,
            reasoning: a.reasoning,
            role: None,
            rank: 0,
            seeded: false,
        })
        .await?;
    store
        .audit()
        .record("model.added", serde_json::json!({ "name": a.name }))
        .await;
    println!("Model {} is in the catalogue.", a.name);
    Ok(())
}

async fn remove(store: &Store, name: &str) -> anyhow::Result<()> {
    if !store.remove_model(name).await? {
        anyhow::bail!("no model named {name} (see `switchboard model list`)");
    }
    store
        .audit()
        .record("model.removed", serde_json::json!({ "name": name }))
        .await;
    println!("Removed {name}.");
    Ok(())
}

async fn set_default(store: &Store, name: &str) -> anyhow::Result<()> {
    if name == "env" {
        store.set_default_model(None).await?;
        println!("The default is the LLM_* endpoint again.");
    } else {
        known(store, name).await?;
        store.set_default_model(Some(name)).await?;
        println!("{name} is the default model.");
    }
    store
        .audit()
        .record("model.default", serde_json::json!({ "name": name }))
        .await;
    Ok(())
}

async fn set_fallbacks(store: &Store, names: &[String]) -> anyhow::Result<()> {
    for name in names {
        known(store, name).await?;
    }
    store.set_fallback_models(names).await?;
    store
        .audit()
        .record("model.fallbacks", serde_json::json!({ "names": names }))
        .await;
    let shown = if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    };
    println!("Fallbacks: {shown}.");
    Ok(())
}

async fn known(store: &Store, name: &str) -> anyhow::Result<()> {
    if store.model(name).await?.is_none() {
        anyhow::bail!("no model named {name}: add it first with `switchboard model add`");
    }
    Ok(())
}

async fn list(store: &Store) -> anyhow::Result<()> {
    let models = store.models().await?;
    if models.is_empty() {
        println!("The catalogue is empty: the LLM_* variables seed it when the gateway starts, or use `switchboard model add`.");
    }
    for m in models {
        let role = match (m.role.as_deref(), m.rank) {
            (Some("default"), _) => "default".to_owned(),
            (Some("fallback"), n) => format!("fallback {n}"),
            _ => "-".to_owned(),
        };
        let caps: Vec<&str> = [
            (m.tools, "tools"),
            (m.vision, "vision"),
            (m.reasoning, "reasoning"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, n)| *n)
        .collect();
        println!(
            "{:<28} {:<11} {:<9} {}  key {}  window {}  $/1M in {} out {} cache r {} w {}  [{}]{}",
            m.name,
            role,
            m.api,
            switchboard::store::redact_url(&m.base_url),
            m.key_env.as_deref().unwrap_or("-"),
            m.context_window
                .map_or("auto".to_owned(), |w| w.to_string()),
            m.prices.input,
            m.prices.output,
            m.prices.cache_read,
            m.prices.cache_write,
            caps.join(","),
            if m.seeded { "  (from LLM_*)" } else { "" }
        );
    }
    Ok(())
}
