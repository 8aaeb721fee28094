//! Skills: Markdown prompt templates with front matter, built in or from
//! `SKILLS_DIR/*.md`. The model sees only their names and descriptions (in the
//! `execute_skill` tool) and expands one when it needs it; a user runs one with
//! `/name args` in any chat.

mod library;
mod parse;

pub use library::SkillLibrary;
pub use parse::{parse_skill, valid_name, SkillError};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The prompt; `{{args}}` marks where the input goes.
    pub body: String,
}

const ARGS: &str = "{{args}}";

impl Skill {
    /// The body with `args` in place (appended when the body has no `{{args}}`).
    pub fn expand(&self, args: &str) -> String {
        let args = args.trim();
        if self.body.contains(ARGS) {
            let args = if args.is_empty() {
                "(nothing given: ask the user for it if you need it)"
            } else {
                args
            };
            self.body.replace(ARGS, args)
        } else if args.is_empty() {
            self.body.clone()
        } else {
            format!("{}\n\nInput: {args}", self.body)
        }
    }

    /// What the model receives when a user runs `/name args`.
    pub fn invocation(&self, args: &str) -> String {
        format!(
            "The user ran the skill /{name}. Follow its instructions.\n<skill name=\"{name}\">\n{}\n</skill>",
            self.expand(args),
            name = self.name
        )
    }
}

/// A skill file that was skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillProblem {
    pub path: PathBuf,
    pub problem: String,
}

/// Every loaded skill, by name.
#[derive(Debug, Clone, Default)]
pub struct SkillBook {
    skills: BTreeMap<String, Skill>,
}

const BUILTIN: [(&str, &str); 2] = [
    ("summarize", include_str!("builtin/summarize.md")),
    ("explain", include_str!("builtin/explain.md")),
];

impl SkillBook {
    /// The built-in skills plus `dir/*.md` (a missing directory is no skills;
    /// a user skill replaces a built-in one of the same name). Names in
    /// `reserved` (the gateway's own commands) are refused. Files that cannot
    /// be used are returned with the reason; the rest still load.
    pub fn load(dir: &Path, reserved: &[&str]) -> (SkillBook, Vec<SkillProblem>) {
        let mut book = SkillBook::default();
        for (stem, text) in BUILTIN {
            if let Ok(skill) = parse_skill(stem, text) {
                book.skills.insert(skill.name.clone(), skill);
            }
        }
        let mut problems = Vec::new();
        let mut paths: Vec<PathBuf> = match std::fs::read_dir(dir) {
            Ok(entries) => entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "md"))
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                problems.push(SkillProblem {
                    path: dir.to_owned(),
                    problem: format!("cannot read the skills directory: {e}"),
                });
                Vec::new()
            }
        };
        paths.sort();
        for path in paths {
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let loaded = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read it: {e}"))
                .and_then(|text| parse_skill(&stem, &text).map_err(|e| e.to_string()))
                .and_then(|skill| {
                    if reserved.contains(&skill.name.as_str()) {
                        Err(format!(
                            "/{} is a built-in command; rename the skill",
                            skill.name
                        ))
                    } else {
                        Ok(skill)
                    }
                });
            match loaded {
                Ok(skill) => {
                    book.skills.insert(skill.name.clone(), skill);
                }
                Err(problem) => problems.push(SkillProblem { path, problem }),
            }
        }
        (book, problems)
    }

    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.get(name)
    }

    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    pub fn len(&self) -> usize {
        self.skills.len()
    }

    /// Skills by name.
    pub fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.skills.values()
    }

    /// `- name: description` lines, for the model and for `/skills`.
    pub fn listing(&self, prefix: &str) -> String {
        self.iter()
            .map(|s| format!("- {prefix}{}: {}", s.name, s.description))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_skills_parse() {
        let (book, problems) = SkillBook::load(Path::new("/nonexistent/skills"), &[]);
        assert!(problems.is_empty(), "{problems:?}");
        assert!(book.get("summarize").is_some() && book.get("explain").is_some());
    }

    #[test]
    fn user_skills_load_replace_built_ins_and_bad_ones_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        write(
            "standup.md",
            "---\ndescription: Stand-up from notes\n---\nNotes: {{args}}",
        );
        write(
            "summarize.md",
            "---\ndescription: Mine\n---\nShorter, please.",
        );
        write("clear.md", "---\ndescription: Clash\n---\nb");
        write("broken.md", "no front matter");
        write("notes.txt", "ignored: not .md");
        let (book, problems) = SkillBook::load(dir.path(), &["clear", "help"]);
        assert_eq!(book.get("summarize").unwrap().description, "Mine");
        assert_eq!(
            book.get("standup").unwrap().expand("shipped x"),
            "Notes: shipped x"
        );
        assert!(book.get("clear").is_none());
        let reasons: Vec<String> = problems
            .iter()
            .map(|p| {
                format!(
                    "{}: {}",
                    p.path.file_name().unwrap().to_string_lossy(),
                    p.problem
                )
            })
            .collect();
        assert_eq!(reasons.len(), 2, "{reasons:?}");
        assert!(
            reasons[0].starts_with("broken.md: no front matter"),
            "{reasons:?}"
        );
        assert!(
            reasons[1].contains("/clear is a built-in command"),
            "{reasons:?}"
        );
    }

    #[test]
    fn arguments_go_in_place_or_at_the_end() {
        let with = Skill {
            name: "a".into(),
            description: "d".into(),
            body: "Do {{args}} now".into(),
        };
        assert_eq!(with.expand(" this "), "Do this now");
        assert!(with.expand("").contains("nothing given"));
        let without = Skill {
            body: "Do it".into(),
            ..with
        };
        assert_eq!(without.expand("x"), "Do it\n\nInput: x");
        assert_eq!(without.expand(""), "Do it");
        assert!(without
            .invocation("x")
            .starts_with("The user ran the skill /a."));
    }
}
