//! The packaging files say what the Operations chapter (docs/src/operations.md) promises (no Docker daemon is
//! assumed here; the image is built where one runs): a multi-stage build into
//! a small runtime image as a non-root user, `DATA_DIR` a volume, a health
//! check on `/healthz`; a compose file with PostgreSQL, two replicas and a
//! webhook proxy; a hardened systemd unit; a lean release profile.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel))
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn the_dockerfile_builds_in_stages_and_runs_as_a_user_with_a_health_check() {
    let d = read("Dockerfile");
    let stages: Vec<&str> = d.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(stages.len(), 2, "{stages:?}");
    assert!(
        stages[1].contains("slim"),
        "small runtime image: {}",
        stages[1]
    );
    // Every workspace member's sources reach the build stage.
    for dir in ["adapters", "src", "migrations"] {
        assert!(d.contains(&format!("COPY {dir} {dir}")), "{dir} not copied");
    }
    assert!(d.contains("cargo build --release --locked --bin switchboard"));
    let user = d
        .lines()
        .position(|l| l.starts_with("USER switchboard"))
        .expect("USER");
    let entry = d
        .lines()
        .position(|l| l.starts_with("ENTRYPOINT"))
        .expect("ENTRYPOINT");
    assert!(user < entry, "the entrypoint runs as the user");
    assert!(d.contains("VOLUME [\"/data\"]") && d.contains("DATA_DIR=/data"));
    assert!(d.contains("HEALTHCHECK") && d.contains("/healthz"));
    let ignore = read(".dockerignore");
    for never in ["target", ".env", ".git"] {
        assert!(
            ignore.lines().any(|l| l == never),
            "{never} must not reach the image"
        );
    }
}

#[test]
fn compose_runs_two_replicas_on_postgres_behind_a_proxy() {
    let c = read("deploy/compose.yaml");
    assert!(c.contains("image: postgres:"));
    assert!(c.contains("DATABASE_URL: postgres://"));
    assert!(c.contains("replicas: 2"));
    assert!(c.contains("reverse-proxy") && c.contains("TELEGRAM_WEBHOOK_LISTEN"));
}

#[test]
fn the_systemd_unit_is_hardened_and_the_release_binary_lean() {
    let u = read("deploy/switchboard.service");
    for opt in [
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "ProtectHome=yes",
        "PrivateTmp=yes",
        "CapabilityBoundingSet=",
        "User=switchboard",
        "StateDirectory=switchboard",
        // The secrets: a root-owned file systemd copies for the service,
        // read from the credentials directory (which the sandbox denies).
        "LoadCredential=env:/etc/switchboard/env",
        "ExecStart=/usr/local/bin/switchboard --env-file ${CREDENTIALS_DIRECTORY}/env run",
    ] {
        assert!(u.lines().any(|l| l == opt), "{opt} missing");
    }
    assert!(u.contains("install -Dm600 -o root -g root .env /etc/switchboard/env"));
    assert!(!u.contains("EnvironmentFile="), "{u}");
    let cargo = read("Cargo.toml");
    let release = cargo.split("[profile.release]").nth(1).unwrap();
    let release = release.split("\n[").next().unwrap();
    for line in [
        "opt-level = \"z\"",
        "lto = \"fat\"",
        "codegen-units = 1",
        "strip = \"symbols\"",
        "panic = \"unwind\"",
    ] {
        assert!(
            release.lines().any(|l| l == line),
            "{line} missing: {release}"
        );
    }
}
