//! `/checkins on [HH:MM] [time zone] | off`: opt-in check-ins, a short message
//! in the user's direct message when a reflection note finds an open loop or
//! a risk (see `memory::checkins`). Off by default, never in groups.

use crate::domain::Conversation;
use crate::gateway::commands::Command;
use crate::gateway::Inner;
use crate::memory::{parse_checkin_time, CHECKIN_GAP_HOURS};
use crate::store::{CheckinSettings, MemoryOwner, SessionId, SessionKey, StoreError};
use std::str::FromStr;
use switchboard_platform::{ChatAddress, ChatKind, User};

const USAGE: &str = "Usage: `/checkins on [HH:MM] [time zone]` · `/checkins off` — e.g. `/checkins on 09:00 Europe/Berlin`";
const DEFAULT_TIME: &str = "09:00";
const DEFAULT_ZONE: &str = "UTC";

/// Runs `/checkins …` for the user of `key`.
pub(crate) async fn run(
    inner: &Inner,
    cmd: &Command<'_>,
    key: &SessionKey,
    session: &SessionId,
    user: &User,
    private: bool,
) -> Result<String, StoreError> {
    let owner = MemoryOwner::of(key);
    let current = inner.store.checkins(owner).await?;
    match cmd.args.as_slice() {
        [] => Ok(match current.filter(|c| c.enabled) {
            Some(c) => format!(
                "Check-ins are on: at {} ({}) in our direct messages, when I notice something to follow up on; at most one every {CHECKIN_GAP_HOURS} hours. `/checkins off` stops them.",
                c.at_time, c.timezone
            ),
            None => format!("Check-ins are off. {USAGE}"),
        }),
        ["off"] => {
            if let Some(mut c) = current {
                c.enabled = false;
                inner.store.set_checkins(owner, &c).await?;
            }
            Ok("Check-ins are off.".into())
        }
        ["on", rest @ ..] if rest.len() <= 2 => {
            if !private {
                return Ok("Check-ins are sent in a direct message only: turn them on there.".into());
            }
            let time = rest.first().copied().unwrap_or(DEFAULT_TIME);
            let Some((h, m)) = parse_checkin_time(time) else {
                return Ok(format!("{time:?} is not a time of day. {USAGE}"));
            };
            let zone = rest.get(1).copied().unwrap_or(DEFAULT_ZONE);
            if chrono_tz::Tz::from_str(zone).is_err() {
                return Ok(format!("{zone:?} is not a time zone (use an IANA name like Europe/Berlin). {USAGE}"));
            }
            let chat = ChatAddress {
                platform: key.platform,
                chat: key.chat,
                thread: key.thread,
            };
            let origin = Conversation::new(chat, ChatKind::Dm, user.clone(), None);
            let origin = serde_json::to_string(&origin)
                .map_err(|e| StoreError::Corrupt(format!("check-in chat: {e}")))?;
            let settings = CheckinSettings {
                enabled: true,
                at_time: format!("{h:02}:{m:02}"),
                timezone: zone.to_owned(),
                session_id: session.clone(),
                origin,
            };
            inner.store.set_checkins(owner, &settings).await?;
            Ok(format!(
                "Check-ins are on: when I notice an open loop or a risk in our conversations, I'll check in here at {} ({zone}), at most once every {CHECKIN_GAP_HOURS} hours.",
                settings.at_time
            ))
        }
        _ => Ok(USAGE.to_owned()),
    }
}
