//! Release binaries on Linux link with packed relative relocations
//! (`-z pack-relative-relocs`, DT_RELR) when this machine's linker and C
//! library take them: the position-independent binary's ~1.8 MB table of
//! relocations, read whole at every start, shrinks to a few kilobytes (file
//! size and resident memory; figures in docs/src/benchmarks.md). Probed by
//! linking and running an empty C program, so an older toolchain (binutils
//! before 2.38, glibc before 2.36) links as before.

use std::env;
use std::path::PathBuf;
use std::process::Command;

const FLAG: &str = "-Wl,-z,pack-relative-relocs";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let release = env::var("PROFILE").is_ok_and(|p| p == "release");
    let linux_gnu = env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux")
        && env::var("CARGO_CFG_TARGET_ENV").is_ok_and(|e| e == "gnu");
    let native = env::var("TARGET").ok() == env::var("HOST").ok();
    if release && linux_gnu && native && links_and_runs() {
        println!("cargo:rustc-link-arg-bins={FLAG}");
    }
}

/// Whether `cc` links a program with [`FLAG`] and the result runs here.
fn links_and_runs() -> bool {
    let Some(out) = env::var_os("OUT_DIR").map(PathBuf::from) else {
        return false;
    };
    let source = out.join("relr_probe.c");
    let program = out.join("relr_probe");
    if std::fs::write(&source, "int main(void) { return 0; }\n").is_err() {
        return false;
    }
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let linked = Command::new(cc)
        .args(["-pie", "-fPIE", FLAG, "-o"])
        .arg(&program)
        .arg(&source)
        .output()
        .is_ok_and(|o| o.status.success() && o.stderr.is_empty());
    linked && Command::new(&program).status().is_ok_and(|s| s.success())
}
