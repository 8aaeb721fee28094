//! Starting a stdio MCP server confined like an approved command: under the
//! exec sandbox (`EXEC_SANDBOX`; its network per server), writing only in its
//! own directory `DATA_DIR/mcp/<name>`, reading the system directories, the
//! install locations of its program and scripts (a venv, `node_modules`) and
//! the paths the operator listed, with a cleared environment: `PATH`, `HOME`
//! (its own directory), `TMPDIR` and the entry's own `env`.

use super::config::McpServerDef;
use crate::store::Store;
use crate::tools::{Sandbox, SandboxConfig, SandboxError};
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// What every MCP server is started with.
#[derive(Clone, Debug, Default)]
pub struct McpContext {
    /// The exec sandbox's settings (`EXEC_SANDBOX`, limits); the network is
    /// each server's own (`"network"`, allowed by default).
    pub sandbox: SandboxConfig,
    /// `DATA_DIR`: a stdio server writes in `DATA_DIR/mcp/<name>`, and
    /// nothing of `DATA_DIR` outside it is made readable.
    pub data_dir: PathBuf,
    /// Where changes of a tool's annotations are audited (none: logged only).
    pub store: Option<Store>,
}

/// The directory a stdio server may write in (and starts in).
pub fn server_dir(data_dir: &Path, name: &str) -> PathBuf {
    data_dir.join("mcp").join(super::names::sanitize(name))
}

/// A confined stdio server, ready for its pipes.
pub(super) struct Launch {
    pub command: tokio::process::Command,
    /// The sandbox's hold on its private temp dir, kept while the server runs.
    pub confined: Box<dyn std::any::Any + Send>,
}

/// The command for `def` (a stdio server): `Err` when its directory or
/// sandbox cannot be set up.
pub(super) fn command(
    def: &McpServerDef,
    ctx: &McpContext,
    program: &str,
    args: &[String],
    env: &[(String, String)],
    cwd: Option<&Path>,
    path: Option<&str>,
) -> Result<Launch, SandboxError> {
    let dir = server_dir(&ctx.data_dir, &def.name);
    std::fs::create_dir_all(&dir)
        .map_err(|e| SandboxError::Prepare(format!("cannot create {}: {e}", dir.display())))?;
    let dir = dir.canonicalize().unwrap_or(dir);
    let sandbox = Sandbox::detect(&SandboxConfig {
        network: def.network,
        ..ctx.sandbox.clone()
    })?;
    let readable = readable(
        program,
        args,
        cwd,
        path,
        &def.read,
        &ctx.data_dir,
        &def.name,
    );
    let args_os: Vec<OsString> = args.iter().map(OsString::from).collect();
    let mut confined = sandbox.command(&OsString::from(program), &args_os, &dir, &readable)?;
    let tmpdir = confined.tmpdir.clone().unwrap_or_else(|| dir.clone());
    let mut command =
        std::mem::replace(&mut confined.command, tokio::process::Command::new(program));
    command
        .env_clear()
        .envs(path.iter().map(|p| ("PATH", *p)))
        .env("HOME", &dir)
        .env("TMPDIR", &tmpdir)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd.unwrap_or(&dir));
    Ok(Launch {
        command,
        confined: Box::new(confined),
    })
}

