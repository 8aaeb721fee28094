//! Models at run time: the catalogue in the database (seeded from the
//! `LLM_*` variables), the model a session chose with `/model`, the routing
//! rules that pick another model for one turn, and prices for usage.
//!
//! Which model a turn runs on: the session's choice (when the operator
//! allows it), else the catalogue's default with its fallbacks, else the
//! `LLM_*` endpoints; then a routing rule may send this one turn elsewhere,
//! with the chosen model as its fallback.

mod cheap;
pub mod config;
mod keys;
mod route;
mod url_auth;

pub use cheap::CheapRoute;
pub use config::{Budgets, ModelSettings, Routes, Selectable};
pub use keys::capture as capture_keys;
pub use route::{Input as RouteInput, Route};
pub use url_auth::{with_credentials, without_credentials};

use crate::llm::LlmConfig;
use crate::llm::{ApiKind, EndpointConfig, FallbackProvider, ModelInfo, Provider, Usage};
use crate::store::{ModelRow, Prices, SessionId, Store};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use switchboard_platform::Secret;

/// The model one turn runs on, whether it is sent images, and the tools
/// it may use (a chat's policy; none: all).
#[derive(Clone)]
pub struct TurnModel {
    pub provider: Arc<dyn Provider>,
    pub vision: bool,
    pub tools: Option<Arc<crate::tools::ToolPolicy>>,
}

/// The model chosen for one turn.
#[derive(Clone)]
pub struct Selected {
    pub model: TurnModel,
    /// The catalogue name of the model asked first.
    pub name: String,
    /// The rule that chose it, when one did.
    pub route: Option<Route>,
}

/// The models service: one per gateway.
pub struct Models {
    store: Store,
    settings: ModelSettings,
    /// The `LLM_*` endpoints, as built at start.
    env: Arc<dyn Provider>,
    env_vision: bool,
    llm: LlmConfig,
    keys: BTreeMap<String, Secret>,
    /// Providers built from catalogue rows, rebuilt when a row changes.
    built: Mutex<HashMap<String, Built>>,
}

/// A provider and the row it was built from.
type Built = (ModelRow, Arc<dyn Provider>);

impl Models {
    pub fn new(
        store: Store,
        settings: ModelSettings,
        env: Arc<dyn Provider>,
        env_vision: bool,
        llm: LlmConfig,
        keys: BTreeMap<String, Secret>,
    ) -> Models {
        Models {
            store,
            settings,
            env,
            env_vision,
            llm,
            keys,
            built: Mutex::new(HashMap::new()),
        }
    }

    pub fn settings(&self) -> &ModelSettings {
        &self.settings
    }

    /// Writes the `LLM_*` endpoints into the catalogue unless entries of
    /// those names exist (the operator's edits win). A URL's credentials
    /// stay in its variable: the row names it (`url_env`).
    pub async fn seed(&self) {
        let llm = &self.llm;
        let mut rows = vec![seed_row(
            llm.api,
            ("LLM_BASE_URL", &llm.base_url),
            &llm.model,
            llm.context_window,
            llm.api_key.as_ref().map(|_| "LLM_API_KEY".to_owned()),
            self.env_vision,
        )];
        for (i, f) in llm.fallbacks.iter().enumerate() {
            rows.push(seed_row(
                f.api,
                (&format!("LLM_FALLBACK_{}_BASE_URL", i + 1), &f.base_url),
                &f.model,
                f.context_window,
                f.api_key
                    .as_ref()
                    .map(|_| format!("LLM_FALLBACK_{}_API_KEY", i + 1)),
                crate::llm::sees_images(&f.model),
            ));
        }
        for row in rows {
            if let Err(e) = self.store.seed_model(&row).await {
                tracing::warn!(error = %e, model = %row.name, "could not seed the model catalogue");
            }
        }
        self.move_url_credentials().await;
    }

