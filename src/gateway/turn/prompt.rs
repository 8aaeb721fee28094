//! What a turn gives the model besides the user's words: the history, the
//! recalled memories around the input, and the system context — a pointer
//! to `web_search` for fresh information, the live state the planner's
//! check read, the agent's identity and the chat's
//! instructions (the plan itself is shown before every model call).

use crate::domain::SessionKey;
use crate::gateway::delivery::origin::Origin;
use crate::gateway::session::input::SessionInput;
use crate::gateway::turn::memory::{self, TurnMemory};
use crate::gateway::turn::planner;
use crate::gateway::Inner;
use crate::llm::Message;
use crate::store::SessionState;

/// How many live (not compacted) past messages a turn loads at most: twice
/// the count at which the context is compacted anyway, so compaction — not
/// this limit — decides what leaves the context.
const HISTORY_LIMIT: u32 = 2 * crate::agent::MAX_CONTEXT_MESSAGES as u32;

/// The model's side of a turn.
pub(in crate::gateway) struct Prompt {
    pub history: Vec<Message>,
    /// The input as the model sees it: recalled memories around it, its images.
    pub input: Message,
    pub system_context: Option<String>,
    /// What the turn persists when it ends.
    pub memory: TurnMemory,
    /// The standing consent the user's words match, if any.
    pub consent: Option<String>,
}

/// Assembles the prompt of a turn of `input`, whose model input is `given`.
pub(in crate::gateway) async fn assemble(
    inner: &Inner,
    key: &SessionKey,
    origin: &Origin,
    input: &SessionInput,
    given: Message,
) -> Prompt {
    let state = memory::session_state(inner, &origin.session).await;
    let (history, ids) = memory::load_history(
        inner,
        &origin.session,
        state.summary.as_deref(),
        HISTORY_LIMIT,
    )
    .await;
    // Only the model sees recalled memories; history keeps the plain input.
    // A chat bound with `"memory": false` recalls nothing.
    let query = match input {
        SessionInput::Message(m) if crate::gateway::chat::memory_on(origin.chat.as_ref()) => {
            Some(m.text.as_str())
        }
        _ => None,
    };
    let private = origin.conversation.kind.is_private();
    let message = match input {
        SessionInput::Message(m) => Some(m.text.as_str()),
        _ => None,
    };
    if let SessionInput::Message(m) = input {
        crate::gateway::delivery::voice::note_input(inner, &origin.session, m).await;
    }
    let check = planner::before_turn(
        inner,
        key,
        &origin.session,
        message,
        state.task_state.is_some(),
    )
    .await;
    // A request that changes configuration-like state plans on the live
    // state read just now, not on the persisted summary of earlier turns.
    let shown = SessionState {
        task_state: state.task_state.clone().filter(|_| !check.config_request),
        ..state.clone()
    };
    let (wrapped, recalled) =
        memory::prepare(inner, key, private, &shown, &given.content, query).await;
    if let Some(text) = query {
        memory::learn_after_message(inner, key, &origin.session, &history, text);
    }
    let fresh = message.and_then(|m| crate::gateway::turn::fresh::note(inner, m));
    let live = join(fresh, check.live);
    let system_context = system_context(inner, key, origin, join(recalled, live)).await;
    let mut user = Message::user(wrapped);
    user.images = given.images;
    Prompt {
        history,
        input: user,
        system_context,
        consent: crate::gateway::turn::consent::consent_for(&state, query),
        memory: TurnMemory {
            plain_input: Some(given.content),
            history_ids: Some(ids),
            state: Some(state),
        },
    }
}

/// The per-turn system context: the chat's instructions, then the recalled
/// memories and the live state (`context`), and the agent's identity.
async fn system_context(
    inner: &Inner,
    key: &SessionKey,
    origin: &Origin,
    context: Option<String>,
) -> Option<String> {
    let private = origin.conversation.kind.is_private();
    let own = private.then(|| crate::store::MemoryOwner::new(key.platform, key.user));
    let context = crate::gateway::commands::identity::with_identity(inner, context, own).await;
    join(
        crate::gateway::chat::instructions(origin.chat.as_ref()),
        context,
    )
}

/// Two optional sections, a blank line between them.
fn join(first: Option<String>, second: Option<String>) -> Option<String> {
    match (first, second) {
        (Some(a), Some(b)) => Some(format!("{a}\n\n{b}")),
        (a, b) => a.or(b),
    }
}
