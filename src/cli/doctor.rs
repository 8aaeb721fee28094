//! `switchboard doctor`: checks everything that would break later — the
//! directories and files the configuration names, the database, each model
//! endpoint and each bot token — and lists every problem, not only the first.

use futures::StreamExt;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;
use switchboard::config::Config;
use switchboard::dirs::{self, PathProblem};
use switchboard::llm::{ChatRequest, Chunk, Message, Provider};
use switchboard::mcp::{sanitize, McpClients, Status};
use switchboard::store::{self, Store};

/// Longest wait for one network check (a model endpoint, a platform API).
const CHECK_TIMEOUT: Duration = Duration::from_secs(90);

/// Where the report goes: stdout, until it is closed (`doctor | head -1`),
/// after which lines are dropped instead of panicking.
struct Report {
    out: std::io::Stdout,
    closed: bool,
    failed: bool,
}

impl Report {
    fn line(&mut self, text: &str) {
        if self.closed {
            return;
        }
        let mut out = self.out.lock();
        if writeln!(out, "{text}").and_then(|()| out.flush()).is_err() {
            self.closed = true;
        }
    }

    fn ok(&mut self, text: &str) {
        self.line(&format!("✔ {text}"));
    }

    fn fail(&mut self, text: &str) {
        self.failed = true;
        self.line(&format!("✘ {text}"));
    }

    fn note(&mut self, text: &str) {
        self.line(&format!("• {text}"));
    }

    fn path(&mut self, checked: Result<(), PathProblem>, ok: impl FnOnce() -> String) -> bool {
        match checked {
            Ok(()) => {
                self.ok(&ok());
                true
            }
            Err(problem) => {
                self.fail(&problem.to_string());
                false
            }
        }
    }
}