    /// Rows stored before credentials were kept out of the catalogue: one
    /// whose URL is a variable's value gets that variable named instead;
    /// any other is reported (re-add it with `--base-url-env`).
    async fn move_url_credentials(&self) {
        let Ok(rows) = self.store.models().await else {
            return;
        };
        for mut row in rows {
            let (bare, had) = without_credentials(&row.base_url);
            if !had {
                continue;
            }
            match self
                .url_vars()
                .into_iter()
                .find(|(_, v)| *v == row.base_url)
            {
                Some((var, _)) => {
                    row.base_url = bare;
                    row.url_env = Some(var);
                    match self.store.put_model(&row).await {
                        Ok(()) => {
                            tracing::info!(model = %row.name, "a catalogue URL's credentials moved out of the database")
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, model = %row.name, "could not move a catalogue URL's credentials out of the database")
                        }
                    }
                }
                None => tracing::warn!(
                    model = %row.name,
                    "the catalogue stores this model's base URL with credentials; re-add it with `switchboard model add --base-url <URL without them> --base-url-env <VAR>`"
                ),
            }
        }
    }

    /// The `LLM_*` base URL variables and their values.
    fn url_vars(&self) -> Vec<(String, String)> {
        let llm = &self.llm;
        std::iter::once(("LLM_BASE_URL".to_owned(), llm.base_url.clone()))
            .chain(llm.fallbacks.iter().enumerate().map(|(i, f)| {
                (
                    format!("LLM_FALLBACK_{}_BASE_URL", i + 1),
                    f.base_url.clone(),
                )
            }))
            .collect()
    }

    /// The value of the URL variable `var`: an `LLM_*` one, one captured at
    /// start (removed from the environment since), or the environment's.
    fn url_var(&self, var: &str) -> Option<String> {
        self.url_vars()
            .into_iter()
            .find(|(name, _)| name == var)
            .map(|(_, value)| value)
            .or_else(|| self.keys.get(var).map(|s| s.expose().to_owned()))
            .or_else(|| std::env::var(var).ok())
    }

    /// The names a user may switch to with `/model`, the default first.
    pub async fn choosable(&self) -> Vec<ModelRow> {
        let rows = self.store.models().await.unwrap_or_default();
        self.choosable_of(rows)
    }

    /// Of the catalogue `rows`, those a user may switch to.
    fn choosable_of(&self, rows: Vec<ModelRow>) -> Vec<ModelRow> {
        // Without a catalogue default the `LLM_*` model is the default.
        let default = rows
            .iter()
            .find(|r| r.role.as_deref() == Some("default"))
            .map_or(self.llm.model.clone(), |r| r.name.clone());
        rows.into_iter()
            .filter(|r| r.name == default || self.settings.selectable.allows(&r.name))
            .collect()
    }

    /// Whether a user may switch to `name`.
    pub async fn may_choose(&self, name: &str) -> bool {
        self.choosable().await.iter().any(|r| r.name == name)
    }

    /// The model for a turn of `session` (in a chat bound to `chat_model`)
    /// on `input` (none: a resumed turn, not routed again).
    pub async fn select(
        &self,
        session: &SessionId,
        chat_model: Option<&str>,
        input: Option<route::Input<'_>>,
    ) -> Selected {
        let (name, base) = self.base(session, chat_model).await;
        if let Some(input) = input {
            if let Some((route, routed)) = route::choose(&self.settings.routes, &input, base.vision)
            {
                if routed != name {
                    match self.row_provider(&routed).await {
                        Some((row, provider)) => {
                            let chain: Arc<dyn Provider> = Arc::new(FallbackProvider::new(
                                provider,
                                vec![Arc::clone(&base.provider)],
                            ));
                            return Selected {
                                model: model(chain, row.vision),
                                name: routed,
                                route: Some(route),
                            };
                        }
                        None => {
                            tracing::warn!(model = %routed, rule = route.as_str(), "the routed model is not usable; the turn stays on its model")
                        }
                    }
                }
            }
        }
        Selected {
            model: base,
            name,
            route: None,
        }
    }

    /// Catalogue entry `name` as a turn's model (a role's own model).
    pub async fn named(&self, name: &str) -> Option<TurnModel> {
        let (row, provider) = self.row_provider(name).await?;
        Some(model(provider, row.vision))
    }

    /// The session's model: its `/model` choice, else the chat's (from
    /// `CHATS_FILE`), else the catalogue's default with its fallbacks, else
    /// the `LLM_*` endpoints.
    async fn base(&self, session: &SessionId, chat_model: Option<&str>) -> (String, TurnModel) {
        // The catalogue is read once per turn; providers are built once per
        // version of their row.
        let rows = self.store.models().await.unwrap_or_default();
        let row = |name: &str| rows.iter().find(|r| r.name == name);
        let chosen = match self.store.session_model(session).await {
            Ok(Some(chosen))
                if self
                    .choosable_of(rows.clone())
                    .iter()
                    .any(|r| r.name == chosen) =>
            {
                Some(chosen)
            }
            _ => None,
        };
        for name in chosen.iter().map(String::as_str).chain(chat_model) {
            if let Some(r) = row(name) {
                if let Some(provider) = self.provider_of(r) {
                    return (r.name.clone(), model(provider, r.vision));
                }
            }
            tracing::warn!(
                model = name,
                "the chosen model is not in the catalogue or not usable; using the default"
            );
        }
        if let Some(default) = rows.iter().find(|r| r.role.as_deref() == Some("default")) {
            if let Some(primary) = self.provider_of(default) {
                let fallbacks: Vec<Arc<dyn Provider>> = rows
                    .iter()
                    .filter(|r| r.role.as_deref() == Some("fallback"))
                    .filter_map(|f| self.provider_of(f))
                    .collect();
                let provider: Arc<dyn Provider> = if fallbacks.is_empty() {
                    primary
                } else {
                    Arc::new(FallbackProvider::new(primary, fallbacks))
                };
                return (default.name.clone(), model(provider, default.vision));
            }
        }
        (
            self.llm.model.clone(),
            model(Arc::clone(&self.env), self.env_vision),
        )
    }

    /// The provider of catalogue entry `name` (read now).
    async fn row_provider(&self, name: &str) -> Option<(ModelRow, Arc<dyn Provider>)> {
        let row = match self.store.model(name).await {
            Ok(Some(row)) => row,
            Ok(None) => return None,
            Err(e) => {
                tracing::warn!(error = %e, model = name, "could not read the model catalogue");
                return None;
            }
        };
        let provider = self.provider_of(&row)?;
        Some((row, provider))
    }

    /// The provider of `row`, built once per version of the row.
    fn provider_of(&self, row: &ModelRow) -> Option<Arc<dyn Provider>> {
        let mut built = self.built.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((cached, provider)) = built.get(&row.name) {
            if cached == row {
                return Some(Arc::clone(provider));
            }
        }
        match self.build(row) {
            Ok(provider) => {
                built.insert(row.name.clone(), (row.clone(), Arc::clone(&provider)));
                Some(provider)
            }
            Err(problem) => {
                tracing::warn!(model = %row.name, %problem, "a catalogue model cannot be used");
                None
            }
        }
    }

    fn build(&self, row: &ModelRow) -> Result<Arc<dyn Provider>, String> {
        let api = ApiKind::parse(&row.api).ok_or_else(|| format!("unknown api {:?}", row.api))?;
        let llm = &self.llm;
        let url = match &row.url_env {
            None => row.base_url.clone(),
            Some(var) => {
                let full = self
                    .url_var(var)
                    .ok_or_else(|| format!("its URL variable {var} is not set"))?;
                with_credentials(&row.base_url, &full, var)?
            }
        };
        let mut ec = EndpointConfig::new(&url, ModelInfo::new(&row.name, row.context_window))
            .with_idle_timeout(llm.idle_timeout);
        ec.frequency_penalty = llm.frequency_penalty;
        ec.max_output_tokens = llm.max_output_tokens;
        ec.thinking_budget = if row.reasoning {
            llm.thinking_budget
        } else {
            None
        };
        ec.text_tool_calls = llm.text_tool_calls;
        if let Some(var) = &row.key_env {
            let key = self
                .keys
                .get(var)
                .cloned()
                .or_else(|| std::env::var(var).ok().map(Secret::new))
                .ok_or_else(|| format!("its key variable {var} is not set"))?;
            ec = ec.with_api_key(key);
        }
        crate::llm::connect(api, ec).map_err(|e| e.to_string())
    }
}

