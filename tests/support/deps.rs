//! The MCP test servers, provisioned by the tests themselves: the Node
//! packages pinned in `tests/mcp/package-lock.json` (`npm ci`) and a Python
//! venv with `tests/mcp/requirements.txt`, installed once per checkout into
//! `target/test-deps/mcp` (or `$SWITCHBOARD_TEST_DEPS_DIR/mcp`), under a lock
//! file so that test binaries running in parallel install once. A stamp per
//! part (the pinned list and the interpreter's version) makes a changed pin
//! reinstall that part. Only std: benches include this file on its own.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The sources: the pinned lists and the servers' scripts.
fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp")
}

/// Where the installed servers live: `$SWITCHBOARD_TEST_DEPS_DIR/mcp`, else
/// `target/test-deps/mcp` of this build's target directory.
fn install_dir() -> PathBuf {
    let root = std::env::var_os("SWITCHBOARD_TEST_DEPS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
            tmp.parent().unwrap_or(tmp).join("test-deps")
        });
    root.join("mcp")
}

/// The installed MCP test servers.
#[derive(Debug)]
pub struct McpDeps {
    dir: PathBuf,
}

impl McpDeps {
    /// The directory holding `node_modules`, the venv and the Node scripts
    /// (copied beside `node_modules`, where their imports resolve).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The entry point of `@modelcontextprotocol/server-everything`.
    pub fn everything(&self) -> PathBuf {
        self.node_module("@modelcontextprotocol/server-everything/dist/index.js")
    }

    /// A file inside `node_modules`.
    pub fn node_module(&self, path: &str) -> PathBuf {
        self.dir.join("node_modules").join(path)
    }

    /// A Node script of `tests/mcp` (e.g. `misbehaving.mjs`), as installed.
    pub fn node_script(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The venv's interpreter, with the Python MCP SDK.
    pub fn python(&self) -> PathBuf {
        self.dir.join(".venv/bin/python")
    }

    /// A Python script of `tests/mcp` (run by [`McpDeps::python`]).
    pub fn python_script(&self, name: &str) -> PathBuf {
        sources().join(name)
    }
}

/// The MCP test servers, installed on first use in this process (and at most
/// once across processes); a failure fails the test, saying what to do.
pub fn mcp() -> &'static McpDeps {
    static DEPS: OnceLock<Result<McpDeps, String>> = OnceLock::new();
    match DEPS.get_or_init(|| provision(&install_dir())) {
        Ok(deps) => deps,
        Err(why) => panic!("the MCP test servers could not be provisioned: {why}"),
    }
}

/// Installs what is missing or stale in `dir`, holding `dir/.lock`.
fn provision(dir: &Path) -> Result<McpDeps, String> {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let lock = File::create(dir.join(".lock"))
        .map_err(|e| format!("cannot create {}/.lock: {e}", dir.display()))?;
    lock.lock()
        .map_err(|e| format!("cannot lock {}/.lock: {e}", dir.display()))?;
    node(dir)?;
    python(dir)?;
    copy_scripts(dir).map_err(|e| format!("cannot copy the Node scripts: {e}"))?;
    Ok(McpDeps {
        dir: dir.to_path_buf(),
    })
}

/// `npm ci` from the pinned lock file, unless the stamp says it is done.
fn node(dir: &Path) -> Result<(), String> {
    let lock = read(&sources().join("package-lock.json"))?;
    let stamp = format!("{}\n{lock}", version("node")?);
    let stamp_file = dir.join("node_modules/.switchboard-stamp");
    if fs::read_to_string(&stamp_file).ok().as_deref() == Some(stamp.as_str()) {
        return Ok(());
    }
    for file in ["package.json", "package-lock.json"] {
        fs::copy(sources().join(file), dir.join(file))
            .map_err(|e| format!("cannot copy {file}: {e}"))?;
    }
    eprintln!(
        "installing the MCP test servers (npm ci) into {}",
        dir.display()
    );
    run(
        Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--prefix"])
            .arg(dir),
        "npm ci",
        "is the npm registry reachable from here? (a mirror: set npm_config_registry)",
    )?;
    fs::write(&stamp_file, stamp).map_err(|e| format!("cannot write the stamp: {e}"))
}

/// A venv with the pinned requirements, unless the stamp says it is done.
fn python(dir: &Path) -> Result<(), String> {
    let requirements = sources().join("requirements.txt");
    let stamp = format!("{}\n{}", version("python3")?, read(&requirements)?);
    let venv = dir.join(".venv");
    let stamp_file = venv.join(".switchboard-stamp");
    if fs::read_to_string(&stamp_file).ok().as_deref() == Some(stamp.as_str()) {
        return Ok(());
    }
    eprintln!(
        "installing the Python MCP SDK (venv, pip) into {}",
        venv.display()
    );
    if venv.exists() {
        fs::remove_dir_all(&venv).map_err(|e| format!("cannot remove the old venv: {e}"))?;
    }
    run(
        Command::new("python3").args(["-m", "venv"]).arg(&venv),
        "python3 -m venv",
        "does this Python have venv? (Debian: apt-get install python3-venv)",
    )?;
    run(
        Command::new(venv.join("bin/pip"))
            .args([
                "install",
                "-q",
                "--disable-pip-version-check",
                "--retries",
                "2",
                "-r",
            ])
            .arg(&requirements),
        "pip install",
        "is PyPI reachable from here? (a mirror: set PIP_INDEX_URL)",
    )?;
    fs::write(&stamp_file, stamp).map_err(|e| format!("cannot write the stamp: {e}"))
}

/// Copies the Node scripts of `tests/mcp` beside `node_modules` (their
/// imports resolve from where they are), replacing a copy only when it
/// differs, by rename, so that a server another process runs is never read
/// half-written.
fn copy_scripts(dir: &Path) -> io::Result<()> {
    for entry in fs::read_dir(sources())? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "mjs") {
            continue;
        }
        let Some(name) = path.file_name() else {
            continue;
        };
        let source = fs::read(&path)?;
        let target = dir.join(name);
        if fs::read(&target).ok().as_deref() == Some(source.as_slice()) {
            continue;
        }
        let partial = dir.join(format!(".{}.partial", name.to_string_lossy()));
        fs::write(&partial, &source)?;
        fs::rename(&partial, &target)?;
    }
    Ok(())
}

fn read(path: &Path) -> Result<String, String> {
    fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// `program --version`: that the program is there, and what a stamp records.
fn version(program: &str) -> Result<String, String> {
    let out = Command::new(program)
        .arg("--version")
        .output()
        .map_err(|e| {
            format!(
                "`{program}` is not runnable ({e}): the MCP tests need Node 20 with npm and \
             Python 3 with venv on PATH"
            )
        })?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Runs `command`; on failure the error names it, adds `hint` and the end of
/// its output.
fn run(command: &mut Command, what: &str, hint: &str) -> Result<(), String> {
    let out = command
        .output()
        .map_err(|e| format!("`{what}` did not start ({e}); {hint}"))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr) + String::from_utf8_lossy(&out.stdout);
    let tail: Vec<&str> = text.lines().rev().take(15).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    Err(format!(
        "`{what}` failed ({}); {hint}\n{}",
        out.status,
        tail.join("\n")
    ))
}
