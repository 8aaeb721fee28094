//! The agent's identity: a profile (name, persona, style rules) the operator
//! edits, versioned and audited; a lock snapshots it (and one user's persona
//! and preferences) and a restore returns to a snapshot. The profile is added
//! to the system prompt in one place (see [`Profile::render`]).

mod versions;

pub use versions::{Identity, Restored};

use crate::store::StoreError;
use serde::{Deserialize, Serialize};

/// Characters of the name at most.
pub const MAX_NAME: usize = 60;
/// Characters of the persona at most.
pub const MAX_PERSONA: usize = 1_000;
/// Style rules at most, and characters of each.
pub const MAX_STYLE_RULES: usize = 10;
pub const MAX_STYLE_CHARS: usize = 200;

/// An identity operation that failed.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("there is no identity version {0}")]
    NoSuchVersion(i64),
    #[error("{0}")]
    Invalid(String),
    #[error("identity version {0} is unreadable: {1}")]
    Corrupt(i64, String),
}

/// Who the agent is: its name, a persona paragraph, and style rules.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Profile {
    pub name: String,
    pub persona: String,
    pub style: Vec<String>,
}

/// A change to the profile; `None` keeps a field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProfileEdit {
    pub name: Option<String>,
    pub persona: Option<String>,
    /// Replaces every style rule (empty: none).
    pub style: Option<Vec<String>>,
}

impl Profile {
    pub fn is_empty(&self) -> bool {
        self.name.is_empty() && self.persona.is_empty() && self.style.is_empty()
    }

    /// The profile with `edit` applied, checked against the limits.
    pub fn edited(&self, edit: &ProfileEdit) -> Result<Profile, IdentityError> {
        let one_line = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut next = self.clone();
        if let Some(name) = &edit.name {
            next.name = one_line(name);
        }
        if let Some(persona) = &edit.persona {
            next.persona = persona.trim().to_owned();
        }
        if let Some(style) = &edit.style {
            next.style = style
                .iter()
                .map(|s| one_line(s))
                .filter(|s| !s.is_empty())
                .collect();
        }
        let too_long = |what: &str, max: usize| {
            IdentityError::Invalid(format!("{what} is longer than {max} characters"))
        };
        if next.name.chars().count() > MAX_NAME {
            return Err(too_long("the name", MAX_NAME));
        }
        if next.persona.chars().count() > MAX_PERSONA {
            return Err(too_long("the persona", MAX_PERSONA));
        }
        if next.style.len() > MAX_STYLE_RULES {
            return Err(IdentityError::Invalid(format!(
                "at most {MAX_STYLE_RULES} style rules"
            )));
        }
        if next
            .style
            .iter()
            .any(|s| s.chars().count() > MAX_STYLE_CHARS)
        {
            return Err(too_long("a style rule", MAX_STYLE_CHARS));
        }
        if crate::memory::check_secret(&format!(
            "{} {} {}",
            next.name,
            next.persona,
            next.style.join(" ")
        ))
        .is_err()
        {
            return Err(IdentityError::Invalid(
                "that looks like a secret; keep secrets out of the identity".into(),
            ));
        }
        Ok(next)
    }

    /// The identity's section of the system prompt; `None` when empty.
    pub fn render(&self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let mut out = String::from("[Agent identity — who you are in every conversation]");
        if !self.name.is_empty() {
            out.push_str(&format!("\nYour name is {}.", self.name));
        }
        if !self.persona.is_empty() {
            out.push_str(&format!("\n{}", self.persona));
        }
        if !self.style.is_empty() {
            out.push_str("\nStyle rules:");
            for rule in &self.style {
                out.push_str(&format!("\n- {rule}"));
            }
        }
        Some(out)
    }

    /// A user's own settings as their section of the system prompt, after
    /// the operator's: preferences for how the agent presents itself to
    /// that user, never rules above the operator's. `None` when empty.
    pub fn render_for_user(&self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let mut out = String::from(
            "[This user's own settings for how you present yourself to them — follow them where they do not conflict with the instructions above]",
        );
        if !self.name.is_empty() {
            out.push_str(&format!("\nTo this user your name is {}.", self.name));
        }
        if !self.persona.is_empty() {
            out.push_str(&format!("\nPersona they asked for: {}", self.persona));
        }
        if !self.style.is_empty() {
            out.push_str("\nTheir style rules:");
            for rule in &self.style {
                out.push_str(&format!("\n- {rule}"));
            }
        }
        Some(out)
    }

    /// The profile for people: one field a line.
    pub fn describe(&self) -> String {
        if self.is_empty() {
            return "(empty: the system prompt alone defines the agent)".into();
        }
        let or_none = |s: &str| {
            if s.is_empty() {
                "(none)".to_owned()
            } else {
                s.to_owned()
            }
        };
        let mut out = format!(
            "name: {}\npersona: {}",
            or_none(&self.name),
            or_none(&self.persona)
        );
        if self.style.is_empty() {
            out.push_str("\nstyle: (none)");
        }
        for rule in &self.style {
            out.push_str(&format!("\nstyle: {rule}"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_are_checked_and_rendered_in_one_section() {
        let p = Profile::default()
            .edited(&ProfileEdit {
                name: Some("  Ada \n".into()),
                persona: Some("A calm research assistant.".into()),
                style: Some(vec!["Answer briefly".into(), " ".into()]),
            })
            .unwrap();
        assert_eq!(p.name, "Ada");
        assert_eq!(p.style, ["Answer briefly"]);
        let text = p.render().unwrap();
        assert!(text.starts_with("[Agent identity"));
        assert!(text.contains("Your name is Ada.") && text.contains("- Answer briefly"));
        assert!(Profile::default().render().is_none());
        let long = ProfileEdit {
            name: Some("x".repeat(MAX_NAME + 1)),
            ..ProfileEdit::default()
        };
        assert!(p.edited(&long).is_err());
        let secret = ProfileEdit {
            persona: Some("The admin password is hunter2".into()),
            ..ProfileEdit::default()
        };
        assert!(p.edited(&secret).is_err());
    }
}
