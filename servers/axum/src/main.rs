//! axum 0.8 + tokio + sqlx 0.8 server for the web-framework benchmark harness.
//!
//! One process: a multi-threaded tokio runtime with exactly `BENCH_WORKERS` worker
//! threads (built by hand, not `#[tokio::main]`'s one-per-core default) serves every
//! connection, and all of them share one sqlx pool whose size is the whole connection
//! budget (`BENCH_DB_POOL_SIZE`), because the manifest declares
//! `concurrency = "threads"`. Configuration comes only from the environment
//! (servers/README.md). What is not axum-specific (configuration, the contract's
//! parsing, validation and bodies, the sqlx pool and queries) is shared with
//! actix-web: servers/_rscommon.

mod handlers;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use axum::routing::{get, patch};
use axum::serve::ListenerExt;
use axum::Router;
use tokio::net::TcpListener;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::Notify;
use webbench_common::config::Config;
use webbench_common::contract::AppState;
use webbench_common::db;

/// BENCH_SERVER_ID's default; no ORM variant (manifest: orm = [false]), so
/// BENCH_ORM=1 is refused at start-up.
const SERVER: &str = "axum";
/// What the connections call themselves on PostgreSQL (pg_stat_activity).
const APPLICATION_NAME: &str = "webbench-axum";

/// After SIGTERM: how long in-flight requests may take to finish before the process
/// exits anyway (idle keep-alive connections are closed at once).
const GRACE: Duration = Duration::from_millis(1500);
/// Then how long closing the pool's connections may take.
const POOL_CLOSE: Duration = Duration::from_millis(500);

fn main() -> ExitCode {
    let cfg = match Config::from_env(SERVER, None) {
        Ok(cfg) => cfg,
        Err(e) => {
            eprintln!("axum: configuration error: {e}");
            return ExitCode::FAILURE;
        }
    };

    // Exactly BENCH_WORKERS worker threads: the harness's count for a work-stealing
    // runtime (the usable CPUs, at most W; README "Fairness"). The main thread only waits in block_on (it does not drive the I/O
    // driver of a multi-threaded runtime), so the workers do all the work.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cfg.workers)
        .thread_name("axum-worker")
        .enable_io()
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("axum: cannot build the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(run(cfg));
    // Whatever is still running (a connection past the grace period) is dropped.
    runtime.shutdown_timeout(Duration::from_millis(200));
    code
}

async fn run(cfg: Config) -> ExitCode {
    // Installed first, so a SIGTERM during start-up is a clean stop too.
    let (mut sigterm, mut sigint) = match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(t), Ok(i)) => (t, i),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("axum: cannot install signal handlers: {e}");
            return ExitCode::FAILURE;
        }
    };

    // Opened before the server listens: every connection of the budget exists by the
    // time /ping/ answers.
    let db = match db::connect(&cfg, APPLICATION_NAME).await {
        Ok(db) => db,
        Err(e) => {
            eprintln!("axum: cannot open the {} pool: {e}", cfg.db.as_str());
            return ExitCode::FAILURE;
        }
    };

    let state = Arc::new(AppState::new(&cfg, db));

    // No tracing/TraceLayer and no middleware at all: no per-request access log.
    // Each known path gets its own 405 fallback (like actix's per-resource
    // default_service); any other path gets the router's 404 fallback.
    let app = Router::new()
        .route(
            "/ping/",
            get(handlers::ping).fallback(handlers::method_not_allowed),
        )
        .route(
            "/user/{id}/",
            get(handlers::get_user)
                .merge(patch(handlers::patch_user))
                .fallback(handlers::method_not_allowed),
        )
        .route(
            "/plain/",
            get(handlers::plain).fallback(handlers::method_not_allowed),
        )
        .route(
            "/to_json/",
            get(handlers::to_json).fallback(handlers::method_not_allowed),
        )
        // The database suite (CONTRACT.md section 6).
        .route(
            "/queries/",
            get(handlers::queries).fallback(handlers::method_not_allowed),
        )
        .route(
            "/updates/",
            get(handlers::updates).fallback(handlers::method_not_allowed),
        )
        .route(
            "/fortunes/",
            get(handlers::fortunes).fallback(handlers::method_not_allowed),
        )
        .route(
            "/cached/",
            get(handlers::cached).fallback(handlers::method_not_allowed),
        )
        .fallback(handlers::not_found)
        .with_state(state.clone());

    let listener = match TcpListener::bind((cfg.host.as_str(), cfg.port)).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("axum: cannot bind {}:{}: {e}", cfg.host, cfg.port);
            state.db.close().await;
            return ExitCode::FAILURE;
        }
    };
    // TCP_NODELAY on every accepted connection, as actix-web sets it: a response is
    // sent at once, not held back by Nagle's algorithm waiting for the client's ACK.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });

    let stop = Arc::new(Notify::new());
    let stop_signal = stop.clone();
    // The accept loop runs as a task on the worker threads (not in block_on on the
    // main thread), and hyper spawns one task per connection there too.
    let mut server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move { stop_signal.notified().await })
            .await
    });

    let mut code = ExitCode::SUCCESS;
    tokio::select! {
        _ = sigterm.recv() => {}
        _ = sigint.recv() => {}
        result = &mut server => {
            // serve() only returns on its own when accepting fails for good.
            eprintln!("axum: server stopped: {result:?}");
            code = ExitCode::FAILURE;
        }
    }

    // Graceful shutdown: stop accepting, close idle keep-alive connections, let
    // in-flight requests finish, but never for longer than GRACE.
    stop.notify_one();
    if !server.is_finished() && tokio::time::timeout(GRACE, &mut server).await.is_err() {
        eprintln!("axum: connections still open after {GRACE:?}; exiting anyway");
        server.abort();
    }
    // Persistent connections are closed at shutdown, not left to the OS (bounded:
    // a request aborted above may still hold a connection).
    if tokio::time::timeout(POOL_CLOSE, state.db.close())
        .await
        .is_err()
    {
        eprintln!("axum: the pool did not close within {POOL_CLOSE:?}");
    }
    code
}
