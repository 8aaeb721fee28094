//! The names MCP servers and their tools go by here: sanitized to
//! `[A-Za-z0-9_-]`, and the `mcp_<server>_<tool>` name the model sees.

/// Longest tool name the model providers take.
const MAX_NAME: usize = 64;

/// `raw` with everything outside `[A-Za-z0-9_-]` replaced by `_`.
pub fn sanitize(raw: &str) -> String {
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect::<String>()
        .trim_matches('_')
        .to_owned()
}

/// The name the model sees: `mcp_<server>_<tool>`, sanitized, at most 64
/// characters.
pub fn exposed_name(server: &str, tool: &str) -> String {
    let mut name = format!("mcp_{}_{}", sanitize(server), sanitize(tool));
    name.truncate(MAX_NAME);
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitized_and_capped() {
        assert_eq!(
            exposed_name("my server", "read.file"),
            "mcp_my_server_read_file"
        );
        assert_eq!(
            exposed_name("everything", "get-sum"),
            "mcp_everything_get-sum"
        );
        let long = exposed_name("s", &"x".repeat(100));
        assert_eq!(long.len(), 64);
    }
}
