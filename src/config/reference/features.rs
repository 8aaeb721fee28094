//! Memory, media, the platforms and operations.

use super::{v, Section};

pub(super) const MEMORY: Section = Section {
    title: "Memory",
    intro: "See [Memory](memory.md).",
    vars: &[
        v(
            "MEMORY_ENABLED",
            "`true`",
            "recall, extraction, memory tools, task/execution state and correction rules (compaction always runs)",
        ),
        v(
            "MEMORY_IDLE_SECS",
            "1800",
            "a session quiet this long has its new messages extracted into memories",
        ),
        v(
            "MEMORY_RECALL_TOKENS",
            "800",
            "token budget of the `<relevant-memories>` block",
        ),
        v(
            "MEMORY_LAYER_EVERY",
            "10",
            "new preferences/decisions before scenarios and persona are refreshed",
        ),
        v(
            "MEMORY_RETENTION_DAYS",
            "90",
            "ordinary memories neither updated nor recalled this long are collected",
        ),
        v(
            "MEMORY_LEARN",
            "`model`",
            "preference learning after each user message: `model` (a side call every `MEMORY_LEARN_EVERY` messages, keyword rules when it fails or breaks its JSON contract), `rules` (keyword rules only, no model calls), `off`",
        ),
        v(
            "MEMORY_LEARN_EVERY",
            "5",
            "at most one learning call per user per this many eligible messages (commands and messages under 6 letters/digits are skipped)",
        ),
        v(
            "REFLECTION_EVERY_HOURS",
            "6",
            "how often a user active since their last reflection note gets a new one (one side call each); `off` for none",
        ),
        v(
            "LIVE_STATE_CHECK",
            "`true`",
            "before a turn on a request that is not plain chat, one short model call names the live state it reads or changes (portfolio, schedules, tasks, rules), read now and shown instead of the task summary; `false`: only an open plan's steps decide",
        ),
        v(
            "MEMORY_HARD_LIMIT_PCT",
            "150",
            "hard limit of each memory kind as a percentage of its cap (the soft limit), 100–1000",
        ),
        v(
            "MEMORY_IN_SHARED_CHATS",
            "`preferences`",
            "what of a user's memory may surface in groups, channels and threads: `preferences`, `all`, `none`",
        ),
        v(
            "EMBEDDINGS_BASE_URL",
            "unset",
            "semantic recall and chat-history search by meaning through an OpenAI-compatible `/embeddings` endpoint (OpenAI, Ollama, a local text-embeddings server); unset: recall by words only, exactly as before",
        ),
        v(
            "EMBEDDINGS_MODEL",
            "none",
            "the embedding model (required with the URL); changing it re-embeds every memory and message in the background",
        ),
        v(
            "EMBEDDINGS_API_KEY",
            "none",
            "the embeddings endpoint's key; a secret (redacted)",
        ),
        v(
            "EMBEDDINGS_TIMEOUT_MS",
            "250",
            "the longest a recall waits for its message's embedding before recalling by words only",
        ),
        v(
            "EMBEDDINGS_BATCH",
            "64",
            "texts per request of the background worker and `switchboard memory backfill` (at most 2048)",
        ),
        v(
            "EMBEDDINGS_MIN_SIMILARITY",
            "0.3",
            "cosine similarity below which a memory counts as unrelated (0 up to 1)",
        ),
        v(
            "EMBEDDINGS_CACHE_MB",
            "256",
            "memory for the per-user vector indexes; the least recently used users are dropped beyond it",
        ),
    ],
};

pub(super) const MEDIA: Section = Section {
    title: "Media",
    intro: "Photos, voice notes and files; see [Media](media.md). `LLM_VISION` is under Model endpoint.",
    vars: &[
        v(
            "STT_BASE_URL",
            "unset",
            "speech to text through an OpenAI-compatible `/audio/transcriptions` endpoint (OpenAI, a local whisper.cpp or faster-whisper server); without it a voice note gets an answer saying how to enable it",
        ),
        v("STT_MODEL", "`whisper-1`", "the speech-to-text model"),
        v(
            "STT_API_KEY",
            "none",
            "the speech-to-text endpoint's key; a secret (redacted)",
        ),
        v(
            "TTS_BASE_URL",
            "unset",
            "voice replies through an OpenAI-compatible `/audio/speech` endpoint (asked for Ogg Opus): a voice note is answered in text and then in kind, and `/voice on` speaks every answer; unset, answers are text only",
        ),
        v("TTS_MODEL", "`tts-1`", "the text-to-speech model"),
        v("TTS_VOICE", "`alloy`", "the voice the answers are spoken in"),
        v(
            "TTS_API_KEY",
            "none",
            "the text-to-speech endpoint's key; a secret (redacted)",
        ),
        v(
            "MEDIA_QUOTA_MB_PER_DAY",
            "100",
            "bytes of files one user may send in 24 h (across chats and processes)",
        ),
        v(
            "MEDIA_RETENTION_DAYS",
            "30",
            "files in `DATA_DIR/media` (downloads, the scaled copies of photos, images tools returned) unused this long are deleted by the hourly sweep, as are unrecorded files written longer ago",
        ),
        v(
            "MEDIA_IMAGE_TURNS",
            "3",
            "user turns an image stays visible to the model; older ones become a one-line placeholder",
        ),
        v(
            "MEDIA_MAX_AUDIO_SECS",
            "600",
            "the longest voice note or audio file transcribed",
        ),
        v(
            "MEDIA_INLINE_CHARS",
            "20000",
            "a document's text up to this many characters is put in the message; longer text is stored with a preview and read with `read_stored_result`",
        ),
        v(
            "MEDIA_DOCUMENT_MEMORY_MB",
            "512",
            "memory (address space) of the process that reads one PDF (at least 128); a quarter of it bounds what the document's streams may decompress to",
        ),
        v(
            "MEDIA_DOCUMENT_SECS",
            "20",
            "CPU time, and wall time after which the gateway kills it, of the process that reads one PDF",
        ),
        v(
            "SWITCHBOARD_HELPER_BIN",
            "the running binary",
            "the `switchboard` binary that reads PDFs (`switchboard extract-document`); set it when Switchboard is embedded in another program",
        ),
    ],
};