/// Adds `usage` on `model` to the user's day: the plain totals and, priced
/// with the catalogue's prices now, the per-model row (failures logged).
pub async fn record_usage(
    store: &Store,
    platform: switchboard_platform::Platform,
    user: switchboard_platform::UserId,
    model: &str,
    usage: &Usage,
    turns: u32,
) {
    if let Err(e) = store.usage().add(platform, user, usage, turns).await {
        tracing::warn!(error = %e, "could not record usage");
    }
    let prices = match store.model(model).await {
        Ok(Some(row)) => row.prices,
        _ => Prices::default(),
    };
    let cost = cost_micros(usage, &prices);
    if let Err(e) = store
        .usage()
        .add_model(platform, user, model, usage, turns, cost)
        .await
    {
        tracing::warn!(error = %e, "could not record usage by model");
    }
}

/// What `usage` costs at `prices`, in micro-dollars (prices are per
/// million tokens, so a token at $1/M is one micro-dollar). Input tokens
/// read from or written to the cache are priced at the cache rates when
/// the catalogue has them.
pub fn cost_micros(usage: &Usage, prices: &Prices) -> i64 {
    let uncached = usage
        .input_tokens
        .saturating_sub(usage.cache_read_tokens)
        .saturating_sub(usage.cache_write_tokens);
    let read_rate = if prices.cache_read > 0.0 {
        prices.cache_read
    } else {
        prices.input
    };
    let write_rate = if prices.cache_write > 0.0 {
        prices.cache_write
    } else {
        prices.input
    };
    let total = uncached as f64 * prices.input
        + usage.cache_read_tokens as f64 * read_rate
        + usage.cache_write_tokens as f64 * write_rate
        + usage.output_tokens as f64 * prices.output;
    total.round() as i64
}

