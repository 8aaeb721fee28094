//! Rendering a background task's status message: a text progress bar.

use crate::store::TaskStatus;
use crate::text::clip;
use crate::tools::Progress;
use std::time::Duration;

const CELLS: usize = 10;

/// `[██████░░░░] 60%`, or elapsed time when the percentage is unknown.
pub(crate) fn bar(percent: Option<u8>, elapsed: Duration) -> String {
    match percent {
        Some(p) => {
            let p = p.min(100);
            let filled = usize::from(p) * CELLS / 100;
            format!(
                "`[{}{}]` {p}%",
                "█".repeat(filled),
                "░".repeat(CELLS - filled)
            )
        }
        None => format!("`[{}]` {}s", "▒".repeat(CELLS), elapsed.as_secs()),
    }
}

/// The status message of a task.
pub(crate) fn status_text(
    short_id: &str,
    tool: &str,
    status: TaskStatus,
    progress: &Progress,
    elapsed: Duration,
) -> String {
    let detail = if progress.detail.is_empty() {
        String::new()
    } else {
        format!("\n{}", clip(&progress.detail, 200))
    };
    match status {
        TaskStatus::Queued | TaskStatus::Running => {
            let stage = match (status, progress.stage.as_str()) {
                (TaskStatus::Queued, _) => "queued",
                (_, "") => "starting",
                (_, stage) => stage,
            };
            format!(
                "⏳ Background task `{short_id}` · {tool} · {stage}\n{}{detail}",
                bar(progress.percent, elapsed)
            )
        }
        TaskStatus::Succeeded => format!(
            "✅ Background task `{short_id}` · {tool} · done in {}s",
            elapsed.as_secs()
        ),
        TaskStatus::Failed => format!(
            "❌ Background task `{short_id}` · {tool} · failed after {}s{detail}",
            elapsed.as_secs()
        ),
        TaskStatus::Cancelled => format!("🛑 Background task `{short_id}` · {tool} · cancelled"),
        TaskStatus::Interrupted => {
            format!("⚠️ Background task `{short_id}` · {tool} · interrupted (the gateway stopped)")
        }
    }
}

/// A milestone posted as its own message (`notify: changes`).
pub(crate) fn milestone_text(short_id: &str, tool: &str, progress: &Progress) -> String {
    let pct = progress
        .percent
        .map(|p| format!(" · {}%", p.min(100)))
        .unwrap_or_default();
    format!(
        "🔔 Background task `{short_id}` · {tool} · {}{pct}",
        progress.stage
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_fill_by_percent() {
        assert_eq!(bar(Some(60), Duration::ZERO), "`[██████░░░░]` 60%");
        assert_eq!(bar(Some(250), Duration::ZERO), "`[██████████]` 100%");
        assert_eq!(bar(None, Duration::from_secs(7)), "`[▒▒▒▒▒▒▒▒▒▒]` 7s");
    }

    #[test]
    fn the_first_line_names_the_state() {
        let first = |status, stage: &str| {
            let p = Progress {
                stage: stage.into(),
                ..Progress::default()
            };
            let text = status_text("ab12cd34", "exec_command", status, &p, Duration::ZERO);
            text.lines().next().unwrap_or_default().to_owned()
        };
        assert!(first(TaskStatus::Queued, "").ends_with("· queued"));
        assert!(first(TaskStatus::Running, "").ends_with("· starting"));
        assert!(first(TaskStatus::Running, "building").ends_with("· building"));
        assert!(first(TaskStatus::Cancelled, "").ends_with("· cancelled"));
    }
}
