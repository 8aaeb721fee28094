//! Storage, access and limits, approvals, tools and chats.

use super::{v, Section};

pub(super) const STORAGE: Section = Section {
    title: "Storage",
    intro: "Everything the gateway keeps is under `DATA_DIR` unless these say otherwise (see [Operations](operations.md)).",
    vars: &[
        v(
            "DATABASE_URL",
            "`sqlite://$DATA_DIR/switchboard.db`",
            "SQLite file (created on first run, WAL mode) or `postgres://…` for several processes sharing state",
        ),
        v(
            "DATA_DIR",
            "`./data`",
            "where state lives (also `--data-dir DIR`): the SQLite database and the workspace unless `DATABASE_URL` / `WORKSPACE_DIR` say otherwise, `chat.log`, large tool results (`results/`), per-turn traces (`scratchpad/`), messages spooled during a storage outage (`spool/`), adapter state",
        ),
        v(
            "WORKSPACE_DIR",
            "`$DATA_DIR/workspace`",
            "the only directory `read_file`, `write_file` and `exec_command` touch; each chat user's turns see only their own folder of it, `users/<platform>-<user>/`, the console's operator all of it (see [Tools](tools.md#the-workspace))",
        ),
        v(
            "WORKSPACE_QUOTA_MB",
            "2048",
            "what each user's workspace folder may hold: an upload or `write_file` that would go over it is refused, and a command whose folder grows past it is stopped (measured every 2 s). The console operator's view of the whole workspace has no quota",
        ),
    ],
};

pub(super) const ACCESS: Section = Section {
    title: "Access and limits",
    intro: "",
    vars: &[
        v(
            "ACCESS_POLICY",
            "`pairing`",
            "`pairing` (unknown DM users get a one-time code valid 1 h; `switchboard pair approve CODE`), `allowlist` (numeric ids; empty admits nobody), `open`",
        ),
        v(
            "USER_MESSAGES_PER_MINUTE",
            "20",
            "per-user inbound limit; one polite notice per minute beyond it. 👍/👎 presses count against it too (beyond it a press gets a short \"slow down\" and starts nothing)",
        ),
        v(
            "APPROVAL_PRESSES_PER_MINUTE",
            "30",
            "approval-card presses a user may make a minute, an allowance of their own: a user held back by the message limit can still decide the card their turn waits on",
        ),
        v(
            "MAX_TASKS_PER_USER",
            "5",
            "background tasks (sub-agents included) one user may have queued or running across all chats, topics and gateway processes (counted in the database); a call beyond it gets a tool error and starts nothing",
        ),
        v(
            "MAX_SCHEDULES_PER_USER",
            "10",
            "active schedules one user may have across all chats and topics (counted in the database); besides the 20 a conversation may have",
        ),
        v(
            "MAX_BACKGROUND_TASKS",
            "3",
            "background tasks one conversation runs at once; more wait as `queued`",
        ),
        v(
            "TURN_DEADLINE_SECS",
            "600",
            "total time one turn may take, model streaming and tools included (a turn paused on an approval has ended: the resumed turn gets a deadline of its own); when it passes, the turn stops and the user is told",
        ),
        v(
            "MAX_TOOL_ROUNDS",
            "15",
            "tool rounds per request before the turn stops with a notice",
        ),
    ],
};

pub(super) const APPROVALS: Section = Section {
    title: "Approvals and the exec sandbox",
    intro: "See [Approvals and the sandbox](approvals.md).",
    vars: &[
        v(
            "APPROVAL_TIMEOUT",
            "600",
            "seconds before an approval card expires (treated as denied)",
        ),
        v(
            "EXEC_TIMEOUT",
            "120",
            "default `exec_command` timeout (background runs get 1 h)",
        ),
        v(
            "EXEC_SANDBOX",
            "`auto`",
            "confinement of `exec_command`, script tools and background runs: `auto` (Landlock when the kernel has it, else bwrap, else none with a warning at every start), `landlock`, `bwrap` (needs `bubblewrap`), `none` (unconfined; warned at every start). A level the machine lacks stops the start with the reason",
        ),
        v(
            "EXEC_NETWORK",
            "`allow`",
            "`none` (recommended) denies commands TCP (Landlock ABI ≥ 4, Linux 6.7) and every new socket (seccomp), or gives them an empty network namespace (bwrap; Unix sockets only); `allow` keeps the gateway's network but not its own ports (`WEB_LISTEN`, `HEALTH_LISTEN`, `TELEGRAM_WEBHOOK_LISTEN`, `MCP_LISTEN`) nor the PostgreSQL port (Landlock ABI ≥ 4, also under bwrap; else a warning at every start), and no Unix socket",
        ),
    ],
};

