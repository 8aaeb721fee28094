//! The prechecks a script proposed as a tool passes before its card is
//! shown (seed 001's generator checks, for Switchboard's script tools):
//! its **dependencies** — Python and Node modules from an allowed list (the
//! standard library's everyday modules), no shell `source` of another file —
//! its **structure** — a script that takes arguments reads them, as one line
//! of JSON, from its standard input — and its **complexity** — at most
//! [`MAX_CODE_LINES`] lines of code nested at most [`MAX_NESTING`] deep.
//! A refusal says which check failed and why, for the model to fix.

/// Lines of code (not blank, not comments) a tool script may have.
pub(crate) const MAX_CODE_LINES: usize = 300;
/// Blocks a tool script may nest.
pub(crate) const MAX_NESTING: usize = 6;

/// Python modules a tool script may import: the standard library's data,
/// text, time and math modules. Anything else (installed packages, process
/// and network control) is refused.
const PYTHON_MODULES: &[&str] = &[
    "argparse",
    "base64",
    "bisect",
    "calendar",
    "collections",
    "copy",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "enum",
    "fnmatch",
    "fractions",
    "functools",
    "glob",
    "gzip",
    "hashlib",
    "heapq",
    "html",
    "io",
    "itertools",
    "json",
    "math",
    "operator",
    "os",
    "pathlib",
    "pprint",
    "random",
    "re",
    "statistics",
    "string",
    "sys",
    "textwrap",
    "time",
    "typing",
    "unicodedata",
    "uuid",
    "zoneinfo",
    "__future__",
];

/// Node modules a tool script may load (`node:` prefix allowed).
const NODE_MODULES: &[&str] = &[
    "assert",
    "buffer",
    "crypto",
    "events",
    "fs",
    "os",
    "path",
    "querystring",
    "readline",
    "string_decoder",
    "url",
    "util",
    "zlib",
];

/// The language a `#!` interpreter speaks, for the checks that depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Language {
    Python,
    Node,
    Shell,
    /// Checked for structure and size only.
    Other,
}

fn language(interpreter: &str) -> Language {
    match interpreter {
        i if i.starts_with("python") => Language::Python,
        "node" | "nodejs" => Language::Node,
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "ash" => Language::Shell,
        _ => Language::Other,
    }
}

/// Runs the three prechecks on `text` (a script [`super::script_check`]
/// passed: its first line is a `#!`); `takes_input`: its manifest declares
/// parameters.
pub(crate) fn precheck(text: &str, takes_input: bool) -> Result<(), String> {
    let interpreter = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("#!"))
        .and_then(super::script_check::interpreter)
        .unwrap_or_default();
    let lang = language(&interpreter);
    let code = code_lines(text, lang);
    dependencies(&code, lang)?;
    if takes_input && !reads_stdin(&code, lang) {
        return Err(format!(
            "structure: it takes arguments but never reads its standard input, where the runner \
             passes them as one line of JSON ({})",
            stdin_hint(lang)
        ));
    }
    complexity(&code, lang)
}

/// The script's lines of code with their numbers: no `#!` line, no blank
/// lines, no whole-line comments.
fn code_lines(text: &str, lang: Language) -> Vec<(usize, &str)> {
    let comment = |l: &str| match lang {
        Language::Node => l.starts_with("//") || l.starts_with("/*") || l.starts_with('*'),
        _ => l.starts_with('#'),
    };
    text.lines()
        .enumerate()
        .skip(1)
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.trim().is_empty() && !comment(l.trim_start()))
        .collect()
}

fn dependencies(code: &[(usize, &str)], lang: Language) -> Result<(), String> {
    for (n, line) in code {
        let line = line.trim();
        let refused = match lang {
            Language::Python => python_imports(line)
                .into_iter()
                .find(|m| !PYTHON_MODULES.contains(&top_module(m))),
            Language::Node => node_imports(line)
                .into_iter()
                .find(|m| !NODE_MODULES.contains(&m.trim_start_matches("node:"))),
            Language::Shell => shell_source(line),
            Language::Other => None,
        };
        if let Some(module) = refused {
            let allowed = match lang {
                Language::Python => PYTHON_MODULES.join(", "),
                Language::Node => NODE_MODULES.join(", "),
                _ => "none: a tool script is one reviewable file".to_owned(),
            };
            return Err(format!(
                "dependencies: line {n} loads `{module}`, which is not allowed (allowed: {allowed})"
            ));
        }
    }
    Ok(())
}

