//! A skill file: `---` front matter (`name`, `description`) and a Markdown body
//! in which `{{args}}` stands for what the user or the model passes.

use super::Skill;

/// Longest description listed to the model.
const MAX_DESCRIPTION: usize = 200;
/// Longest body (characters); a skill is a prompt, not a document.
const MAX_BODY: usize = 20_000;

/// Why a skill file was not loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillError {
    #[error("no front matter: start the file with a `---` line, then `name:` and `description:`, then `---`")]
    NoFrontMatter,
    #[error("front matter line {0:?} is not `key: value`")]
    BadLine(String),
    #[error("unknown front matter key {0:?} (use name and description)")]
    UnknownKey(String),
    #[error("name {0:?} must be 1–32 lowercase letters, digits or underscores")]
    BadName(String),
    #[error("description is missing or empty")]
    NoDescription,
    #[error("description is longer than {MAX_DESCRIPTION} characters")]
    LongDescription,
    #[error("the body (after the front matter) is empty")]
    EmptyBody,
    #[error("the body is longer than {MAX_BODY} characters")]
    LongBody,
}

/// Parses one skill file; `stem` (the file name without `.md`) is the name
/// when the front matter gives none.
pub fn parse_skill(stem: &str, text: &str) -> Result<Skill, SkillError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(SkillError::NoFrontMatter);
    }
    let mut name = None;
    let mut description = None;
    let mut closed = false;
    for line in lines.by_ref() {
        let line = line.trim_end();
        if line == "---" {
            closed = true;
            break;
        }
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let (key, value) = line
            .split_once(':')
            .ok_or_else(|| SkillError::BadLine(line.to_owned()))?;
        let value = value.trim().trim_matches('"').trim().to_owned();
        match key.trim() {
            "name" => name = Some(value),
            "description" => description = Some(value),
            other => return Err(SkillError::UnknownKey(other.to_owned())),
        }
    }
    if !closed {
        return Err(SkillError::NoFrontMatter);
    }
    let name = name.unwrap_or_else(|| stem.to_owned());
    if !valid_name(&name) {
        return Err(SkillError::BadName(name));
    }
    let description = description
        .filter(|d| !d.is_empty())
        .ok_or(SkillError::NoDescription)?;
    if description.chars().count() > MAX_DESCRIPTION {
        return Err(SkillError::LongDescription);
    }
    let body = lines.collect::<Vec<_>>().join("\n").trim().to_owned();
    if body.is_empty() {
        return Err(SkillError::EmptyBody);
    }
    if body.chars().count() > MAX_BODY {
        return Err(SkillError::LongBody);
    }
    Ok(Skill {
        name,
        description,
        body,
    })
}

/// What `/name` can be: the characters a slash command accepts, lowercase.
pub fn valid_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_and_body() {
        let s = parse_skill(
            "file",
            "---\nname: standup\ndescription: \"Stand-up from notes\"\n---\n\nWrite it from: {{args}}\n",
        )
        .unwrap();
        assert_eq!(s.name, "standup");
        assert_eq!(s.description, "Stand-up from notes");
        assert_eq!(s.body, "Write it from: {{args}}");
    }

    #[test]
    fn the_file_name_is_the_default_name() {
        let s = parse_skill("release_notes", "---\ndescription: d\n---\nbody").unwrap();
        assert_eq!(s.name, "release_notes");
    }

    #[test]
    fn malformed_files_say_what_is_wrong() {
        let cases = [
            ("no front matter", SkillError::NoFrontMatter),
            ("---\nname: x\ndescription: d\n", SkillError::NoFrontMatter),
            (
                "---\nname x\n---\nbody",
                SkillError::BadLine("name x".into()),
            ),
            (
                "---\nmodel: y\n---\nb",
                SkillError::UnknownKey("model".into()),
            ),
            (
                "---\nname: Big-Name\ndescription: d\n---\nb",
                SkillError::BadName("Big-Name".into()),
            ),
            ("---\nname: ok\n---\nbody", SkillError::NoDescription),
            (
                "---\nname: ok\ndescription: d\n---\n  \n",
                SkillError::EmptyBody,
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse_skill("f", text).unwrap_err(), want, "{text:?}");
        }
        let long = format!("---\ndescription: d\n---\n{}", "x".repeat(MAX_BODY + 1));
        assert_eq!(parse_skill("f", &long).unwrap_err(), SkillError::LongBody);
    }
}
