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
//! handlers. What is not actix-specific (configuration, the contract's parsing,
//! validation and bodies, the raw queries) is shared with axum: servers/_rscommon.

mod handlers;
mod orm;

use std::process::ExitCode;
use std::time::Duration;

use actix_web::web;
use actix_web::{App, HttpServer};
use webbench_common::config::{Config, DbKind};
use webbench_common::contract::AppState;
use webbench_common::db;
use webbench_common::suite::SuiteStore;

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
            Ok(store) => serve(cfg, store).await,
            Err(e) => {
                eprintln!("actix-web: cannot open the {} pool: {e}", cfg.db.as_str());
                ExitCode::FAILURE
            }
        }
    } else {
        match db::connect(&cfg, APPLICATION_NAME).await {
            Ok(store) => serve(cfg, store).await,
            Err(e) => {
                eprintln!("actix-web: cannot open the {} pool: {e}", cfg.db.as_str());
                ExitCode::FAILURE
            }
        }
    }
}

async fn serve<S: SuiteStore>(cfg: Config, db: S) -> ExitCode {
    let state = web::Data::new(AppState::new(&cfg, db));

    let app_state = state.clone();
    // No `.wrap(Logger)` (and no logger initialised): no per-request access log.
    let server = HttpServer::new(move || {
        App::new()
            .app_data(app_state.clone())
            .service(
                web::resource("/ping/")
                    .route(web::get().to(handlers::ping::<S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            .service(
                web::resource("/user/{id}/")
                    .route(web::get().to(handlers::get_user::<S>))
                    .route(web::patch().to(handlers::patch_user::<S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            .service(
                web::resource("/plain/")
                    .route(web::get().to(handlers::plain::<S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            .service(
                web::resource("/to_json/")
                    .route(web::get().to(handlers::to_json::<S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            // The database suite (CONTRACT.md section 6).
            .service(
                web::resource("/queries/")
                    .route(web::get().to(handlers::queries::<S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            .service(
                web::resource("/updates/")
                    .route(web::get().to(handlers::updates::<S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            .service(
                web::resource("/fortunes/")
                    .route(web::get().to(handlers::fortunes::<S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            .service(
                web::resource("/cached/")
                    .route(web::get().to(handlers::cached::<S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            // Unknown routes get the contract's JSON error, not actix's empty 404.
            .default_service(web::to(handlers::not_found))
    })
    // BENCH_WORKERS worker threads, each with its own single-threaded runtime.
    .workers(cfg.workers)
    // The harness stops the server between cases; don't linger 30 s (actix's
    // default) on idle keep-alive connections during graceful shutdown.
    .shutdown_timeout(5)
    // Same idle keep-alive as actix's default, stated: wrk keeps connections busy.
    .keep_alive(Duration::from_secs(5));

    let server = match server.bind((cfg.host.as_str(), cfg.port)) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("actix-web: cannot bind {}:{}: {e}", cfg.host, cfg.port);
            state.db.close().await;
            return ExitCode::FAILURE;
        }
    };

    let result = server.run().await;
    // Persistent connections are closed at shutdown, not left to the OS.
    state.db.close().await;
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("actix-web: server error: {e}");
            ExitCode::FAILURE
        }
    }
}
