//! The reader process's side (`switchboard extract-document PATH`): it
//! confines itself — Landlock lets it read that one file and nothing else,
//! connect and bind nowhere, signal no other process; a seccomp filter
//! refuses new processes, programs and sockets — then reads the PDF on a
//! thread with a large stack and writes one header line (`ok 0`, `ok 1` when
//! the text was cut, or `refused <code>` with exit status 2), then the text.

use super::REFUSED_EXIT;
use crate::media::document::Text;
use crate::media::pdf::{self, Limits, Refusal};
use landlock::{
    Access, AccessFs, AccessNet, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr,
    Scope, ABI,
};
use seccompiler::{SeccompAction, SeccompFilter, SeccompRule, TargetArch};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// The header of a reader that read the document.
pub(super) const OK: &str = "ok";
/// The header of a reader that refused it.
pub(super) const REFUSED: &str = "refused";
/// The parsing thread's stack: the nesting limit keeps recursion far below it.
pub(crate) const STACK: usize = 64 << 20;

/// The reader process's own limits, set on itself before it opens the
/// document (`RLIMIT_AS`, `RLIMIT_CPU`, no file written, few descriptors)
/// with every capability dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessLimits {
    /// Address space, bytes.
    pub memory: u64,
    /// CPU time, seconds.
    pub cpu_secs: u64,
}

impl ProcessLimits {
    /// Applies the limits (each soft and hard, never above the hard limit
    /// this process started with) and drops every capability.
    fn apply(&self) -> std::io::Result<()> {
        use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
        for (resource, value) in [
            (Resource::As, self.memory),
            (Resource::Cpu, self.cpu_secs),
            (Resource::Fsize, 0),
            (Resource::Nofile, 32),
        ] {
            let value = getrlimit(resource).maximum.map_or(value, |h| h.min(value));
            setrlimit(
                resource,
                Rlimit {
                    current: Some(value),
                    maximum: Some(value),
                },
            )?;
        }
        let none = rustix::thread::CapabilitySet::empty();
        rustix::thread::set_capabilities(
            None,
            rustix::thread::CapabilitySets {
                effective: none,
                permitted: none,
                inheritable: none,
            },
        )?;
        Ok(())
    }
}

/// Reads the PDF at `path` within `limits` and reports on stdout; the
/// process first confines itself to `process` (a failure to is a refusal
/// to read: the document is never opened unconfined).
pub fn serve(path: &Path, limits: &Limits, process: ProcessLimits) -> ExitCode {
    if let Err(e) = process.apply() {
        eprintln!("limits: {e}");
        return report(Err(Refusal::Unreadable));
    }
    if let Err(e) = rustix::thread::set_no_new_privs(true) {
        eprintln!("no_new_privs: {e}");
    }
    if let Err(e) = landlock(path) {
        // Best effort: a kernel without Landlock still has the other limits.
        eprintln!("landlock: {e}");
    }
    let (path, limits) = (path.to_owned(), *limits);
    let worker = std::thread::Builder::new()
        .name("extract".into())
        .stack_size(STACK)
        .spawn(move || {
            if let Err(e) = seccomp() {
                eprintln!("seccomp: {e}");
            }
            std::panic::catch_unwind(|| pdf::extract(&path, &limits))
                .unwrap_or(Err(Refusal::Unreadable))
        });
    let result = match worker {
        Ok(worker) => worker.join().unwrap_or(Err(Refusal::Unreadable)),
        Err(e) => {
            eprintln!("could not start the reading thread: {e}");
            Err(Refusal::Unreadable)
        }
    };
    report(result)
}

fn report(result: Result<Text, Refusal>) -> ExitCode {
    let mut out = std::io::stdout().lock();
    let (written, code) = match result {
        Ok(text) => (
            write!(out, "{OK} {}\n{}", u8::from(text.cut), text.text),
            ExitCode::SUCCESS,
        ),
        Err(refusal) => (
            writeln!(out, "{REFUSED} {}", refusal.code()),
            ExitCode::from(REFUSED_EXIT),
        ),
    };
    match written.and_then(|()| out.flush()) {
        Ok(()) => code,
        Err(_) => ExitCode::FAILURE,
    }
}

/// This process (and the thread it starts next) may read `path` and no
/// other file, use no TCP, and reach no socket or process outside itself.
fn landlock(path: &Path) -> Result<(), String> {
    let abi = ABI::V7;
    let file = PathFd::new(path).map_err(|e| e.to_string())?;
    ruleset(abi, file).map_err(|e| e.to_string())
}

fn ruleset(abi: ABI, file: PathFd) -> Result<(), landlock::RulesetError> {
    Ruleset::default()
        .handle_access(AccessFs::from_all(abi))?
        .handle_access(AccessNet::from_all(abi))?
        .scope(Scope::from_all(abi))?
        .create()?
        .add_rule(PathBeneath::new(file, AccessFs::ReadFile))?
        .restrict_self()?;
    Ok(())
}

/// Refuses (`EPERM`), in every thread, the calls a parser never makes: new
/// processes and threads, running programs, sockets, `io_uring`, and
/// reaching into other processes.
fn seccomp() -> Result<(), String> {
    const X32_BIT: i64 = 0x4000_0000;
    let refused = [
        libc::SYS_clone,
        libc::SYS_clone3,
        libc::SYS_execve,
        libc::SYS_execveat,
        libc::SYS_socket,
        libc::SYS_socketpair,
        libc::SYS_connect,
        libc::SYS_bind,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
    ];
    #[cfg(target_arch = "x86_64")]
    let refused = refused
        .iter()
        .copied()
        .chain([libc::SYS_fork, libc::SYS_vfork])
        .collect::<Vec<_>>();
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        refused.iter().map(|nr| (*nr, Vec::new())).collect();
    if cfg!(target_arch = "x86_64") {
        // The x32 numbers of the same calls.
        let x32: Vec<i64> = rules.keys().map(|nr| nr | X32_BIT).collect();
        rules.extend(x32.into_iter().map(|nr| (nr, Vec::new())));
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM.unsigned_abs()),
        arch,
    )
    .map_err(|e| e.to_string())?;
    let program: seccompiler::BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    seccompiler::apply_filter_all_threads(&program).map_err(|e| e.to_string())
}
