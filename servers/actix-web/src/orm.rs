//! The ORM variant (`BENCH_ORM=1`): SeaORM 1.x over the very same sqlx driver and pool
//! settings as the raw variant, so the two rows differ only by the ORM layer.
//!
//! get user    = `Entity::find_by_id(id).one(db)`                   -> one SELECT
//! update user = `Entity::update_many().set(..).filter(pk = id)`
//!               PostgreSQL: `.exec_with_returning(db)`             -> one UPDATE ... RETURNING
//!               MySQL:      `.exec(db)`, then `find_by_id(id).one` -> one UPDATE + one SELECT
//!                           (no SELECT when the UPDATE matched no row)
//!
//! The database suite (webbench_common::suite, the same sequence as the raw variant):
//! SELECT by primary key = `Entity::find_by_id(id).one(db)` (as get user);
//! one row's UPDATE       = `Entity::update_many().set(ActiveModel { username,
//!                          updated_at }).filter(pk = id).exec(db)`, one per row
//!                          -> one `UPDATE users SET username, updated_at WHERE user_id`
//! fortunes               = `fortune::Entity::find().all(db)` -> one SELECT
//!
//! SeaORM runs each statement in autocommit on a connection taken from the pool: no
//! BEGIN/COMMIT, no ping. Its statements are prepared once per connection and cached
//! by sqlx, exactly like the raw variant's.

use sea_orm::prelude::DateTimeUtc;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, DbBackend, DbErr,
    EntityTrait, QueryFilter, SqlxMySqlConnector, SqlxPostgresConnector,
};
use sqlx::ConnectOptions;

use webbench_common::config::{Config, DbKind};
use webbench_common::contract::UserStore;
use webbench_common::db::{my_connect_options, open_pool, pg_connect_options, User};
use webbench_common::suite::{Fortune, SuiteStore};

use crate::APPLICATION_NAME;

/// The contract's `users` table as a SeaORM entity.
pub mod user {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "users")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub user_id: i32,
        pub username: String,
        pub email: Option<String>,
        /// timestamptz on PostgreSQL; DATETIME(6) holding UTC on MySQL (sqlx reads
        /// it as naive UTC and attaches UTC, as the raw variant does by hand).
        pub created_at: DateTimeUtc,
        pub updated_at: DateTimeUtc,
        pub is_archived: bool,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// The suite's `fortune` table as a SeaORM entity.
pub mod fortune {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "fortune")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i32,
        pub message: String,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

impl From<user::Model> for User {
    fn from(m: user::Model) -> User {
        User {
            user_id: m.user_id,
            username: m.username,
            email: m.email,
            created_at: m.created_at,
            updated_at: m.updated_at,
            is_archived: m.is_archived,
        }
    }
}

pub struct OrmDb {
    conn: DatabaseConnection,
    backend: DbBackend,
}

/// Opens the pool exactly as the raw variant does (webbench_common::db: max = min =
/// BENCH_DB_POOL_SIZE, every connection opened before this returns, no idle timeout
/// or max lifetime, test_before_acquire off, TLS off) and hands it to SeaORM with its
/// documented `from_sqlx_*_pool` constructors. `disable_statement_logging` is what
/// SeaORM's `ConnectOptions::sqlx_logging(false)` sets. Only called with a database.
pub async fn connect(cfg: &Config) -> Result<OrmDb, sqlx::Error> {
    let conn = match cfg.db {
        DbKind::Postgres => {
            let opts = pg_connect_options(cfg, APPLICATION_NAME).disable_statement_logging();
            SqlxPostgresConnector::from_sqlx_postgres_pool(open_pool(opts, cfg.pool_size).await?)
        }
        DbKind::Mysql => {
            let opts = my_connect_options(cfg).disable_statement_logging();
            SqlxMySqlConnector::from_sqlx_mysql_pool(open_pool(opts, cfg.pool_size).await?)
        }
        DbKind::None => unreachable!("the ORM store is only opened with a database"),
    };
    let backend = conn.get_database_backend();
    Ok(OrmDb { conn, backend })
}

impl UserStore for OrmDb {
    type Error = DbErr;

    #[inline]
    fn has_database(&self) -> bool {
        true
    }

    /// One `SELECT ... FROM users WHERE user_id = ? LIMIT ?`.
    async fn get(&self, id: i32) -> Result<Option<User>, DbErr> {
        let found = user::Entity::find_by_id(id).one(&self.conn).await?;
        Ok(found.map(User::from))
    }

    async fn update(
        &self,
        id: i32,
        username: String,
        email: String,
    ) -> Result<Option<User>, DbErr> {
        let fields = user::ActiveModel {
            username: Set(username),
            email: Set(Some(email)),
            ..Default::default()
        };
        let update = user::Entity::update_many()
            .set(fields)
            .filter(user::Column::UserId.eq(id));
        match self.backend {
            DbBackend::Postgres => {
                // updated_at from the database clock, like the raw variant's now().
                let rows = update
                    .col_expr(user::Column::UpdatedAt, Expr::current_timestamp().into())
                    .exec_with_returning(&self.conn)
                    .await?;
                Ok(rows.into_iter().next().map(User::from))
            }
            _ => {
                // MySQL has no RETURNING. UTC_TIMESTAMP(6): DATETIME(6) holds UTC with
                // microseconds whatever the session time zone is.
                let done = update
                    .col_expr(user::Column::UpdatedAt, Expr::cust("UTC_TIMESTAMP(6)"))
                    .exec(&self.conn)
                    .await?;
                // sqlx connects with CLIENT_FOUND_ROWS: matched rows, so 0 means no
                // such user and no SELECT is needed.
                if done.rows_affected == 0 {
                    return Ok(None);
                }
                // Autocommit: the UPDATE is committed, so the next pooled connection
                // reads the stored row.
                self.get(id).await
            }
        }
    }

    async fn close(&self) {
        if let Err(e) = self.conn.close_by_ref().await {
            eprintln!("database error on close: {e}");
        }
    }
}

impl SuiteStore for OrmDb {
    /// One `UPDATE users SET username = ?, updated_at = ? WHERE user_id = ?`, the
    /// values bound. Not `ActiveModel::update`: SeaORM's single-model update returns
    /// the updated model, which on MySQL (no RETURNING) is a SELECT after every
    /// UPDATE; `update_many` with the same ActiveModel and a primary-key filter is
    /// SeaORM's plain UPDATE on both engines.
    async fn update_row(
        &self,
        id: i32,
        username: &str,
        updated_at: DateTimeUtc,
    ) -> Result<(), DbErr> {
        let fields = user::ActiveModel {
            username: Set(username.to_owned()),
            updated_at: Set(updated_at),
            ..Default::default()
        };
        user::Entity::update_many()
            .set(fields)
            .filter(user::Column::UserId.eq(id))
            .exec(&self.conn)
            .await?;
        Ok(())
    }

    /// One `SELECT id, message FROM fortune`.
    async fn fortunes(&self) -> Result<Vec<Fortune>, DbErr> {
        let rows = fortune::Entity::find().all(&self.conn).await?;
        Ok(rows
            .into_iter()
            .map(|m| Fortune {
                id: m.id,
                message: m.message,
            })
            .collect())
    }
}
