//! The database side: one sqlx pool for the whole process and the contract's queries.
//!
//! Queries use `sqlx::query` / `sqlx::query_as` with `.bind()` (never string
//! formatting), so the build needs no database and every value is a bound parameter.
//! sqlx prepares each statement once per connection and caches it (the default
//! statement cache), so after warm-up a request costs one Bind/Execute round trip.

use std::time::Duration;

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::Serialize;
use sqlx::mysql::{MySqlConnectOptions, MySqlPool, MySqlSslMode};
use sqlx::pool::PoolOptions;
use sqlx::postgres::{PgConnectOptions, PgPool, PgSslMode};
use sqlx::{Database, Pool};

use crate::config::{Config, DbKind};
use crate::contract::UserStore;
use crate::suite::{Fortune, SuiteStore};

/// The contract's user object, exactly these keys. chrono serialises `DateTime<Utc>`
/// as RFC 3339 with a `Z` offset (fractional seconds only when non-zero).
#[derive(Serialize)]
pub struct User {
    pub user_id: i32,
    pub username: String,
    pub email: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub is_archived: bool,
}

type PgRow = (
    i32,
    String,
    Option<String>,
    DateTime<Utc>,
    DateTime<Utc>,
    bool,
);
// MySQL DATETIME(6) has no zone; the contract stores UTC there, so the naive value is
// read as NaiveDateTime and UTC is attached.
type MyRow = (
    i32,
    String,
    Option<String>,
    NaiveDateTime,
    NaiveDateTime,
    bool,
);

impl From<PgRow> for User {
    fn from(r: PgRow) -> User {
        User {
            user_id: r.0,
            username: r.1,
            email: r.2,
            created_at: r.3,
            updated_at: r.4,
            is_archived: r.5,
        }
    }
}

impl From<MyRow> for User {
    fn from(r: MyRow) -> User {
        User {
            user_id: r.0,
            username: r.1,
            email: r.2,
            created_at: r.3.and_utc(),
            updated_at: r.4.and_utc(),
            is_archived: r.5,
        }
    }
}

const PG_SELECT: &str =
    "SELECT user_id, username, email, created_at, updated_at, is_archived FROM users WHERE user_id = $1";
// One statement: RETURNING gives the row as stored after the update.
const PG_UPDATE: &str =
    "UPDATE users SET username = $1, email = $2, updated_at = now() WHERE user_id = $3 \
     RETURNING user_id, username, email, created_at, updated_at, is_archived";

const MY_SELECT: &str =
    "SELECT user_id, username, email, created_at, updated_at, is_archived FROM users WHERE user_id = ?";
// MySQL has no RETURNING: one UPDATE, then one SELECT on the same connection.
// UTC_TIMESTAMP(6) because the column holds naive UTC with microseconds, whatever
// the session time zone is.
const MY_UPDATE: &str =
    "UPDATE users SET username = ?, email = ?, updated_at = UTC_TIMESTAMP(6) WHERE user_id = ?";

// The database suite (suite.rs). updated_at is a bound parameter, the server's clock
// (never now()); one statement per row, no batching.
const PG_UPDATE_ROW: &str = "UPDATE users SET username = $1, updated_at = $2 WHERE user_id = $3";
const MY_UPDATE_ROW: &str = "UPDATE users SET username = ?, updated_at = ? WHERE user_id = ?";
// The same text on both engines.
const FORTUNES: &str = "SELECT id, message FROM fortune";

/// The raw variant's store: the pool of the configured database, or none at all.
pub enum Db {
    None,
    Postgres(PgPool),
    Mysql(MySqlPool),
}

/// Pool settings shared by both engines; see the comments for why each is what it is.
fn pool_options<DB: Database>(size: u32) -> PoolOptions<DB> {
    PoolOptions::<DB>::new()
        // concurrency = "threads": one process, so BENCH_DB_POOL_SIZE is the whole
        // connection budget, and min = max keeps the pool at exactly that size.
        .max_connections(size)
        .min_connections(size)
        // Persistent connections for the whole run: never close one for being idle
        // or old (the harness restarts the server per case anyway).
        .idle_timeout(None)
        .max_lifetime(None)
        // sqlx pings a connection on every acquire by default: one extra round trip
        // per request. A broken connection still surfaces as a query error.
        .test_before_acquire(false)
        // Under load requests queue for a connection; wait rather than fail.
        .acquire_timeout(Duration::from_secs(30))
}

