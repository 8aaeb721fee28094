//! How a chat takes its turns: the queue mode (messages that arrive
//! mid-turn) and the verbosity (how much of a turn's work it sees). Set per
//! session (`/queue`, `/verbose`), per chat (`CHATS_FILE`) or by default.

/// How a session takes messages that arrive mid-turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueMode {
    /// One turn per message, in order.
    #[default]
    Followup,
    /// The messages that arrived during a turn are answered in one next turn.
    Collect,
    /// A new message stops the running turn and starts its own.
    Interrupt,
}

impl QueueMode {
    pub const ALL: [QueueMode; 3] = [
        QueueMode::Followup,
        QueueMode::Collect,
        QueueMode::Interrupt,
    ];

    pub fn parse(raw: &str) -> Option<QueueMode> {
        QueueMode::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(raw.trim()))
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            QueueMode::Followup => "followup",
            QueueMode::Collect => "collect",
            QueueMode::Interrupt => "interrupt",
        }
    }
}

/// How much of a turn's work a chat sees (`/verbose`, `CHAT_VERBOSITY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Verbosity {
    /// The answer only (the behaviour before activity lines).
    Off,
    /// Tool lines while the turn runs, one summary line above the answer.
    #[default]
    Tools,
    /// `tools` plus a short, clipped summary of the model's reasoning.
    Full,
}

impl Verbosity {
    pub const ALL: [Verbosity; 3] = [Verbosity::Off, Verbosity::Tools, Verbosity::Full];

    pub fn parse(raw: &str) -> Option<Verbosity> {
        Verbosity::ALL
            .into_iter()
            .find(|v| v.as_str().eq_ignore_ascii_case(raw.trim()))
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Verbosity::Off => "off",
            Verbosity::Tools => "tools",
            Verbosity::Full => "full",
        }
    }
}
