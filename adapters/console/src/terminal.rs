//! The terminal's width, so a partial line shown as it streams can be erased
//! (all the rows it wrapped onto) when it is printed again styled.

/// Columns of the terminal: `COLUMNS`, else `stty size`, else 80.
pub(crate) fn width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse().ok())
        .or_else(stty_columns)
        .filter(|w: &usize| *w > 0)
        .unwrap_or(80)
}

fn stty_columns() -> Option<usize> {
    let out = std::process::Command::new("stty")
        .arg("size")
        .stdin(std::process::Stdio::inherit())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}
