//! `switchboard tasks`: recent background tasks of every session, newest first.

use std::process::ExitCode;

use chrono::{DateTime, Utc};
use switchboard::store::{Store, TaskRecord, TaskStatus};
use switchboard_platform::ChatAddress;

/// Characters of a result shown.
const RESULT_PREVIEW: usize = 100;

/// Prints up to `limit` tasks, newest first, only those in `status` when given.
pub async fn run(database_url: &str, limit: u32, status: Option<&str>) -> anyhow::Result<ExitCode> {
    let status = status.map(parse_status).transpose()?;
    if limit == 0 {
        anyhow::bail!("--limit must be at least 1");
    }
    let store = Store::open(database_url).await?;
    let tasks = store.tasks().recent(status, limit).await?;
    if tasks.is_empty() {
        match status {
            Some(s) => println!("No background tasks with status {}.", s.as_str()),
            None => println!("No background tasks."),
        }
    }
    for t in &tasks {
        print_task(t);
    }
    Ok(ExitCode::SUCCESS)
}

fn parse_status(raw: &str) -> anyhow::Result<TaskStatus> {
    TaskStatus::parse(&raw.trim().to_ascii_lowercase()).ok_or_else(|| {
        anyhow::anyhow!(
            "unknown task status {raw:?}: use one of queued, running, succeeded, failed, cancelled, interrupted"
        )
    })
}

fn print_task(t: &TaskRecord) {
    println!(
        "{}  {:<11}  {:<14}  {}  created {}  finished {}",
        t.id.short(),
        t.status.as_str(),
        t.tool_name,
        chat(&t.chat),
        time(t.created_at),
        t.finished_at.map_or_else(|| "—".to_owned(), time)
    );
    let progress = progress(t);
    if !progress.is_empty() {
        println!("          progress {progress}");
    }
    if let Some(result) = t.result.as_deref().filter(|r| !r.trim().is_empty()) {
        println!("          result: {}", preview(result, RESULT_PREVIEW));
    }
}

/// `40% stage: detail`, or whichever parts the task reported.
fn progress(t: &TaskRecord) -> String {
    let mut out = t.percent.map(|p| format!("{p}%")).unwrap_or_default();
    // A finished task's stage is its status, already shown.
    let stage = Some(t.stage.trim()).filter(|s| *s != t.status.as_str());
    for (sep, part) in [(" ", stage.unwrap_or_default()), (": ", t.detail.trim())] {
        if part.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push_str(sep);
        }
        out.push_str(part);
    }
    out
}

fn chat(c: &ChatAddress) -> String {
    match c.thread {
        Some(thread) => format!("{} chat {} thread {}", c.platform, c.chat, thread),
        None => format!("{} chat {}", c.platform, c.chat),
    }
}

fn time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S").to_string()
}

/// The first `max` characters of `text` on one line, with `…` when cut.
pub(crate) fn preview(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}