/// What a server may read besides the system: its program's install root
/// (and that of the file it links to), each existing path argument's root
/// (the outermost `node_modules`' parent, else the script's directory), the
/// configured `cwd` and `read` paths; never `DATA_DIR` or a directory
/// holding it (other than the server's own directory).
fn readable(
    program: &str,
    args: &[String],
    cwd: Option<&Path>,
    path: Option<&str>,
    read: &[PathBuf],
    data_dir: &Path,
    name: &str,
) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    if let Some(found) = resolve(program, path, cwd) {
        out.push(install_root(&found));
        if let Ok(real) = found.canonicalize() {
            out.push(install_root(&real));
        }
    }
    for arg in args {
        let p = Path::new(arg);
        let p = match cwd {
            Some(c) if p.is_relative() => c.join(p),
            _ => p.to_path_buf(),
        };
        if !(p.is_absolute() && p.exists()) {
            continue;
        }
        out.push(if p.is_dir() {
            p.clone()
        } else {
            script_root(&p)
        });
        if let Ok(real) = p.canonicalize() {
            out.push(if real.is_dir() {
                real.clone()
            } else {
                script_root(&real)
            });
        }
    }
    out.extend(cwd.map(Path::to_path_buf));
    out.extend(read.iter().cloned());
    let data = data_dir
        .canonicalize()
        .unwrap_or_else(|_| data_dir.to_path_buf());
    out.retain(|p| {
        let p = p.canonicalize().unwrap_or_else(|_| p.clone());
        let holds_data = data.starts_with(&p);
        if holds_data {
            tracing::warn!(server = %name, path = %p.display(), "an MCP server's path holds DATA_DIR: not made readable (move the server's files out of it)");
        }
        !holds_data && p.components().count() > 1
    });
    out.sort();
    out.dedup();
    out
}

/// `program` as the child's `PATH` finds it (or as a path).
fn resolve(program: &str, path: Option<&str>, cwd: Option<&Path>) -> Option<PathBuf> {
    let p = Path::new(program);
    if p.components().count() > 1 {
        let p = match cwd {
            Some(c) if p.is_relative() => c.join(p),
            _ => p.to_path_buf(),
        };
        return p.is_file().then_some(p);
    }
    std::env::split_paths(path?)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// The prefix a program is installed under: `/opt/x` for `/opt/x/bin/prog`
/// (a venv, a Node or Python install), else the program's directory; a
/// prefix too near the root (`/`, `/root`) is not used.
fn install_root(program: &Path) -> PathBuf {
    let dir = program.parent().unwrap_or(program);
    match dir.parent() {
        Some(prefix)
            if dir.file_name().is_some_and(|n| n == "bin") && normal_parts(prefix) >= 2 =>
        {
            prefix.to_path_buf()
        }
        _ => dir.to_path_buf(),
    }
}

/// Where a script's imports resolve: above its outermost `node_modules`
/// (Node looks for packages in every parent), else its own directory.
fn script_root(script: &Path) -> PathBuf {
    let outermost = script
        .ancestors()
        .filter(|a| a.file_name().is_some_and(|n| n == "node_modules"))
        .last();
    match outermost.and_then(Path::parent) {
        Some(project) if normal_parts(project) >= 2 => project.to_path_buf(),
        _ => script.parent().unwrap_or(script).to_path_buf(),
    }
}

fn normal_parts(p: &Path) -> usize {
    p.components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_cover_installs_and_packages_but_never_the_whole_disk() {
        assert_eq!(
            install_root(Path::new("/opt/venv/bin/python")),
            PathBuf::from("/opt/venv")
        );
        assert_eq!(install_root(Path::new("/bin/node")), PathBuf::from("/bin"));
        assert_eq!(
            install_root(Path::new("/root/bin/x")),
            PathBuf::from("/root/bin")
        );
        assert_eq!(
            script_root(Path::new(
                "/srv/m/node_modules/@s/x/node_modules/y/dist/i.js"
            )),
            PathBuf::from("/srv/m")
        );
        assert_eq!(
            script_root(Path::new("/srv/m/server.py")),
            PathBuf::from("/srv/m")
        );
        assert_eq!(
            script_root(Path::new("/node_modules/x/i.js")),
            PathBuf::from("/node_modules/x")
        );
    }

    #[test]
    fn data_dir_and_its_parents_are_never_readable() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let data = tmp.path().join("data");
        std::fs::create_dir_all(&data).unwrap_or_else(|e| panic!("{e}"));
        let script = tmp.path().join("server.py");
        std::fs::write(&script, "").unwrap_or_else(|e| panic!("{e}"));
        let args = vec![script.display().to_string()];
        let got = readable(
            "python3",
            &args,
            None,
            None,
            std::slice::from_ref(&data),
            &data,
            "s",
        );
        assert!(got.is_empty(), "{got:?}");
    }
}
