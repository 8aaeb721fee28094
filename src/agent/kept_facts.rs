//! What compaction carries over word for word (seed 001 §3.1): from the folded
//! part of a conversation, the user's lines holding an address, a number with
//! its unit, a code or id, a link or an e-mail, a name they gave, or a
//! decision; the exact commands run; the approval outcomes (risk results);
//! and the fields a tool's spec names in its results (`key_fields`).
//! A model's summary paraphrases; these lines are found by code and appended
//! to the summary as a bounded `[kept verbatim]` block, so "what was the
//! address?" still has its answer after the summary replaced the messages —
//! even when summarizing failed and the head was trimmed.

use super::tool_fields::{declared, field_values, result_tools, KeyFields};
use crate::llm::{Message, Role};
use serde_json::Value;
use std::sync::LazyLock;

/// Heads the block inside a summary.
pub const KEPT_MARK: &str = "[kept verbatim]";
/// Facts kept at most (the newest win).
const MAX_FACTS: usize = 24;
/// Characters of one fact.
const MAX_FACT_CHARS: usize = 300;
/// Characters of the whole block.
const MAX_BLOCK_CHARS: usize = 3_000;

/// Lines worth keeping verbatim: addresses, amounts, codes, links, names,
/// decisions (English and Chinese cues).
static WORTH_KEEPING: LazyLock<Option<regex::Regex>> = LazyLock::new(|| {
    let patterns = [
        // An address: a number next to a street word, or Chinese address parts.
        r"(?i)\b\d+[a-z]?,?\s+(?:[\p{L}'’.-]+\s+){0,4}(?:street|st\.?|road|rd\.?|avenue|ave\.?|boulevard|blvd\.?|lane|ln\.?|drive|dr\.?|way|place|pl\.?|square|court|rue|strasse|straße|via|calle|platz)\b",
        r"(?i)\b(?:rue|via|calle|avenida)\s+\p{L}",
        r"[\p{Han}]{1,8}(?:省|市|区|县|镇|街道|路|街|巷|大道)[\p{Han}\d]*\d+\s*号",
        r"(?i)\b(?:address|postcode|zip code|postal code)\b|地址|邮编",
        // An amount: a number with a currency or unit, a percentage.
        r"(?i)(?:[$€£¥￥]\s?\d|\d(?:[\d,.]*\d)?\s?(?:%|usd|eur|gbp|cny|rmb|jpy|hkd|btc|eth|dollars?|euros?|yuan|元|块|万|亿|kg|km|gb|mb|tb|ms|cores?)\b)",
        // A code or an id: long digit runs, ticket ids, versions, IPs, hashes.
        r"\b\d{5,}\b|\b[A-Z]{2,}-\d+\b|\bv?\d+\.\d+\.\d+\b|\b[0-9a-f]{12,}\b",
        // Links, e-mail addresses, paths.
        r"(?i)https?://\S+|\b[\w.+-]+@[\w-]+\.[\w.]+\b|(?:^|\s)(?:~|/)[\w.-]+/[\w./-]+",
        // Code spans.
        r"`[^`\n]{2,}`",
        // A name given.
        r"(?i)\b(?:my name is|call me|i am called|name it)\b|我叫|名字是|叫做",
        // A decision.
        r"(?i)\b(?:i(?:'ve| have)? decided|let'?s (?:go|use|do|keep|pick)|we(?:'ll| will) (?:go|use)|go with|i(?:'ll| will) take|don'?t (?:ever )?use|never use|always use|from now on|instead of)\b|决定|就用|选择|不要用|以后都",
    ];
    regex::Regex::new(&patterns.join("|")).ok()
});

fn worth_keeping(sentence: &str) -> bool {
    WORTH_KEEPING
        .as_ref()
        .is_some_and(|re| re.is_match(sentence))
}

