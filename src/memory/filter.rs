//! What must never become a memory (secrets, specific trades, transient facts,
//! market snapshots, tool details) and which facts are too dynamic for the
//! task state. A safety net behind the extraction prompt, which asks the same.

/// Why a candidate memory was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    Empty,
    TooLong,
    Secret,
    Trade,
    Transient,
    Market,
    ToolDetail,
}

impl Rejection {
    pub fn as_str(self) -> &'static str {
        match self {
            Rejection::Empty => "empty",
            Rejection::TooLong => "too long",
            Rejection::Secret => "looks like a secret",
            Rejection::Trade => "a specific trade",
            Rejection::Transient => "a transient fact",
            Rejection::Market => "a market snapshot",
            Rejection::ToolDetail => "a tool detail",
        }
    }
}

/// Longest memory content accepted, in characters.
pub const MAX_MEMORY_CHARS: usize = 300;

const SECRET_WORDS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "api key",
    "api_key",
    "apikey",
    "token",
    "secret",
    "密码",
    "口令",
    "私钥",
    "助记词",
    "密钥",
];
const SECRET_PREFIXES: &[&str] = &[
    "sk-", "ghp_", "gho_", "xoxb-", "xoxp-", "akia", "aiza", "glpat-",
];
const RULE_WORDS: &[&str] = &[
    "prefer", "always", "never", "usually", "whenever", "tend", "avoid", "rule", "habit", "style",
    "strategy", "偏好", "喜欢", "习惯", "通常", "总是", "从不", "避免", "原则", "策略", "规则",
    "倾向", "每次", "一般", "不会",
];
const TRADE_WORDS: &[&str] = &[
    "bought",
    "sold",
    "buy ",
    "sell ",
    "purchased",
    "shorted",
    "went long",
    "opened a position",
    "closed a position",
    "买入",
    "卖出",
    "买了",
    "卖了",
    "加仓",
    "减仓",
    "清仓",
    "建仓",
    "平仓",
    "抄底",
    "下单",
];
const TRANSIENT_WORDS: &[&str] = &[
    "today",
    "tonight",
    "this morning",
    "this afternoon",
    "yesterday",
    "right now",
    "at the moment",
    "just now",
    "今天",
    "今日",
    "今晚",
    "今早",
    "刚才",
    "刚刚",
    "昨天",
    "此刻",
    "眼下",
];
const MARKET_WORDS: &[&str] = &[
    "market today",
    "market is",
    "stocks are up",
    "stocks are down",
    "price is",
    "price was",
    "trading at",
    "closed at",
    "opened at",
    "大盘",
    "行情",
    "股价",
    "收盘",
    "开盘",
    "涨停",
    "跌停",
    "现价",
    "报价",
];
const TOOL_WORDS: &[&str] = &[
    "tool call",
    "tool result",
    "function call",
    "call_id",
    "exit code",
    "stdout",
    "stderr",
    "exec_command",
    "read_file",
    "write_file",
    "web_fetch",
    "ask_user",
    "check_background_tasks",
    "工具调用",
    "调用了",
];
const DYNAMIC_WORDS: &[&str] = &[
    "balance",
    "holding",
    "position",
    "price",
    "quote",
    "configured",
    "config",
    "余额",
    "持仓",
    "仓位",
    "价格",
    "行情",
    "配置",
    "报价",
];

/// Refuses what must never be stored as a long-term memory.
pub fn check_memory(content: &str) -> Result<(), Rejection> {
    let text = content.trim();
    if text.is_empty() {
        return Err(Rejection::Empty);
    }
    if text.chars().count() > MAX_MEMORY_CHARS {
        return Err(Rejection::TooLong);
    }
    check_secret(text)?;
    let lower = text.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    if has(TOOL_WORDS) {
        return Err(Rejection::ToolDetail);
    }
    if has(MARKET_WORDS) {
        return Err(Rejection::Market);
    }
    if has(TRANSIENT_WORDS) {
        return Err(Rejection::Transient);
    }
    let specific = lower.chars().any(|c| c.is_ascii_digit());
    if has(TRADE_WORDS) && specific && !has(RULE_WORDS) {
        return Err(Rejection::Trade);
    }
    Ok(())
}

/// Refuses text that looks like it holds a credential.
pub fn check_secret(text: &str) -> Result<(), Rejection> {
    let lower = text.to_lowercase();
    if lower.contains("-----begin") {
        return Err(Rejection::Secret);
    }
    for word in SECRET_WORDS {
        if let Some(at) = lower.find(word) {
            let after: String = lower[at + word.len()..].chars().take(4).collect();
            if after.contains([':', '=', '：', '是', '为']) || after.starts_with(" is") {
                return Err(Rejection::Secret);
            }
        }
    }
    for token in lower.split(|c: char| {
        c.is_whitespace() || matches!(c, '"' | '\'' | '`' | ',' | '，' | '(' | ')')
    }) {
        let keyish = SECRET_PREFIXES.iter().any(|p| token.starts_with(p)) && token.len() >= 16;
        let random = token.len() >= 32
            && token
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=' | '_' | '-'))
            && token.chars().any(|c| c.is_ascii_digit())
            && token.chars().any(|c| c.is_ascii_alphabetic());
        if keyish || random {
            return Err(Rejection::Secret);
        }
    }
    Ok(())
}

/// Whether a task-state fact describes state that tools should re-read
/// (balances, holdings, prices, configuration) rather than trust from a summary.
pub fn is_dynamic(fact: &str) -> bool {
    let lower = fact.to_lowercase();
    DYNAMIC_WORDS.iter().any(|w| lower.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_preferences_and_decisions_pass() {
        for ok in [
            "The user prefers concise answers in Chinese.",
            "用户偏好低风险的价值投资，单只股票仓位不超过10%",
            "The user decided to use PostgreSQL for multi-instance deployments because of replication.",
            "用户喜欢喝咖啡",
        ] {
            assert_eq!(check_memory(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn forbidden_content_is_refused_with_a_reason() {
        let cases = [
            ("", Rejection::Empty),
            ("The user's password is hunter2", Rejection::Secret),
            ("key sk-abcdefghijklmnopqrstuvwxyz123456", Rejection::Secret),
            ("用户买了100股贵州茅台", Rejection::Trade),
            ("The user sold 600519 at a loss", Rejection::Trade),
            ("The user is tired today", Rejection::Transient),
            ("今天大盘下跌", Rejection::Market),
            (
                "The assistant ran exec_command to list files",
                Rejection::ToolDetail,
            ),
        ];
        for (text, why) in cases {
            assert_eq!(check_memory(text), Err(why), "{text}");
        }
        assert_eq!(
            check_memory(&"x".repeat(MAX_MEMORY_CHARS + 1)),
            Err(Rejection::TooLong)
        );
    }

    #[test]
    fn dynamic_facts_are_recognized() {
        assert!(is_dynamic("Account balance is 1,200 USDT"));
        assert!(is_dynamic("当前持仓三只股票"));
        assert!(!is_dynamic(
            "The user is migrating the billing service to Rust"
        ));
    }
}
