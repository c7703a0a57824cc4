//! actix-web 4 + diesel 2.3 (through diesel-async 0.9) server for the web-framework
//! benchmark harness: the diesel row next to actix-web's raw sqlx and SeaORM rows.
//!
//! One process: actix-web's own worker threads (`BENCH_WORKERS`) share one deadpool
//! pool of diesel-async connections whose size is the whole connection budget
//! (`BENCH_DB_POOL_SIZE`), because the manifest declares `concurrency = "threads"`.
//! The routes, handlers and HttpServer settings are actix-web's own binary's
//! (servers/_rsactix), so this row differs from actix-web's only by the store
//! (store.rs). Configuration comes only from the environment (servers/README.md).

mod store;

use std::process::ExitCode;

use webbench_actix_common::serve;
use webbench_common::config::{Config, DbKind};
use webbench_common::db;

/// BENCH_SERVER_ID's default.
const SERVER: &str = "actix-diesel";
/// What the connections call themselves on PostgreSQL (pg_stat_activity).
pub(crate) const APPLICATION_NAME: &str = "webbench-actix-diesel";

#[actix_web::main]
async fn main() -> ExitCode {
    let cfg = match Config::from_env(SERVER, Some("diesel")) {
        Ok(cfg) => cfg,
        Err(e) => {
            eprintln!("{SERVER}: configuration error: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Only the ORM variant with a database (manifest orm = [true]): the raw row of this
    // framework is actix-web's (servers/actix-web, the same routing code with raw sqlx).
    // BENCH_DB=none (the harness's plain and to_json cases, started with BENCH_ORM=0)
    // has no store to choose.
    if !cfg.orm && cfg.db != DbKind::None {
        eprintln!(
            "{SERVER}: configuration error: BENCH_ORM=0: this server only has the diesel \
             variant (the raw one is actix-web's)"
        );
        return ExitCode::FAILURE;
    }

    // Opened here, on the main runtime, before the server accepts anything: every
    // connection of the budget exists by the time /ping/ answers. With BENCH_DB=none
    // there is nothing for diesel to do: the "no database" answers are the shared
    // crate's (webbench_common::db::Db::None, no connection), as in actix-web's binary.
    if cfg.db == DbKind::None {
        return match db::connect(&cfg, APPLICATION_NAME).await {
            Ok(store) => serve(SERVER, cfg, store).await,
            Err(e) => {
                eprintln!("{SERVER}: {e}");
                ExitCode::FAILURE
            }
        };
    }
    match store::connect(&cfg).await {
        Ok(store) => serve(SERVER, cfg, store).await,
        Err(e) => {
            eprintln!("{SERVER}: cannot open the {} pool: {e}", cfg.db.as_str());
            ExitCode::FAILURE
        }
    }
}