/// Runs every check; exit status 1 when any failed.
pub async fn run(config: Config) -> anyhow::Result<ExitCode> {
    let mut r = Report {
        out: std::io::stdout(),
        closed: false,
        failed: false,
    };
    r.ok(&format!(
        "configuration loaded (model {}, endpoint {})",
        config.llm.model,
        store::redact_url(&config.llm.base_url)
    ));
    let data_ok = r.path(
        dirs::check_writable_dir("DATA_DIR", &config.data_dir),
        || format!("DATA_DIR {} is usable", config.data_dir.display()),
    );
    r.path(
        dirs::check_writable_dir("WORKSPACE_DIR", &config.workspace_dir),
        || format!("WORKSPACE_DIR {} is usable", config.workspace_dir.display()),
    );
    sandbox(&mut r, &config);
    database(&mut r, &config, data_ok).await;
    for (label, endpoint) in endpoints(&config) {
        model(&mut r, &label, &endpoint).await;
    }
    platforms(&mut r, &config).await;
    http_tools(&mut r, &config);
    script_tools(&mut r, &config);
    mcp_servers(&mut r, &config).await;
    chats(&mut r, &config);
    skills(&mut r, &config);
    surfaces(&mut r, &config);
    for line in super::doctor_live::lines(&config.data_dir) {
        match line {
            Ok(text) => r.note(&text),
            Err(text) => r.fail(&text),
        }
    }
    if config.platforms.is_empty() {
        r.note("no chat platform configured (set TELEGRAM_BOT_TOKEN or DISCORD_BOT_TOKEN to enable one).");
    }
    Ok(if r.failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// What else users and the operator reach: the web console, `switchboard
/// mcp` over HTTP, who may add tools from the chat, and users' own identity
/// settings.
fn surfaces(r: &mut Report, config: &Config) {
    if let Some(addr) = config.web.listen {
        let auth = if config.web.token.is_some() {
            "sign-in with WEB_TOKEN"
        } else {
            "loopback only, no token"
        };
        r.ok(&format!("web console on http://{addr}/ ({auth})"));
    }
    if let Some(http) = &config.mcp_http {
        r.ok(&format!(
            "`switchboard mcp` serves Streamable HTTP on http://{}{} (bearer MCP_TOKEN)",
            http.listen,
            switchboard::mcp::serve::MCP_PATH
        ));
    }
    let own = config.mcp_own_tools;
    match own.user {
        Some(user) if own.effective() != switchboard::mcp::serve::Exposure::None => {
            r.ok(&format!(
                "`switchboard mcp` offers the agent's own tools of tier `{}` (MCP_SERVER_TOOLS), acting as {} (MCP_SERVER_USER)",
                own.exposure.as_str(),
                user.describe()
            ));
            let asks = own.exposure.offers(switchboard::mcp::serve::Tier::Act);
            if asks
                && config
                    .mcp_notify_chat
                    .is_none_or(|chat| chat.platform != user.platform)
            {
                r.note("MCP_NOTIFY_CHAT is not a chat of MCP_SERVER_USER's platform: own-tool calls that need an approval are refused over MCP");
            }
        }
        _ => r.note(
            "`switchboard mcp` offers none of the agent's own tools (MCP_SERVER_TOOLS=none, or no MCP_SERVER_USER)",
        ),
    }
    let builders = match config.tool_builders {
        switchboard::tools::ToolBuilders::Off => "nobody (TOOL_BUILDERS=off)",
        switchboard::tools::ToolBuilders::Approvers => "approvers (TOOL_BUILDERS=approvers)",
        switchboard::tools::ToolBuilders::All => "every user (TOOL_BUILDERS=all)",
    };
    r.note(&format!(
        "tools added from the chat: {builders}; each change on a card"
    ));
    if config.identity_user_edits {
        r.note("users may set my name, persona and style for their own DMs (IDENTITY_USER_EDITS)");
    }
}

fn sandbox(r: &mut Report, config: &Config) {
    match switchboard::tools::Sandbox::detect(&config.exec_sandbox) {
        Ok(sandbox) => match sandbox.warning() {
            None => r.ok(&format!("exec sandbox: {}", sandbox.describe())),
            Some(warning) => {
                r.note(&format!("exec sandbox: {}", sandbox.describe()));
                r.note(warning);
            }
        },
        Err(e) => r.fail(&format!("exec sandbox: {e}")),
    }
}

async fn database(r: &mut Report, config: &Config, data_ok: bool) {
    let in_data_dir = dirs::database_in_data_dir(&config.database_url, &config.data_dir);
    if in_data_dir && !data_ok {
        r.fail("database: not opened, it lives in DATA_DIR (DATABASE_URL is unset); fix DATA_DIR first");
        return;
    }
    let opened = match Store::open(&config.database_url).await {
        Ok(store) => store.ping().await.map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    match opened {
        Ok(()) => r.ok(&format!(
            "database {} reachable, migrations applied",
            store::redact_url(&config.database_url)
        )),
        Err(e) if in_data_dir => r.fail(&format!(
            "database: {e} (the database lives in DATA_DIR, as DATABASE_URL is unset)"
        )),
        Err(e) => r.fail(&format!("database (DATABASE_URL): {e}")),
    }
}

async fn model(r: &mut Report, label: &str, endpoint: &Config) {
    let provider = match switchboard::build_provider(endpoint) {
        Ok(p) => p,
        Err(e) => {
            r.fail(&format!("{label} ({}): {e}", endpoint.llm.model));
            return;
        }
    };
    match probe(provider.as_ref()).await {
        Ok(()) => r.ok(&format!(
            "{label} answers ({} · {} · context window {})",
            endpoint.llm.model,
            store::redact_url(&endpoint.llm.base_url),
            provider.model().context_window
        )),
        Err(problem) => r.fail(&format!("{label} ({}): {problem}", endpoint.llm.model)),
    }
}

async fn platforms(r: &mut Report, config: &Config) {
    let checks = tokio::time::timeout(CHECK_TIMEOUT, config.platforms.check_tokens()).await;
    let Ok(checks) = checks else {
        r.fail(
            "chat platforms: no answer within 90 s (TELEGRAM_API_URL / DISCORD_API_URL reachable?)",
        );
        return;
    };
    for check in checks {
        match check.result {
            Ok(who) => r.ok(&format!("{} accepts {} ({who})", check.platform, check.var)),
            Err(e) => r.fail(&format!("{} ({}): {e}", check.platform, check.var)),
        }
    }
}

fn http_tools(r: &mut Report, config: &Config) {
    if let Some(file) = &config.http_tools_file {
        if !r.path(dirs::check_existing_file("HTTP_TOOLS_FILE", file), || {
            format!("HTTP_TOOLS_FILE {} found", file.display())
        }) {
            return;
        }
    }
    if !config.http_tools.is_empty() {
        r.ok(&format!(
            "{} HTTP API tools: {}",
            config.http_tools.len(),
            names(config.http_tools.iter().map(|t| t.name.as_str()))
        ));
    }
    for p in &config.http_tool_problems {
        // "*": the whole file is unusable, not one tool.
        if p.tool == "*" {
            r.fail(&format!(
                "HTTP_TOOLS_FILE ({}): {}",
                p.file.display(),
                p.problem
            ));
        } else {
            r.note(&format!(
                "HTTP tool {} in {} skipped: {}",
                p.tool,
                p.file.display(),
                p.problem
            ));
        }
    }
}

fn script_tools(r: &mut Report, config: &Config) {
    if let Some(dir) = &config.script_tools_dir {
        if !r.path(dirs::check_existing_dir("SCRIPT_TOOLS_DIR", dir), || {
            format!("SCRIPT_TOOLS_DIR {} found", dir.display())
        }) {
            return;
        }
    }
    if !config.script_tools.is_empty() {
        r.ok(&format!(
            "{} script tools: {}",
            config.script_tools.len(),
            names(config.script_tools.iter().map(|t| t.name.as_str()))
        ));
    }
    for p in &config.script_tool_problems {
        r.note(&format!(
            "script tool {} skipped: {}",
            p.manifest.display(),
            p.problem
        ));
    }
}

/// `CHATS_FILE`: a file that cannot be read is a ✘; a bad entry is named.
fn chats(r: &mut Report, config: &Config) {
    for p in &config.chat_problems {
        if p.target == "(file)" {
            r.fail(&format!("CHATS_FILE: {}", p.problem));
        } else {
            r.note(&format!("CHATS_FILE entry {}: {}", p.target, p.problem));
        }
    }
    if !config.chats.is_empty() {
        r.note(&format!("CHATS_FILE binds {} chat(s)", config.chats.len()));
    }
    for problem in &config.role_problems {
        r.note(&format!("SUBAGENTS_FILE: {problem}"));
    }
}

/// Starts each MCP server briefly: up (protocol, tools) or down (why).
async fn mcp_servers(r: &mut Report, config: &Config) {
    if let Some(file) = &config.mcp_servers_file {
        if !r.path(dirs::check_existing_file("MCP_SERVERS_FILE", file), || {
            format!("MCP_SERVERS_FILE {} found", file.display())
        }) {
            return;
        }
    }
    for p in &config.mcp_problems {
        if p.server == "*" {
            r.fail(&format!("MCP_SERVERS_FILE: {}", p.problem));
        } else {
            r.note(&format!("MCP server {}: {}", p.server, p.problem));
        }
    }
    if config.mcp_servers.is_empty() {
        return;
    }
    let stop = tokio_util::sync::CancellationToken::new();
    let store = Store::open(&config.database_url).await.ok();
    reannotated(r, store.as_ref()).await;
    let ctx = switchboard::mcp::McpContext {
        sandbox: config.exec_sandbox.clone(),
        data_dir: config.data_dir.clone(),
        store: None,
    };
    let clients = McpClients::start(&config.mcp_servers, ctx, &stop).await;
    let offered = clients.tools(&[]);
    for server in clients.servers() {
        let state = server.state();
        let tools = offered
            .iter()
            .filter(|t| {
                t.spec()
                    .name
                    .starts_with(&format!("mcp_{}_", sanitize(server.name())))
            })
            .count();
        match state.status {
            Status::Up => r.ok(&format!(
                "MCP server {} up (protocol {}, {} tools offered of {} listed)",
                server.name(),
                state.protocol_version.as_deref().unwrap_or("?"),
                tools,
                state.tools.len()
            )),
            _ => r.fail(&format!(
                "MCP server {} down: {}",
                server.name(),
                state.last_error.as_deref().unwrap_or("no answer")
            )),
        }
    }
    stop.cancel();
    clients.stopped().await;
}

/// MCP tools that re-annotated themselves read-only in the last week while
/// the gateway ran (they kept their first approval; see the audit log).
async fn reannotated(r: &mut Report, store: Option<&Store>) {
    let Some(store) = store else { return };
    let Ok(events) = store.audit().recent(1_000).await else {
        return;
    };
    let since = chrono::Utc::now() - chrono::Duration::days(7);
    for e in events
        .iter()
        .filter(|e| e.kind == switchboard::mcp::REANNOTATED && e.at > since)
    {
        r.note(&format!(
            "MCP server {} re-annotated its tool {} as read-only at {} (it kept the approval it was first listed with; the new annotation counts from the next start)",
            e.detail["server"].as_str().unwrap_or("?"),
            e.detail["tool"].as_str().unwrap_or("?"),
            e.at.format("%Y-%m-%d %H:%M UTC"),
        ));
    }
}

fn skills(r: &mut Report, config: &Config) {
    let dir = &config.skills_dir;
    let found = dirs::check_existing_dir("SKILLS_DIR", dir);
    if let Err(problem) = &found {
        // The default directory is optional; one set on purpose must exist.
        if dir == Path::new("./skills") && !dir.exists() {
            r.note(&format!(
                "no skills directory {} (SKILLS_DIR): only the built-in skills",
                dir.display()
            ));
        } else {
            r.fail(&problem.to_string());
        }
    }
    let (skills, problems) = switchboard::load_skills(config);
    let source = match found {
        Ok(()) => dir.display().to_string(),
        Err(_) => "built-in only".to_owned(),
    };
    r.ok(&format!(
        "{} skills ({source}): {}",
        skills.len(),
        names(skills.iter().map(|s| s.name.as_str()))
    ));
    for p in problems {
        r.note(&format!(
            "skill {} skipped: {}",
            p.path.display(),
            p.problem
        ));
    }
}

fn names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(", ")
}

/// The primary model endpoint and each fallback, as a config of its own.
fn endpoints(config: &Config) -> Vec<(String, Config)> {
    let mut primary = config.clone();
    primary.llm.fallbacks.clear();
    let mut out = vec![("model endpoint".to_owned(), primary.clone())];
    for (i, f) in config.llm.fallbacks.iter().enumerate() {
        let mut c = primary.clone();
        c.llm.api = f.api;
        c.llm.base_url = f.base_url.clone();
        c.llm.model = f.model.clone();
        c.llm.api_key = f.api_key.clone();
        c.llm.context_window = f.context_window;
        out.push((format!("fallback {}", i + 1), c));
    }
    out
}

/// One tiny model call: the endpoint answers something within 90 s.
async fn probe(provider: &dyn Provider) -> Result<(), String> {
    let request = ChatRequest {
        system: "You are a health check. Reply with OK.".into(),
        messages: vec![Message::user("ping")],
        tools: Vec::new(),
    };
    let call = async {
        let mut stream = provider.chat_stream(request).await?;
        while let Some(chunk) = stream.next().await {
            if let Chunk::Text(_) | Chunk::ToolCalls(_) | Chunk::Thinking(_) = chunk? {
                return Ok(());
            }
        }
        Ok::<(), switchboard::llm::ProviderError>(())
    };
    match tokio::time::timeout(CHECK_TIMEOUT, call).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("no answer within 90 s".into()),
    }
}

/// For a command that failed opening the default database in `DATA_DIR`: a
/// line naming `DATA_DIR` (the store's own error can only suggest
/// `DATABASE_URL`). Captured before the config moves into the command.
pub fn data_dir_hint(config: &Config) -> impl Fn(&anyhow::Error) -> Option<String> {
    let dir = dirs::database_in_data_dir(&config.database_url, &config.data_dir)
        .then(|| config.data_dir.display().to_string());
    move |e: &anyhow::Error| {
        let dir = dir.as_ref()?;
        let opening = e.chain().any(|cause| {
            matches!(
                cause.downcast_ref::<store::StoreError>(),
                Some(store::StoreError::Open { .. })
            )
        });
        opening.then(|| {
            format!("hint: DATABASE_URL is unset, so the database lives in DATA_DIR ({dir}); set DATA_DIR to a writable directory (or DATABASE_URL)")
        })
    }
}
