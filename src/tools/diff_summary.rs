//! A short line-diff summary of a pending file write, for the approval card.

/// How many changed lines the summary shows before "… more".
const MAX_SHOWN: usize = 16;
/// Width of a shown line.
const LINE_CHARS: usize = 160;
/// Above this many cells the exact LCS is skipped and the summary is approximate.
const MAX_DP_CELLS: usize = 1_000_000;

/// What the write will do to the file, in a few lines: new file / append /
/// `+added −removed` lines with the first changed lines.
pub(crate) fn summarize(old: Option<&str>, new: &str, append: bool) -> String {
    let new_lines: Vec<&str> = new.lines().collect();
    match old {
        None => {
            let mut out = format!("new file: {} lines, {} bytes\n", new_lines.len(), new.len());
            push_preview(&mut out, &new_lines, 1);
            out
        }
        Some(old) if append => {
            let start = old.lines().count() + 1;
            let mut out = format!(
                "append to existing file ({} bytes): +{} lines, {} bytes\n",
                old.len(),
                new_lines.len(),
                new.len()
            );
            push_preview(&mut out, &new_lines, start);
            out
        }
        Some(old) if old == new => {
            "no changes: the content is identical to the existing file\n".to_string()
        }
        Some(old) => {
            let old_lines: Vec<&str> = old.lines().collect();
            replace_summary(&old_lines, &new_lines, old.len(), new.len())
        }
    }
}

fn push_preview(out: &mut String, lines: &[&str], first_line_no: usize) {
    if lines.is_empty() {
        return;
    }
    out.push_str(&format!("@@ line {first_line_no}\n"));
    for line in lines.iter().take(MAX_SHOWN) {
        push_line(out, '+', line);
    }
    if lines.len() > MAX_SHOWN {
        let rest = &lines[MAX_SHOWN..];
        out.push_str(&format!(
            "… {} more lines ({} characters) not shown\n",
            crate::text::grouped(rest.len()),
            crate::text::grouped(rest.iter().map(|l| l.chars().count() + 1).sum())
        ));
    }
}

