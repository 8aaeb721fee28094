//! Running the real `switchboard chat`: piped, and on a terminal (tmux).
#![allow(dead_code, clippy::panic, clippy::unwrap_used, clippy::expect_used)]

pub mod piped;
pub mod tty;
