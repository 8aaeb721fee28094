//! Fake Telegram Bot API (being written).
