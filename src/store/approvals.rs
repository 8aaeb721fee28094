//! Approval requests, their decisions (first decision wins) and "always allow" rules.

use super::{dt, ms, now, Store, StoreError};
use crate::domain::{ApprovalId, RuleId, SessionId};
use chrono::{DateTime, Utc};
use sqlx::Row;
use switchboard_platform::{ChatAddress, MessageId, Platform, User, UserId};

/// Approval requests, their decisions and the "always allow" rules (`store.approvals()`).
#[derive(Debug, Clone, Copy)]
pub struct Approvals<'a> {
    pub(super) db: &'a Store,
}

/// Where an approval stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalStatus {
    Pending,
    Allowed,
    Always,
    Denied,
    Expired,
    /// Replaced by a new approval with edited arguments.
    Edited,
}

impl ApprovalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::Pending => "pending",
            ApprovalStatus::Allowed => "allowed",
            ApprovalStatus::Always => "always",
            ApprovalStatus::Denied => "denied",
            ApprovalStatus::Expired => "expired",
            ApprovalStatus::Edited => "edited",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => ApprovalStatus::Pending,
            "allowed" => ApprovalStatus::Allowed,
            "always" => ApprovalStatus::Always,
            "denied" => ApprovalStatus::Denied,
            "expired" => ApprovalStatus::Expired,
            "edited" => ApprovalStatus::Edited,
            _ => return None,
        })
    }
}

/// One approval request as stored.
#[derive(Debug, Clone)]
pub struct ApprovalRecord {
    pub id: ApprovalId,
    pub session_id: SessionId,
    pub tool_name: String,
    pub tool_display: String,
    pub arguments: String,
    pub summary: String,
    pub requester: UserId,
    pub requester_name: String,
    pub chat: ChatAddress,
    pub card_message: Option<MessageId>,
    pub status: ApprovalStatus,
    pub decided_by: Option<UserId>,
    pub decided_by_name: Option<String>,
    pub decided_at: Option<DateTime<Utc>>,
    pub reason: Option<String>,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

impl ApprovalRecord {
    /// The session whose turn waits for this approval: the requester's, in
    /// the card's chat (and thread).
    pub fn session_key(&self) -> crate::domain::SessionKey {
        crate::domain::SessionKey::of(&self.chat, self.requester)
    }
}

/// A stored "always allow": this user may run this tool with these exact arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRule {
    pub id: RuleId,
    pub platform: Platform,
    pub user: UserId,
    pub tool_name: String,
    pub pattern: String,
}

pub(super) const COLUMNS: &str = "id, session_id, tool_name, tool_display, arguments, summary, requester, requester_name, chat, card_message_id, status,
    decided_by, decided_by_name, decided_at, reason, created_at, expires_at";

