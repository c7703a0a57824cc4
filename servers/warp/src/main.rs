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

use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tower_http::compression::Compression;
use webbench_common::http1;
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
///
/// With BENCH_COMPRESSION=1 the same routes, as warp::service(routes) inside tower-http's
/// Compression (its defaults: gzip at level 6, br at quality 4, bodies of 32 bytes and
/// more, never a Range answer), served by hyper's HTTP/1.1 connection
/// (webbench_common::http1, hyper's own server's accept loop): warp::serve takes only
/// warp filters, and warp's own compression filters do not negotiate (the manifest's
/// notes.compression).
async fn serve(listener: TcpListener, state: State, stop: Stop) {
    let routes = routes::routes(state.clone());
    if state.compression {
        let service = TowerToHyperService::new(Compression::new(warp::service(routes)));
        http1::serve(listener, service, stop).await
    } else {
        warp::serve(routes)
            .incoming(listener)
            .graceful(async move { stop.requested().await })
            .run()
            .await
    }
}
