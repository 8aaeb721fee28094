//! Confinement of the programs tools run (`exec_command`, script tools,
//! background runs): the level chosen at start (`EXEC_SANDBOX`, `EXEC_NETWORK`)
//! and, per run, the command that starts the program inside it.

mod bwrap;
mod child;
mod detect;
mod etc;
mod landlock;
mod limits;
mod ports;
mod protect;
mod seccomp;
mod settings;

pub use limits::Limits;
pub use settings::{Network, Protected, SandboxConfig, SandboxMode};

use child::ChildSetup;
use protect::Denied;
use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The confinement in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Level {
    /// Landlock rules and limits applied by the command's process to itself.
    Landlock { abi: u32 },
    /// The command runs under `bwrap` (namespaces) at this path.
    Bwrap { program: PathBuf },
    /// Unconfined (only the cleared environment and the limits).
    None,
}

/// Why the configured sandbox cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("EXEC_SANDBOX=landlock, but this kernel has no Landlock (Linux 5.13 or later with the landlock LSM enabled): use EXEC_SANDBOX=auto or bwrap")]
    NoLandlock,
    #[error("EXEC_SANDBOX=bwrap, but {0}: install bubblewrap (apt install bubblewrap) or use EXEC_SANDBOX=auto")]
    NoBwrap(String),
    #[error("EXEC_NETWORK=none needs Landlock ABI 4 (Linux 6.7) or bubblewrap, and this kernel has Landlock ABI {abi} and no working bwrap: install bubblewrap, or set EXEC_NETWORK=allow")]
    NetworkNeedsAbi4 { abi: u32 },
    #[error("could not prepare the sandbox: {0}")]
    Prepare(String),
}

/// The chosen confinement and limits; builds each confined command.
#[derive(Debug, Clone)]
pub struct Sandbox {
    level: Level,
    network: Network,
    limits: Limits,
    mode: SandboxMode,
    /// The protected paths, resolved at start.
    denied: Arc<Denied>,
    /// The Landlock rules shared by every command (Landlock level only).
    base: Option<Arc<landlock::Base>>,
    /// The seccomp filter: installed by the child (Landlock) or by bwrap.
    filter: Option<Arc<seccompiler::BpfProgram>>,
    /// The protected ports' Landlock ruleset (network allowed, ABI ≥ 4).
    ports: Option<Arc<OwnedFd>>,
    /// The protected ports `ports` keeps out, in order (for descriptions).
    kept_ports: Vec<u16>,
    /// Ports are to be protected and this machine cannot.
    ports_open: bool,
}

/// A command ready to get its stdio and environment; keeps the command's
/// private temp dir until dropped.
pub(crate) struct Confined {
    pub command: tokio::process::Command,
    /// `TMPDIR` for the command.
    pub tmpdir: Option<PathBuf>,
    _tmp: Option<tempfile::TempDir>,
    /// What bwrap reads: the seccomp filter, the files of `/etc` (the
    /// child's copies count; these may be dropped once it is spawned).
    _handed: Vec<OwnedFd>,
}

impl Sandbox {
    pub fn level(&self) -> &Level {
        &self.level
    }

    pub fn network(&self) -> Network {
        self.network
    }