/// `import a, b.c as d` / `from a.b import c` → the modules.
fn python_imports(line: &str) -> Vec<String> {
    if let Some(rest) = line.strip_prefix("import ") {
        return rest
            .split(',')
            .filter_map(|m| m.split_whitespace().next())
            .map(str::to_owned)
            .collect();
    }
    if let Some(rest) = line.strip_prefix("from ") {
        return rest
            .split_whitespace()
            .next()
            .map(str::to_owned)
            .into_iter()
            .collect();
    }
    if line.contains("__import__(") || line.contains("importlib") {
        return vec!["importlib".to_owned()];
    }
    Vec::new()
}

fn top_module(module: &str) -> &str {
    module.split('.').next().unwrap_or(module)
}

/// `require("x")`, `import … from "x"`, `import("x")` → the modules.
fn node_imports(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for marker in ["require(", "import(", "from "] {
        let mut rest = line;
        while let Some(at) = rest.find(marker) {
            rest = &rest[at + marker.len()..];
            let quoted = rest.trim_start();
            let Some(q) = quoted
                .chars()
                .next()
                .filter(|c| matches!(c, '"' | '\'' | '`'))
            else {
                continue;
            };
            if let Some(end) = quoted[1..].find(q) {
                out.push(quoted[1..1 + end].to_owned());
            }
        }
    }
    if line.starts_with("import ") && !line.contains(" from ") {
        if let Some(q) = line.find(['"', '\'']) {
            let quote = &line[q + 1..];
            out.push(quote.trim_end_matches([';', '"', '\'']).to_owned());
        }
    }
    out
}

/// `source x` / `. x`: another file's code run unreviewed.
fn shell_source(line: &str) -> Option<String> {
    let first = line.split_whitespace().next()?;
    if first != "source" && first != "." {
        return None;
    }
    line.split_whitespace().nth(1).map(str::to_owned)
}

fn reads_stdin(code: &[(usize, &str)], lang: Language) -> bool {
    let cues: &[&str] = match lang {
        Language::Python => &["sys.stdin", "input(", "fileinput", "/dev/stdin"],
        Language::Node => &["process.stdin", "readFileSync(0", "/dev/stdin", "readline"],
        Language::Shell => &[
            "read ",
            "read -",
            "cat",
            "jq",
            "/dev/stdin",
            "<&0",
            "python",
            "node",
        ],
        Language::Other => &[
            "stdin", "STDIN", "<>", "read", "gets", "getline", "jq", "cat",
        ],
    };
    code.iter().any(|(_, l)| cues.iter().any(|c| l.contains(c)))
}

fn stdin_hint(lang: Language) -> &'static str {
    match lang {
        Language::Python => "e.g. `args = json.load(sys.stdin)`",
        Language::Node => "e.g. `JSON.parse(require('fs').readFileSync(0, 'utf8'))`",
        Language::Shell => "e.g. `read -r args` then `jq` on it",
        Language::Other => "read standard input once and parse it as JSON",
    }
}

fn complexity(code: &[(usize, &str)], lang: Language) -> Result<(), String> {
    if code.len() > MAX_CODE_LINES {
        return Err(format!(
            "complexity: {} lines of code, more than {MAX_CODE_LINES}; a tool is a short script \
             doing one job — split it or trim it",
            code.len()
        ));
    }
    let (depth, line) = match lang {
        Language::Python => indent_depth(code),
        _ => block_depth(code, lang),
    };
    if depth > MAX_NESTING {
        return Err(format!(
            "complexity: blocks nest {depth} deep at line {line}, more than {MAX_NESTING}; \
             flatten it with early returns or small functions"
        ));
    }
    Ok(())
}

/// The deepest indentation level (Python blocks) and where it is.
fn indent_depth(code: &[(usize, &str)]) -> (usize, usize) {
    let mut stack: Vec<usize> = vec![0];
    let mut deepest = (0, 0);
    for (n, line) in code {
        let width: usize = line
            .chars()
            .take_while(|c| c.is_whitespace())
            .map(|c| if c == '\t' { 8 } else { 1 })
            .sum();
        while stack.last().is_some_and(|&top| width < top) {
            stack.pop();
        }
        if stack.last().is_some_and(|&top| width > top) {
            stack.push(width);
        }
        let depth = stack.len() - 1;
        if depth > deepest.0 {
            deepest = (depth, *n);
        }
    }
    deepest
}

