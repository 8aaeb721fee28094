//! discord adapter.
