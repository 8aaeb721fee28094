//! Typed ids: one newtype per kind of row, so an approval id cannot be passed
//! where a task id is meant. Every id is text; new ones are simple (hex, 32
//! characters) UUIDs, and [`short_id`] is the one short form users see.
//! Ids are bound and read as text in SQL (`sqlx(transparent)`).

use serde::{Deserialize, Serialize};

/// The first 8 characters of an id: what cards, `/tasks` and notices show
/// (and what `/approve` and `/tasks cancel` accept as a prefix).
pub fn short_id(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, sqlx::Type,
        )]
        #[serde(transparent)]
        #[sqlx(transparent)]
        pub struct $name(pub String);

        impl $name {
            /// A new, unique id.
            pub fn new() -> $name {
                $name(uuid::Uuid::new_v4().simple().to_string())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The short form users see.
            pub fn short(&self) -> &str {
                short_id(&self.0)
            }
        }

        impl Default for $name {
            fn default() -> $name {
                $name::new()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<String> for $name {
            fn from(id: String) -> $name {
                $name(id)
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> $name {
                $name(id.to_owned())
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        /// An id reads as its text (`&id` where a `&str` is taken); the
        /// other way round is explicit (`From`).
        impl std::ops::Deref for $name {
            type Target = str;

            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

id_type!(
    /// A session: one user in one chat (and thread).
    SessionId
);
id_type!(
    /// One run of the agent loop (a trace file is named by it).
    TurnId
);
id_type!(
    /// An approval card and the paused turn waiting for it.
    ApprovalId
);
id_type!(
    /// A background task.
    TaskId
);
id_type!(
    /// A schedule.
    ScheduleId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_ids_are_simple_uuids_and_short_is_their_start() {
        let id = ApprovalId::new();
        assert_eq!(id.as_str().len(), 32);
        assert!(id.as_str().chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(id.short(), &id.as_str()[..8]);
        assert_ne!(id, ApprovalId::new());
        assert_eq!(short_id("abc"), "abc");
    }

    #[test]
    fn an_id_is_plain_text_in_json() {
        let id = TaskId::from("0123456789abcdef");
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"0123456789abcdef\"");
    }
}