/// Open every connection of the pool now, so no request pays for a connect and the
/// budget is fully in use from the first request: acquire them all at once, then
/// give them back. All worker threads share this one pool; its sockets belong to the
/// runtime this runs on (actix-web: the main thread's; axum: the multi-threaded
/// runtime's one I/O driver, which the worker threads poll).
async fn open_all<DB: Database>(pool: &Pool<DB>, size: u32) -> Result<(), sqlx::Error> {
    let mut conns = Vec::with_capacity(size as usize);
    for _ in 0..size {
        // Each connection is held, so the next acquire has to open a new one.
        conns.push(pool.acquire().await?);
    }
    drop(conns);
    Ok(())
}

/// The PostgreSQL connection settings, shared by the raw pool and an ORM's pool.
/// `application_name` names the server in pg_stat_activity.
pub fn pg_connect_options(cfg: &Config, application_name: &str) -> PgConnectOptions {
    PgConnectOptions::new()
        .host(&cfg.db_host)
        .port(cfg.db_port)
        .username(&cfg.db_user)
        .password(&cfg.db_password)
        .database(&cfg.db_name)
        // No TLS backend is compiled in; say so rather than probe with SSLRequest.
        .ssl_mode(PgSslMode::Disable)
        .application_name(application_name)
}

/// The MySQL connection settings, shared by the raw pool and an ORM's pool.
///
/// Authentication without TLS: MySQL 8's caching_sha2_password needs, on an account's
/// first login after a server start, either TLS or an RSA exchange of the password.
/// sqlx-mysql 0.8 does the RSA exchange itself (`rsa` is a non-optional dependency of
/// sqlx-mysql, so no Cargo feature is needed with default-features = false); sqlx
/// 0.8.6's fast-auth scramble does not match the server's, so it takes that path on
/// every connection, which only costs a round trip at pool start-up. The compose file's
/// bench user is mysql_native_password anyway (see docker-compose.yml).
pub fn my_connect_options(cfg: &Config) -> MySqlConnectOptions {
    MySqlConnectOptions::new()
        .host(&cfg.db_host)
        .port(cfg.db_port)
        .username(&cfg.db_user)
        .password(&cfg.db_password)
        .database(&cfg.db_name)
        .ssl_mode(MySqlSslMode::Disabled)
        // sqlx's default, stated: timestamps are UTC on the wire.
        .timezone(Some("+00:00".into()))
}

/// A pool of exactly `size` connections, all of them open when this returns.
pub async fn open_pool<DB: Database>(
    opts: <DB::Connection as sqlx::Connection>::Options,
    size: u32,
) -> Result<Pool<DB>, sqlx::Error> {
    let pool: Pool<DB> = pool_options(size).connect_lazy_with(opts);
    open_all(&pool, size).await?;
    Ok(pool)
}

/// The raw variant's store for `cfg.db` (`Db::None`, no connection, for `none`).
pub async fn connect(cfg: &Config, application_name: &str) -> Result<Db, sqlx::Error> {
    match cfg.db {
        DbKind::None => Ok(Db::None),
        DbKind::Postgres => {
            let opts = pg_connect_options(cfg, application_name);
            let pool: PgPool = open_pool(opts, cfg.pool_size).await?;
            Ok(Db::Postgres(pool))
        }
        DbKind::Mysql => {
            let pool: MySqlPool = open_pool(my_connect_options(cfg), cfg.pool_size).await?;
            Ok(Db::Mysql(pool))
        }
    }
}

impl Db {
    pub async fn close(&self) {
        match self {
            Db::None => {}
            Db::Postgres(p) => p.close().await,
            Db::Mysql(p) => p.close().await,
        }
    }

    /// One SELECT. `Ok(None)` when no row has this id.
    #[inline]
    pub async fn get_user(&self, id: i32) -> Result<Option<User>, sqlx::Error> {
        match self {
            Db::None => Ok(None),
            Db::Postgres(pool) => {
                let row: Option<PgRow> = sqlx::query_as(PG_SELECT)
                    .bind(id)
                    .fetch_optional(pool)
                    .await?;
                Ok(row.map(User::from))
            }
            Db::Mysql(pool) => {
                let row: Option<MyRow> = sqlx::query_as(MY_SELECT)
                    .bind(id)
                    .fetch_optional(pool)
                    .await?;
                Ok(row.map(User::from))
            }
        }
    }

