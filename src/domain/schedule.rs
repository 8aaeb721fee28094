//! When a schedule fires next: one-off times, fixed intervals and cron
//! expressions in the configured time zone.

use chrono::{DateTime, TimeZone, Utc};
use std::str::FromStr;

/// A schedule specification that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error("unknown schedule kind {0:?} (use at, every or cron)")]
    Kind(String),
    #[error("invalid time {0:?}: use RFC 3339, e.g. 2026-12-24T09:00:00+01:00")]
    Time(String),
    #[error("invalid interval {0:?}: use a number of seconds from 60 to 315360000 (10 years)")]
    Interval(String),
    #[error("invalid cron expression {0:?}: {1}")]
    Cron(String, String),
    #[error("unknown time zone {0:?}")]
    Zone(String),
}

/// Interval bounds: a minute, and ten years (beyond, the time in ms would
/// come near overflowing and no one means it).
const MIN_INTERVAL_SECS: i64 = 60;
const MAX_INTERVAL_SECS: i64 = 10 * 365 * 24 * 3600;

/// The first occurrence strictly after `after_ms` (epoch ms), or `None` when
/// the schedule has no more (a one-off in the past).
pub fn next_occurrence(
    kind: &str,
    spec: &str,
    timezone: &str,
    after_ms: i64,
) -> Result<Option<i64>, ScheduleError> {
    match kind {
        "at" => {
            let at = DateTime::parse_from_rfc3339(spec.trim())
                .map_err(|_| ScheduleError::Time(spec.to_owned()))?;
            let at = at.timestamp_millis();
            Ok((at > after_ms).then_some(at))
        }
        "every" => {
            let secs: i64 = spec
                .trim()
                .parse()
                .map_err(|_| ScheduleError::Interval(spec.to_owned()))?;
            if !(MIN_INTERVAL_SECS..=MAX_INTERVAL_SECS).contains(&secs) {
                return Err(ScheduleError::Interval(spec.to_owned()));
            }
            after_ms
                .checked_add(secs * 1000)
                .map(Some)
                .ok_or_else(|| ScheduleError::Interval(spec.to_owned()))
        }
        "cron" => {
            let tz = chrono_tz::Tz::from_str(timezone)
                .map_err(|_| ScheduleError::Zone(timezone.to_owned()))?;
            let schedule = parse_cron(spec)?;
            let after = Utc
                .timestamp_millis_opt(after_ms)
                .single()
                .unwrap_or_else(Utc::now)
                .with_timezone(&tz);
            Ok(schedule
                .after(&after)
                .next()
                .map(|t| t.with_timezone(&Utc).timestamp_millis()))
        }
        other => Err(ScheduleError::Kind(other.to_owned())),
    }
}

/// Accepts the usual 5-field cron (`min hour dom mon dow`) as well as the
/// cron crate's 6/7-field form with seconds.
fn parse_cron(spec: &str) -> Result<cron::Schedule, ScheduleError> {
    let fields = spec.split_whitespace().count();
    let full = if fields == 5 {
        format!("0 {spec}")
    } else {
        spec.to_owned()
    };
    cron::Schedule::from_str(&full).map_err(|e| ScheduleError::Cron(spec.to_owned(), e.to_string()))
}

/// The first occurrence after now, for a new schedule.
pub fn first_occurrence(
    kind: &str,
    spec: &str,
    timezone: &str,
) -> Result<Option<i64>, ScheduleError> {
    next_occurrence(kind, spec, timezone, Utc::now().timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(s: &str) -> i64 {
        DateTime::parse_from_rfc3339(s).unwrap().timestamp_millis()
    }

    #[test]
    fn one_offs_fire_once() {
        let t = ms("2026-12-24T09:00:00Z");
        assert_eq!(
            next_occurrence("at", "2026-12-24T09:00:00Z", "UTC", t - 1).unwrap(),
            Some(t)
        );
        assert_eq!(
            next_occurrence("at", "2026-12-24T09:00:00Z", "UTC", t).unwrap(),
            None
        );
        assert!(next_occurrence("at", "tomorrow", "UTC", t).is_err());
    }

    #[test]
    fn intervals_are_a_minute_to_ten_years() {
        assert_eq!(
            next_occurrence("every", "3600", "UTC", 1_000).unwrap(),
            Some(3_601_000)
        );
        assert!(next_occurrence("every", "5", "UTC", 0).is_err());
        assert!(next_occurrence("every", "315360000", "UTC", 0).is_ok());
        // Would overflow the time in ms and fire in a loop.
        for huge in ["315360001", "9300000000000000", "-60"] {
            assert!(next_occurrence("every", huge, "UTC", 0).is_err(), "{huge}");
        }
        assert!(next_occurrence("every", "3600", "UTC", i64::MAX - 10).is_err());
    }

    #[test]
    fn cron_respects_the_time_zone() {
        // 09:00 every day in Berlin is 08:00 UTC in winter.
        let next = next_occurrence(
            "cron",
            "0 9 * * *",
            "Europe/Berlin",
            ms("2026-12-02T10:00:00Z"),
        )
        .unwrap();
        assert_eq!(next, Some(ms("2026-12-03T08:00:00Z")));
        assert!(next_occurrence("cron", "not cron", "UTC", 0).is_err());
        assert!(next_occurrence("cron", "0 9 * * *", "Mars/Olympus", 0).is_err());
    }
}
