//! warp 0.4 + tokio + sqlx 0.8 server for the web-framework benchmark harness.
//!
//! One process: a multi-threaded tokio runtime with exactly `BENCH_WORKERS` worker
//! threads serves every connection through `warp::serve`, and all of them share one
//! sqlx pool whose size is the whole connection budget (`BENCH_DB_POOL_SIZE`), because
//! the manifest declares `concurrency = "threads"`: axum's model. Configuration comes
//! only from the environment (servers/README.md). What is not warp-specific
//! (configuration, the contract's parsing, validation and bodies, the sqlx pool and
//! queries, the database suite, and the process around the server: runtime, signals,
//! listener with TCP_NODELAY, graceful stop) is servers/_rscommon, shared with the
//! other Rust servers (serve.rs: with axum and hyper).

mod handlers;
mod routes;

use std::process::ExitCode;

use tokio::net::TcpListener;
use webbench_common::serve::{self, State, Stop};

fn main() -> ExitCode {
    // BENCH_SERVER_ID's default; no ORM variant (manifest: orm = [false]).
    serve::main("warp", serve)
}

/// warp's own accept loop over the contract's routes; it spawns one task per
/// connection. graceful(): on the stop it stops accepting, tells every connection to
/// finish (idle keep-alive ones close at once) and returns once all have. Accepted
/// sockets have TCP_NODELAY from the listener (serve::listen): warp 0.4's server offers
/// no hook on accepted connections (its acceptor trait is private). run() never returns
/// on its own (accept errors are retried).
async fn serve(listener: TcpListener, state: State, stop: Stop) {
    warp::serve(routes::routes(state))
        .incoming(listener)
        .graceful(async move { stop.requested().await })
        .run()
        .await
}
