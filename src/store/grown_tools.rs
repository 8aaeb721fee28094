//! Tools added from the chat: one row per tool, the manifest as its card
//! approved it. Every change is a new revision and an audit event.

use super::{dt, now, Store, StoreError};
use chrono::{DateTime, Utc};
use sqlx::Row;

/// What kind of tool a row declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrownKind {
    Http,
    Script,
}

impl GrownKind {
    pub fn as_str(self) -> &'static str {
        match self {
            GrownKind::Http => "http",
            GrownKind::Script => "script",
        }
    }

    fn parse(s: &str) -> Option<GrownKind> {
        match s {
            "http" => Some(GrownKind::Http),
            "script" => Some(GrownKind::Script),
            _ => None,
        }
    }
}

/// A tool added from the chat, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct GrownToolRow {
    pub name: String,
    pub kind: GrownKind,
    /// The manifest (JSON) the card showed.
    pub manifest: String,
    /// A script tool's approved script hash (hex SHA-256).
    pub script_sha256: Option<String>,
    /// `platform:user` of who asked for it.
    pub added_by: String,
    pub updated_at: DateTime<Utc>,
    pub revision: i64,
}

/// A change to the set, for the cache to notice across processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GrownStamp {
    pub count: i64,
    pub revisions: i64,
    pub latest: i64,
}

impl Store {
    /// Every tool added from the chat, by name.
    pub async fn grown_tools(&self) -> Result<Vec<GrownToolRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT name, kind, manifest, script_sha256, added_by, updated_at, revision
             FROM grown_tools ORDER BY name",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                let kind: String = r.try_get("kind")?;
                Ok(GrownToolRow {
                    name: r.try_get("name")?,
                    kind: GrownKind::parse(&kind)
                        .ok_or_else(|| StoreError::Corrupt(format!("grown tool kind {kind:?}")))?,
                    manifest: r.try_get("manifest")?,
                    script_sha256: r.try_get("script_sha256")?,
                    added_by: r.try_get("added_by")?,
                    updated_at: dt(r.try_get("updated_at")?),
                    revision: r.try_get("revision")?,
                })
            })
            .collect()
    }

    /// What changes whenever a tool is added, changed or removed.
    pub async fn grown_stamp(&self) -> Result<GrownStamp, StoreError> {
        let row = sqlx::query(
            "SELECT COUNT(*) AS n, CAST(COALESCE(SUM(revision), 0) AS BIGINT) AS revs, COALESCE(MAX(updated_at), 0) AS latest
             FROM grown_tools",
        )
        .fetch_one(&self.pool)
        .await?;
        Ok(GrownStamp {
            count: row.try_get("n")?,
            revisions: row.try_get("revs")?,
            latest: row.try_get("latest")?,
        })
    }

    /// Adds the tool or replaces its manifest (a new revision); audited.
    /// Returns the revision written.
    pub async fn put_grown_tool(
        &self,
        name: &str,
        kind: GrownKind,
        manifest: &str,
        script_sha256: Option<&str>,
        added_by: &str,
    ) -> Result<i64, StoreError> {
        let at = now();
        let row = sqlx::query(
            "INSERT INTO grown_tools (name, kind, manifest, script_sha256, added_by, created_at, updated_at, revision)
             VALUES ($1, $2, $3, $4, $5, $6, $6, 1)
             ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, manifest = excluded.manifest,
               script_sha256 = excluded.script_sha256, added_by = excluded.added_by,
               updated_at = excluded.updated_at,
               revision = grown_tools.revision + 1
             RETURNING revision",
        )
        .bind(name)
        .bind(kind.as_str())
        .bind(manifest)
        .bind(script_sha256)
        .bind(added_by)
        .bind(at)
        .fetch_one(&self.pool)
        .await?;
        let revision: i64 = row.try_get("revision")?;
        self.audit()
            .record(
                "tools.grown.saved",
                serde_json::json!({
                    "tool": name, "kind": kind.as_str(), "revision": revision,
                    "by": added_by, "script_sha256": script_sha256,
                }),
            )
            .await;
        Ok(revision)
    }

    /// Removes the tool; false when there was none. Audited.
    pub async fn remove_grown_tool(&self, name: &str, by: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM grown_tools WHERE name = $1")
            .bind(name)
            .execute(&self.pool)
            .await?;
        let removed = done.rows_affected() == 1;
        if removed {
            self.audit()
                .record(
                    "tools.grown.removed",
                    serde_json::json!({ "tool": name, "by": by }),
                )
                .await;
        }
        Ok(removed)
    }
}
