//! `/tasks`: the conversation's background tasks and active schedules, and
//! `/tasks cancel <id>` for either.

use crate::gateway::commands::Command;
use crate::gateway::Inner;
use crate::store::{ScheduleRecord, SessionId, StoreError};
use crate::tasks::Cancelled;
use crate::text::clip;

/// Tasks listed at most (newest first).
const LIST_TASKS: u32 = 10;

pub(crate) async fn run(
    inner: &Inner,
    cmd: &Command<'_>,
    session: &SessionId,
) -> Result<String, StoreError> {
    match cmd.args.as_slice() {
        ["cancel", id] => cancel(inner, session, id).await,
        _ => list(inner, session).await,
    }
}

async fn cancel(inner: &Inner, session: &SessionId, id: &str) -> Result<String, StoreError> {
    if id.len() < 6 {
        return Ok("Give at least 6 characters of the id.".into());
    }
    Ok(match inner.tasks.cancel_in_session(session, id).await? {
        Cancelled::Task(t) => format!("Cancelling task `{}`.", t.short()),
        Cancelled::Requested(t) => format!(
            "Task `{}` runs in another gateway process; it was asked to stop and will within a few seconds.",
            t.short()
        ),
        Cancelled::NotRunning(t, status) => {
            format!(
                "Task `{}` is not running ({}).",
                t.short(),
                status.as_str()
            )
        }
        Cancelled::Schedule(s) => format!("Cancelled schedule `{}`.", s.short()),
        Cancelled::NotFound => {
            format!("No running task or active schedule `{id}` in this conversation.")
        }
    })
}

async fn list(inner: &Inner, session: &SessionId) -> Result<String, StoreError> {
    let tasks = inner.store.tasks().of_session(session, LIST_TASKS).await?;
    let schedules = inner.store.schedules().of_session(session).await?;
    if tasks.is_empty() && schedules.is_empty() {
        return Ok("No background tasks or schedules in this conversation.".into());
    }
    let mut out = Vec::new();
    if !tasks.is_empty() {
        out.push("**Background tasks**".to_owned());
        out.extend(tasks.iter().map(|t| {
            let pct = t.percent.map(|p| format!(" {p}%")).unwrap_or_default();
            let stage = if t.stage.is_empty() || t.stage == t.status.as_str() {
                String::new()
            } else {
                format!(" · {}", t.stage)
            };
            format!(
                "`{}` {} — {}{pct}{stage}",
                t.id.short(),
                t.tool_name,
                t.status.as_str(),
            )
        }));
    }
    if !schedules.is_empty() {
        out.push("**Schedules**".to_owned());
        out.extend(schedules.iter().map(schedule_line));
    }
    out.push("Cancel one with `/tasks cancel <id>`.".into());
    Ok(out.join("\n"))
}

fn schedule_line(s: &ScheduleRecord) -> String {
    let when = match s.kind.as_str() {
        "every" => format!("every {}", every(&s.spec)),
        "cron" => format!("cron `{}` ({})", s.spec, s.timezone),
        _ => "once".to_owned(),
    };
    let next = s
        .next_run_at
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|| "—".into());
    format!(
        "`{}` {when}, next {next}: {}",
        s.id.short(),
        clip(&s.prompt.replace('\n', " "), 80)
    )
}

/// An interval in seconds as people say it.
fn every(spec: &str) -> String {
    match spec.trim().parse::<u64>() {
        Ok(s) if s % 86_400 == 0 => format!("{} d", s / 86_400),
        Ok(s) if s % 3_600 == 0 => format!("{} h", s / 3_600),
        Ok(s) if s % 60 == 0 => format!("{} min", s / 60),
        Ok(s) => format!("{s} s"),
        Err(_) => spec.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::every;

    #[test]
    fn intervals_read_naturally() {
        assert_eq!(every("86400"), "1 d");
        assert_eq!(every("7200"), "2 h");
        assert_eq!(every("90"), "90 s");
        assert_eq!(every("600"), "10 min");
    }
}
