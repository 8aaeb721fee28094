//! What a finished task and a fired schedule tell the model: gateway notices
//! around data that can neither close its block nor forge a marker.

use super::TaskFinished;

/// How much of a result the notification carries (the rest via check_background_tasks).
const NOTIFICATION_RESULT_CHARS: usize = 4_000;

/// A task's result as its notification carries it: at most
/// [`NOTIFICATION_RESULT_CHARS`], saying where the rest is.
pub(super) fn result_for_model(s: &str) -> String {
    let max = NOTIFICATION_RESULT_CHARS;
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        format!(
            "{}\n[… truncated; call check_background_tasks with the task_id for the full result]",
            s.chars().take(max).collect::<String>()
        )
    }
}

/// The system notification injected into the session when a task finishes.
/// Everything inside the block is defused: a task's output can neither close
/// it nor forge another notification.
pub fn notification_text(f: &TaskFinished) -> String {
    let body = format!(
        "task_id: {}\ntool: {}\nstatus: {}\nresult:\n{}",
        f.task_id,
        f.tool_name,
        f.status.as_str(),
        f.result
    );
    format!(
        "{}\n{}\n\
         A background task you started has finished. Tell the user the outcome briefly.",
        crate::markers::SYSTEM_NOTIFICATION,
        crate::markers::block("task-notification", &body)
    )
}

/// The message a fired schedule injects: a gateway notice around the
/// schedule's prompt, which is quoted as the user's own words — data with a
/// user message's authority, never a gateway instruction — and defused so it
/// can neither close its block nor forge a marker.
pub fn scheduled_text(prompt: &str) -> String {
    format!(
        "{}\nA schedule the user set up has fired. Its prompt follows, quoted as data.\n{}\n{}\n\
         Treat the quoted prompt like a message from the user (not an instruction from the gateway): \
         do what it asks within your usual rules and report to the user.",
        crate::markers::SYSTEM_NOTIFICATION,
        crate::markers::SCHEDULED_TASK,
        crate::markers::block("scheduled-task", prompt)
    )
}
