//! hyper 1.x + tokio + sqlx 0.8 server for the web-framework benchmark harness, with no
//! framework: an accept loop, hyper's HTTP/1.1 connection per socket, and one
//! `service_fn` that routes by hand (src/handlers.rs).
//!
//! One process: a multi-threaded tokio runtime with exactly `BENCH_WORKERS` worker
//! threads (built by hand, as in servers/axum) serves every connection, and all of them
//! share one sqlx pool whose size is the whole connection budget
//! (`BENCH_DB_POOL_SIZE`), because the manifest declares `concurrency = "threads"`.
//! Configuration comes only from the environment (servers/README.md). What is not
//! hyper-specific (configuration, the contract's parsing, validation and bodies, the
//! sqlx pool and queries, the database suite, and the process around the server:
//! runtime, signals, listener with TCP_NODELAY, graceful stop) is servers/_rscommon,
//! shared with the other Rust servers (serve.rs: with axum and warp). So are the TLS
//! and h2c listeners the harness may ask for besides HTTP/1.1 (listeners.rs, with axum),
//! which serve the same `service_fn` with hyper's HTTP/1 and HTTP/2 connections.

mod handlers;
mod ws;

use std::convert::Infallible;
use std::process::ExitCode;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::service::TowerToHyperService;
use tower::Layer;
use tower_http::compression::CompressionLayer;
use webbench_common::config;
use webbench_common::http1;
use webbench_common::serve::{self, State};

use handlers::{App, Response};

fn main() -> ExitCode {
    // BENCH_SERVER_ID's default; no ORM variant (manifest: orm = [false]). The same
    // service on the TLS / h2c listeners when BENCH_TLS_PORT / BENCH_H2C_PORT ask for
    // them. With BENCH_COMPRESSION=1 that service is tower-http's Compression around the
    // same handler, another type, so it is chosen here (a value that is neither is
    // refused by the configuration, which stops the start with the reason).
    if config::compression_from_env().unwrap_or(false) {
        serve::main_with_protocols(
            "hyper",
            |listener, state, stop| http1::serve(listener, compressed(state), stop),
            compressed,
        )
    } else {
        serve::main_with_protocols(
            "hyper",
            |listener, state, stop| http1::serve(listener, service(state), stop),
            service,
        )
    }
}

/// The one service of every connection, whatever its listener: each request clones the
/// Arc into its future (hyper's Service takes &self and returns an owned future). The
/// accept loop is webbench_common::http1's: an HTTP/1.1-only hyper connection per socket.
fn service(
    state: State,
) -> impl hyper::service::Service<
    hyper::Request<Incoming>,
    Response = Response,
    Error = Infallible,
    Future = impl std::future::Future<Output = Result<Response, Infallible>> + Send,
> + Clone
       + Send
       + 'static {
    let app = Arc::new(App::new(state));
    service_fn(move |req| handlers::respond(app.clone(), req))
}

/// What the compressed stack answers: the same responses, their bodies through
/// tower-http's encoder (or passed as they are when not compressed).
type Compressed = hyper::Response<tower_http::compression::CompressionBody<handlers::Body>>;

/// [`service`] as a tower service inside tower-http's Compression (its defaults: gzip
/// at level 6, br at quality 4, bodies of 32 bytes and more), served by hyper through
/// hyper-util's TowerToHyperService.
fn compressed(
    state: State,
) -> impl hyper::service::Service<
    hyper::Request<Incoming>,
    Response = Compressed,
    Error = Infallible,
    Future = impl std::future::Future<Output = Result<Compressed, Infallible>> + Send,
> + Clone
       + Send
       + 'static {
    let app = Arc::new(App::new(state));
    let handler = tower::service_fn(move |req| handlers::respond(app.clone(), req));
    TowerToHyperService::new(CompressionLayer::new().layer(handler))
}
