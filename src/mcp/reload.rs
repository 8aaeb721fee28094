//! The MCP servers as a live set (live reload of `MCP_SERVERS_FILE`): a
//! server added to the file is started, one removed is stopped (its process
//! group gone), one whose entry changed is restarted; the rest run on.

use super::{McpClients, McpContext, McpServer, McpServerDef, McpTransport};
use crate::tools::{DynamicTools, Tool};
use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};
use tokio_util::sync::CancellationToken;

/// One running server: what it was started from and how to stop it.
struct Started {
    fingerprint: u64,
    server: Arc<McpServer>,
    stop: CancellationToken,
}

/// What [`LiveMcp::apply`] did, by server name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpChange {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub restarted: Vec<String>,
    /// Servers running after the change.
    pub running: usize,
}

impl McpChange {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.restarted.is_empty()
    }
}

/// The configured servers, changeable while the gateway runs.
pub struct LiveMcp {
    ctx: Arc<McpContext>,
    shutdown: CancellationToken,
    started: Mutex<BTreeMap<String, Started>>,
    /// The servers in file order, as the tools and metrics see them.
    clients: crate::loaded::Live<McpClients>,
    /// Serializes changes (two reloads never interleave their starts).
    changing: tokio::sync::Mutex<()>,
}

impl LiveMcp {
    /// Starts `defs` (see [`McpClients::start`]); every server stops on `shutdown`.
    pub async fn start(
        defs: &[McpServerDef],
        ctx: McpContext,
        shutdown: &CancellationToken,
    ) -> LiveMcp {
        let live = LiveMcp {
            ctx: Arc::new(ctx),
            shutdown: shutdown.clone(),
            started: Mutex::new(BTreeMap::new()),
            clients: crate::loaded::Live::new(McpClients::default()),
            changing: tokio::sync::Mutex::new(()),
        };
        live.apply(defs).await;
        live
    }

    /// The servers now.
    pub fn clients(&self) -> Arc<McpClients> {
        self.clients.get()
    }

    /// Makes the running set match `defs`: servers removed or changed are
    /// stopped first (their directory and port free again), then those added
    /// or changed are started; waits until each of those is up or down.
    pub async fn apply(&self, defs: &[McpServerDef]) -> McpChange {
        let _one_at_a_time = self.changing.lock().await;
        let gone = self.take_gone(defs);
        self.publish(defs);
        for old in &gone {
            old.stop.cancel();
        }
        futures::future::join_all(gone.iter().map(|g| g.server.stopped())).await;
        let mut change = McpChange::default();
        let mut fresh = Vec::new();
        {
            let mut started = self.started.lock().unwrap_or_else(PoisonError::into_inner);
            let missing: Vec<&McpServerDef> = defs
                .iter()
                .filter(|d| !started.contains_key(&d.name))
                .collect();
            for def in missing {
                if gone.iter().any(|g| g.server.name() == def.name) {
                    change.restarted.push(def.name.clone());
                } else {
                    change.added.push(def.name.clone());
                }
                let stop = self.shutdown.child_token();
                let server = McpServer::spawn(def.clone(), Arc::clone(&self.ctx), stop.clone());
                fresh.push(Arc::clone(&server));
                let fingerprint = fingerprint(def);
                started.insert(
                    def.name.clone(),
                    Started {
                        fingerprint,
                        server,
                        stop,
                    },
                );
            }
            change.running = started.len();
        }
        change.removed = gone
            .iter()
            .map(|g| g.server.name().to_owned())
            .filter(|n| !defs.iter().any(|d| &d.name == n))
            .collect();
        self.publish(defs);
        futures::future::join_all(fresh.iter().map(|s| s.settled())).await;
        change
    }

    /// Takes out the servers `defs` no longer has, or has changed.
    fn take_gone(&self, defs: &[McpServerDef]) -> Vec<Started> {
        let mut started = self.started.lock().unwrap_or_else(PoisonError::into_inner);
        let names: Vec<String> = started.keys().cloned().collect();
        let mut gone = Vec::new();
        for name in names {
            let same = defs.iter().find(|d| d.name == name).map(fingerprint);
            let kept = started.get(&name).map(|s| s.fingerprint);
            if same.is_none() || same != kept {
                gone.extend(started.remove(&name));
            }
        }
        gone
    }

    /// The running servers, in file order, for the tools and the metrics.
    fn publish(&self, defs: &[McpServerDef]) {
        let started = self.started.lock().unwrap_or_else(PoisonError::into_inner);
        let servers = defs
            .iter()
            .filter_map(|d| started.get(&d.name).map(|s| Arc::clone(&s.server)))
            .collect();
        self.clients.set(McpClients { servers });
    }

    /// Waits until every server has stopped (after the shutdown token fired).
    pub async fn stopped(&self) {
        self.clients().stopped().await;
    }
}

/// The registry asks each time: servers added since are offered too.
impl DynamicTools for LiveMcp {
    fn current(&self, taken: &[String]) -> Vec<Arc<dyn Tool>> {
        self.clients().collect(taken, false)
    }
}

/// Everything that makes a server entry what it is (credentials included,
/// only hashed: never shown).
fn fingerprint(def: &McpServerDef) -> u64 {
    let mut h = DefaultHasher::new();
    def.name.hash(&mut h);
    match &def.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
            path,
        } => (0u8, command, args, env, cwd, path).hash(&mut h),
        McpTransport::Http { url, headers } => (1u8, url, headers).hash(&mut h),
    }
    def.timeout.hash(&mut h);
    let policy = &def.policy;
    format!("{:?}", policy.default).hash(&mut h);
    let tools: BTreeMap<&String, String> = policy
        .tools
        .iter()
        .map(|(k, v)| (k, format!("{v:?}")))
        .collect();
    tools.hash(&mut h);
    (&policy.allow, &policy.deny).hash(&mut h);
    format!("{:?}", def.network).hash(&mut h);
    def.read.hash(&mut h);
    h.finish()
}
