//! Static checks on a script proposed as a tool, and its hash. They catch
//! the obvious misuses before a person is asked — a program that only talks
//! to the network, a wrapper that runs whatever its input says — and are no
//! substitute for the card (which shows the hash) or for the exec sandbox
//! every script runs in.

use crate::workspace::beneath::{Dir, How};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Largest script accepted (a tool is a reviewable script, not a program).
pub(crate) const MAX_SCRIPT_BYTES: u64 = 256 * 1024;

/// Interpreters that only move data over the network.
const NETWORK_ONLY: &[&str] = &[
    "curl", "wget", "nc", "ncat", "netcat", "socat", "ssh", "scp", "sftp", "telnet", "ftp", "rsync",
];

/// Lines that hand the script's input (or arguments) to an interpreter as
/// code: the script would be a shell, not a tool.
const RUNS_INPUT: &[&str] = &[
    "eval ",
    "eval\t",
    "eval(",
    "exec(",
    "sh -c",
    "bash -c",
    "zsh -c",
    "dash -c",
    "python -c",
    "python3 -c",
    "perl -e",
    "ruby -e",
    "node -e",
    "| sh",
    "|sh",
    "| bash",
    "|bash",
    "source /dev/stdin",
    ". /dev/stdin",
    "os.system(",
    "shell=true",
    "exec \"$@\"",
    "\"$@\"",
    "$(cat)",
];

/// The script at `path` (inside the workspace `base`): its SHA-256 (hex)
/// and text, after the checks; `Err` says which failed.
pub(crate) fn inspect(base: &Path, path: &Path) -> Result<(String, String), String> {
    let bytes = read(base, path)?;
    check_text(&bytes)?;
    let hash = sha256(&bytes);
    Ok((hash, String::from_utf8_lossy(&bytes).into_owned()))
}

/// The script's SHA-256 (hex) as it is now.
pub(crate) fn current_hash(base: &Path, path: &Path) -> Result<String, String> {
    read(base, path).map(|b| sha256(&b))
}

fn sha256(bytes: &[u8]) -> String {
    crate::hex::encode(&Sha256::digest(bytes))
}

/// The script's bytes, opened from the workspace root down without
/// following a link (what is hashed and shown is the file checked, never a
/// link swapped in meanwhile) and checked on the open file.
fn read(base: &Path, path: &Path) -> Result<Vec<u8>, String> {
    let rel = path
        .strip_prefix(base)
        .map_err(|_| "it is outside the workspace".to_owned())?;
    let file = Dir::open(base)
        .map_err(|e| format!("cannot read it: {e}"))
        .and_then(|d| {
            d.open_file(rel, How::Read, false)
                .map_err(|e| format!("cannot read it: {e}"))
        })?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read it: {e}"))?;
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err("it is not executable (chmod +x it)".into());
    }
    if meta.len() > MAX_SCRIPT_BYTES {
        return Err(format!(
            "it is larger than {} KiB; a tool is a short script",
            MAX_SCRIPT_BYTES / 1024
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_SCRIPT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > MAX_SCRIPT_BYTES {
        return Err("it grew while it was read".into());
    }
    Ok(bytes)
}

fn check_text(bytes: &[u8]) -> Result<(), String> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| "it is not a text script (a program cannot be reviewed on a card)")?;
    let mut lines = text.lines();
    let shebang = lines
        .next()
        .and_then(|l| l.strip_prefix("#!"))
        .ok_or("it has no `#!` line naming its interpreter")?;
    let interpreter = interpreter(shebang).ok_or("its `#!` line names no interpreter")?;
    if NETWORK_ONLY.contains(&interpreter.as_str()) {
        return Err(format!(
            "its interpreter `{interpreter}` only talks to the network"
        ));
    }
    for (i, line) in lines.enumerate() {
        let code = line.split_once('#').map_or(line, |(code, _)| code);
        let lower = code.to_ascii_lowercase();
        if let Some(hit) = RUNS_INPUT.iter().find(|p| lower.contains(*p)) {
            return Err(format!(
                "line {} runs text as code (`{}`); a tool must do one fixed job",
                i + 2,
                hit.trim()
            ));
        }
    }
    Ok(())
}

/// The program a `#!` line runs: its file name, through `env [-S]`.
pub(super) fn interpreter(shebang: &str) -> Option<String> {
    let mut words = shebang.split_whitespace();
    let first = words.next()?;
    let name = |w: &str| w.rsplit('/').next().unwrap_or(w).to_owned();
    if name(first) == "env" {
        return words.find(|w| !w.starts_with('-')).map(name);
    }
    Some(name(first))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(body: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        (dir, path)
    }

    #[test]
    fn a_plain_script_passes_and_is_hashed() {
        let (d, p) = script("#!/bin/sh\n# counts lines\nwc -l notes.txt\n");
        let (hash, text) = inspect(d.path(), &p).unwrap();
        assert_eq!(hash.len(), 64);
        assert!(text.starts_with("#!/bin/sh\n# counts lines"), "{text}");
        assert_eq!(current_hash(d.path(), &p).unwrap(), hash);
        std::fs::write(&p, "#!/bin/sh\nwc -w notes.txt\n").unwrap();
        assert_ne!(current_hash(d.path(), &p).unwrap(), hash);
        // A link swapped in for the script is not followed.
        let other = d.path().join("other");
        std::fs::rename(&p, &other).unwrap();
        std::os::unix::fs::symlink(&other, &p).unwrap();
        assert!(current_hash(d.path(), &p)
            .unwrap_err()
            .contains("symbolic link"));
        assert!(inspect(Path::new("/nowhere"), &other).is_err());
    }

    #[test]
    fn wrappers_network_programs_and_binaries_are_refused() {
        for (body, why) in [
            ("#!/bin/sh\neval \"$(cat)\"\n", "runs text as code"),
            ("#!/bin/sh\njq -r .cmd | sh\n", "runs text as code"),
            (
                "#!/usr/bin/env python3\nimport os\nos.system(input())\n",
                "runs text as code",
            ),
            ("#!/bin/bash\nexec \"$@\"\n", "runs text as code"),
            ("#!/usr/bin/curl -K\nurl = x\n", "only talks to the network"),
            ("#!/usr/bin/env -S wget -i\n", "only talks to the network"),
            ("echo no shebang\n", "no `#!` line"),
        ] {
            let (d, p) = script(body);
            let e = inspect(d.path(), &p).unwrap_err();
            assert!(e.contains(why), "{body:?}: {e}");
        }
        let (d, p) = script("");
        std::fs::write(&p, [0x7f, b'E', b'L', b'F', 0xff, 0xfe, 0]).unwrap();
        assert!(inspect(d.path(), &p)
            .unwrap_err()
            .contains("not a text script"));
        let (d, p) = script("#!/bin/sh\necho hi\n");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(inspect(d.path(), &p)
            .unwrap_err()
            .contains("not executable"));
    }
}