/// One shown line, cut at `LINE_CHARS` with the cut part counted.
fn push_line(out: &mut String, sign: char, line: &str) {
    match line.char_indices().nth(LINE_CHARS) {
        Some((idx, _)) => out.push_str(&format!(
            "{sign} {}… ({} more characters not shown)\n",
            &line[..idx],
            crate::text::grouped(line[idx..].chars().count())
        )),
        None => out.push_str(&format!("{sign} {line}\n")),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Keep,
    Remove(usize),
    Add(usize),
}

fn replace_summary(old: &[&str], new: &[&str], old_bytes: usize, new_bytes: usize) -> String {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let max_suffix = old.len().min(new.len()) - prefix;
    let suffix = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    let old_mid = &old[prefix..old.len() - suffix];
    let new_mid = &new[prefix..new.len() - suffix];
    let (ops, exact) = edit_script(old_mid, new_mid);

    let added = ops.iter().filter(|o| matches!(o, Op::Add(_))).count();
    let removed = ops.iter().filter(|o| matches!(o, Op::Remove(_))).count();
    let mut out = format!(
        "replace existing file: {} lines, {} bytes → {} lines, {} bytes\nchanges: +{added} −{removed} lines{}\n",
        old.len(),
        old_bytes,
        new.len(),
        new_bytes,
        if exact { "" } else { " (approximate)" }
    );

    let mut shown = 0;
    let mut in_hunk = false;
    let mut new_no = prefix; // lines of the new file before the current op
    for (i, op) in ops.iter().enumerate() {
        match op {
            Op::Keep => {
                in_hunk = false;
                new_no += 1;
                continue;
            }
            _ if shown == MAX_SHOWN => {
                let rest = added + removed - shown;
                let chars: usize = ops[i..]
                    .iter()
                    .map(|op| match op {
                        Op::Remove(i) => old_mid[*i].chars().count() + 1,
                        Op::Add(j) => new_mid[*j].chars().count() + 1,
                        Op::Keep => 0,
                    })
                    .sum();
                out.push_str(&format!(
                    "… {} more changed lines ({} characters) not shown\n",
                    crate::text::grouped(rest),
                    crate::text::grouped(chars)
                ));
                break;
            }
            _ => {}
        }
        if !in_hunk {
            out.push_str(&format!("@@ line {}\n", new_no + 1));
            in_hunk = true;
        }
        match op {
            Op::Remove(i) => push_line(&mut out, '-', old_mid[*i]),
            Op::Add(j) => {
                push_line(&mut out, '+', new_mid[*j]);
                new_no += 1;
            }
            Op::Keep => {}
        }
        shown += 1;
    }
    out
}

/// The edit script turning `old` into `new`; `false` when it is the approximate
/// remove-all/add-all script because the inputs are too large for an exact LCS.
fn edit_script(old: &[&str], new: &[&str]) -> (Vec<Op>, bool) {
    let (n, m) = (old.len(), new.len());
    if n.saturating_mul(m) > MAX_DP_CELLS {
        let ops = (0..n).map(Op::Remove).chain((0..m).map(Op::Add)).collect();
        return (ops, false);
    }
    // lcs[i * (m + 1) + j] = LCS length of old[i..] and new[j..].
    let width = m + 1;
    let mut lcs = vec![0u32; (n + 1) * width];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i * width + j] = if old[i] == new[j] {
                lcs[(i + 1) * width + j + 1] + 1
            } else {
                lcs[(i + 1) * width + j].max(lcs[i * width + j + 1])
            };
        }
    }
    let mut ops = Vec::with_capacity(n + m);
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && old[i] == new[j] {
            ops.push(Op::Keep);
            i += 1;
            j += 1;
        } else if j == m || (i < n && lcs[(i + 1) * width + j] >= lcs[i * width + j + 1]) {
            ops.push(Op::Remove(i));
            i += 1;
        } else {
            ops.push(Op::Add(j));
            j += 1;
        }
    }
    (ops, true)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn new_file_shows_size_and_first_lines() {
        let s = summarize(None, "alpha\nbeta\n", false);
        assert!(s.starts_with("new file: 2 lines, 11 bytes"), "{s}");
        assert!(s.contains("@@ line 1\n+ alpha\n+ beta\n"), "{s}");
    }

    #[test]
    fn single_line_change_is_exact() {
        let old = "a\nb\nc\nd\n";
        let new = "a\nB\nc\nd\n";
        let s = summarize(Some(old), new, false);
        assert!(s.contains("changes: +1 −1 lines\n"), "{s}");
        assert!(s.contains("@@ line 2\n- b\n+ B\n"), "{s}");
    }

    #[test]
    fn separate_hunks_are_counted_minimally() {
        let old: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        let new = old
            .replace("line 3\n", "line three\n")
            .replace("line 20\n", "")
            .replace("line 28\n", "line 28\nextra\n");
        let s = summarize(Some(&old), &new, false);
        assert!(s.contains("changes: +2 −2 lines\n"), "{s}");
        assert!(s.contains("@@ line 3\n- line 3\n+ line three\n"), "{s}");
        assert!(s.contains("@@ line 20\n- line 20\n"), "{s}");
        assert!(s.contains("@@ line 28\n+ extra\n"), "{s}");
    }

    #[test]
    fn identical_and_append() {
        assert!(summarize(Some("x\n"), "x\n", false).starts_with("no changes"));
        let s = summarize(Some("a\nb\n"), "c\n", true);
        assert!(s.contains("+1 lines, 2 bytes"), "{s}");
        assert!(s.contains("@@ line 3\n+ c\n"), "{s}");
    }

    #[test]
    fn long_changes_are_cut() {
        let new: String = (0..100).map(|i| format!("{i}\n")).collect();
        let s = summarize(Some("old\n"), &new, false);
        assert!(s.contains("changes: +100 −1 lines"), "{s}");
        assert!(
            s.contains("… 85 more changed lines (255 characters) not shown"),
            "{s}"
        );
        assert!(s.lines().count() < 25, "{s}");
    }

    #[test]
    fn hidden_lines_and_characters_are_counted() {
        let long = format!("echo SAFE{}", "x".repeat(200));
        let new: String = std::iter::once(long.clone())
            .chain((1..=20).map(|i| format!("line {i:02}")))
            .map(|l| l + "\n")
            .collect();
        let s = summarize(None, &new, false);
        assert!(
            s.contains(&format!(
                "+ {}… (49 more characters not shown)\n",
                &long[..160]
            )),
            "{s}"
        );
        // Lines 17..=21 of the file (line 16..=20 of the list): 5 × "line NN\n".
        assert!(
            s.contains("… 5 more lines (40 characters) not shown\n"),
            "{s}"
        );
        assert_eq!(crate::text::grouped(1_204), "1,204");
        assert_eq!(crate::text::grouped(999), "999");
        assert_eq!(crate::text::grouped(1_000_000), "1,000,000");
    }

    #[test]
    fn huge_rewrites_fall_back_to_approximate() {
        let old: String = (0..2000).map(|i| format!("o{i}\n")).collect();
        let new: String = (0..2000).map(|i| format!("n{i}\n")).collect();
        let s = summarize(Some(&old), &new, false);
        assert!(
            s.contains("changes: +2000 −2000 lines (approximate)"),
            "{s}"
        );
    }
}