pub(super) const TELEGRAM: Section = Section {
    title: "Telegram",
    intro: "Enabled when `TELEGRAM_BOT_TOKEN` is set; see [Telegram and Discord](platforms.md).",
    vars: &[
        v(
            "TELEGRAM_BOT_TOKEN",
            "none",
            "enables Telegram (long polling; the offset is kept in `DATA_DIR`)",
        ),
        v(
            "TELEGRAM_API_URL",
            "official API",
            "Bot API base (tests use a fake)",
        ),
        v(
            "TELEGRAM_ALLOWED_USERS",
            "none",
            "numeric user ids admitted under `ACCESS_POLICY=allowlist` (comma-separated)",
        ),
        v(
            "TELEGRAM_APPROVERS",
            "none",
            "numeric user ids that may decide anyone's approvals",
        ),
        v(
            "TELEGRAM_DRAFTS",
            "`on`",
            "`on`: answers in private chats stream as a native draft (`sendMessageDraft`, Bot API 9.3: an animated preview, shown again every 20 s while a tool runs, that the final message replaces); a chat where Telegram refuses drafts streams by edits from then on; `off`: private chats too stream by editing one message in place, as groups always do",
        ),
        v(
            "TELEGRAM_WEBHOOK_URL",
            "none",
            "webhook mode (with `TELEGRAM_WEBHOOK_LISTEN` and `TELEGRAM_WEBHOOK_SECRET`: all three or none): the public `https://` URL, on port 443, 80, 88 or 8443 (checked at start); deliveries are spooled to disk before they are acknowledged",
        ),
        v(
            "TELEGRAM_WEBHOOK_LISTEN",
            "none",
            "webhook mode: the local listen address, e.g. `0.0.0.0:8443`",
        ),
        v(
            "TELEGRAM_WEBHOOK_SECRET",
            "none",
            "webhook mode: the secret token (1–256 characters of `A-Za-z0-9_-`); a wrong secret header gets 401",
        ),
    ],
};

pub(super) const DISCORD: Section = Section {
    title: "Discord",
    intro: "Enabled when `DISCORD_BOT_TOKEN` is set; see [Telegram and Discord](platforms.md).",
    vars: &[
        v(
            "DISCORD_BOT_TOKEN",
            "none",
            "enables Discord (intents: guild messages, DMs, message content, and their reactions)",
        ),
        v(
            "DISCORD_API_URL",
            "official API",
            "REST base (tests use a fake; serenity's limiter is then off and ours covers it)",
        ),
        v(
            "DISCORD_ALLOWED_USERS",
            "none",
            "numeric user ids admitted under `ACCESS_POLICY=allowlist` (comma-separated)",
        ),
        v(
            "DISCORD_APPROVERS",
            "none",
            "numeric user ids that may decide anyone's approvals",
        ),
        v(
            "DISCORD_APPROVER_ROLES",
            "none",
            "role ids whose members may decide anyone's approvals",
        ),
        v(
            "DISCORD_FREE_CHANNELS",
            "none",
            "channels answered without an @mention",
        ),
        v("DISCORD_SHARDS", "1", "total shards"),
        v(
            "DISCORD_SHARD_RANGE",
            "all",
            "the range of shards this process runs (e.g. `0-3`)",
        ),
    ],
};

