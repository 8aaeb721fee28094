//! Token usage per user per day.

use super::{Store, StoreError};
use crate::llm::Usage;
use sqlx::Row;
use switchboard_platform::{Platform, UserId};

/// Token usage and cost, per user and day and per model.
#[derive(Debug, Clone, Copy)]
pub struct UsageLedger<'a> {
    pub(super) db: &'a Store,
}

impl UsageLedger<'_> {
    /// Adds usage to today's row: a turn's (`turns` 1), or model calls made
    /// on a turn's behalf, such as a sub-agent's (`turns` 0).
    pub async fn add(
        self,
        platform: Platform,
        user: UserId,
        usage: &Usage,
        turns: u32,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO usage (platform, user_id, day, turns, input_tokens, output_tokens, cache_read, cache_write)
             VALUES ($1, $2, $3, $8, $4, $5, $6, $7)
             ON CONFLICT (platform, user_id, day) DO UPDATE SET
               turns = usage.turns + excluded.turns,
               input_tokens = usage.input_tokens + excluded.input_tokens,
               output_tokens = usage.output_tokens + excluded.output_tokens,
               cache_read = usage.cache_read + excluded.cache_read,
               cache_write = usage.cache_write + excluded.cache_write",
        )
        .bind(platform.as_str())
        .bind(user.0)
        .bind(today())
        .bind(clamp(usage.input_tokens))
        .bind(clamp(usage.output_tokens))
        .bind(clamp(usage.cache_read_tokens))
        .bind(clamp(usage.cache_write_tokens))
        .bind(i64::from(turns))
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// Today's turns and usage for a user.
    pub async fn today(self, platform: Platform, user: UserId) -> Result<(u64, Usage), StoreError> {
        let row = sqlx::query(
            "SELECT turns, input_tokens, output_tokens, cache_read, cache_write FROM usage
             WHERE platform = $1 AND user_id = $2 AND day = $3",
        )
        .bind(platform.as_str())
        .bind(user.0)
        .bind(today())
        .fetch_optional(&self.db.pool)
        .await?;
        let Some(r) = row else {
            return Ok((0, Usage::default()));
        };
        let get = |c: &str| -> Result<u64, StoreError> {
            Ok(u64::try_from(r.try_get::<i64, _>(c)?).unwrap_or(0))
        };
        Ok((
            get("turns")?,
            Usage {
                input_tokens: get("input_tokens")?,
                output_tokens: get("output_tokens")?,
                cache_read_tokens: get("cache_read")?,
                cache_write_tokens: get("cache_write")?,
            },
        ))
    }
}

fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}

fn clamp(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// One model's usage over some days, priced as recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelUsage {
    pub model: String,
    pub turns: u64,
    pub usage: Usage,
    /// Micro-dollars.
    pub cost_micros: i64,
}

impl UsageLedger<'_> {
    /// Adds a turn's usage on `model`, priced at `cost_micros` now.
    pub async fn add_model(
        self,
        platform: Platform,
        user: UserId,
        model: &str,
        usage: &Usage,
        turns: u32,
        cost_micros: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO usage_models (platform, user_id, day, model, turns, input_tokens, output_tokens, cache_read, cache_write, cost_micros)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
             ON CONFLICT (platform, user_id, day, model) DO UPDATE SET
               turns = usage_models.turns + excluded.turns,
               input_tokens = usage_models.input_tokens + excluded.input_tokens,
               output_tokens = usage_models.output_tokens + excluded.output_tokens,
               cache_read = usage_models.cache_read + excluded.cache_read,
               cache_write = usage_models.cache_write + excluded.cache_write,
               cost_micros = usage_models.cost_micros + excluded.cost_micros",
        )
        .bind(platform.as_str())
        .bind(user.0)
        .bind(today())
        .bind(model)
        .bind(i64::from(turns))
        .bind(clamp(usage.input_tokens))
        .bind(clamp(usage.output_tokens))
        .bind(clamp(usage.cache_read_tokens))
        .bind(clamp(usage.cache_write_tokens))
        .bind(cost_micros)
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// Usage per model over the last `days` days (today included), of one
    /// user or of everybody.
    pub async fn by_model(
        self,
        user: Option<(Platform, UserId)>,
        days: u32,
    ) -> Result<Vec<ModelUsage>, StoreError> {
        let since = day_ago(days.saturating_sub(1));
        let select = "SELECT model, CAST(SUM(turns) AS BIGINT) AS turns, CAST(SUM(input_tokens) AS BIGINT) AS input_tokens, CAST(SUM(output_tokens) AS BIGINT) AS output_tokens,
                        CAST(SUM(cache_read) AS BIGINT) AS cache_read, CAST(SUM(cache_write) AS BIGINT) AS cache_write, CAST(SUM(cost_micros) AS BIGINT) AS cost_micros
                      FROM usage_models";
        let rows = match user {
            Some((platform, user)) => {
                sqlx::query(&format!(
                    "{select} WHERE platform = $1 AND user_id = $2 AND day >= $3 GROUP BY model ORDER BY model"
                ))
                .bind(platform.as_str())
                .bind(user.0)
                .bind(since)
                .fetch_all(&self.db.pool)
                .await?
            }
            None => {
                sqlx::query(&format!("{select} WHERE day >= $1 GROUP BY model ORDER BY model"))
                    .bind(since)
                    .fetch_all(&self.db.pool)
                    .await?
            }
        };
        rows.iter()
            .map(|r| {
                let get = |c: &str| -> Result<u64, StoreError> {
                    Ok(u64::try_from(r.try_get::<i64, _>(c)?).unwrap_or(0))
                };
                Ok(ModelUsage {
                    model: r.try_get("model")?,
                    turns: get("turns")?,
                    usage: Usage {
                        input_tokens: get("input_tokens")?,
                        output_tokens: get("output_tokens")?,
                        cache_read_tokens: get("cache_read")?,
                        cache_write_tokens: get("cache_write")?,
                    },
                    cost_micros: r.try_get("cost_micros")?,
                })
            })
            .collect()
    }

    /// Today's estimated cost in micro-dollars, of one user or of everybody.
    pub async fn cost_today(self, user: Option<(Platform, UserId)>) -> Result<i64, StoreError> {
        Ok(self
            .by_model(user, 1)
            .await?
            .iter()
            .map(|m| m.cost_micros)
            .sum())
    }
}

/// The UTC day `days` days ago, as stored.
fn day_ago(days: u32) -> String {
    (chrono::Utc::now() - chrono::Duration::days(i64::from(days)))
        .format("%Y-%m-%d")
        .to_string()
}
