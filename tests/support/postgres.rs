//! A fresh PostgreSQL database per test (or bench) on the server that
//! `TEST_DATABASE_URL` names; `.ci/run` drops the `sb_test_*` ones of earlier runs.

/// A new, empty PostgreSQL database on the server of `admin`; its URL.
pub async fn fresh_postgres(admin: &str) -> String {
    use sqlx::{Connection, Executor};
    let name = format!("sb_test_{}", uuid::Uuid::new_v4().simple());
    let mut conn = sqlx::PgConnection::connect(admin)
        .await
        .expect("TEST_DATABASE_URL reachable");
    conn.execute(format!("CREATE DATABASE {name}").as_str())
        .await
        .unwrap();
    conn.close().await.unwrap();
    let mut url = url::Url::parse(admin).unwrap();
    url.set_path(&name);
    url.to_string()
}
