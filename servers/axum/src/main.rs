//! axum 0.8 + tokio + sqlx 0.8 server for the web-framework benchmark harness.
//!
//! One process: a multi-threaded tokio runtime with exactly `BENCH_WORKERS` worker
//! threads (built by hand, not `#[tokio::main]`'s one-per-core default) serves every
//! connection, and all of them share one sqlx pool whose size is the whole connection
//! budget (`BENCH_DB_POOL_SIZE`), because the manifest declares
//! `concurrency = "threads"`. Configuration comes only from the environment
//! (servers/README.md). What is not axum-specific (configuration, the contract's
//! parsing, validation and bodies, the sqlx pool and queries, and the process around
//! the server: runtime, signals, listener with TCP_NODELAY, graceful stop) is
//! servers/_rscommon, shared with the other Rust servers (serve.rs: with hyper and warp).
//! So are the TLS and h2c listeners the harness may ask for besides HTTP/1.1
//! (listeners.rs, with hyper): they serve this same router through hyper 1's own HTTP/1
//! and HTTP/2 connections, axum::serve keeps the main listener.

mod handlers;

use std::future::IntoFuture;
use std::process::ExitCode;

use axum::routing::{get, patch};
use axum::Router;
use hyper_util::service::TowerToHyperService;
use webbench_common::serve::{self, State, Stop};

fn main() -> ExitCode {
    // BENCH_SERVER_ID's default; no ORM variant (manifest: orm = [false]). The router
    // is also served on the TLS / h2c listeners when BENCH_TLS_PORT / BENCH_H2C_PORT
    // ask for them (as axum::serve makes a hyper service of it: TowerToHyperService).
    serve::main_with_protocols("axum", serve, |state| {
        TowerToHyperService::new(router(state))
    })
}

/// axum's own accept loop on the main listener (HTTP/1.1).
fn serve(
    listener: tokio::net::TcpListener,
    state: State,
    stop: Stop,
) -> impl std::future::Future<Output = std::io::Result<()>> {
    let app = router(state);
    // with_graceful_shutdown: on the stop, axum stops accepting, closes idle keep-alive
    // connections and returns once in-flight requests have finished. serve() returns
    // on its own only when accepting fails for good.
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { stop.requested().await })
        .into_future()
}

/// The contract's routes. No tracing/TraceLayer and no middleware at all: no
/// per-request access log. Each known path gets its own 405 fallback (like actix's
/// per-resource default_service); any other path gets the router's 404 fallback.
fn router(state: State) -> Router {
    Router::new()
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
        .with_state(state)
}
