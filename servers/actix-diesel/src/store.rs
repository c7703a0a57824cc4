//! The diesel store: diesel 2.3's query builder run through diesel-async 0.9
//! (`AsyncPgConnection` over tokio-postgres, `AsyncMysqlConnection` over mysql_async),
//! pooled by deadpool 0.13 with diesel-async's own pool manager.
//!
//! Statements, the same shapes as actix-web's SeaORM variant (servers/actix-web/src/orm.rs):
//! get user    = `users.find(id).select(User::as_select()).first(conn)`
//!               -> one `SELECT ... FROM users WHERE users.user_id = ? LIMIT ?`
//! update user = `diesel::update(users.find(id)).set((username, email, updated_at))`
//!               PostgreSQL: `.returning(..).get_result` -> one UPDATE ... RETURNING
//!                           (updated_at = CURRENT_TIMESTAMP, diesel's `now`)
//!               MySQL:      `.execute`, then the get above on the same connection
//!                           -> one UPDATE (updated_at = UTC_TIMESTAMP(6)) + one SELECT,
//!                           no SELECT when the UPDATE matched no row
//! database suite (webbench_common::suite, the same sequence as the other variants):
//! SELECT by primary key = the get above;
//! one row's UPDATE       = `diesel::update(users.find(id)).set((username, updated_at))
//!                          .execute(conn)` -> one `UPDATE users SET username = ?,
//!                          updated_at = ? WHERE users.user_id = ?`, values bound
//! fortunes               = `fortune.select((id, message)).load(conn)` -> one SELECT
//!
//! Every statement runs in autocommit on a connection taken from the pool: no
//! BEGIN/COMMIT, no ping on checkout (RecyclingMethod::Fast). diesel-async prepares
//! each statement once per connection and keeps it in its statement cache (every
//! statement here has a static query id and no SQL literal, so all are cacheable).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use chrono::{DateTime, NaiveDateTime, Utc};
use deadpool::managed::{PoolError, Timeouts};
use deadpool::Runtime;
use diesel::mysql::Mysql;
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::sql_types::Datetime;
use diesel::ConnectionError;
use diesel_async::pooled_connection::deadpool::Pool;
use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, ManagerConfig, PoolableConnection, RecyclingMethod,
};
use diesel_async::{AsyncMysqlConnection, AsyncPgConnection, RunQueryDsl};

use webbench_common::config::{Config, DbKind};
use webbench_common::contract::UserStore;
use webbench_common::db::User;
use webbench_common::suite::{Fortune, SuiteStore};

use crate::APPLICATION_NAME;

/// The tables on PostgreSQL: timestamptz columns.
pub mod pg {
    diesel::table! {
        users (user_id) {
            user_id -> Integer,
            username -> Varchar,
            email -> Nullable<Varchar>,
            created_at -> Timestamptz,
            updated_at -> Timestamptz,
            is_archived -> Bool,
        }
    }
    diesel::table! {
        fortune (id) {
            id -> Integer,
            message -> Varchar,
        }
    }
}

/// The tables on MySQL/MariaDB: DATETIME(6) columns holding UTC.
pub mod my {
    diesel::table! {
        users (user_id) {
            user_id -> Integer,
            username -> Varchar,
            email -> Nullable<Varchar>,
            created_at -> Datetime,
            updated_at -> Datetime,
            is_archived -> Bool,
        }
    }
    diesel::table! {
        fortune (id) {
            id -> Integer,
            message -> Varchar,
        }
    }
}

/// A `users` row on PostgreSQL.
#[derive(Queryable, Selectable)]
#[diesel(table_name = pg::users, check_for_backend(Pg))]
struct PgUser {
    user_id: i32,
    username: String,
    email: Option<String>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    is_archived: bool,
}