    /// For the start log and `doctor`: `landlock ABI 7, network allowed`.
    pub fn describe(&self) -> String {
        let level = match &self.level {
            Level::Landlock { abi } => format!("landlock ABI {abi}"),
            Level::Bwrap { program } => format!("bwrap ({})", program.display()),
            Level::None => "none".to_owned(),
        };
        let network = match (self.network, self.kept_ports.as_slice()) {
            (Network::None, _) => "network off".to_owned(),
            (Network::Allow, []) => "network allowed".to_owned(),
            (Network::Allow, ports) => format!(
                "network allowed but not the gateway's ports ({})",
                ports
                    .iter()
                    .map(u16::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        format!("{level}, {network}")
    }

    /// A warning for every start when commands run unconfined, or can reach
    /// the gateway's own ports.
    pub fn warning(&self) -> Option<&'static str> {
        if self.ports_open {
            return Some(
                "EXEC_NETWORK=allow, and this machine cannot keep commands from the gateway's own ports (WEB_LISTEN, HEALTH_LISTEN, TELEGRAM_WEBHOOK_LISTEN, MCP_LISTEN) and the database's: that needs Landlock ABI 4 (Linux 6.7; under EXEC_SANDBOX=bwrap, a bwrap that is not setuid); set EXEC_NETWORK=none",
            );
        }
        match (&self.level, self.mode) {
            (Level::None, SandboxMode::None) => Some(
                "EXEC_SANDBOX=none: approved commands run unconfined, with the gateway's own files, secrets on disk and network",
            ),
            (Level::None, _) => Some(
                "no sandbox available (no Landlock in this kernel, no working bwrap): approved commands run unconfined; install bubblewrap, or set EXEC_SANDBOX=none to accept this",
            ),
            _ => None,
        }
    }

    /// One line for approval cards: what the command will run under.
    pub fn card_line(&self) -> String {
        let network = match self.network {
            Network::Allow => "network allowed",
            Network::None => "no network",
        };
        match self.level {
            Level::Landlock { .. } => {
                format!("sandbox: landlock, writes to the workspace only, {network}")
            }
            Level::Bwrap { .. } => {
                format!("sandbox: bwrap, writes to the workspace only, {network}")
            }
            Level::None => "sandbox: NONE, runs with the gateway's full access".to_owned(),
        }
    }

    /// For a tool's description: what a command may touch.
    pub fn model_note(&self) -> String {
        let level = match self.level {
            Level::Landlock { .. } => "landlock",
            Level::Bwrap { .. } => "bwrap",
            Level::None => return "Commands run unconfined.".to_owned(),
        };
        let network = match (self.network, self.kept_ports.is_empty()) {
            (Network::Allow, true) => "and have network access (but open no Unix socket)",
            (Network::Allow, false) => {
                "and have network access (but open no Unix socket, nor reach the gateway's own ports)"
            }
            (Network::None, _) => "and have no network access",
        };
        format!(
            "Commands run sandboxed ({level}): they write only in the workspace and $TMPDIR, \
             cannot read the gateway's data, configuration or the user's home, {network}; $HOME and $TMPDIR \
             are a private temp dir emptied after the command."
        )
    }

    /// The command that runs `program args` in `workspace` under this
    /// sandbox; `readable` are extra paths it may read and execute (a
    /// script's own directory).
    pub(crate) fn command(
        &self,
        program: &OsString,
        args: &[OsString],
        workspace: &Path,
        readable: &[PathBuf],
    ) -> Result<Confined, SandboxError> {
        if self.level != Level::None && self.denied.covers_exactly(workspace) {
            return Err(SandboxError::Prepare(format!(
                "the workspace {} is one of the gateway's own paths (DATA_DIR, a configuration file or directory, the credentials): set WORKSPACE_DIR elsewhere",
                workspace.display()
            )));
        }
        let mut setup = ChildSetup {
            limits: self.limits,
            ruleset: None,
            seccomp: None,
            drop_capabilities: false,
            ports: self.ports.as_ref().map(|fd| fd.as_raw_fd()),
            inherit: Vec::new(),
        };
        let mut confined = match &self.level {
            Level::Landlock { .. } => {
                self.landlock(&mut setup, program, args, workspace, readable)?
            }
            Level::Bwrap { program: bwrap } => {
                self.bwrap(bwrap, &mut setup, program, args, workspace, readable)?
            }
            Level::None => {
                let mut command = tokio::process::Command::new(program);
                command.args(args);
                Confined {
                    command,
                    tmpdir: None,
                    _tmp: None,
                    _handed: Vec::new(),
                }
            }
        };
        child::install(&mut confined.command, setup);
        Ok(confined)
    }

    /// The bwrap level's command: `bwrap` with its arguments, and the
    /// descriptors it reads (the seccomp filter, the files of `/etc`).
    fn bwrap(
        &self,
        bwrap: &Path,
        setup: &mut ChildSetup,
        program: &OsString,
        args: &[OsString],
        workspace: &Path,
        readable: &[PathBuf],
    ) -> Result<Confined, SandboxError> {
        let filter = self.filter.as_deref().map(bwrap_filter).transpose()?;
        let view = bwrap::View {
            network: self.network,
            workspace,
            readable,
            denied: &self.denied,
            seccomp_fd: filter.as_ref().map(AsRawFd::as_raw_fd),
        };
        let (argv, files) = bwrap::argv(&view, program, args);
        let handed: Vec<OwnedFd> = filter
            .map(OwnedFd::from)
            .into_iter()
            .chain(files.into_iter().map(OwnedFd::from))
            .collect();
        setup.inherit = handed.iter().map(AsRawFd::as_raw_fd).collect();
        let mut command = tokio::process::Command::new(bwrap);
        command.args(argv);
        Ok(Confined {
            command,
            tmpdir: Some(PathBuf::from("/tmp")),
            _tmp: None,
            _handed: handed,
        })
    }

    /// The Landlock level's command: its private temp dir and ruleset.
    fn landlock(
        &self,
        setup: &mut ChildSetup,
        program: &OsString,
        args: &[OsString],
        workspace: &Path,
        readable: &[PathBuf],
    ) -> Result<Confined, SandboxError> {
        let prepare = |e: String| SandboxError::Prepare(e);
        let base = self
            .base
            .as_ref()
            .ok_or_else(|| prepare("the Landlock rules were not set up".into()))?;
        let tmp = tempfile::Builder::new()
            .prefix("switchboard-exec-")
            .tempdir()
            .map_err(|e| prepare(e.to_string()))?;
        let writable = [workspace, tmp.path()];
        let ruleset = landlock::ruleset(base, self.network, &writable, readable, &self.denied)
            .map_err(|e| prepare(e.to_string()))?;
        setup.ruleset = Some(ruleset);
        setup.seccomp = self.filter.clone();
        setup.drop_capabilities = true;
        let mut command = tokio::process::Command::new(program);
        command.args(args);
        Ok(Confined {
            command,
            tmpdir: Some(tmp.path().to_owned()),
            _tmp: Some(tmp),
            _handed: Vec::new(),
        })
    }
}

/// A pipe holding the seccomp filter for `bwrap --seccomp` to read (a pipe
/// per command: bwrap reads to the end, and commands start concurrently).
fn bwrap_filter(program: &seccompiler::BpfProgram) -> Result<std::io::PipeReader, SandboxError> {
    use std::io::Write;
    let prepare = |e: std::io::Error| SandboxError::Prepare(format!("the seccomp filter: {e}"));
    let (reader, mut writer) = std::io::pipe().map_err(prepare)?;
    // A few hundred bytes: far below a pipe's buffer, so this never blocks.
    writer
        .write_all(&seccomp::to_bytes(program))
        .map_err(prepare)?;
    drop(writer);
    Ok(reader)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_name_level_and_network() {
        let s = Sandbox {
            level: Level::Landlock { abi: 7 },
            network: Network::Allow,
            limits: Limits::default(),
            mode: SandboxMode::Auto,
            denied: Arc::default(),
            base: None,
            filter: None,
            ports: None,
            kept_ports: Vec::new(),
            ports_open: false,
        };
        assert_eq!(s.describe(), "landlock ABI 7, network allowed");
        assert!(s.warning().is_none());
        let kept = Sandbox {
            kept_ports: vec![5432, 8080],
            ..s.clone()
        };
        assert_eq!(
            kept.describe(),
            "landlock ABI 7, network allowed but not the gateway's ports (5432, 8080)"
        );
        assert!(kept.model_note().contains("gateway's own ports"));
        let open = Sandbox {
            ports_open: true,
            ..s.clone()
        };
        assert!(open
            .warning()
            .is_some_and(|w| w.contains("EXEC_NETWORK=none")));
        let none = Sandbox {
            level: Level::None,
            mode: SandboxMode::None,
            ..s
        };
        assert!(none
            .warning()
            .is_some_and(|w| w.contains("EXEC_SANDBOX=none")));
        assert!(none.card_line().contains("NONE"));
    }
}
