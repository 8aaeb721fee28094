//! Fake OpenAI-compatible server (being written).
