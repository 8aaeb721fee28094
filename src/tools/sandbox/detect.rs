//! Choosing the level at start (`EXEC_SANDBOX`, `EXEC_NETWORK`, what this
//! machine has) and preparing what every command shares: the Landlock rules
//! of the system paths, the seccomp filter, the protected ports' ruleset.

use super::protect::Denied;
use super::seccomp::{self, Installer};
use super::{
    landlock, ports, Level, Limits, Network, Sandbox, SandboxConfig, SandboxError, SandboxMode,
};
use std::path::PathBuf;
use std::sync::Arc;

impl Sandbox {
    /// Resolves the configured mode against this machine.
    pub fn detect(config: &SandboxConfig) -> Result<Sandbox, SandboxError> {
        let abi = super::child::landlock_abi();
        let level = choose(config, abi)?;
        let prepare = |e: String| SandboxError::Prepare(e);
        let denied = Arc::new(Denied::new(&config.protect.paths));
        let (base, filter) = match &level {
            Level::Landlock { .. } => (
                Some(Arc::new(landlock::Base::new(&denied))),
                Some(seccomp::program(Installer::Landlock, config.network)),
            ),
            Level::Bwrap { .. } => (
                None,
                Some(seccomp::program(Installer::Bwrap, config.network)),
            ),
            Level::None => (None, None),
        };
        let filter = filter
            .transpose()
            .map_err(|e| prepare(e.to_string()))?
            .map(Arc::new);
        let wanted = config.network == Network::Allow && !config.protect.ports.is_empty();
        let ports = if wanted && can_stack_ports(&level, abi) {
            Some(Arc::new(
                ports::ruleset(&config.protect.ports).map_err(prepare)?,
            ))
        } else {
            None
        };
        let mut kept_ports = config.protect.ports.clone();
        kept_ports.sort_unstable();
        Ok(Sandbox {
            ports_open: wanted && ports.is_none() && level != Level::None,
            kept_ports: if ports.is_some() {
                kept_ports
            } else {
                Vec::new()
            },
            level,
            network: config.network,
            limits: config.limits,
            mode: config.mode,
            denied,
            base,
            filter,
            ports,
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
            denied: Arc::default(),
            base: None,
            filter: None,
            ports: None,
            ports_open: false,
            kept_ports: Vec::new(),
        })
    }
}

/// The level for `config` on a kernel with Landlock `abi`.
fn choose(config: &SandboxConfig, abi: Option<u32>) -> Result<Level, SandboxError> {
    let landlock_fits = |abi: u32| config.network == Network::Allow || abi >= 4;
    Ok(match config.mode {
        SandboxMode::None => Level::None,
        SandboxMode::Landlock => match abi {
            None => return Err(SandboxError::NoLandlock),
            Some(abi) if !landlock_fits(abi) => return Err(SandboxError::NetworkNeedsAbi4 { abi }),
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
    })
}

/// Whether the protected ports' Landlock ruleset can be enforced at `level`:
/// Landlock ABI ≥ 4; under bwrap only when it is not setuid (the ruleset
/// needs `no_new_privs`, which a setuid bwrap cannot run under).
fn can_stack_ports(level: &Level, abi: Option<u32>) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let abi4 = abi.is_some_and(|abi| abi >= 4);
    match level {
        Level::Landlock { .. } => abi4,
        Level::Bwrap { program } => {
            abi4 && std::fs::metadata(program).is_ok_and(|m| m.permissions().mode() & 0o4000 == 0)
        }
        Level::None => false,
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
