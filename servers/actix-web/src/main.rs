//! actix-web 4 + sqlx 0.8 server for the web-framework benchmark harness.
//!
//! One process: actix-web's own worker threads (`BENCH_WORKERS`) share one sqlx pool
//! whose size is the whole connection budget (`BENCH_DB_POOL_SIZE`), because the
//! manifest declares `concurrency = "threads"`. Configuration comes only from the
//! environment (servers/README.md).
//!
//! Two variants: raw sqlx queries (webbench_common::db, `BENCH_ORM=0`) and SeaORM 1.x
//! over the same sqlx pool (orm.rs, `BENCH_ORM=1`). The handlers are generic over the
//! store, so the choice is made once here and each variant runs its own monomorphised
//! handlers. The routes, handlers and HttpServer settings are servers/_rsactix
//! (shared with servers/actix-diesel); what is not actix-specific (configuration, the
//! contract's parsing, validation and bodies, the raw queries) is shared with axum:
//! servers/_rscommon.

mod orm;

use std::process::ExitCode;

use webbench_actix_common::serve;
use webbench_common::config::{Config, DbKind};
use webbench_common::db;

/// BENCH_SERVER_ID's default.
const SERVER: &str = "actix-web";
/// What the connections call themselves on PostgreSQL (pg_stat_activity).
pub(crate) const APPLICATION_NAME: &str = "webbench-actix";

#[actix_web::main]
async fn main() -> ExitCode {
    let cfg = match Config::from_env(SERVER, Some("SeaORM")) {
        Ok(cfg) => cfg,
        Err(e) => {
            eprintln!("actix-web: configuration error: {e}");
            return ExitCode::FAILURE;
        }
    };

    // Opened here, on the main runtime, before the server accepts anything: every
    // connection of the budget exists by the time /ping/ answers. With BENCH_DB=none
    // there is nothing for an ORM to do: both variants then use the raw store's
    // "no database" answers (and /ping/ still reports the variant asked for).
    if cfg.orm && cfg.db != DbKind::None {
        match orm::connect(&cfg).await {
            Ok(store) => serve(SERVER, cfg, store).await,
            Err(e) => {
                eprintln!("actix-web: cannot open the {} pool: {e}", cfg.db.as_str());
                ExitCode::FAILURE
            }
        }
    } else {
        match db::connect(&cfg, APPLICATION_NAME).await {
            Ok(store) => serve(SERVER, cfg, store).await,
            Err(e) => {
                eprintln!("actix-web: cannot open the {} pool: {e}", cfg.db.as_str());
                ExitCode::FAILURE
            }
        }
    }
}
