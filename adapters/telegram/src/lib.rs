//! telegram adapter.