pub(super) const REACTIONS: Section = Section {
    title: "Reactions",
    intro: "Status reactions on users' messages and reactions as feedback, on Telegram and Discord; see [Telegram and Discord](platforms.md#reactions).",
    vars: &[
        v(
            "REACTIONS",
            "`on`",
            "`on`: the bot's reaction on the user's message shows received, working, done or failed (at the lowest priority, like typing), and a 👍/👎 on an answer by its asker counts as feedback; `off`: neither",
        ),
        v(
            "REACTION_RECEIVED",
            "👀",
            "the emoji of a message accepted and waiting for its turn",
        ),
        v(
            "REACTION_WORKING",
            "✍ (Discord ✍️)",
            "the emoji of a message whose turn runs",
        ),
        v(
            "REACTION_DONE",
            "👌 (Discord ✅)",
            "the emoji of an answered message; on Telegram it must be one of its reaction emoji (✅ and ❌ are not), checked at start",
        ),
        v(
            "REACTION_FAILED",
            "💔 (Discord ❌)",
            "the emoji of a message whose turn failed (model error, deadline, stopped, not delivered)",
        ),
    ],
};

pub(super) const OPERATIONS: Section = Section {
    title: "Operations and logging",
    intro: "See [Operations](operations.md) and [Web console](web-console.md).",
    vars: &[
        v(
            "HEALTH_LISTEN",
            "off",
            "`IP:PORT` serving `GET /healthz` (200 while the database answers and its file is the one opened; else 503 with `database` = `unavailable`, `timed out`, `deleted` or `replaced`) and `GET /metrics` (Prometheus text; see [Operations](operations.md#metrics-and-health))",
        ),
        v(
            "WEB_LISTEN",
            "off",
            "`IP:PORT` of the operator web console; equal to `HEALTH_LISTEN`, one listener serves both",
        ),
        v(
            "WEB_TOKEN",
            "none",
            "the console's login token, 16+ characters (a secret: registered for redaction, never logged or shown); required when `WEB_LISTEN` is not a loopback address — the start refuses otherwise. Without it a loopback console signs every local visitor in and answers only `localhost`, `127.0.0.1` and `[::1]` host names, and cannot approve (a program on the machine could reach it as well as you)",
        ),
        v(
            "WEB_REAUTH_SECS",
            "`300`",
            "seconds after the token was last entered (signing in counts) during which the console approves a card or a pairing without asking for it again; past that the approve form asks for `WEB_TOKEN` next to Approve (a program that fetches the pages has a session, not the token). `0` asks with every approval; at most 86400",
        ),
        v(
            "WEB_TRUSTED_PROXY",
            "none",
            "IP addresses of reverse proxies in front of the console, comma-separated: from them the client is the address appended to `X-Forwarded-For`, and token attempts (5 a minute) are counted per client instead of for everyone behind the proxy. The header is ignored from any other peer",
        ),
        v(
            "RUST_LOG",
            "`info` (`warn` for `chat`)",
            "log filter; logs go to stderr, coloured only when it is a terminal (a file or pipe gets plain text, `NO_COLOR` also turns colour off). `chat` logs to `$DATA_DIR/chat.log` instead — on a terminal or piped — so no warning lands in the conversation (past 10 MB at start it becomes `chat.log.1` and a new file begins)",
        ),
        v("LOG_FORMAT", "`pretty`", "`pretty` or `json`"),
        v(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "off",
            "base `http://` or `https://` URL of an OpenTelemetry collector (OTLP over HTTP, protobuf; spans go to `{URL}/v1/traces`): `run` and `chat` export one trace per turn, with spans for model calls, tool calls and platform sends (see [Operations](operations.md#traces)). A user and password in the URL are sent as basic authentication and are secrets: registered for redaction, never logged, and the value is never echoed in a configuration error",
        ),
        v(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "unset",
            "the collector's full traces URL, used as given (e.g. `http://127.0.0.1:4318/v1/traces`); wins over `OTEL_EXPORTER_OTLP_ENDPOINT`. Credentials in it are handled and kept secret the same way",
        ),
        v(
            "OTEL_EXPORTER_OTLP_HEADERS",
            "none",
            "headers for every export, `name=value` pairs separated by commas, values percent-encoded (e.g. `authorization=Bearer%20TOKEN`); the values are secrets: registered for redaction, never logged",
        ),
        v(
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
            "none",
            "headers for trace exports, in the same form; a name given here wins over the same name in `OTEL_EXPORTER_OTLP_HEADERS`. The values are secrets",
        ),
        v(
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "`http/protobuf`",
            "only `http/protobuf` is built in; `grpc` or `http/json` is refused at start with the fix (point the endpoint at the collector's OTLP/HTTP port, 4318 by default). `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` is read the same way",
        ),
        v(
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "`http/protobuf`",
            "as `OTEL_EXPORTER_OTLP_PROTOCOL`, for traces only",
        ),
        v(
            "OTEL_TRACES_SAMPLER",
            "`parentbased_always_on`",
            "which turns are exported: `always_on`, `always_off`, `traceidratio`, or the `parentbased_` form of each (a turn is a trace's root, so these decide by their root sampler)",
        ),
        v(
            "OTEL_TRACES_SAMPLER_ARG",
            "`1`",
            "the fraction of turns `traceidratio` samplers export, from 0 to 1 (e.g. `0.1`)",
        ),
        v(
            "OTEL_SERVICE_NAME",
            "`switchboard`",
            "`service.name` of the exported spans",
        ),
    ],
};