/// The facts of `head` to keep verbatim, oldest first, bounded; those an
/// earlier summary in the head kept come first. `key_fields`: the fields each
/// tool's results keep.
pub fn kept_facts(head: &[Message], key_fields: &KeyFields) -> Vec<String> {
    let tools = result_tools(head);
    let mut facts: Vec<String> = Vec::new();
    for m in head {
        if let Some((name, fields)) = declared(m, &tools, key_fields) {
            let values = field_values(&m.content, fields);
            facts.extend(values.iter().map(|v| format!("{name}: {}", clip(v))));
        }
        match m.role {
            Role::User => match m.content.strip_prefix(super::compaction::SUMMARY_MARK) {
                Some(summary) => facts.extend(earlier_block(summary)),
                None => facts.extend(user_lines(&m.content)),
            },
            Role::Assistant => facts.extend(m.tool_calls.iter().filter_map(|c| {
                command_of(&c.name, &c.arguments).map(|cmd| format!("ran `{cmd}`"))
            })),
            Role::Tool => facts.extend(risk_result(&m.content)),
            Role::System => {}
        }
    }
    bounded(facts)
}

/// `summary` with the block of `facts` below it (unchanged when none); a
/// block the summary already held (copied from an earlier one) is replaced.
pub fn with_block(summary: &str, facts: &[String]) -> String {
    let summary = summary
        .split_once(KEPT_MARK)
        .map_or(summary, |(before, _)| before)
        .trim_end();
    if facts.is_empty() {
        return summary.to_owned();
    }
    let lines: Vec<String> = facts.iter().map(|f| format!("- {f}")).collect();
    format!("{summary}\n\n{KEPT_MARK}\n{}", lines.join("\n"))
}

