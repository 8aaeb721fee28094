//! What a person does with the bot's select menus and modals, dispatched as
//! Discord does: a choice in a string select (INTERACTION_CREATE type 3,
//! `component_type` 3, only values the menu offers, as many as it allows)
//! and a modal sent back (type 5, only by the person it was shown to, every
//! input with its value, required ones filled, within their lengths; with
//! the message whose button opened it).

use super::events::{created, envelope};
use super::{gateway, shard_of, FakeDiscord, Interaction, COMPONENT, MODAL_SUBMIT};
use serde_json::{json, Value};

/// A choice in a string select to dispatch.
#[derive(Debug, Clone)]
pub struct Choice {
    pub message: u64,
    pub custom_id: String,
    pub user: u64,
    pub values: Vec<String>,
}

impl Choice {
    pub fn new(message: u64, custom_id: impl Into<String>, user: u64, value: &str) -> Self {
        Self {
            message,
            custom_id: custom_id.into(),
            user,
            values: vec![value.to_owned()],
        }
    }
}

/// The string select of `message` with `custom_id`.
pub fn select_of(message: &Value, custom_id: &str) -> Option<Value> {
    message["components"]
        .as_array()?
        .iter()
        .flat_map(|row| row["components"].as_array().cloned().unwrap_or_default())
        .find(|c| c["type"] == 3 && c["custom_id"] == custom_id)
}

/// The first string select of `message`.
pub fn first_select(message: &Value) -> Option<Value> {
    message["components"]
        .as_array()?
        .iter()
        .flat_map(|row| row["components"].as_array().cloned().unwrap_or_default())
        .find(|c| c["type"] == 3)
}

impl FakeDiscord {
    /// Dispatches a choice in a select the message carries now; `None` when
    /// it carries none with that id, a value is not among its options, the
    /// count is outside its `min_values`..`max_values`, or the shard is not
    /// connected.
    pub fn choose(&self, choice: Choice) -> Option<u64> {
        let mut inner = self.shared.lock();
        let message = inner.messages.get(&choice.message)?.clone();
        let select = select_of(&message, &choice.custom_id)?;
        let offered: Vec<&str> = select["options"]
            .as_array()?
            .iter()
            .filter_map(|o| o["value"].as_str())
            .collect();
        let (min, max) = (
            select["min_values"].as_u64().unwrap_or(1) as usize,
            select["max_values"].as_u64().unwrap_or(1) as usize,
        );
        let fits = (min..=max).contains(&choice.values.len())
            && choice.values.iter().all(|v| offered.contains(&v.as_str()));
        if !fits {
            return None;
        }
        let channel_id: u64 = message["channel_id"].as_str()?.parse().ok()?;
        let channel = *inner.channels.get(&channel_id)?;
        let id = inner.next_id();
        let token = format!("interaction-token-{id}");
        let mut interaction = envelope(id, &token, channel_id, channel, choice.user, &[]);
        interaction["attachment_size_limit"] = json!(inner.upload_limit(channel_id));
        interaction["type"] = json!(COMPONENT);
        interaction["data"] = json!({
            "custom_id": choice.custom_id,
            "component_type": 3,
            "values": choice.values,
        });
        interaction["message"] = message;
        inner.interactions.insert(
            id,
            Interaction {
                token,
                message: choice.message,
                channel: channel_id,
                created: created(None),
                acked: None,
                kind: COMPONENT,
                user: choice.user,
                roles: Vec::new(),
                modal: None,
            },
        );
        let shard = shard_of(channel.guild, self.shared.options.shards);
        gateway::dispatch(&mut inner, shard, "INTERACTION_CREATE", interaction).then_some(id)
    }

    /// The modal the response to `interaction` opened (its type 9 `data`).
    pub fn modal(&self, interaction: u64) -> Option<Value> {
        self.shared
            .lock()
            .interactions
            .get(&interaction)
            .and_then(|i| i.modal.clone())
    }

    /// The person shown the modal of `interaction` sends it back, with
    /// `values` (by input `custom_id`) typed over the prefilled ones;
    /// `None` when no modal was opened there, a value names no input of it,
    /// a required input is empty, a value is longer than its input allows,
    /// or the shard is not connected.
    pub fn submit_modal(&self, interaction: u64, values: &[(&str, &str)]) -> Option<u64> {
        let user = self.shared.lock().interactions.get(&interaction)?.user;
        self.submit_modal_as(interaction, user, values)
    }

    /// [`FakeDiscord::submit_modal`] as `user`, who need not be the person
    /// the modal was shown to: a forged or replayed submit, which the bot
    /// must judge by who sent it.
    pub fn submit_modal_as(
        &self,
        interaction: u64,
        user: u64,
        values: &[(&str, &str)],
    ) -> Option<u64> {
        let mut inner = self.shared.lock();
        let opened = inner.interactions.get(&interaction)?.clone();
        let modal = opened.modal.clone()?;
        let rows = sent_rows(&modal, values)?;
        let channel = *inner.channels.get(&opened.channel)?;
        let id = inner.next_id();
        let token = format!("interaction-token-{id}");
        let roles = if user == opened.user {
            opened.roles.clone()
        } else {
            Vec::new()
        };
        let mut submit = envelope(id, &token, opened.channel, channel, user, &roles);
        submit["attachment_size_limit"] = json!(inner.upload_limit(opened.channel));
        submit["type"] = json!(MODAL_SUBMIT);
        submit["data"] = json!({ "custom_id": modal["custom_id"], "components": rows });
        if opened.message != 0 {
            submit["message"] = inner.messages.get(&opened.message)?.clone();
        }
        inner.interactions.insert(
            id,
            Interaction {
                token,
                message: opened.message,
                channel: opened.channel,
                created: created(None),
                acked: None,
                kind: MODAL_SUBMIT,
                user,
                roles,
                modal: None,
            },
        );
        let shard = shard_of(channel.guild, self.shared.options.shards);
        gateway::dispatch(&mut inner, shard, "INTERACTION_CREATE", submit).then_some(id)
    }
}

/// The rows a submit of `modal` carries: each input's `custom_id` and value
/// (typed in `values`, else the prefilled one).
fn sent_rows(modal: &Value, values: &[(&str, &str)]) -> Option<Vec<Value>> {
    let inputs: Vec<Value> = modal["components"]
        .as_array()?
        .iter()
        .filter_map(|row| row["components"].get(0).cloned())
        .collect();
    let known = |id: &str| inputs.iter().any(|i| i["custom_id"] == id);
    if values.iter().any(|(id, _)| !known(id)) {
        return None;
    }
    let mut rows = Vec::with_capacity(inputs.len());
    for input in &inputs {
        let id = input["custom_id"].as_str()?;
        let value = values
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, v)| (*v).to_owned())
            .or_else(|| input["value"].as_str().map(str::to_owned))
            .unwrap_or_default();
        let required = input["required"].as_bool().unwrap_or(true);
        let max = input["max_length"].as_u64().unwrap_or(4000) as usize;
        if (required && value.is_empty()) || value.chars().count() > max {
            return None;
        }
        rows.push(json!({
            "type": 1,
            "components": [{ "type": 4, "custom_id": id, "value": value }],
        }));
    }
    Some(rows)
}