impl Approvals<'_> {
    pub async fn insert(self, a: &ApprovalRecord) -> Result<(), StoreError> {
        let chat =
            serde_json::to_string(&a.chat).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        sqlx::query(
            "INSERT INTO approvals (id, session_id, tool_name, tool_display, arguments, summary, requester, requester_name,
                                    chat, status, created_at, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'pending', $10, $11)",
        )
        .bind(&a.id)
        .bind(&a.session_id)
        .bind(&a.tool_name)
        .bind(&a.tool_display)
        .bind(&a.arguments)
        .bind(&a.summary)
        .bind(a.requester.0)
        .bind(&a.requester_name)
        .bind(chat)
        .bind(ms(a.created_at))
        .bind(ms(a.expires_at))
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    pub async fn set_card(self, id: &ApprovalId, message: MessageId) -> Result<(), StoreError> {
        sqlx::query("UPDATE approvals SET card_message_id = $1 WHERE id = $2")
            .bind(message.0)
            .bind(id)
            .execute(&self.db.pool)
            .await?;
        Ok(())
    }

    pub async fn get(self, id: &ApprovalId) -> Result<Option<ApprovalRecord>, StoreError> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM approvals WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.db.pool)
            .await?;
        row.as_ref().map(approval_from_row).transpose()
    }

    /// Records a decision if the approval is still pending and unexpired: one
    /// conditional update, so the first decision wins even across processes.
    /// Returns the decided record, or `None` when someone (or expiry) was first.
    pub async fn decide(
        self,
        id: &ApprovalId,
        status: ApprovalStatus,
        by: Option<&User>,
        reason: Option<&str>,
        at: DateTime<Utc>,
    ) -> Result<Option<ApprovalRecord>, StoreError> {
        let ts = ms(at);
        // Expiry may decide only once the deadline has passed; people only before it.
        let deadline_ok = if status == ApprovalStatus::Expired {
            "expires_at <= $5"
        } else {
            "expires_at > $5"
        };
        let row = sqlx::query(&format!(
            "UPDATE approvals SET status = $1, decided_by = $2, decided_by_name = $6, decided_at = $5, reason = $3
             WHERE id = $4 AND status = 'pending' AND {deadline_ok}
             RETURNING {COLUMNS}"
        ))
        .bind(status.as_str())
        .bind(by.map(|u| u.id.0))
        .bind(reason)
        .bind(id)
        .bind(ts)
        .bind(by.map(|u| u.display_name.as_str()))
        .fetch_optional(&self.db.pool)
        .await?;
        row.as_ref().map(approval_from_row).transpose()
    }

    /// Expires a pending approval now (its in-process waiter's deadline passed).
    pub async fn expire(
        self,
        id: &ApprovalId,
        at: DateTime<Utc>,
    ) -> Result<Option<ApprovalRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "UPDATE approvals SET status = 'expired', decided_at = $1 WHERE id = $2 AND status = 'pending' RETURNING {COLUMNS}"
        ))
        .bind(ms(at))
        .bind(id)
        .fetch_optional(&self.db.pool)
        .await?;
        row.as_ref().map(approval_from_row).transpose()
    }

    /// The full id of the approval whose id starts with `prefix` (at least 8
    /// hex chars), when exactly one matches.
    pub async fn by_prefix(self, prefix: &str) -> Result<Option<ApprovalId>, StoreError> {
        let prefix = prefix.trim().to_ascii_lowercase();
        if prefix.len() < 8 || !prefix.chars().all(|c| c.is_ascii_hexdigit()) {
            return Ok(None);
        }
        // A short id names the pending approval it was shown on, even when a
        // decided one shares its prefix; one matching nothing pending names a
        // decided one (answered "already decided").
        for only_pending in [true, false] {
            let sql = if only_pending {
                "SELECT id FROM approvals WHERE id LIKE $1 AND status = 'pending' LIMIT 2"
            } else {
                "SELECT id FROM approvals WHERE id LIKE $1 LIMIT 2"
            };
            let rows = sqlx::query(sql)
                .bind(format!("{prefix}%"))
                .fetch_all(&self.db.pool)
                .await?;
            match rows.as_slice() {
                [] => continue,
                [one] => return Ok(Some(one.try_get("id")?)),
                _ => return Ok(None),
            }
        }
        Ok(None)
    }

    /// Pending approvals whose deadline has passed.
    pub async fn due(self, now: DateTime<Utc>) -> Result<Vec<ApprovalRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM approvals WHERE status = 'pending' AND expires_at <= $1 ORDER BY expires_at"
        ))
        .bind(ms(now))
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter().map(approval_from_row).collect()
    }

    pub async fn add_rule(
        self,
        platform: Platform,
        user: UserId,
        tool: &str,
        pattern: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO approval_rules (id, platform, user_id, tool_name, pattern, created_at) VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (platform, user_id, tool_name, pattern) DO NOTHING",
        )
        .bind(RuleId::new())
        .bind(platform.as_str())
        .bind(user.0)
        .bind(tool)
        .bind(pattern)
        .bind(now())
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// The patterns of the user's rules for `tool` (see `approvals::rules`).
    pub async fn rule_patterns(
        self,
        platform: Platform,
        user: UserId,
        tool: &str,
    ) -> Result<Vec<String>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT pattern FROM approval_rules WHERE platform = $1 AND user_id = $2 AND tool_name = $3",
        )
        .bind(platform.as_str())
        .bind(user.0)
        .bind(tool)
        .fetch_all(&self.db.pool)
        .await?)
    }

    pub async fn rules(
        self,
        platform: Platform,
        user: UserId,
    ) -> Result<Vec<ApprovalRule>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, tool_name, pattern FROM approval_rules WHERE platform = $1 AND user_id = $2 ORDER BY created_at",
        )
        .bind(platform.as_str())
        .bind(user.0)
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(ApprovalRule {
                    id: r.try_get("id")?,
                    platform,
                    user,
                    tool_name: r.try_get("tool_name")?,
                    pattern: r.try_get("pattern")?,
                })
            })
            .collect()
    }

    /// Every rule, for the operator (`switchboard approvals list`).
    pub async fn all_rules(self) -> Result<Vec<ApprovalRule>, StoreError> {
        let rows = sqlx::query("SELECT id, platform, user_id, tool_name, pattern FROM approval_rules ORDER BY created_at")
            .fetch_all(&self.db.pool)
            .await?;
        rows.iter()
            .map(|r| {
                let platform: String = r.try_get("platform")?;
                Ok(ApprovalRule {
                    id: r.try_get("id")?,
                    platform: Platform::parse(&platform)
                        .ok_or_else(|| StoreError::Corrupt(format!("platform {platform}")))?,
                    user: UserId(r.try_get("user_id")?),
                    tool_name: r.try_get("tool_name")?,
                    pattern: r.try_get("pattern")?,
                })
            })
            .collect()
    }

    /// Revokes any user's rule by id or unique prefix (6+ chars), for the operator.
    pub async fn revoke_any_rule(self, prefix: &str) -> Result<bool, StoreError> {
        let rules = self.all_rules().await?;
        let matching: Vec<&ApprovalRule> = rules
            .iter()
            .filter(|r| prefix.len() >= 6 && r.id.as_str().starts_with(prefix))
            .collect();
        match matching.as_slice() {
            [rule] => {
                self.revoke_rule(rule.platform, rule.user, rule.id.as_str())
                    .await
            }
            _ => Ok(false),
        }
    }

    /// Revokes one of the user's rules by id (or an id prefix of at least 6
    /// chars). A prefix matching several rules revokes none.
    pub async fn revoke_rule(
        self,
        platform: Platform,
        user: UserId,
        prefix: &str,
    ) -> Result<bool, StoreError> {
        if prefix.len() < 6 {
            return Ok(false);
        }
        let mut tx = self.db.begin_write().await?;
        let ids: Vec<RuleId> = sqlx::query_scalar(
            "SELECT id FROM approval_rules WHERE platform = $1 AND user_id = $2 AND id LIKE $3 LIMIT 2",
        )
        .bind(platform.as_str())
        .bind(user.0)
        .bind(format!("{}%", prefix.replace(['%', '_'], "")))
        .fetch_all(&mut *tx)
        .await?;
        let [only] = ids.as_slice() else {
            return Ok(false);
        };
        sqlx::query("DELETE FROM approval_rules WHERE id = $1")
            .bind(only)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(true)
    }
}

