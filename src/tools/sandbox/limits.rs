//! Resource limits a confined command starts with (`setrlimit` in the child,
//! inherited by everything it starts).

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

/// Per-process resource limits of a command; each is both the soft and the
/// hard limit (never above the gateway's own hard limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// CPU time, seconds (`RLIMIT_CPU`).
    pub cpu_secs: u64,
    /// Virtual address space, bytes (`RLIMIT_AS`).
    pub address_space: u64,
    /// Open descriptors (`RLIMIT_NOFILE`).
    pub open_files: u64,
    /// Processes of the user (`RLIMIT_NPROC`; the kernel counts every process
    /// of the user id, and does not apply it to uid 0).
    pub processes: u64,
    /// Largest file a command may write, bytes (`RLIMIT_FSIZE`).
    pub file_size: u64,
}

impl Default for Limits {
    /// One hour of CPU, 8 GiB of address space, 1,024 descriptors, 512
    /// processes, 1 GiB files.
    fn default() -> Self {
        Limits {
            cpu_secs: 3600,
            address_space: 8 << 30,
            open_files: 1024,
            processes: 512,
            file_size: 1 << 30,
        }
    }
}

impl Limits {
    /// Applies the limits to the calling process. Only system calls: safe to
    /// call between fork and exec.
    pub(super) fn apply(&self) -> std::io::Result<()> {
        for (resource, value) in [
            (Resource::Cpu, self.cpu_secs),
            (Resource::As, self.address_space),
            (Resource::Nofile, self.open_files),
            (Resource::Nproc, self.processes),
            (Resource::Fsize, self.file_size),
        ] {
            let hard = getrlimit(resource).maximum;
            let value = hard.map_or(value, |h| h.min(value));
            setrlimit(
                resource,
                Rlimit {
                    current: Some(value),
                    maximum: Some(value),
                },
            )?;
        }
        Ok(())
    }
}
