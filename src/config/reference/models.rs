//! The model endpoint, its fallbacks and the models chosen at run time.

use super::{v, Section};

pub(super) const MODEL: Section = Section {
    title: "Model endpoint",
    intro: "The endpoint every turn uses unless the catalogue (`switchboard model`) sets another default.",
    vars: &[
        v(
            "LLM_API",
            "`openai`",
            "the endpoint's protocol: `openai` (any OpenAI-compatible server), `anthropic` (Messages API) or `gemini` (see [Models and usage](models.md))",
        ),
        v(
            "LLM_BASE_URL",
            "— (required by `chat`, `run`, `doctor`)",
            "base URL with the version segment: `http://localhost:11434/v1` (requests go to `{LLM_BASE_URL}/chat/completions`; a 404 there is reported with the URL requested and, when the base URL has no version segment, the `/v1` it probably lacks), `https://api.anthropic.com/v1`, `https://generativelanguage.googleapis.com/v1beta`. A user and password in it (`https://user:pass@host/v1`) are secrets: the model catalogue stores the URL without them and names this variable",
        ),
        v(
            "LLM_MODEL",
            "— (required by `chat`, `run`, `doctor`)",
            "model name",
        ),
        v(
            "LLM_API_KEY",
            "none",
            "the endpoint's key (Bearer token, `x-api-key` for Anthropic, `x-goog-api-key` for Gemini); never logged or shown",
        ),
        v(
            "LLM_CONTEXT_WINDOW",
            "from the model name (Claude 200K, Gemini 1M, GPT 128K, DeepSeek 64K, else 64K)",
            "context window in tokens",
        ),
        v(
            "LLM_IDLE_TIMEOUT_SECS",
            "60",
            "a stream silent this long is a timeout; the user is told and the session stays usable",
        ),
        v(
            "LLM_MAX_OUTPUT_TOKENS",
            "unset",
            "most tokens one model call may generate; Anthropic requires a bound and gets 8192 (plus the thinking budget) when unset",
        ),
        v(
            "LLM_THINKING_BUDGET",
            "unset",
            "tokens the model may think per call: Anthropic extended thinking (at least 1024, below `LLM_MAX_OUTPUT_TOKENS`), Gemini's `thinkingBudget`; unset or `0` keeps the endpoint's default (Anthropic: no extended thinking)",
        ),
        v(
            "LLM_TEXT_TOOL_CALLS",
            "`auto`",
            "when `<tool_call>{…}</tool_call>` text in an answer runs as tool calls (OpenAI-compatible endpoints, for weak models that write calls as text): `auto` only when the model made no native call and the blocks are the whole answer (nothing but whitespace around them — not inside other text or a code fence), `on` wherever they appear, `off` never. In every mode a block that repeats a tool result of the conversation (a quoted page, file or task output) stays text",
        ),
        v(
            "LLM_FREQUENCY_PENALTY",
            "unset",
            "`frequency_penalty` (-2.0 to 2.0) sent with every request, e.g. 0.3 against repetitive small models; dropped for the rest of the run if the endpoint rejects it",
        ),
        v(
            "LLM_VISION",
            "`auto`",
            "whether images reach the model: `auto` infers it from the model name (GPT-4o/4.1/5, o3/o4, Claude 3+, Gemini, and open models named `-vl`, `vision`, `llava`, `pixtral`, `gemma3`, …), `true`, `false`. An endpoint that refuses image parts with a 400 is remembered for the run: the user is told and the file stays saved for tools",
        ),
        v("SYSTEM_PROMPT", "built in", "replaces the system prompt"),
    ],
};

