//! Token usage per user per day.

use super::{Store, StoreError};
use crate::llm::Usage;
use sqlx::Row;
use switchboard_platform::{Platform, UserId};

impl Store {
    /// Adds usage to today's row: a turn's (`turns` 1), or model calls made
    /// on a turn's behalf, such as a sub-agent's (`turns` 0).
    pub async fn add_usage(
        &self,
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
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Today's turns and usage for a user.
    pub async fn usage_today(
        &self,
        platform: Platform,
        user: UserId,
    ) -> Result<(u64, Usage), StoreError> {
        let row = sqlx::query(
            "SELECT turns, input_tokens, output_tokens, cache_read, cache_write FROM usage
             WHERE platform = $1 AND user_id = $2 AND day = $3",
        )
        .bind(platform.as_str())
        .bind(user.0)
        .bind(today())
        .fetch_optional(&self.pool)
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
