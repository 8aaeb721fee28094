//! The platform-agnostic router: inbound → access → rate limit → session queue →
//! runtime → outbound.

mod chat;
mod commands;
mod delivery;
mod durability;
mod features;
mod intake;
mod maintenance;
mod operator;
mod parents;
mod platforms;
mod session;
mod spool;
mod text;
mod turn;

pub use commands::usage::report as usage_report;
pub use commands::COMMANDS;
pub use delivery::activity::Verbosity;
pub use delivery::answer_file::ANSWER_MAX_CHARS;
pub use delivery::scrubbed::ScrubbedAdapter;
pub use intake::access::AccessPolicy;
pub use operator::{Operator, WebDecision, WEB_OPERATOR};
pub use session::queue_mode::QueueMode;
pub(crate) use text::DEFAULT_SYSTEM_PROMPT;

use crate::agent::Agent;
use crate::approvals::Approvals;
use crate::busy::Busy;
use crate::memory::{Extractor, MemoryBook, MemoryConfig};
use crate::metrics::Metrics;
use crate::store::{SessionKey, Store};
use crate::tasks::{TaskFinished, TaskManager};
use intake::access::AccessControl;
use intake::limiter::UserLimiter;
use session::input::SessionInput;
use session::queue::session_worker;
use session::worker::SessionHandle;
use spool::Spool;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use switchboard_platform::{
    Ack, ButtonPress, InboundQueue, Platform, PlatformAdapter, Receipt, UserId,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Gateway settings (a slice of [`crate::config::Config`]).
#[derive(Debug, Clone)]
pub struct GatewaySettings {
    pub access_policy: AccessPolicy,
    pub allowed_users: HashMap<Platform, HashSet<UserId>>,
    pub user_messages_per_minute: u32,
    /// Approval presses a user may make a minute (`APPROVAL_PRESSES_PER_MINUTE`),
    /// apart from the message limit that feedback presses share.
    pub approval_presses_per_minute: u32,
    pub approval_timeout: Duration,
    pub pairing_ttl: Duration,
    pub memory: MemoryConfig,
    /// What approval deadlines are measured against.
    pub clock: Arc<dyn crate::clock::Clock>,
    /// Where accepted messages are spooled while storage is down
    /// (`DATA_DIR/spool`).
    pub spool_dir: PathBuf,
    /// What chats see of a turn's work unless they chose (`CHAT_VERBOSITY`).
    pub verbosity: Verbosity,
    /// How sessions take messages sent mid-turn unless they chose (`QUEUE_MODE`).
    pub queue_mode: QueueMode,
    /// Per-chat settings (`CHATS_FILE`), swapped whole when the file is reloaded.
    pub chats: Arc<crate::loaded::Live<crate::chats::ChatBindings>>,
    /// Who may add tools from the chat (`TOOL_BUILDERS`).
    pub tool_builders: crate::tools::ToolBuilders,
    /// Whether users may set the agent's identity for their own DMs.
    pub identity_user_edits: bool,
}

/// Shared state of the gateway; sessions and tasks hold an `Arc` of it: the
/// services every stage uses, and each stage's own state as a handle of its
/// own (`gate` for intake, `sessions` for the session workers).
pub(crate) struct Inner {
    pub store: Store,
    pub agent: Arc<Agent>,
    pub approvals: Approvals,
    pub tasks: Arc<TaskManager>,
    /// When the gateway stops, and the work it waits for.
    pub life: Lifecycle,
    pub metrics: Arc<Metrics>,
    /// The adapters, the per-chat settings and the threads' channels.
    platforms: platforms::Platforms,
    /// Skills, media, models, memory extraction, grown tools, defaults.
    pub features: features::Features,
    /// This process's id, storage health and the local spool.
    durability: durability::Durability,
    /// Access policy and per-user limits (the intake's).
    gate: intake::gate::Gate,
    /// The session workers and their turns in flight.
    sessions: session::sessions::Sessions,
}

impl Inner {
    pub(crate) fn adapter(&self, platform: Platform) -> Option<Arc<dyn PlatformAdapter>> {
        self.platforms.adapter(platform)
    }

    /// The operator's settings for the chat (or topic) of `key`, if bound;
    /// a thread that is a chat of its own falls back to its channel's.
    pub(crate) fn chat_settings(&self, key: &SessionKey) -> Option<crate::chats::ChatSettings> {
        self.platforms.chat_settings(key)
    }

    /// Whether the person on `platform` is the operator at this machine (see
    /// [`switchboard_platform::Capabilities::local_operator`]).
    pub(crate) fn local_operator(&self, platform: Platform) -> bool {
        self.platforms.local_operator(platform)
    }
}

/// The gateway's life: the token that stops it, and the work in flight it
/// waits for (queued inputs, running turns, background tasks).
pub(crate) struct Lifecycle {
    pub shutdown: CancellationToken,
    pub busy: Busy,
}

/// The router between platform adapters and the agent.
pub struct Gateway {
    inner: Arc<Inner>,
    finished: mpsc::Receiver<TaskFinished>,
}

/// The services a gateway routes to.
pub struct GatewayParts {
    pub store: Store,
    pub agent: Arc<Agent>,
    pub tasks: Arc<TaskManager>,
    /// Where `tasks` reports finished background tasks.
    pub finished: mpsc::Receiver<TaskFinished>,
    /// Shared with `tasks`: work in flight.
    pub busy: Busy,
    /// Counters for `/metrics`.
    pub metrics: Arc<Metrics>,
    /// Skills users run with `/name args`.
    pub skills: Arc<crate::skills::SkillLibrary>,
    /// Media handling (downloads, vision, transcription, documents).
    pub media: Arc<crate::media::Media>,
    /// The model catalogue, `/model` choices and routing.
    pub models: Arc<crate::models::Models>,
    /// The cheap model (`MODEL_ROUTE_CHEAP`) for memory extraction and
    /// summaries, falling back to the agent's; none: the agent's.
    pub cheap: Option<Arc<dyn crate::llm::Provider>>,
    /// The tools added from the chat (`/tools export`).
    pub grown: Arc<crate::tools::GrownTools>,
    /// This process's id, claimed alive in the store for the process's life.
    pub instance: crate::domain::ProcessId,
}

impl Gateway {
    pub fn new(
        settings: GatewaySettings,
        parts: GatewayParts,
        adapters: Vec<Arc<dyn PlatformAdapter>>,
        shutdown: CancellationToken,
    ) -> Gateway {
        let GatewayParts {
            store,
            agent,
            tasks,
            finished,
            busy,
            metrics,
            skills,
            media,
            models,
            cheap,
            grown,
            instance,
        } = parts;
        let extractor = Extractor::new(
            MemoryBook::new(store.clone(), settings.memory.clone()),
            cheap.unwrap_or_else(|| Arc::clone(agent.provider())),
        );
        let spool = match Spool::open(&settings.spool_dir, &instance) {
            Ok(spool) => Some(spool),
            Err(e) => {
                tracing::warn!(dir = %settings.spool_dir.display(), error = %e, "no local spool: messages accepted during a storage outage will not survive a restart");
                None
            }
        };
        let inner = Inner {
            approvals: Approvals::new(store.clone(), settings.approval_timeout, settings.clock),
            store,
            agent,
            tasks,
            life: Lifecycle { shutdown, busy },
            metrics,
            platforms: platforms::Platforms {
                adapters: adapters.into_iter().map(|a| (a.platform(), a)).collect(),
                chats: settings.chats,
                parents: parents::Parents::default(),
            },
            features: features::Features {
                skills,
                media,
                status: Default::default(),
                models,
                extractor,
                grown,
                tool_builders: settings.tool_builders,
                identity_user_edits: settings.identity_user_edits,
                verbosity: settings.verbosity,
                queue_mode: settings.queue_mode,
            },
            durability: durability::Durability {
                instance,
                storage: durability::StorageHealth::default(),
                spool,
            },
            gate: intake::gate::Gate {
                access: AccessControl::new(
                    settings.access_policy,
                    settings.allowed_users,
                    chrono::Duration::from_std(settings.pairing_ttl)
                        .unwrap_or(chrono::Duration::hours(1)),
                ),
                limiter: UserLimiter::new(settings.user_messages_per_minute),
                approval_presses: UserLimiter::new(settings.approval_presses_per_minute),
            },
            sessions: session::sessions::Sessions::new(Arc::new(turn::runner::TurnRunner)),
        };
        Gateway {
            inner: Arc::new(inner),
            finished,
        }
    }

    /// A handle for the operator's web console.
    pub fn operator(&self) -> Operator {
        Operator::new(Arc::clone(&self.inner))
    }

    /// Work in flight: queued inputs, running turns and background tasks.
    pub fn busy(&self) -> Busy {
        self.inner.life.busy.clone()
    }

    /// Routes inbound events and task notifications until shutdown.
    pub async fn serve(mut self, mut inbound: InboundQueue) {
        self.inner.platforms.parents.load(&self.inner.store).await;
        maintenance::reshow::console_cards(&self.inner).await;
        maintenance::periodic::resume_orphaned_turns(&self.inner).await;
        // What processes that are gone (this one's predecessor included)
        // left: their queued messages, resumed turns and tasks.
        maintenance::periodic::take_over(&self.inner, true).await;
        let (due_tx, mut due) = mpsc::channel(64);
        tokio::spawn(maintenance::periodic::run(Arc::clone(&self.inner), due_tx));
        tokio::spawn(crate::memory::sweep(
            self.inner.features.extractor.clone(),
            self.inner.store.clone(),
            self.inner.life.busy.clone(),
            self.inner.life.shutdown.clone(),
        ));
        tokio::spawn(commands::menu::publish(Arc::clone(&self.inner)));
        tokio::spawn(
            Arc::clone(&self.inner.features.media).sweep_hourly(self.inner.life.shutdown.clone()),
        );
        // Adapters may all stop (the console at end of input) while background
        // tasks still have notifications to deliver: keep serving until shutdown.
        let mut inbound_open = true;
        loop {
            tokio::select! {
                () = self.inner.life.shutdown.cancelled() => break,
                delivery = inbound.recv(), if inbound_open => match delivery {
                    Some(first) => self.take_in(first, &mut inbound).await,
                    None => inbound_open = false,
                },
                Some(done) = self.finished.recv() => self.on_task_finished(done),
                Some(fired) = due.recv() => self.on_schedule_fired(fired),
            }
        }
        // What is still queued stays in the inbox for the next process (or
        // a peer), which takes it as soon as this one's liveness claim ends.
        self.keep_undelivered(&mut inbound).await;
        if let Some(spool) = &self.inner.durability.spool {
            spool.close();
        }
    }

    /// A press is handled on a task of its own; its receipt goes to the
    /// adapter once its decision (if any) is recorded.
    fn on_reaction(&self, reaction: switchboard_platform::Reaction, ack: Ack) {
        let inner = Arc::clone(&self.inner);
        tokio::spawn(async move {
            intake::reactions::handle(&inner, &reaction).await;
            ack.send(Receipt::Handled);
        });
    }

    fn on_press(&self, press: ButtonPress, ack: Ack) {
        let inner = Arc::clone(&self.inner);
        tokio::spawn(async move {
            intake::presses::handle(inner, press).await;
            ack.send(Receipt::Handled);
        });
    }

    fn on_task_finished(&self, done: TaskFinished) {
        let key = done.origin.conversation.key;
        let guard = self.inner.life.busy.enter();
        self.session(key)
            .enqueue(SessionInput::Notification(done), guard);
    }

    fn on_schedule_fired(&self, fired: crate::tasks::Fired) {
        let key = fired.origin.key;
        let guard = self.inner.life.busy.enter();
        self.session(key).enqueue(
            SessionInput::Scheduled {
                origin: fired.origin,
                prompt: fired.prompt,
            },
            guard,
        );
    }

    fn session_if_exists(&self, key: &SessionKey) -> Option<SessionHandle> {
        self.inner
            .sessions
            .workers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned()
    }

    fn session(&self, key: SessionKey) -> SessionHandle {
        session_worker(&self.inner, key)
    }
}