fn model(provider: Arc<dyn Provider>, vision: bool) -> TurnModel {
    TurnModel {
        provider,
        vision,
        tools: None,
    }
}

/// A catalogue row for an `LLM_*` endpoint; `(var, url)` is its base URL
/// variable and value (stored without credentials; the row names `var`).
fn seed_row(
    api: ApiKind,
    (var, url): (&str, &str),
    model: &str,
    context_window: Option<u32>,
    key_env: Option<String>,
    vision: bool,
) -> ModelRow {
    let (base_url, had_credentials) = without_credentials(url);
    ModelRow {
        name: model.to_owned(),
        api: api.name().to_owned(),
        base_url,
        key_env,
        url_env: had_credentials.then(|| var.to_owned()),
        context_window,
        prices: Prices::default(),
        vision,
        tools: true,
        reasoning: false,
        role: None,
        rank: 0,
        seeded: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_priced_per_million_with_cache_rates() {
        let prices = Prices {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        };
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_read_tokens: 500_000,
            cache_write_tokens: 100_000,
        };
        // 400k × $3 + 500k × $0.30 + 100k × $3.75 + 100k × $15, per million.
        assert_eq!(
            cost_micros(&usage, &prices),
            1_200_000 + 150_000 + 375_000 + 1_500_000
        );
        // Without cache rates the cached tokens cost the input rate.
        let plain = Prices {
            cache_read: 0.0,
            cache_write: 0.0,
            ..prices
        };
        assert_eq!(cost_micros(&usage, &plain), 3_000_000 + 1_500_000);
        assert_eq!(cost_micros(&usage, &Prices::default()), 0);
    }
}
