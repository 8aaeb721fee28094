//! `switchboard init`: the first-run wizard. Asks for (or takes as flags) the
//! model endpoint — probed, its models listed where the API allows — the
//! platforms (a Telegram token checked with `getMe`, a Discord token with
//! `/users/@me`, and the invite URL with exactly the permissions needed),
//! the access policy and the operator's own user id (admitted and an
//! approver), then writes `.env` with mode 0600, backing up an existing one.
//! Secrets are never printed back. `--yes` runs without questions (scripts).

use clap::Args;
use serde_json::Value;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

const PROBE_TIMEOUT: Duration = Duration::from_secs(15);

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Ask nothing: take the flags (and INIT_* variables) as given.
    #[arg(long)]
    pub yes: bool,
    /// Where to write (an existing file is kept as FILE.bak-<time>).
    #[arg(long, default_value = ".env")]
    pub output: PathBuf,
    #[arg(long)]
    pub llm_base_url: Option<String>,
    /// openai (default), anthropic or gemini.
    #[arg(long)]
    pub llm_api: Option<String>,
    #[arg(long)]
    pub llm_model: Option<String>,
    /// The endpoint's key (prefer the INIT_LLM_API_KEY variable or the prompt:
    /// flags are visible in the process list).
    #[arg(long, env = "INIT_LLM_API_KEY", hide_env_values = true)]
    pub llm_api_key: Option<String>,
    #[arg(long, env = "INIT_TELEGRAM_BOT_TOKEN", hide_env_values = true)]
    pub telegram_token: Option<String>,
    #[arg(long, env = "INIT_DISCORD_BOT_TOKEN", hide_env_values = true)]
    pub discord_token: Option<String>,
    /// The Bot API to check the Telegram token against (a self-hosted one).
    #[arg(long, default_value = "https://api.telegram.org")]
    pub telegram_api_url: String,
    /// The Discord API to check the Discord token against.
    #[arg(long, default_value = "https://discord.com")]
    pub discord_api_url: String,
    /// pairing (default), allowlist or open.
    #[arg(long)]
    pub access: Option<String>,
    /// Your own user id, admitted and made an approver: telegram:ID or discord:ID.
    #[arg(long)]
    pub operator: Option<String>,
}

/// Answers from the terminal (or a pipe), or none with `--yes`.
struct Asker {
    interactive: bool,
    lines: std::io::Lines<std::io::StdinLock<'static>>,
}

impl Asker {
    fn ask(
        &mut self,
        question: &str,
        given: Option<String>,
        default: Option<&str>,
    ) -> anyhow::Result<Option<String>> {
        if let Some(v) = given.filter(|v| !v.trim().is_empty()) {
            return Ok(Some(v.trim().to_owned()));
        }
        if !self.interactive {
            return Ok(default.map(str::to_owned));
        }
        let hint = default.map(|d| format!(" [{d}]")).unwrap_or_default();
        print!("{question}{hint}: ");
        std::io::stdout().flush()?;
        let line = self.lines.next().transpose()?.unwrap_or_default();
        let line = line.trim();
        Ok(if line.is_empty() {
            default.map(str::to_owned)
        } else {
            Some(line.to_owned())
        })
    }
}

pub async fn run(args: InitArgs) -> anyhow::Result<ExitCode> {
    let mut asker = Asker {
        interactive: !args.yes,
        lines: std::io::stdin().lock().lines(),
    };
    let http = reqwest::Client::builder().timeout(PROBE_TIMEOUT).build()?;
    let mut vars: Vars = Vec::new();
    ask_model(&mut asker, &http, &args, &mut vars).await?;
    ask_platforms(&mut asker, &http, &args, &mut vars).await?;
    ask_access(&mut asker, &args, &mut vars)?;

    let backup = write_env(&args.output, &vars)?;
    if let Some(b) = backup {
        println!("The previous file is kept as {}.", b.display());
    }
    println!("Wrote {} (mode 0600):", args.output.display());
    for (k, v) in &vars {
        let shown = if switchboard::secrets::is_secret_name(k) {
            "(set, not shown)".to_owned()
        } else {
            v.clone()
        };
        println!("  {k}={shown}");
    }
    println!("Next: `switchboard doctor`, then `switchboard run` (or `switchboard chat`).");
    Ok(ExitCode::SUCCESS)
}