    /// One UPDATE (PostgreSQL: with RETURNING; MySQL: then one SELECT).
    /// `Ok(None)` when no row has this id.
    #[inline]
    pub async fn update_user(
        &self,
        id: i32,
        username: &str,
        email: &str,
    ) -> Result<Option<User>, sqlx::Error> {
        match self {
            Db::None => Ok(None),
            Db::Postgres(pool) => {
                let row: Option<PgRow> = sqlx::query_as(PG_UPDATE)
                    .bind(username)
                    .bind(email)
                    .bind(id)
                    .fetch_optional(pool)
                    .await?;
                Ok(row.map(User::from))
            }
            Db::Mysql(pool) => {
                // Both statements on one connection: one acquire, and the SELECT runs
                // right after our own UPDATE (autocommit, no extra BEGIN/COMMIT).
                let mut conn = pool.acquire().await?;
                let done = sqlx::query(MY_UPDATE)
                    .bind(username)
                    .bind(email)
                    .bind(id)
                    .execute(&mut *conn)
                    .await?;
                // sqlx connects with CLIENT_FOUND_ROWS, so this counts matched rows
                // (not only changed ones): 0 means no such user, no SELECT needed.
                if done.rows_affected() == 0 {
                    return Ok(None);
                }
                let row: Option<MyRow> = sqlx::query_as(MY_SELECT)
                    .bind(id)
                    .fetch_optional(&mut *conn)
                    .await?;
                Ok(row.map(User::from))
            }
        }
    }
}

/// The raw variant: the inherent methods above, unchanged.
impl UserStore for Db {
    type Error = sqlx::Error;

    #[inline]
    fn has_database(&self) -> bool {
        !matches!(self, Db::None)
    }

    #[inline]
    async fn get(&self, id: i32) -> Result<Option<User>, sqlx::Error> {
        self.get_user(id).await
    }

    #[inline]
    async fn update(
        &self,
        id: i32,
        username: String,
        email: String,
    ) -> Result<Option<User>, sqlx::Error> {
        self.update_user(id, &username, &email).await
    }

    async fn close(&self) {
        Db::close(self).await
    }
}

/// The database suite's raw queries: one statement each, on whichever pooled
/// connection is free (autocommit), prepared once per connection by sqlx.
impl SuiteStore for Db {
    async fn update_row(
        &self,
        id: i32,
        username: &str,
        updated_at: DateTime<Utc>,
    ) -> Result<(), sqlx::Error> {
        match self {
            Db::None => Ok(()),
            Db::Postgres(pool) => {
                sqlx::query(PG_UPDATE_ROW)
                    .bind(username)
                    .bind(updated_at)
                    .bind(id)
                    .execute(pool)
                    .await?;
                Ok(())
            }
            Db::Mysql(pool) => {
                // DATETIME(6) holds naive UTC: the UTC wall-clock value is bound.
                sqlx::query(MY_UPDATE_ROW)
                    .bind(username)
                    .bind(updated_at.naive_utc())
                    .bind(id)
                    .execute(pool)
                    .await?;
                Ok(())
            }
        }
    }

    async fn fortunes(&self) -> Result<Vec<Fortune>, sqlx::Error> {
        match self {
            Db::None => Ok(Vec::new()),
            Db::Postgres(pool) => {
                let rows: Vec<(i32, String)> = sqlx::query_as(FORTUNES).fetch_all(pool).await?;
                Ok(rows
                    .into_iter()
                    .map(|(id, message)| Fortune { id, message })
                    .collect())
            }
            Db::Mysql(pool) => {
                // The column's collation is utf8mb4_bin, which MySQL/MariaDB flag as
                // BINARY, and sqlx-mysql 0.8 refuses to decode a BINARY-flagged column
                // as String ("not compatible with SQL type VARBINARY"). So the bytes
                // are read and checked as UTF-8 here, which is what SeaORM's String
                // decoding does on MySQL for every column.
                let rows: Vec<(i32, Vec<u8>)> = sqlx::query_as(FORTUNES).fetch_all(pool).await?;
                rows.into_iter()
                    .map(|(id, bytes)| match String::from_utf8(bytes) {
                        Ok(message) => Ok(Fortune { id, message }),
                        Err(e) => Err(sqlx::Error::Decode(Box::new(e))),
                    })
                    .collect()
            }
        }
    }
}
