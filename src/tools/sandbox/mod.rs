//! Confinement of the programs tools run (`exec_command`, script tools,
//! background runs): the level chosen at start (`EXEC_SANDBOX`, `EXEC_NETWORK`)
//! and, per run, the command that starts the program inside it.

mod bwrap;
mod child;
mod landlock;
mod limits;
mod seccomp;
mod settings;

pub use limits::Limits;
pub use settings::{Network, SandboxConfig, SandboxMode};

use child::ChildSetup;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

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
    /// The Landlock rules shared by every command (Landlock level only).
    base: Option<std::sync::Arc<landlock::Base>>,
    /// The socket filter (Landlock level with the network off).
    no_sockets: Option<std::sync::Arc<seccompiler::BpfProgram>>,
}

/// A command ready to get its stdio and environment; keeps the command's
/// private temp dir until dropped.
pub(crate) struct Confined {
    pub command: tokio::process::Command,
    /// `TMPDIR` for the command.
    pub tmpdir: Option<PathBuf>,
    _tmp: Option<tempfile::TempDir>,
}

impl Sandbox {
    /// Resolves the configured mode against this machine.
    pub fn detect(config: &SandboxConfig) -> Result<Sandbox, SandboxError> {
        let abi = child::landlock_abi();
        let landlock_fits = |abi: u32| config.network == Network::Allow || abi >= 4;
        let level = match config.mode {
            SandboxMode::None => Level::None,
            SandboxMode::Landlock => match abi {
                None => return Err(SandboxError::NoLandlock),
                Some(abi) if !landlock_fits(abi) => {
                    return Err(SandboxError::NetworkNeedsAbi4 { abi })
                }
                Some(abi) => Level::Landlock { abi },
            },
            SandboxMode::Bwrap => Level::Bwrap {
                program: working_bwrap().map_err(SandboxError::NoBwrap)?,
            },
            SandboxMode::Auto => match abi {
                Some(abi) if landlock_fits(abi) => Level::Landlock { abi },
                _ => match (working_bwrap(), abi) {
                    (Ok(program), _) => Level::Bwrap { program },
                    (Err(_), Some(abi)) => return Err(SandboxError::NetworkNeedsAbi4 { abi }),
                    (Err(_), None) => Level::None,
                },
            },
        };
        let landlock = matches!(level, Level::Landlock { .. });
        let base = landlock.then(|| std::sync::Arc::new(landlock::Base::new()));
        let no_sockets = if landlock && config.network == Network::None {
            let program =
                seccomp::no_sockets().map_err(|e| SandboxError::Prepare(e.to_string()))?;
            Some(std::sync::Arc::new(program))
        } else {
            None
        };
        Ok(Sandbox {
            level,
            network: config.network,
            limits: config.limits,
            mode: config.mode,
            base,
            no_sockets,
        })
    }

    /// The strongest sandbox available with the network allowed and default
    /// limits (tools built without a configuration).
    pub fn auto() -> Sandbox {
        Sandbox::detect(&SandboxConfig::default()).unwrap_or(Sandbox {
            level: Level::None,
            network: Network::Allow,
            limits: Limits::default(),
            mode: SandboxMode::Auto,
            base: None,
            no_sockets: None,
        })
    }

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
        let network = match self.network {
            Network::Allow => "network allowed",
            Network::None => "network off",
        };
        format!("{level}, {network}")
    }

    /// A warning for every start when commands run unconfined.
    pub fn warning(&self) -> Option<&'static str> {
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
        let network = match self.network {
            Network::Allow => "and have network access",
            Network::None => "and have no network access",
        };
        format!(
            "Commands run sandboxed ({level}): they write only in the workspace and $TMPDIR, \
             cannot read the gateway's data or the user's home, {network}; $HOME and $TMPDIR \
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
        let prepare = |e: std::io::Error| SandboxError::Prepare(e.to_string());
        let mut setup = ChildSetup {
            limits: self.limits,
            ruleset: None,
            seccomp: None,
            drop_capabilities: false,
        };
        let (mut command, tmp) = match (&self.level, &self.base) {
            (Level::Landlock { .. }, Some(base)) => {
                let tmp = tempfile::Builder::new()
                    .prefix("switchboard-exec-")
                    .tempdir()
                    .map_err(prepare)?;
                let ruleset =
                    landlock::ruleset(base, self.network, &[workspace, tmp.path()], readable)
                        .map_err(|e| SandboxError::Prepare(e.to_string()))?;
                setup.ruleset = Some(ruleset);
                setup.seccomp = self.no_sockets.clone();
                setup.drop_capabilities = true;
                let mut command = tokio::process::Command::new(program);
                command.args(args);
                (command, Some(tmp))
            }
            (Level::Landlock { .. }, None) => {
                return Err(SandboxError::Prepare(
                    "the Landlock rules were not set up".into(),
                ))
            }
            (Level::Bwrap { program: bwrap }, _) => {
                let mut command = tokio::process::Command::new(bwrap);
                command.args(bwrap::argv(
                    self.network,
                    workspace,
                    readable,
                    program,
                    args,
                ));
                (command, None)
            }
            (Level::None, _) => {
                let mut command = tokio::process::Command::new(program);
                command.args(args);
                (command, None)
            }
        };
        child::install(&mut command, setup);
        let tmpdir = match (&self.level, &tmp) {
            (_, Some(t)) => Some(t.path().to_owned()),
            (Level::Bwrap { .. }, None) => Some(PathBuf::from("/tmp")),
            _ => None,
        };
        Ok(Confined {
            command,
            tmpdir,
            _tmp: tmp,
        })
    }
}

/// `bwrap` on `PATH`, checked to start a namespace here (it may be installed
/// where user namespaces are off).
fn working_bwrap() -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    let program = std::env::split_paths(&path)
        .map(|dir| dir.join("bwrap"))
        .find(|p| p.is_file())
        .ok_or_else(|| "bwrap is not on PATH".to_owned())?;
    let probe = std::process::Command::new(&program)
        .args([
            "--ro-bind",
            "/",
            "/",
            "--unshare-pid",
            "--",
            "/bin/sh",
            "-c",
            ":",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    match probe {
        Ok(s) if s.success() => Ok(program),
        Ok(s) => Err(format!(
            "{} cannot create namespaces here ({s})",
            program.display()
        )),
        Err(e) => Err(format!("{} does not start: {e}", program.display())),
    }
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
            base: None,
            no_sockets: None,
        };
        assert_eq!(s.describe(), "landlock ABI 7, network allowed");
        assert!(s.warning().is_none());
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