/// The fallback endpoints' variables share one meaning per suffix.
macro_rules! fallback {
    ($n:literal) => {
        [
            v(
                concat!("LLM_FALLBACK_", $n, "_BASE_URL"),
                "unset",
                concat!("base URL of fallback endpoint ", $n, ", as `LLM_BASE_URL`; unset ends the list of fallbacks"),
            ),
            v(
                concat!("LLM_FALLBACK_", $n, "_MODEL"),
                "— (required with its base URL)",
                concat!("the model fallback endpoint ", $n, " serves"),
            ),
            v(
                concat!("LLM_FALLBACK_", $n, "_API_KEY"),
                "none",
                concat!("fallback endpoint ", $n, "'s key, as `LLM_API_KEY`; never logged or shown"),
            ),
            v(
                concat!("LLM_FALLBACK_", $n, "_CONTEXT_WINDOW"),
                "from the model name",
                concat!("fallback endpoint ", $n, "'s context window in tokens; the context window follows the endpoint in use"),
            ),
            v(
                concat!("LLM_FALLBACK_", $n, "_API"),
                "`openai`",
                concat!("fallback endpoint ", $n, "'s protocol (`openai`, `anthropic`, `gemini`), so a fallback may speak another protocol than the primary"),
            ),
            v(
                concat!("LLM_FALLBACK_", $n, "_TEXT_TOOL_CALLS"),
                "`LLM_TEXT_TOOL_CALLS`",
                concat!("fallback endpoint ", $n, "'s text tool calls (`auto`, `on`, `off`)"),
            ),
        ]
    };
}

const FALLBACK_1: [super::VarDoc; 6] = fallback!("1");
const FALLBACK_2: [super::VarDoc; 6] = fallback!("2");
const FALLBACK_3: [super::VarDoc; 6] = fallback!("3");

pub(super) const FALLBACK: Section = Section {
    title: "Fallback endpoints",
    intro: "Up to three fallback endpoints, tried in order when the one before is rate limiting, timing out, unreachable or failing with 5xx (never on a bad key, unknown model or other 4xx); a failed endpoint is passed over for 60 s; the context window follows the endpoint in use; `/model` says which serves; `doctor` probes each.",
    vars: &[
        FALLBACK_1[0], FALLBACK_1[1], FALLBACK_1[2], FALLBACK_1[3], FALLBACK_1[4], FALLBACK_1[5],
        FALLBACK_2[0], FALLBACK_2[1], FALLBACK_2[2], FALLBACK_2[3], FALLBACK_2[4], FALLBACK_2[5],
        FALLBACK_3[0], FALLBACK_3[1], FALLBACK_3[2], FALLBACK_3[3], FALLBACK_3[4], FALLBACK_3[5],
    ],
};

pub(super) const RUN_TIME: Section = Section {
    title: "Models at run time",
    intro: "Routing rules and budgets over the model catalogue (see [Models and usage](models.md)).",
    vars: &[
        v(
            "MODELS_USER_SELECTABLE",
            "unset",
            "catalogue models users may switch to with `/model <name>` (comma-separated, or `*` for all); unset: only the default (see [Models and usage](models.md))",
        ),
        v(
            "MODEL_ROUTE_CHEAP",
            "unset",
            "a catalogue model for short chit-chat (messages up to `MODEL_ROUTE_CHEAP_MAX_CHARS` characters, without files)",
        ),
        v(
            "MODEL_ROUTE_CHEAP_MAX_CHARS",
            "`40`",
            "the longest message, in characters, routed to `MODEL_ROUTE_CHEAP`",
        ),
        v(
            "MODEL_ROUTE_SEARCH",
            "unset",
            "a catalogue model for messages matching `MODEL_ROUTE_SEARCH_PATTERN`",
        ),
        v(
            "MODEL_ROUTE_SEARCH_PATTERN",
            "fresh-information words or a link",
            "the regular expression routing a message to `MODEL_ROUTE_SEARCH` (default: latest, news, today, current, price of, weather…, the Chinese 新闻, 最新, 今天, 实时, 现在, 最近, 天气, 股价, 行情, 汇率…, or `https://`)",
        ),
        v(
            "MODEL_ROUTE_VISION",
            "unset",
            "a catalogue model for messages with images when the session's model cannot see (images are then kept even when the main model is blind)",
        ),
        v(
            "BUDGET_USER_DAILY_USD",
            "unset",
            "daily estimated cost (UTC day, catalogue prices) past which a user's turns stop with a notice; commands still answer",
        ),
        v(
            "BUDGET_TOTAL_DAILY_USD",
            "unset",
            "daily estimated cost (UTC day, catalogue prices) past which everybody's turns stop with a notice; commands still answer",
        ),
    ],
};
