//! The Landlock ruleset of a command, prepared in the gateway before `fork`:
//! read and execute on the system directories, read on the allowed entries
//! of `/etc` (see `etc`) and on `/proc` without any process's directory,
//! read-write on the workspace and the command's temp dir, nothing else — and
//! within all of those never the protected paths; TCP connect and bind denied
//! when the network is off.

use super::protect::{allowed_parts, Denied};
use super::Network;
use landlock::{
    Access, AccessFs, AccessNet, BitFlags, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, RulesetError, Scope, ABI,
};
use std::path::{Path, PathBuf};

/// The newest ABI this code asks for; older kernels enforce what they know
/// (the start-up check refuses what would matter, e.g. network rules before 4).
pub(super) const ABI_USED: ABI = ABI::V7;

/// Programs and libraries: read and execute.
const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];
/// Devices a shell needs, read and write.
const DEVICES_RW: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];
/// Devices read only.
const DEVICES_RO: &[&str] = &["/dev/urandom", "/dev/random"];

/// The rules every command shares, resolved once at start: directories,
/// devices and `/proc` are opened then (they stay the same inode), files of
/// `/etc` are reopened per command (`/etc/resolv.conf` and friends are
/// replaced by rename, and Landlock rules follow the inode). Entries added
/// later count after a restart.
pub(super) struct Base {
    fixed: Vec<(PathFd, BitFlags<AccessFs>)>,
    files: Vec<(PathBuf, BitFlags<AccessFs>)>,
}

impl std::fmt::Debug for Base {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Base")
            .field("fixed", &self.fixed.len())
            .field("files", &self.files)
            .finish()
    }
}

impl Base {
    pub(super) fn new(denied: &Denied) -> Base {
        let read_exec = AccessFs::from_read(ABI_USED);
        let read = AccessFs::ReadFile | AccessFs::ReadDir;
        let device_rw = read | AccessFs::WriteFile | AccessFs::Truncate;
        let mut base = Base {
            fixed: Vec::new(),
            files: Vec::new(),
        };
        for root in SYSTEM {
            for part in allowed_parts(Path::new(root), denied) {
                base.fix(&part, read_exec);
            }
        }
        for entry in super::etc::entries() {
            // An allowed entry may be a link (`resolv.conf` into /run,
            // `localtime` into /usr/share): what it leads to is allowed,
            // unless that is denied (`mtab` into /proc/<pid>).
            let Ok(target) = std::fs::canonicalize(&entry) else {
                continue;
            };
            if denied.covers(&target) {
                continue;
            }
            for part in allowed_parts(&target, denied) {
                if part.is_dir() {
                    base.fix(&part, read);
                } else {
                    base.files
                        .push((part, read & AccessFs::from_file(ABI_USED)));
                }
            }
        }
        for part in allowed_parts(Path::new("/proc"), denied) {
            base.fix(&part, read);
        }
        for (devices, access) in [(DEVICES_RW, device_rw), (DEVICES_RO, read)] {
            for device in devices {
                base.fix(Path::new(device), access);
            }
        }
        base
    }

    /// Opens `path` now; paths this system lacks (/lib32, /dev/tty in a
    /// container) are skipped.
    fn fix(&mut self, path: &Path, access: BitFlags<AccessFs>) {
        let Ok(meta) = std::fs::metadata(path) else {
            return;
        };
        let access = if meta.is_dir() {
            access
        } else {
            access & AccessFs::from_file(ABI_USED)
        };
        if let Ok(fd) = PathFd::new(path) {
            self.fixed.push((fd, access));
        }
    }
}

/// The ruleset for one command: `base`, plus `readable` (read and execute)
/// and `writable` (everything), each without the denied paths inside it.
pub(super) fn ruleset(
    base: &Base,
    network: Network,
    writable: &[&Path],
    readable: &[PathBuf],
    denied: &Denied,
) -> Result<RulesetCreated, RulesetError> {
    let all = AccessFs::from_all(ABI_USED);
    let mut ruleset = Ruleset::default()
        .handle_access(all)?
        .scope(Scope::AbstractUnixSocket | Scope::Signal)?;
    if network == Network::None {
        ruleset = ruleset.handle_access(AccessNet::ConnectTcp | AccessNet::BindTcp)?;
    }
    let mut rs = ruleset.create()?;
    for (fd, access) in &base.fixed {
        (&mut rs).add_rule(PathBeneath::new(fd, *access))?;
    }
    for (path, access) in &base.files {
        if let Ok(fd) = PathFd::new(path) {
            (&mut rs).add_rule(PathBeneath::new(fd, *access))?;
        }
    }
    let extra = readable
        .iter()
        .map(|p| (p.as_path(), AccessFs::from_read(ABI_USED)))
        .chain(writable.iter().map(|p| (*p, all)));
    for (root, access) in extra {
        for part in allowed_parts(root, denied) {
            let Ok(fd) = PathFd::new(&part) else { continue };
            let access = if std::fs::metadata(&part).is_ok_and(|m| m.is_dir()) {
                access
            } else {
                access & AccessFs::from_file(ABI_USED)
            };
            (&mut rs).add_rule(PathBeneath::new(fd, access))?;
        }
    }
    Ok(rs)
}
