//! Address checks for outbound fetches (being written).