/// The facts an earlier summary kept (its block's lines).
fn earlier_block(summary: &str) -> Vec<String> {
    summary
        .split_once(KEPT_MARK)
        .map(|(_, block)| {
            block
                .lines()
                .filter_map(|l| l.trim().strip_prefix("- "))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The user's sentences (or lines) worth keeping, whole.
fn user_lines(text: &str) -> Vec<String> {
    text.lines()
        .flat_map(sentences)
        .map(str::trim)
        .filter(|s| !s.is_empty() && worth_keeping(s))
        .map(|s| format!("user: {}", clip(s)))
        .collect()
}

/// A line cut at sentence ends (`. ! ? 。！？；`) that are followed by a
/// space or end the line, so "12.5 kg" and "v1.2.3" stay whole.
fn sentences(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let ends = matches!(c, '。' | '！' | '？' | '；')
            || (matches!(c, '.' | '!' | '?') && next.is_none_or(char::is_whitespace));
        if ends {
            let end = i + c.len_utf8();
            out.push(&line[start..end]);
            start = end;
        }
    }
    out.push(&line[start..]);
    out
}

/// The command of a call that runs one (`exec_command` and friends).
fn command_of(tool: &str, arguments: &str) -> Option<String> {
    if !matches!(tool, "exec_command" | "run_script") {
        return None;
    }
    let args: Value = serde_json::from_str(arguments).ok()?;
    let command = args.get("command").and_then(Value::as_str)?.trim();
    (!command.is_empty()).then(|| clip(command))
}

/// An approval's outcome as the tool result says it (denied, expired).
fn risk_result(content: &str) -> Option<String> {
    let first = content.lines().next()?.trim();
    let risky = first.contains("the user denied this action")
        || first.contains("approval expired without an answer");
    risky.then(|| format!("approval: {}", clip(first.trim_start_matches("error: "))))
}

fn clip(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(MAX_FACT_CHARS) {
        Some((at, _)) => format!("{}…", &one_line[..at]),
        None => one_line,
    }
}

/// Without repeats; the newest [`MAX_FACTS`] within [`MAX_BLOCK_CHARS`].
fn bounded(facts: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let unique: Vec<String> = facts
        .into_iter()
        .rev()
        .filter(|f| seen.insert(f.clone()))
        .collect();
    let mut total = 0;
    let mut kept: Vec<String> = unique
        .into_iter()
        .take(MAX_FACTS)
        .take_while(|f| {
            total += f.len() + 3;
            total <= MAX_BLOCK_CHARS
        })
        .collect();
    kept.reverse();
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn kept(messages: &[Message]) -> Vec<String> {
        kept_facts(messages, &KeyFields::new())
    }

    #[test]
    fn the_fields_a_tool_names_are_kept_from_its_results() {
        let call = |id: &str, name: &str| Message {
            tool_calls: vec![ToolCall {
                id: id.into(),
                name: name.into(),
                arguments: "{}".into(),
            }],
            ..Message::assistant("")
        };
        let head = [
            Message::user("show my holdings"),
            call("c1", "portfolio"),
            Message::tool_result(
                "c1",
                "USD — cost basis 3000\n- AAPL: 10 units, average cost 150.25, cost basis 1502.5 (50%)\n(Prices are not known.)",
            ),
            call("c2", "read_file"),
            Message::tool_result("c2", "- units of something in a file"),
        ];
        let key_fields = KeyFields::from([("portfolio".to_owned(), vec!["cost basis".to_owned()])]);
        assert_eq!(
            kept_facts(&head, &key_fields),
            [
                "portfolio: USD — cost basis 3000",
                "portfolio: - AAPL: 10 units, average cost 150.25, cost basis 1502.5 (50%)",
            ]
        );
        assert!(kept(&head).is_empty(), "nothing named, nothing kept");
    }

    #[test]
    fn addresses_amounts_codes_names_and_decisions_are_kept_whole() {
        let head = [
            Message::user("Hi! My new address is 12 Rue des Lilas, 69003 Lyon. How are you?"),
            Message::assistant("Fine, thanks."),
            Message::user("我的公司地址是北京市朝阳区建国路88号。今天天气不错。"),
            Message::user("The budget is 4,500 EUR and the ticket is OPS-4412."),
            Message::user("Let's use PostgreSQL instead of MySQL. Nice weather today."),
            Message::user("My name is Ada Lovelace."),
            Message::user("thanks, that's all"),
        ];
        let facts = kept(&head);
        assert_eq!(
            facts,
            [
                "user: My new address is 12 Rue des Lilas, 69003 Lyon.",
                "user: 我的公司地址是北京市朝阳区建国路88号。",
                "user: The budget is 4,500 EUR and the ticket is OPS-4412.",
                "user: Let's use PostgreSQL instead of MySQL.",
                "user: My name is Ada Lovelace.",
            ]
        );
    }

    #[test]
    fn commands_run_and_denials_are_kept_and_earlier_blocks_carried() {
        let mut call = Message::assistant("");
        call.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "exec_command".into(),
            arguments: r#"{"command": "rsync -a ./site/ deploy@10.0.0.7:/srv/www"}"#.into(),
        });
        let earlier = with_block("Earlier work.", &["user: The VPN port is 51820.".into()]);
        let head = [
            Message::user(format!(
                "{}\n{earlier}",
                super::super::compaction::SUMMARY_MARK
            )),
            call,
            Message::tool_result("c1", "sent 3 files"),
            Message::tool_result(
                "c2",
                "error: the user denied this action. Reason: not on Fridays",
            ),
        ];
        let facts = kept(&head);
        assert_eq!(
            facts,
            [
                "user: The VPN port is 51820.",
                "ran `rsync -a ./site/ deploy@10.0.0.7:/srv/www`",
                "approval: the user denied this action. Reason: not on Fridays",
            ]
        );
        let summary = with_block("Deploy work.", &facts);
        assert!(summary.starts_with("Deploy work.\n\n[kept verbatim]\n- user: The VPN port"));
        assert_eq!(with_block("Nothing kept.", &[]), "Nothing kept.");
        // A block the model copied from the earlier summary is not doubled.
        let copied = with_block(&summary, &facts);
        assert_eq!(copied.matches(KEPT_MARK).count(), 1, "{copied}");
    }

    #[test]
    fn the_block_is_bounded_to_the_newest_facts() {
        let head: Vec<Message> = (0..60)
            .map(|i| Message::user(format!("Order {} costs $1{i}.", 100_000 + i)))
            .collect();
        let facts = kept(&head);
        assert_eq!(facts.len(), MAX_FACTS);
        assert_eq!(facts.last().unwrap(), "user: Order 100059 costs $159.");
        let long = [Message::user(format!(
            "The address is {}",
            "x ".repeat(400)
        ))];
        assert!(kept(&long)[0].chars().count() <= "user: ".len() + MAX_FACT_CHARS + 1);
    }
}
