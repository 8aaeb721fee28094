//! The platform-agnostic router: inbound → access → session queue → runtime → outbound.

mod access;

pub use access::AccessPolicy;
