//! The gateway end to end: turns, approvals, schedules, tasks, storage, health, logs and files, on the fake servers of `tests/support`.
//!
//! One test binary for the area; each module was a test binary of its own.

#[path = "../support/mod.rs"]
mod support;

mod agent_events;
mod cdp;
mod crash_matrix;
mod durable_turns;
mod e2e_access;
mod e2e_activity;
mod e2e_approvals;
mod e2e_approvals_pending;
mod e2e_bad_input;
mod e2e_card_text;
mod e2e_chats;
mod e2e_core;
mod e2e_edit_checks;
mod e2e_key_fields;
mod e2e_lifecycle;
mod e2e_media;
mod e2e_model_credentials;
mod e2e_models;
mod e2e_portfolio;
mod e2e_profile_card;
mod e2e_queue;
mod e2e_reasoning;
mod e2e_reload;
mod e2e_reload_roles;
mod e2e_role_memory;
mod e2e_rule_scope;
mod e2e_runtime;
mod e2e_schedules;
mod e2e_search;
mod e2e_stop;
mod e2e_subagent_acts;
mod e2e_task_final;
mod e2e_task_notify;
mod e2e_text_tool_calls;
mod e2e_workspace;
mod footprint;
mod health;
mod media_documents;
mod media_retention;
mod platform_files;
mod secrets_in_logs;
mod storage_outage;
mod web_actions;
mod web_auth;
mod web_browser;
mod web_client;
mod web_pages;
mod web_reauth;
mod web_shared;
