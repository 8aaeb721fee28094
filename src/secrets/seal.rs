//! Keeping secrets out of reach of the programs the agent runs: out of the
//! environment, and (on Linux) out of `/proc/<pid>/environ` and `/proc/<pid>/mem`.

/// What [`seal_process`] did, for a log line at start.
#[derive(Debug, Clone, Default)]
pub struct SealReport {
    /// Names of the variables removed from the environment.
    pub removed: Vec<String>,
    /// Whether the process is now non-dumpable (Linux only).
    pub non_dumpable: bool,
    /// Why it could not be made non-dumpable, if it could not.
    pub problem: Option<String>,
}

/// Registers `secrets` (the configuration's, see `Config::secret_values`) and
/// those of the environment, removes every
/// variable holding one from the environment, and marks the process
/// non-dumpable.
///
/// Call it once the configuration is read and **before any other thread
/// starts** (the tokio runtime included): changing the environment while
/// another thread reads it is undefined behaviour in libc.
///
/// Removing the variables is not enough on its own: `/proc/<pid>/environ`
/// shows the environment the process *started* with, whatever it changed
/// since. A non-dumpable process's `/proc/<pid>/environ` and `mem` are
/// readable only by root (with `CAP_SYS_PTRACE`), so a program running under
/// the gateway's own non-root user cannot read them. A gateway running as
/// root gives no such protection to children that also run as root.
pub fn seal_process(secrets: Vec<String>) -> SealReport {
    super::register(secrets);
    let vars: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    super::register(super::from_vars(vars));
    let known = super::current();
    let mut report = SealReport::default();
    for (name, value) in std::env::vars_os() {
        let Some(name_text) = name.to_str() else {
            continue;
        };
        // Proxy settings stay: HTTP clients read them when they are built,
        // and their passwords are scrubbed like any other.
        if name_text.to_ascii_uppercase().ends_with("_PROXY") {
            continue;
        }
        let holds_secret = super::is_secret_name(name_text)
            || value
                .to_str()
                .is_some_and(|v| matches!(known.scrub(v), std::borrow::Cow::Owned(_)));
        if holds_secret {
            report.removed.push(name_text.to_owned());
            std::env::remove_var(&name);
        }
    }
    match non_dumpable() {
        Ok(()) => report.non_dumpable = true,
        Err(problem) => report.problem = Some(problem),
    }
    report
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn non_dumpable() -> Result<(), String> {
    use rustix::process::{set_dumpable_behavior, DumpableBehavior};
    set_dumpable_behavior(DumpableBehavior::NotDumpable).map_err(|e| e.to_string())
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn non_dumpable() -> Result<(), String> {
    Err("not supported on this platform".to_owned())
}