/// A `users` row on MySQL: DATETIME has no zone; the contract stores UTC there, so the
/// naive value is read and UTC attached (as the raw and SeaORM variants do).
#[derive(Queryable, Selectable)]
#[diesel(table_name = my::users, check_for_backend(Mysql))]
struct MyUser {
    user_id: i32,
    username: String,
    email: Option<String>,
    created_at: NaiveDateTime,
    updated_at: NaiveDateTime,
    is_archived: bool,
}

impl From<PgUser> for User {
    fn from(r: PgUser) -> User {
        User {
            user_id: r.user_id,
            username: r.username,
            email: r.email,
            created_at: r.created_at,
            updated_at: r.updated_at,
            is_archived: r.is_archived,
        }
    }
}

impl From<MyUser> for User {
    fn from(r: MyUser) -> User {
        User {
            user_id: r.user_id,
            username: r.username,
            email: r.email,
            created_at: r.created_at.and_utc(),
            updated_at: r.updated_at.and_utc(),
            is_archived: r.is_archived,
        }
    }
}

/// MySQL's `UTC_TIMESTAMP(6)`: the database clock in UTC with microseconds, what the
/// DATETIME(6) columns hold whatever the session time zone is. An expression type of
/// its own (diesel's documented way to add SQL it lacks) rather than `dsl::sql`, whose
/// literal makes diesel skip the statement cache: this one has a static query id, so
/// the UPDATE is prepared once per connection like every other statement.
#[derive(Debug, Clone, Copy, QueryId, diesel::expression::ValidGrouping)]
struct UtcTimestamp6;

impl Expression for UtcTimestamp6 {
    type SqlType = Datetime;
}

impl<QS> AppearsOnTable<QS> for UtcTimestamp6 {}

impl QueryFragment<Mysql> for UtcTimestamp6 {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Mysql>) -> QueryResult<()> {
        out.push_sql("UTC_TIMESTAMP(6)");
        Ok(())
    }
}

/// A pool checkout's or a statement's failure.
pub enum Error {
    Pool(PoolError<diesel_async::pooled_connection::PoolError>),
    Query(diesel::result::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Pool(e) => write!(f, "pool: {e}"),
            Error::Query(e) => write!(f, "{e}"),
        }
    }
}

impl From<PoolError<diesel_async::pooled_connection::PoolError>> for Error {
    fn from(e: PoolError<diesel_async::pooled_connection::PoolError>) -> Error {
        Error::Pool(e)
    }
}

impl From<diesel::result::Error> for Error {
    fn from(e: diesel::result::Error) -> Error {
        Error::Query(e)
    }
}

/// The diesel variant's store: one deadpool pool of the configured database.
pub enum DieselDb {
    Postgres(Pool<AsyncPgConnection>),
    Mysql(Pool<AsyncMysqlConnection>),
}

/// diesel-async's connection set-up callback type, with the future spelled out.
type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Pins the closure's signature to the one ManagerConfig::custom_setup takes.
fn setup<C, F>(f: F) -> Box<dyn Fn(&str) -> BoxFuture<'_, ConnectionResult<C>> + Send + Sync>
where
    F: Fn(&str) -> BoxFuture<'_, ConnectionResult<C>> + Send + Sync + 'static,
{
    Box::new(f)
}

fn bad_connection(e: impl fmt::Display) -> ConnectionError {
    ConnectionError::BadConnection(e.to_string())
}

/// Exactly `size` connections, all opened now (before the server binds): held at once,
/// then given back. No idle timeout or max lifetime (deadpool has none unless asked),
/// no ping on checkout, a 30 s wait for a free connection (sqlx's acquire_timeout in
/// the other variants).
async fn open_pool<C>(setup_fn: ManagerConfig<C>, size: u32) -> Result<Pool<C>, Error>
where
    C: PoolableConnection + Send + 'static,
    AsyncDieselConnectionManager<C>:
        deadpool::managed::Manager<Type = C, Error = diesel_async::pooled_connection::PoolError>,
{
    // The URL is unused: custom_setup builds the connection from typed settings.
    let manager = AsyncDieselConnectionManager::<C>::new_with_config("", setup_fn);
    let pool = Pool::builder(manager)
        .max_size(size as usize)
        .timeouts(Timeouts {
            wait: Some(Duration::from_secs(30)),
            create: None,
            recycle: None,
        })
        .runtime(Runtime::Tokio1)
        .build()
        .map_err(|e| Error::Query(diesel::result::Error::QueryBuilderError(Box::new(e))))?;
    let mut held = Vec::with_capacity(size as usize);
    for _ in 0..size {
        // Each one is held, so the next get has to open a new connection.
        held.push(pool.get().await?);
    }
    drop(held);
    Ok(pool)
}