/// The variables written, in order.
type Vars = Vec<(&'static str, String)>;

/// The model endpoint: base URL, protocol, key (the endpoint asked for its
/// models with them) and model.
async fn ask_model(
    asker: &mut Asker,
    http: &reqwest::Client,
    args: &InitArgs,
    vars: &mut Vars,
) -> anyhow::Result<()> {
    let base = asker
        .ask(
            "Model endpoint base URL (e.g. https://api.openai.com/v1, http://127.0.0.1:11434/v1)",
            args.llm_base_url.clone(),
            None,
        )?
        .ok_or_else(|| anyhow::anyhow!("--llm-base-url is required"))?;
    url::Url::parse(&base).map_err(|_| anyhow::anyhow!("{base:?} is not a URL"))?;
    let api = asker
        .ask(
            "Protocol: openai, anthropic or gemini",
            args.llm_api.clone(),
            Some("openai"),
        )?
        .unwrap_or_else(|| "openai".into());
    if switchboard::llm::ApiKind::parse(&api).is_none() {
        anyhow::bail!("--llm-api {api:?}: use openai, anthropic or gemini");
    }
    let key = asker
        .ask(
            "API key (empty for none; not shown again)",
            args.llm_api_key.clone(),
            Some(""),
        )?
        .filter(|k| !k.is_empty());
    match list_models(http, &api, &base, key.as_deref()).await {
        Ok(models) if !models.is_empty() => {
            println!("✔ the endpoint answers; models: {}", preview(&models));
        }
        Ok(_) => println!("✔ the endpoint answers (it listed no models)"),
        Err(e) => println!(
            "! the endpoint did not list its models ({e}); check it with `switchboard doctor`"
        ),
    }
    let model = asker
        .ask("Model", args.llm_model.clone(), None)?
        .ok_or_else(|| anyhow::anyhow!("--llm-model is required"))?;
    vars.push(("LLM_BASE_URL", base));
    vars.push(("LLM_API", api));
    vars.push(("LLM_MODEL", model));
    if let Some(k) = key {
        vars.push(("LLM_API_KEY", k));
    }
    Ok(())
}

/// The Telegram and Discord bot tokens, each checked with the platform.
async fn ask_platforms(
    asker: &mut Asker,
    http: &reqwest::Client,
    args: &InitArgs,
    vars: &mut Vars,
) -> anyhow::Result<()> {
    let telegram = asker
        .ask(
            "Telegram bot token (empty to skip)",
            args.telegram_token.clone(),
            Some(""),
        )?
        .filter(|t| !t.is_empty());
    if let Some(token) = telegram {
        let bot = telegram_me(http, &args.telegram_api_url, &token)
            .await
            .map_err(|e| anyhow::anyhow!("the Telegram token was refused: {e}"))?;
        println!("✔ Telegram accepts the token: https://t.me/{bot}");
        vars.push(("TELEGRAM_BOT_TOKEN", token));
        if args.telegram_api_url != "https://api.telegram.org" {
            vars.push(("TELEGRAM_API_URL", args.telegram_api_url.clone()));
        }
    }
    let discord = asker
        .ask(
            "Discord bot token (empty to skip)",
            args.discord_token.clone(),
            Some(""),
        )?
        .filter(|t| !t.is_empty());
    if let Some(token) = discord {
        let (name, application) = discord_me(http, &args.discord_api_url, &token)
            .await
            .map_err(|e| anyhow::anyhow!("the Discord token was refused: {e}"))?;
        println!(
            "✔ Discord accepts the token (bot {name}); invite it with {}",
            switchboard_discord::invite_url(application)
        );
        println!("  and turn on the Message Content intent in the Developer Portal (Bot → Privileged Gateway Intents).");
        vars.push(("DISCORD_BOT_TOKEN", token));
        if args.discord_api_url != "https://discord.com" {
            vars.push(("DISCORD_API_URL", args.discord_api_url.clone()));
        }
    }
    Ok(())
}

/// The access policy, and the operator's own id as allowed user and approver.
fn ask_access(asker: &mut Asker, args: &InitArgs, vars: &mut Vars) -> anyhow::Result<()> {
    let access = asker
        .ask(
            "Access policy: pairing, allowlist or open",
            args.access.clone(),
            Some("pairing"),
        )?
        .unwrap_or_else(|| "pairing".into());
    if !matches!(access.as_str(), "pairing" | "allowlist" | "open") {
        anyhow::bail!("--access {access:?}: use pairing, allowlist or open");
    }
    vars.push(("ACCESS_POLICY", access));
    let Some(op) = asker
        .ask(
            "Your own user id, as telegram:ID or discord:ID (empty to skip)",
            args.operator.clone(),
            Some(""),
        )?
        .filter(|o| !o.is_empty())
    else {
        return Ok(());
    };
    let (allowed, approvers, id) = match op.split_once(':') {
        Some(("telegram", id)) => ("TELEGRAM_ALLOWED_USERS", "TELEGRAM_APPROVERS", id),
        Some(("discord", id)) => ("DISCORD_ALLOWED_USERS", "DISCORD_APPROVERS", id),
        _ => anyhow::bail!("--operator {op:?}: use telegram:ID or discord:ID"),
    };
    if id.parse::<u64>().is_err() {
        anyhow::bail!("--operator {op:?}: use telegram:ID or discord:ID");
    }
    vars.push((allowed, id.to_owned()));
    vars.push((approvers, id.to_owned()));
    Ok(())
}

fn preview(models: &[String]) -> String {
    let shown: Vec<&str> = models.iter().take(12).map(String::as_str).collect();
    let more = models.len().saturating_sub(shown.len());
    if more > 0 {
        format!("{} … and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// The models the endpoint lists (`GET {base}/models`, each protocol's way).
async fn list_models(
    http: &reqwest::Client,
    api: &str,
    base: &str,
    key: Option<&str>,
) -> Result<Vec<String>, String> {
    let url = format!("{}/models", base.trim_end_matches('/'));
    let mut req = http.get(&url);
    if let Some(key) = key {
        req = match api {
            "anthropic" => req
                .header("x-api-key", key)
                .header("anthropic-version", "2023-06-01"),
            "gemini" => req.header("x-goog-api-key", key),
            _ => req.bearer_auth(key),
        };
    }
    let resp = req.send().await.map_err(|e| clean(&e.to_string(), key))?;
    if !resp.status().is_success() {
        return Err(format!("HTTP {}", resp.status().as_u16()));
    }
    let body: Value = resp.json().await.map_err(|e| clean(&e.to_string(), key))?;
    let items = body
        .get("data")
        .or_else(|| body.get("models"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    Ok(items
        .iter()
        .filter_map(|m| {
            m.get("id")
                .or_else(|| m.get("name"))
                .and_then(Value::as_str)
        })
        .map(|id| id.trim_start_matches("models/").to_owned())
        .collect())
}

/// The bot's username, from `getMe`.
async fn telegram_me(http: &reqwest::Client, api: &str, token: &str) -> Result<String, String> {
    let url = format!("{}/bot{token}/getMe", api.trim_end_matches('/'));
    let resp = http
        .get(&url)
        .send()
        .await
        .map_err(|e| clean(&e.to_string(), Some(token)))?;
    let body: Value = resp
        .json()
        .await
        .map_err(|e| clean(&e.to_string(), Some(token)))?;
    if body["ok"] != true {
        return Err(body["description"].as_str().unwrap_or("not ok").to_owned());
    }
    body["result"]["username"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| "no username".into())
}

/// The bot's name and its application id.
async fn discord_me(
    http: &reqwest::Client,
    api: &str,
    token: &str,
) -> Result<(String, u64), String> {
    let base = format!(
        "{}/api/v10",
        api.trim_end_matches('/').trim_end_matches("/api/v10")
    );
    let get = |path: &str| {
        http.get(format!("{base}{path}"))
            .header("Authorization", format!("Bot {token}"))
    };
    let me = get("/users/@me")
        .send()
        .await
        .map_err(|e| clean(&e.to_string(), Some(token)))?;
    if !me.status().is_success() {
        return Err(format!("HTTP {}", me.status().as_u16()));
    }
    let me: Value = me
        .json()
        .await
        .map_err(|e| clean(&e.to_string(), Some(token)))?;
    let app: Value = get("/oauth2/applications/@me")
        .send()
        .await
        .map_err(|e| clean(&e.to_string(), Some(token)))?
        .json()
        .await
        .map_err(|e| clean(&e.to_string(), Some(token)))?;
    let id = app["id"]
        .as_str()
        .and_then(|i| i.parse().ok())
        .ok_or("no application id")?;
    Ok((me["username"].as_str().unwrap_or("?").to_owned(), id))
}

/// An error text without the secret (URLs carry the Telegram token).
fn clean(text: &str, secret: Option<&str>) -> String {
    match secret.filter(|s| !s.is_empty()) {
        Some(s) => text.replace(s, "***"),
        None => text.to_owned(),
    }
}

/// Writes `vars` to `path` (0600), keeping an existing file as a backup.
fn write_env(path: &Path, vars: &[(&str, String)]) -> anyhow::Result<Option<PathBuf>> {
    use std::os::unix::fs::OpenOptionsExt;
    let backup = if path.exists() {
        let name = format!(
            "{}.bak-{}",
            path.display(),
            chrono::Utc::now().format("%Y%m%dT%H%M%S")
        );
        let b = PathBuf::from(name);
        std::fs::copy(path, &b)?;
        std::fs::set_permissions(&b, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
        Some(b)
    } else {
        None
    };
    let mut text = format!(
        "# Written by `switchboard init` on {}. See .env.example for every setting.\n",
        chrono::Utc::now().format("%Y-%m-%d")
    );
    for (k, v) in vars {
        text.push_str(&format!("{k}={v}\n"));
    }
    let tmp = path.with_extension("init-tmp");
    {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    Ok(backup)
}