pub(super) const TOOLS: Section = Section {
    title: "Tools, skills and sub-agents",
    intro: "See [Tools and skills](tools.md), [MCP](mcp.md) and [The agent](agent.md).",
    vars: &[
        v(
            "SKILLS_DIR",
            "`./skills`",
            "your skills, one `*.md` file each; re-read when they change and on `SIGHUP`",
        ),
        v(
            "HTTP_TOOLS_FILE",
            "unset",
            "a JSON file of HTTP API tools for the agent",
        ),
        v(
            "SCRIPT_TOOLS_DIR",
            "unset",
            "a directory of script tool manifests, `*.json`",
        ),
        v(
            "MCP_SERVERS_FILE",
            "unset",
            "MCP servers whose tools the agent may use, in the Claude Desktop format; a stdio server runs under the exec sandbox, writing only in `DATA_DIR/mcp/<name>` (see [MCP](mcp.md)); reloaded on `SIGHUP` and when it changes: servers added are started, removed ones stopped, changed ones restarted",
        ),
        v(
            "MCP_NOTIFY_CHAT",
            "unset",
            "where `switchboard mcp` posts an external agent's notices, cards and questions: `telegram:<chat_id>[/<topic_id>]` or `discord:<channel_id>[/<thread_id>]`",
        ),
        v(
            "MCP_LISTEN",
            "unset (stdio)",
            "`IP:PORT` on which `switchboard mcp` serves MCP over Streamable HTTP at `/mcp` instead of stdio (see [Switchboard as an MCP server](mcp.md#over-http)); a request whose `Origin` is not this listener's own is refused (403), bodies over 1 MiB too (413)",
        ),
        v(
            "MCP_TOKEN",
            "none",
            "the bearer token every request to `MCP_LISTEN` must carry (`Authorization: Bearer <token>`, compared in constant time; else 401), 16+ characters (a secret: registered for redaction, never logged or shown); required when `MCP_LISTEN` is set — the start refuses otherwise",
        ),
        v(
            "MCP_SERVER_TOOLS",
            "`read`",
            "which of the agent's own tools `switchboard mcp` offers other agents, by tier: `read` (memory recall, portfolio views, task lists, looking back), `data` (plus `remember`/`forget`), `act` (plus tools with effects — HTTP tools, `update_portfolio`, `schedule`, `web_fetch` — each under the same approval rules as in a chat, a card in `MCP_NOTIFY_CHAT`), `all` (plus the workspace's files, commands and scripts) or `none` (see [own tools](mcp.md#the-agents-own-tools))",
        ),
        v(
            "MCP_SERVER_USER",
            "unset (no own tools)",
            "the user the own tools of `switchboard mcp` act as — their memory, ledger, approval rules and caps: `telegram:<user_id>[@<chat_id>]` or `discord:<user_id>[@<channel_id>]` (the chat a schedule fires in; default the user's DM); required when `MCP_SERVER_TOOLS` is set to a tier",
        ),
        v(
            "WEB_FETCH_ALLOW",
            "none",
            "hosts or IPs/CIDRs `web_fetch` (and `web_search`'s provider) may reach although private/loopback",
        ),
        v(
            "SEARCH_PROVIDER",
            "unset (no `web_search`)",
            "the `web_search` tool's provider: `searxng` (your instance's JSON API), `brave` or `tavily` (see [Searching the web](tools.md#searching-the-web))",
        ),
        v(
            "SEARCH_URL",
            "Brave's or Tavily's public endpoint",
            "the provider's address: required for SearXNG (e.g. `http://searx.lan:8080`); held to `web_fetch`'s rules, so a private address must be in `WEB_FETCH_ALLOW`",
        ),
        v(
            "SEARCH_API_KEY",
            "none",
            "the provider's key (Brave's subscription token, Tavily's `tvly-…`); required for both, never logged or shown to the model",
        ),
        v(
            "SEARCH_RESULTS",
            "`5`",
            "results per search, 1–10",
        ),
        v(
            "TOOL_BUILDERS",
            "`approvers`",
            "who may add, change and remove tools from the chat (`/tools add`, `http_tool`, `script_tool`): `approvers`, `all` or `off`; their credentials come only from `TOOL_SECRET_*` variables",
        ),
        v(
            "PORTFOLIO_TOOLS",
            "`true`",
            "the portfolio ledger tools `portfolio` and `update_portfolio`",
        ),
        v(
            "INTENT_RULES_FILE",
            "unset",
            "a JSON list of `{\"pattern\", \"tool\"}`: messages matching a pattern must be answered from that tool (see the intent guard); the built-in portfolio rule always applies",
        ),
        v(
            "SUBAGENTS_FILE",
            "unset",
            "the operator's sub-agent roles: name, description, system prompt, tools, model, max rounds, approvals, memory (its own notes per user); reloaded on `SIGHUP` and when it changes: the `delegate_to_<role>` tools are rebuilt for the next turn",
        ),
        v(
            "SUBAGENTS",
            "`research,analysis` (and the roles of `SUBAGENTS_FILE`)",
            "sub-agent roles offered to the model as `delegate_to_<role>` (`research`, `analysis`, `operations` or your own); `none` for none",
        ),
    ],
};

pub(super) const CHATS: Section = Section {
    title: "Chats",
    intro: "See [Conversations](conversations.md).",
    vars: &[
        v(
            "CHATS_FILE",
            "unset",
            "per-chat settings: a JSON file binding chats, topics and threads to a model, instructions, tools, sub-agents, free response, verbosity, queue mode and memory; reloaded on `SIGHUP` and when it changes (a turn keeps the version it began with)",
        ),
        v("TIMEZONE", "`UTC`", "IANA time zone of cron schedules"),
        v(
            "FEEDBACK_BUTTONS",
            "`true`",
            "👍/👎 under final answers",
        ),
        v(
            "QUEUE_MODE",
            "`followup`",
            "what happens to a message sent while the session's turn runs, unless the session chose with `/queue`: `followup` (its own turn after it, in order), `collect` (all that arrived answered together in one next turn), `interrupt` (the running turn is stopped and the new message starts one)",
        ),
        v(
            "IDENTITY_USER_EDITS",
            "`false`",
            "users may set the agent's name, persona and style rules for their own direct messages with `/identity name|persona|style add|style clear|reset` (laid over the operator's profile, audited)",
        ),
        v(
            "CHAT_VERBOSITY",
            "`tools`",
            "what a chat sees of a turn's work unless it chose with `/verbose`: `off` (answers only), `tools` (a line per tool call while the turn runs, collapsed to one line above the answer), `full` (`tools` and a short, clipped summary of the model's reasoning, the whole of it behind a 💭 button)",
        ),
    ],
};