/// The pool for `cfg.db` (PostgreSQL or MySQL; only called with a database).
pub async fn connect(cfg: &Config) -> Result<DieselDb, Error> {
    match cfg.db {
        DbKind::Postgres => {
            let mut pg = tokio_postgres::Config::new();
            pg.host(&cfg.db_host)
                .port(cfg.db_port)
                .user(&cfg.db_user)
                .password(&cfg.db_password)
                .dbname(&cfg.db_name)
                .application_name(APPLICATION_NAME)
                // No TLS: NoTls below, and sslmode=disable says so up front.
                .ssl_mode(tokio_postgres::config::SslMode::Disable);
            let mut mc = ManagerConfig::<AsyncPgConnection>::default();
            // No `SELECT 1` on every checkout (the default, Verified): one round trip
            // per request. A broken connection is still dropped (is_broken) and a dead
            // one surfaces as a query error.
            mc.recycling_method = RecyclingMethod::Fast;
            mc.custom_setup = setup(move |_url| {
                let pg = pg.clone();
                Box::pin(async move {
                    let (client, conn) = pg
                        .connect(tokio_postgres::NoTls)
                        .await
                        .map_err(bad_connection)?;
                    // Spawns the connection's driver on this (the main) runtime and
                    // sets TIME ZONE UTC and CLIENT_ENCODING UTF8, once.
                    AsyncPgConnection::try_from_client_and_connection(client, conn).await
                })
            });
            Ok(DieselDb::Postgres(open_pool(mc, cfg.pool_size).await?))
        }
        DbKind::Mysql => {
            let opts = mysql_async::OptsBuilder::default()
                .ip_or_hostname(cfg.db_host.clone())
                .tcp_port(cfg.db_port)
                .user(Some(cfg.db_user.clone()))
                .pass(Some(cfg.db_password.clone()))
                .db_name(Some(cfg.db_name.clone()))
                // TCP as the other variants; mysql_async would otherwise switch to
                // the server's Unix socket when it is on the same host.
                .prefer_socket(false)
                // What diesel-async's own establish sets: diesel-async caches the
                // prepared statements itself, and UPDATE counts matched rows (as
                // PostgreSQL and sqlx's CLIENT_FOUND_ROWS do).
                .stmt_cache_size(0)
                .client_found_rows(true);
            let mut mc = ManagerConfig::<AsyncMysqlConnection>::default();
            mc.recycling_method = RecyclingMethod::Fast;
            mc.custom_setup = setup(move |_url| {
                let opts = opts.clone();
                Box::pin(async move {
                    let conn = mysql_async::Conn::new(opts).await.map_err(bad_connection)?;
                    // Sets time_zone +00:00 and the utf8mb4 character sets, once.
                    AsyncMysqlConnection::try_from(conn).await
                })
            });
            Ok(DieselDb::Mysql(open_pool(mc, cfg.pool_size).await?))
        }
        DbKind::None => unreachable!("the diesel store is only opened with a database"),
    }
}

impl UserStore for DieselDb {
    type Error = Error;

    #[inline]
    fn has_database(&self) -> bool {
        true
    }

