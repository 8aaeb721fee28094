//! Fake Discord REST + gateway (being written).
