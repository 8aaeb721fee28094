//! Opt-in check-ins: when a reflection note finds an open loop or a risk and
//! the user turned check-ins on (`/checkins on`), a one-off schedule in their
//! direct message at their chosen time of day writes them a short message —
//! the schedules machinery fires it once across processes. At most one per
//! user per [`CHECKIN_GAP_HOURS`].

use super::{MemoryError, Reflection};
use crate::domain::{Conversation, ScheduleId};
use crate::store::CheckinSettings;
use crate::store::{ScheduleRecord, Store};
use chrono::{DateTime, Duration, Utc};

/// Hours between two check-ins of one user at least.
pub const CHECKIN_GAP_HOURS: i64 = 20;

/// Parses `HH:MM` (24 h).
pub fn parse_time(text: &str) -> Option<(u32, u32)> {
    let (h, m) = text.trim().split_once(':')?;
    let (h, m) = (h.parse::<u32>().ok()?, m.parse::<u32>().ok()?);
    (h < 24 && m < 60 && text.trim().len() <= 5).then_some((h, m))
}

/// Schedules a check-in for the user of `note` if it found something to
/// follow up on, check-ins are on, and none was scheduled recently. Returns
/// the schedule's id.
pub async fn schedule_checkin(
    store: &Store,
    note: &Reflection,
    now: DateTime<Utc>,
) -> Result<Option<ScheduleId>, MemoryError> {
    if note.open_loops.is_empty() && note.risks.is_empty() {
        return Ok(None);
    }
    let Some(settings) = store.checkins(note.owner).await?.filter(|s| s.enabled) else {
        return Ok(None);
    };
    let origin: Conversation = match serde_json::from_str(&settings.origin) {
        Ok(o) => o,
        Err(e) => return Err(MemoryError::Contract(format!("stored check-in chat: {e}"))),
    };
    // Never in a shared chat, whatever was stored.
    if !origin.kind.is_private() {
        return Ok(None);
    }
    let Some(next) = next_checkin(&settings, now)? else {
        return Ok(None);
    };
    if !store
        .claim_checkin(note.owner, now - Duration::hours(CHECKIN_GAP_HOURS), now)
        .await?
    {
        return Ok(None);
    }
    let id = ScheduleId::new();
    let record = ScheduleRecord {
        id: id.clone(),
        session_id: settings.session_id,
        origin,
        kind: "at".into(),
        spec: DateTime::<Utc>::from_timestamp_millis(next)
            .map(|t| t.to_rfc3339())
            .unwrap_or_default(),
        timezone: settings.timezone,
        prompt: checkin_prompt(note),
        missed: "skip".into(),
        next_run_at: Some(next),
        last_fired_at: None,
        fired_count: 0,
        active: true,
    };
    store.schedules().insert(&record).await?;
    store
        .audit()
        .record(
            "checkin.scheduled",
            serde_json::json!({
                "platform": note.owner.platform.as_str(),
                "user": note.owner.user.0,
                "schedule": id,
                "at": record.spec,
            }),
        )
        .await;
    Ok(Some(id))
}

/// The next time of day the user asked for check-ins, in their timezone.
fn next_checkin(
    settings: &CheckinSettings,
    now: DateTime<Utc>,
) -> Result<Option<i64>, MemoryError> {
    let Some((h, m)) = parse_time(&settings.at_time) else {
        return Err(MemoryError::Contract(format!(
            "check-in time {:?}",
            settings.at_time
        )));
    };
    crate::domain::schedule::next_occurrence(
        "cron",
        &format!("{m} {h} * * *"),
        &settings.timezone,
        now.timestamp_millis(),
    )
    .map_err(|e| MemoryError::Contract(e.to_string()))
}

/// What the scheduled turn asks the model: a short follow-up on the note's
/// open loops and risks.
fn checkin_prompt(note: &Reflection) -> String {
    let mut about: Vec<String> = note
        .open_loops
        .iter()
        .map(|l| format!("open loop: {l}"))
        .collect();
    about.extend(note.risks.iter().map(|r| format!("risk: {r}")));
    format!(
        "Check-in the user turned on: write them one short, warm message (two sentences at most) following up on \
         {}. Offer help; do not call tools.",
        about.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_of_day() {
        assert_eq!(parse_time("09:30"), Some((9, 30)));
        assert_eq!(parse_time("7:05"), Some((7, 5)));
        assert_eq!(parse_time("24:00"), None);
        assert_eq!(parse_time("noon"), None);
    }
}