    /// One `SELECT ... FROM users WHERE users.user_id = ? LIMIT ?`.
    async fn get(&self, id: i32) -> Result<Option<User>, Error> {
        match self {
            DieselDb::Postgres(pool) => {
                let mut conn = pool.get().await?;
                let row = pg::users::table
                    .find(id)
                    .select(PgUser::as_select())
                    .first(&mut *conn)
                    .await
                    .optional()?;
                Ok(row.map(User::from))
            }
            DieselDb::Mysql(pool) => {
                let mut conn = pool.get().await?;
                let row = my::users::table
                    .find(id)
                    .select(MyUser::as_select())
                    .first(&mut *conn)
                    .await
                    .optional()?;
                Ok(row.map(User::from))
            }
        }
    }

    async fn update(
        &self,
        id: i32,
        username: String,
        email: String,
    ) -> Result<Option<User>, Error> {
        match self {
            DieselDb::Postgres(pool) => {
                use pg::users::dsl as u;
                let mut conn = pool.get().await?;
                // updated_at from the database clock (CURRENT_TIMESTAMP), like the raw
                // variant's now().
                let row = diesel::update(u::users.find(id))
                    .set((
                        u::username.eq(username),
                        u::email.eq(email),
                        u::updated_at.eq(diesel::dsl::now),
                    ))
                    .returning(PgUser::as_returning())
                    .get_result(&mut *conn)
                    .await
                    .optional()?;
                Ok(row.map(User::from))
            }
            DieselDb::Mysql(pool) => {
                use my::users::dsl as u;
                // Both statements on one connection, as the raw variant does.
                let mut conn = pool.get().await?;
                let matched = diesel::update(u::users.find(id))
                    .set((
                        u::username.eq(username),
                        u::email.eq(email),
                        u::updated_at.eq(UtcTimestamp6),
                    ))
                    .execute(&mut *conn)
                    .await?;
                // CLIENT_FOUND_ROWS: matched rows, so 0 means no such user.
                if matched == 0 {
                    return Ok(None);
                }
                let row = u::users
                    .find(id)
                    .select(MyUser::as_select())
                    .first(&mut *conn)
                    .await
                    .optional()?;
                Ok(row.map(User::from))
            }
        }
    }

    async fn close(&self) {
        match self {
            DieselDb::Postgres(pool) => pool.close(),
            DieselDb::Mysql(pool) => pool.close(),
        }
    }
}

impl SuiteStore for DieselDb {
    /// One `UPDATE users SET username = ?, updated_at = ? WHERE users.user_id = ?`.
    async fn update_row(
        &self,
        id: i32,
        username: &str,
        updated_at: DateTime<Utc>,
    ) -> Result<(), Error> {
        match self {
            DieselDb::Postgres(pool) => {
                use pg::users::dsl as u;
                let mut conn = pool.get().await?;
                diesel::update(u::users.find(id))
                    .set((u::username.eq(username), u::updated_at.eq(updated_at)))
                    .execute(&mut *conn)
                    .await?;
                Ok(())
            }
            DieselDb::Mysql(pool) => {
                use my::users::dsl as u;
                let mut conn = pool.get().await?;
                // DATETIME(6) holds naive UTC: the UTC wall-clock value is bound.
                diesel::update(u::users.find(id))
                    .set((
                        u::username.eq(username),
                        u::updated_at.eq(updated_at.naive_utc()),
                    ))
                    .execute(&mut *conn)
                    .await?;
                Ok(())
            }
        }
    }

    /// One `SELECT fortune.id, fortune.message FROM fortune`.
    async fn fortunes(&self) -> Result<Vec<Fortune>, Error> {
        let rows: Vec<(i32, String)> = match self {
            DieselDb::Postgres(pool) => {
                use pg::fortune::dsl as f;
                let mut conn = pool.get().await?;
                f::fortune
                    .select((f::id, f::message))
                    .load(&mut *conn)
                    .await?
            }
            DieselDb::Mysql(pool) => {
                use my::fortune::dsl as f;
                let mut conn = pool.get().await?;
                f::fortune
                    .select((f::id, f::message))
                    .load(&mut *conn)
                    .await?
            }
        };
        Ok(rows
            .into_iter()
            .map(|(id, message)| Fortune { id, message })
            .collect())
    }
}
