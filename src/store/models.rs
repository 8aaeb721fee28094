//! The model catalogue: endpoints by name with their prices and
//! capabilities; which one is the default and which are its fallbacks; and
//! the model a session chose with `/model`.

use super::{now, SessionId, Store, StoreError};
use sqlx::Row;

/// USD per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

/// One catalogue entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRow {
    pub name: String,
    /// `openai`, `anthropic` or `gemini`.
    pub api: String,
    pub base_url: String,
    /// The environment variable holding the key (never the key).
    pub key_env: Option<String>,
    /// The variable holding `base_url` with its credentials (a user and
    /// password, `?key=`), which the catalogue never stores.
    pub url_env: Option<String>,
    pub context_window: Option<u32>,
    pub prices: Prices,
    pub vision: bool,
    pub tools: bool,
    pub reasoning: bool,
    /// `default`, `fallback` or none.
    pub role: Option<String>,
    /// A fallback's place in the chain (1 first).
    pub rank: i64,
    /// Written from the `LLM_*` variables at start.
    pub seeded: bool,
}

const COLUMNS: &str = "name, api, base_url, key_env, url_env, context_window, price_input, price_output, price_cache_read, price_cache_write, vision, tools, reasoning, role, rank, seeded";

impl Store {
    /// Adds `m` or replaces the entry of that name (its role is kept).
    pub async fn put_model(&self, m: &ModelRow) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO models (name, api, base_url, key_env, context_window, price_input, price_output,
                                 price_cache_read, price_cache_write, vision, tools, reasoning, seeded, updated_at, url_env)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
             ON CONFLICT (name) DO UPDATE SET api = excluded.api, base_url = excluded.base_url,
               key_env = excluded.key_env, url_env = excluded.url_env, context_window = excluded.context_window,
               price_input = excluded.price_input, price_output = excluded.price_output,
               price_cache_read = excluded.price_cache_read, price_cache_write = excluded.price_cache_write,
               vision = excluded.vision, tools = excluded.tools, reasoning = excluded.reasoning,
               seeded = excluded.seeded, updated_at = excluded.updated_at",
        )
        .bind(&m.name)
        .bind(&m.api)
        .bind(&m.base_url)
        .bind(m.key_env.as_deref())
        .bind(m.context_window.map(i64::from))
        .bind(m.prices.input)
        .bind(m.prices.output)
        .bind(m.prices.cache_read)
        .bind(m.prices.cache_write)
        .bind(i64::from(m.vision))
        .bind(i64::from(m.tools))
        .bind(i64::from(m.reasoning))
        .bind(i64::from(m.seeded))
        .bind(now())
        .bind(m.url_env.as_deref())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Adds `m` unless an entry of that name exists (the operator's edits
    /// win over the variables that seeded it). True when added.
    pub async fn seed_model(&self, m: &ModelRow) -> Result<bool, StoreError> {
        if self.model(&m.name).await?.is_some() {
            return Ok(false);
        }
        self.put_model(m).await?;
        Ok(true)
    }

    pub async fn model(&self, name: &str) -> Result<Option<ModelRow>, StoreError> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM models WHERE name = $1"))
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(model_from_row).transpose()
    }

    /// Every entry: the default first, then the fallbacks in order, then by name.
    pub async fn models(&self) -> Result<Vec<ModelRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM models ORDER BY
               CASE role WHEN 'default' THEN 0 WHEN 'fallback' THEN 1 ELSE 2 END, rank, name"
        ))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(model_from_row).collect()
    }

    /// Removes an entry; true when it existed.
    pub async fn remove_model(&self, name: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM models WHERE name = $1")
            .bind(name)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Makes `name` the default (none: back to the `LLM_*` variables).
    pub async fn set_default_model(&self, name: Option<&str>) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("UPDATE models SET role = NULL WHERE role = 'default'")
            .execute(&mut *tx)
            .await?;
        if let Some(name) = name {
            sqlx::query(
                "UPDATE models SET role = 'default', rank = 0, updated_at = $1 WHERE name = $2",
            )
            .bind(now())
            .bind(name)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Makes `names` the default's fallbacks, in order (empty: none).
    pub async fn set_fallback_models(&self, names: &[String]) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("UPDATE models SET role = NULL, rank = 0 WHERE role = 'fallback'")
            .execute(&mut *tx)
            .await?;
        for (i, name) in names.iter().enumerate() {
            sqlx::query("UPDATE models SET role = 'fallback', rank = $1, updated_at = $2 WHERE name = $3 AND (role IS NULL OR role <> 'default')")
                .bind(i64::try_from(i + 1).unwrap_or(i64::MAX))
                .bind(now())
                .bind(name)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The model the session chose with `/model`; `None` when never set.
    pub async fn session_model(&self, session: &SessionId) -> Result<Option<String>, StoreError> {
        let row = sqlx::query("SELECT model FROM chat_settings WHERE session_id = $1")
            .bind(session)
            .fetch_optional(&self.pool)
            .await?;
        match row {
            Some(row) => Ok(row.try_get::<Option<String>, _>("model")?),
            None => Ok(None),
        }
    }

    /// Sets the session's model (`None`: back to the default).
    pub async fn set_session_model(
        &self,
        session: &SessionId,
        model: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO chat_settings (session_id, model, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (session_id) DO UPDATE SET model = excluded.model, updated_at = excluded.updated_at",
        )
        .bind(session)
        .bind(model)
        .bind(now())
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

fn model_from_row(r: &sqlx::any::AnyRow) -> Result<ModelRow, StoreError> {
    let flag = |c: &str| -> Result<bool, StoreError> { Ok(r.try_get::<i64, _>(c)? != 0) };
    Ok(ModelRow {
        name: r.try_get("name")?,
        api: r.try_get("api")?,
        base_url: r.try_get("base_url")?,
        key_env: r.try_get("key_env")?,
        url_env: r.try_get("url_env")?,
        context_window: r
            .try_get::<Option<i64>, _>("context_window")?
            .and_then(|w| u32::try_from(w).ok()),
        prices: Prices {
            input: r.try_get("price_input")?,
            output: r.try_get("price_output")?,
            cache_read: r.try_get("price_cache_read")?,
            cache_write: r.try_get("price_cache_write")?,
        },
        vision: flag("vision")?,
        tools: flag("tools")?,
        reasoning: flag("reasoning")?,
        role: r.try_get("role")?,
        rank: r.try_get("rank")?,
        seeded: flag("seeded")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str) -> ModelRow {
        ModelRow {
            name: name.into(),
            api: "openai".into(),
            base_url: "http://127.0.0.1:1/v1".into(),
            key_env: Some("OPENAI_API_KEY".into()),
            url_env: None,
            context_window: Some(128_000),
            prices: Prices {
                input: 2.5,
                output: 10.0,
                cache_read: 1.25,
                cache_write: 0.0,
            },
            vision: true,
            tools: true,
            reasoning: false,
            role: None,
            rank: 0,
            seeded: false,
        }
    }

    #[tokio::test]
    async fn the_catalogue_keeps_entries_roles_and_session_choices() {
        let (store, _dir) = crate::store::test_store().await;
        store.put_model(&row("b")).await.unwrap();
        store.put_model(&row("a")).await.unwrap();
        store.put_model(&row("c")).await.unwrap();
        assert!(!store.seed_model(&row("a")).await.unwrap());
        store.set_default_model(Some("c")).await.unwrap();
        store
            .set_fallback_models(&["b".to_owned(), "a".to_owned()])
            .await
            .unwrap();
        let names: Vec<String> = store
            .models()
            .await
            .unwrap()
            .into_iter()
            .map(|m| m.name)
            .collect();
        assert_eq!(names, ["c", "b", "a"]);
        let a = store.model("a").await.unwrap().unwrap();
        assert_eq!((a.role.as_deref(), a.rank), (Some("fallback"), 2));
        assert_eq!(a.prices.input, 2.5);
        assert!(a.vision && a.tools && !a.reasoning);
        assert!(store.remove_model("a").await.unwrap());
        assert!(!store.remove_model("a").await.unwrap());
        let session: SessionId = "s1".parse().unwrap();
        assert_eq!(store.session_model(&session).await.unwrap(), None);
    }
}