pub(super) fn approval_from_row(r: &sqlx::any::AnyRow) -> Result<ApprovalRecord, StoreError> {
    let status: String = r.try_get("status")?;
    let chat: String = r.try_get("chat")?;
    Ok(ApprovalRecord {
        id: r.try_get("id")?,
        session_id: r.try_get("session_id")?,
        tool_name: r.try_get("tool_name")?,
        tool_display: r.try_get("tool_display")?,
        arguments: r.try_get("arguments")?,
        summary: r.try_get("summary")?,
        requester: UserId(r.try_get("requester")?),
        requester_name: r.try_get("requester_name")?,
        chat: serde_json::from_str(&chat)
            .map_err(|e| StoreError::Corrupt(format!("approval chat: {e}")))?,
        card_message: r
            .try_get::<Option<i64>, _>("card_message_id")?
            .map(MessageId),
        status: ApprovalStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("approval status {status}")))?,
        decided_by: r.try_get::<Option<i64>, _>("decided_by")?.map(UserId),
        decided_by_name: r.try_get("decided_by_name")?,
        decided_at: r.try_get::<Option<i64>, _>("decided_at")?.map(dt),
        reason: r.try_get("reason")?,
        created_at: dt(r.try_get("created_at")?),
        expires_at: dt(r.try_get("expires_at")?),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::store::test_store;
    use switchboard_platform::ChatId;

    /// A pending `exec_command ls` approval asked by user 1 on the test
    /// platform, expiring in `ttl_secs`.
    pub(crate) fn record(id: &str, ttl_secs: i64) -> ApprovalRecord {
        let ts = now();
        ApprovalRecord {
            id: id.parse().unwrap(),
            session_id: "s".parse().unwrap(),
            tool_name: "exec_command".into(),
            tool_display: "Run command".into(),
            arguments: r#"{"command":"ls"}"#.into(),
            summary: "ls".into(),
            requester: UserId(1),
            requester_name: "Ann".into(),
            chat: ChatAddress::new(Platform::Console, ChatId(1), None),
            card_message: None,
            status: ApprovalStatus::Pending,
            decided_by: None,
            decided_by_name: None,
            decided_at: None,
            reason: None,
            created_at: dt(ts),
            expires_at: dt(ts + ttl_secs * 1000),
        }
    }

    fn ann() -> User {
        User {
            is_approver: false,
            id: UserId(1),
            display_name: "Ann".into(),
            is_bot: false,
        }
    }

    /// Ann denies approval `id`.
    async fn deny(store: &Store, id: &str) -> Option<ApprovalRecord> {
        store
            .approvals()
            .decide(
                &id.parse().unwrap(),
                ApprovalStatus::Denied,
                Some(&ann()),
                None,
                Utc::now(),
            )
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn first_decision_wins() {
        let (store, _dir) = test_store().await;
        store.approvals().insert(&record("a1", 600)).await.unwrap();
        let first = store
            .approvals()
            .decide(
                &"a1".parse().unwrap(),
                ApprovalStatus::Allowed,
                Some(&ann()),
                None,
                Utc::now(),
            )
            .await
            .unwrap();
        let first = first.unwrap();
        assert_eq!(first.status, ApprovalStatus::Allowed);
        assert_eq!(first.decided_by_name.as_deref(), Some("Ann"));
        assert!(deny(&store, "a1").await.is_none());
        assert_eq!(
            store
                .approvals()
                .get(&"a1".parse().unwrap())
                .await
                .unwrap()
                .map(|r| r.status),
            Some(ApprovalStatus::Allowed)
        );
    }

    #[tokio::test]
    async fn a_short_id_names_the_pending_approval_before_a_decided_one() {
        let (store, _dir) = test_store().await;
        store
            .approvals()
            .insert(&record("abcdef01aaaa", 600))
            .await
            .unwrap();
        store
            .approvals()
            .insert(&record("abcdef01bbbb", 600))
            .await
            .unwrap();
        assert_eq!(
            store.approvals().by_prefix("abcdef01").await.unwrap(),
            None,
            "ambiguous"
        );
        deny(&store, "abcdef01aaaa").await;
        assert_eq!(
            store
                .approvals()
                .by_prefix("ABCDEF01")
                .await
                .unwrap()
                .as_ref()
                .map(ApprovalId::as_str),
            Some("abcdef01bbbb")
        );
        deny(&store, "abcdef01bbbb").await;
        assert_eq!(store.approvals().by_prefix("abcdef01").await.unwrap(), None);
        assert_eq!(
            store
                .approvals()
                .by_prefix("abcdef01a")
                .await
                .unwrap()
                .as_ref()
                .map(ApprovalId::as_str),
            Some("abcdef01aaaa"),
            "a decided one is still found (to be told it is decided)"
        );
        assert_eq!(
            store.approvals().by_prefix("abcdef0").await.unwrap(),
            None,
            "too short"
        );
        assert_eq!(
            store.approvals().by_prefix("abcdef0%").await.unwrap(),
            None,
            "not hex"
        );
    }

    #[tokio::test]
    async fn expired_approvals_refuse_people_and_accept_the_sweeper() {
        let (store, _dir) = test_store().await;
        store.approvals().insert(&record("a2", -1)).await.unwrap();
        assert!(store
            .approvals()
            .decide(
                &"a2".parse().unwrap(),
                ApprovalStatus::Allowed,
                Some(&ann()),
                None,
                Utc::now()
            )
            .await
            .unwrap()
            .is_none());
        assert_eq!(store.approvals().due(Utc::now()).await.unwrap().len(), 1);
        assert!(store
            .approvals()
            .decide(
                &"a2".parse().unwrap(),
                ApprovalStatus::Expired,
                None,
                None,
                Utc::now()
            )
            .await
            .unwrap()
            .is_some());
        assert!(store.approvals().due(Utc::now()).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn rules_are_per_user_and_tool_and_revocable() {
        let (store, _dir) = test_store().await;
        store
            .approvals()
            .add_rule(
                Platform::Console,
                UserId(1),
                "exec_command",
                "{\"command\":\"ls\"}",
            )
            .await
            .unwrap();
        let mine = store
            .approvals()
            .rule_patterns(Platform::Console, UserId(1), "exec_command")
            .await
            .unwrap();
        assert_eq!(mine, ["{\"command\":\"ls\"}"]);
        let other_tool = store
            .approvals()
            .rule_patterns(Platform::Console, UserId(1), "write_file")
            .await
            .unwrap();
        let other_user = store
            .approvals()
            .rule_patterns(Platform::Console, UserId(2), "exec_command")
            .await
            .unwrap();
        assert!(other_tool.is_empty() && other_user.is_empty());
        let rules = store
            .approvals()
            .rules(Platform::Console, UserId(1))
            .await
            .unwrap();
        assert_eq!(rules.len(), 1);
        assert!(
            !store
                .approvals()
                .revoke_rule(Platform::Console, UserId(2), rules[0].id.as_str())
                .await
                .unwrap(),
            "not another user's"
        );
        assert!(store
            .approvals()
            .revoke_rule(Platform::Console, UserId(1), rules[0].id.short())
            .await
            .unwrap());
        assert!(store
            .approvals()
            .rules(Platform::Console, UserId(1))
            .await
            .unwrap()
            .is_empty());
    }

    #[tokio::test]
    async fn an_ambiguous_prefix_revokes_nothing() {
        let (store, _dir) = test_store().await;
        for (id, pattern) in [("abcdef01", "ls"), ("abcdef02", "pwd")] {
            sqlx::query("INSERT INTO approval_rules (id, platform, user_id, tool_name, pattern, created_at) VALUES ($1, 'console', 1, 'exec_command', $2, 0)")
                .bind(id)
                .bind(pattern)
                .execute(&store.pool)
                .await
                .unwrap();
        }
        assert!(!store
            .approvals()
            .revoke_rule(Platform::Console, UserId(1), "abcdef")
            .await
            .unwrap());
        assert_eq!(
            store
                .approvals()
                .rules(Platform::Console, UserId(1))
                .await
                .unwrap()
                .len(),
            2
        );
        assert!(store
            .approvals()
            .revoke_rule(Platform::Console, UserId(1), "abcdef02")
            .await
            .unwrap());
        let left = store
            .approvals()
            .rules(Platform::Console, UserId(1))
            .await
            .unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].id, "abcdef01".parse().unwrap());
    }
}