/// The deepest nesting of `{}` (and, in shell, `if/for/while/until/case`
/// blocks) and where it is; a line's own pairs and `${…}` do not nest.
fn block_depth(code: &[(usize, &str)], lang: Language) -> (usize, usize) {
    let mut depth: usize = 0;
    let mut deepest = (0, 0);
    for (n, line) in code {
        let line = without_substitutions(line);
        let mut opened = line.matches('{').count();
        let mut closed = line.matches('}').count();
        if lang == Language::Shell {
            for command in line.split([';', '&', '|']) {
                match command.split_whitespace().next() {
                    Some("if" | "for" | "while" | "until" | "case") => opened += 1,
                    Some("fi" | "done" | "esac") => closed += 1,
                    _ => {}
                }
            }
        }
        let after = (depth + opened).saturating_sub(closed);
        if after > deepest.0 {
            deepest = (after, *n);
        }
        depth = after;
    }
    deepest
}

/// `line` without its `${…}` parts (shell and template substitutions).
fn without_substitutions(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        rest = match rest[at..].find('}') {
            Some(end) => &rest[at + end + 1..],
            None => "",
        };
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_imports_pass_and_others_are_named() {
        let ok = "#!/usr/bin/env python3\nimport json, sys\nfrom collections import Counter\nargs = json.load(sys.stdin)\nprint(Counter(args['words']))\n";
        assert_eq!(precheck(ok, true), Ok(()));
        for (body, module) in [
            ("#!/usr/bin/env python3\nimport requests\n", "requests"),
            (
                "#!/usr/bin/env python3\nimport json, subprocess as sp\n",
                "subprocess",
            ),
            (
                "#!/usr/bin/env python3\nfrom socket import socket\n",
                "socket",
            ),
            (
                "#!/usr/bin/env python3\nm = __import__('os')\n",
                "importlib",
            ),
        ] {
            let e = precheck(body, false).unwrap_err();
            assert!(e.starts_with("dependencies: line 2 loads"), "{e}");
            assert!(e.contains(&format!("`{module}`")), "{e}");
        }
        let node = "#!/usr/bin/env node\nconst fs = require('node:fs');\nconst x = JSON.parse(fs.readFileSync(0, 'utf8'));\n";
        assert_eq!(precheck(node, true), Ok(()));
        let e = precheck(
            "#!/usr/bin/env node\nconst a = require(\"axios\");\n",
            false,
        )
        .unwrap_err();
        assert!(e.contains("`axios`"), "{e}");
        let e = precheck(
            "#!/usr/bin/env node\nimport cp from 'child_process';\n",
            false,
        )
        .unwrap_err();
        assert!(e.contains("`child_process`"), "{e}");
        let e = precheck("#!/bin/sh\n. ./helpers.sh\necho hi\n", false).unwrap_err();
        assert!(e.contains("`./helpers.sh`"), "{e}");
    }

    #[test]
    fn a_script_taking_arguments_must_read_stdin() {
        let body = "#!/usr/bin/env python3\nimport sys\nprint(sys.argv)\n";
        let e = precheck(body, true).unwrap_err();
        assert!(
            e.starts_with("structure:") && e.contains("json.load(sys.stdin)"),
            "{e}"
        );
        assert_eq!(precheck(body, false), Ok(()), "no arguments, no input");
        let sh = "#!/bin/sh\nread -r args\necho \"$args\" | jq -r .name\n";
        assert_eq!(precheck(sh, true), Ok(()));
    }

    #[test]
    fn long_or_deeply_nested_scripts_are_refused() {
        let long = format!("#!/bin/sh\n{}", "echo line\n".repeat(MAX_CODE_LINES + 1));
        let e = precheck(&long, false).unwrap_err();
        assert!(e.starts_with("complexity: 301 lines"), "{e}");
        let comments = format!("#!/bin/sh\n{}echo hi\n", "# note\n\n".repeat(400));
        assert_eq!(precheck(&comments, false), Ok(()), "comments do not count");
        let mut py = String::from("#!/usr/bin/env python3\n");
        for depth in 0..=MAX_NESTING {
            py.push_str(&format!("{}if True:\n", "    ".repeat(depth)));
        }
        py.push_str(&format!("{}print(1)\n", "    ".repeat(MAX_NESTING + 1)));
        let e = precheck(&py, false).unwrap_err();
        assert!(
            e.starts_with("complexity: blocks nest 7 deep at line 9"),
            "{e}"
        );
        let sh = "#!/bin/sh\nfor a in 1; do\n if true; then\n  echo $a\n fi\ndone\n";
        assert_eq!(precheck(sh, false), Ok(()));
        let js = format!(
            "#!/usr/bin/env node\n{}x();\n{}\n",
            "if (a) {\n".repeat(MAX_NESTING + 1),
            "}\n".repeat(MAX_NESTING + 1)
        );
        let e = precheck(&js, false).unwrap_err();
        assert!(e.contains("nest 7 deep"), "{e}");
    }
}
