//! Typed ids: one newtype per kind of row, so an approval id cannot be passed
//! where a task id is meant. Every id is text; new ones are simple (hex, 32
//! characters) UUIDs, and [`short_id`] is the one short form users see.
//! Ids are bound and read as text in SQL (`sqlx(transparent)`).

/// The first 8 characters of an id: what cards, `/tasks` and notices show
/// (and what `/approve` and `/tasks cancel` accept as a prefix).
pub fn short_id(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// Text that is not an id: empty, longer than [`MAX_ID_LEN`], or holding a
/// character other than a printable ASCII one (no spaces).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a valid {kind} id: {reason}")]
pub struct IdError {
    kind: &'static str,
    reason: &'static str,
}

/// The longest id accepted (new ids are 32 characters).
pub const MAX_ID_LEN: usize = 128;

/// Checks the one format every id shares: 1 to [`MAX_ID_LEN`] printable
/// ASCII characters without spaces.
fn check(kind: &'static str, id: &str) -> Result<(), IdError> {
    let reason = if id.is_empty() {
        "empty"
    } else if id.len() > MAX_ID_LEN {
        "too long"
    } else if !id.bytes().all(|b| b.is_ascii_graphic()) {
        "only printable ASCII characters without spaces"
    } else {
        return Ok(());
    };
    Err(IdError { kind, reason })
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        id_type!($(#[$doc])* $name, $kind, check);
    };
    ($(#[$doc:meta])* $name:ident, $kind:literal, $check:path) => {
        $(#[$doc])*
        ///
        /// Made only by [`new`](Self::new) (generation) or by parsing text
        /// (`FromStr`, `TryFrom<String>`, serde); the store reads and binds it
        /// as text (`sqlx(transparent)`). There is no way to pass a `&str`
        /// where an id is expected, nor one kind of id for another.
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, sqlx::Type)]
        #[sqlx(transparent)]
        pub struct $name(String);

        impl $name {
            /// A new, unique id.
            pub fn new() -> $name {
                $name(uuid::Uuid::new_v4().simple().to_string())
            }

            /// The id's text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The id's text, by value.
            pub fn into_string(self) -> String {
                self.0
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

        impl std::str::FromStr for $name {
            type Err = IdError;

            fn from_str(id: &str) -> Result<$name, IdError> {
                $check($kind, id)?;
                Ok($name(id.to_owned()))
            }
        }

        impl TryFrom<String> for $name {
            type Error = IdError;

            fn try_from(id: String) -> Result<$name, IdError> {
                $check($kind, &id)?;
                Ok($name(id))
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                let text = String::deserialize(d)?;
                $name::try_from(text).map_err(serde::de::Error::custom)
            }
        }
    };
}

id_type!(
    /// A session: one user in one chat (and thread).
    SessionId,
    "session"
);
id_type!(
    /// One run of the agent loop (a trace file is named by it).
    TurnId,
    "turn"
);
id_type!(
    /// An approval card and the paused turn waiting for it.
    ApprovalId,
    "approval"
);
id_type!(
    /// A background task.
    TaskId,
    "task"
);
id_type!(
    /// A schedule.
    ScheduleId,
    "schedule"
);
id_type!(
    /// A row of the outbox (what `switchboard mcp` asks the gateway to post).
    OutboxId,
    "outbox"
);
id_type!(
    /// A rateable answer (its id travels in the 👍/👎 buttons).
    FeedbackId,
    "feedback"
);
id_type!(
    /// A stored "always allow" rule.
    RuleId,
    "rule"
);

id_type!(
    /// A gateway process: owns the inbox rows, resumed turns and tasks it
    /// runs, holds a liveness claim and a spool folder under this name, and
    /// beats in the `processes` table. Exactly what [`ProcessId::new`] makes
    /// (32 lowercase hex digits), so a folder or row named otherwise is no
    /// process's.
    ProcessId,
    "process",
    check_process
);

#[cfg(test)]
impl ProcessId {
    /// A valid process id spelled from `name` (at most 16 bytes), for tests:
    /// its bytes in hex, zero-padded.
    pub(crate) fn named(name: &str) -> ProcessId {
        let mut bytes = [0u8; 16];
        bytes[..name.len()].copy_from_slice(name.as_bytes());
        ProcessId(format!("{:032x}", u128::from_be_bytes(bytes)))
    }
}

/// A process id is a simple UUID: 32 lowercase hex digits.
fn check_process(kind: &'static str, id: &str) -> Result<(), IdError> {
    check(kind, id)?;
    if id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        Ok(())
    } else {
        Err(IdError {
            kind,
            reason: "32 lowercase hex digits",
        })
    }
}

impl FeedbackId {
    /// A new id of 12 hex characters: short, as it travels in the buttons'
    /// action data, whose size the platforms limit.
    pub fn new_short() -> FeedbackId {
        let mut id = uuid::Uuid::new_v4().simple().to_string();
        id.truncate(12);
        FeedbackId(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_ids_are_simple_uuids_and_short_is_their_start() {
        let id = ApprovalId::new();
        assert_eq!(id.as_str().len(), 32);
        assert!(id.as_str().chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(id.short(), id.short());
        assert_ne!(id, ApprovalId::new());
        assert_eq!(short_id("abc"), "abc");
    }

    #[test]
    fn an_id_is_plain_text_in_json() {
        let id: TaskId = "0123456789abcdef".parse().unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"0123456789abcdef\"");
        let back: TaskId = serde_json::from_str("\"0123456789abcdef\"").unwrap();
        assert_eq!(back, id);
    }

    #[test]
    fn text_that_is_no_id_is_refused_when_parsed_or_read() {
        for bad in [
            "",
            "two words",
            "tab\there",
            "é",
            &"x".repeat(MAX_ID_LEN + 1),
        ] {
            assert!(bad.parse::<SessionId>().is_err(), "{bad:?}");
            assert!(ApprovalId::try_from(bad.to_owned()).is_err(), "{bad:?}");
            let json = serde_json::to_string(bad).unwrap();
            assert!(serde_json::from_str::<TaskId>(&json).is_err(), "{bad:?}");
        }
        let err = "".parse::<ScheduleId>().unwrap_err().to_string();
        assert_eq!(err, "not a valid schedule id: empty");
        assert!("mcp".parse::<SessionId>().is_ok());
        assert!("x".repeat(MAX_ID_LEN).parse::<TurnId>().is_ok());
    }

    #[test]
    fn a_process_id_is_exactly_what_generation_makes() {
        let id = ProcessId::new();
        assert_eq!(id.as_str().parse::<ProcessId>(), Ok(id.clone()));
        for bad in [
            "gone",
            "lost+found",
            &id.as_str().to_uppercase(),
            &id.as_str()[..31],
        ] {
            let err = bad.parse::<ProcessId>().unwrap_err().to_string();
            assert_eq!(
                err, "not a valid process id: 32 lowercase hex digits",
                "{bad:?}"
            );
        }
        assert!(serde_json::from_str::<ProcessId>("\"me\"").is_err());
    }
}
