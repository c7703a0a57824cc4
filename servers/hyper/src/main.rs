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

use std::convert::Infallible;
use std::process::ExitCode;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use webbench_common::serve::{self, State, Stop};

fn main() -> ExitCode {
    // BENCH_SERVER_ID's default; no ORM variant (manifest: orm = [false]). The same
    // service on the TLS / h2c listeners when BENCH_TLS_PORT / BENCH_H2C_PORT ask for them.
    serve::main_with_protocols("hyper", serve, service)
}

/// The one service of every connection, whatever its listener: each request clones the
/// Arc into its future (hyper's Service takes &self and returns an owned future).
fn service(
    state: State,
) -> impl hyper::service::Service<
    hyper::Request<hyper::body::Incoming>,
    Response = handlers::Response,
    Error = Infallible,
    Future = impl std::future::Future<Output = Result<handlers::Response, Infallible>> + Send,
> + Clone
       + Send
       + 'static {
    service_fn(move |req| {
        let state = state.clone();
        async move { Ok::<_, Infallible>(handlers::handle(&state, req).await) }
    })
}

/// hyper's HTTP/1.1 connection settings: its defaults, stated (manifest [notes]).
fn http1_builder() -> http1::Builder {
    let mut http = http1::Builder::new();
    http
        // Persistent connections (HTTP/1.1's default, and HTTP/1.0's keep-alive).
        .keep_alive(true)
        // A Date header on every response, from hyper's once-a-second cache.
        .auto_date_header(true)
        // Each response is flushed when written; no waiting for a pipelined next one.
        .pipeline_flush(false);
    // No timer, so no header-read timeout (hyper's 30 s default only applies with a
    // timer) and no max_buf_size / max_headers change: see the manifest's notes.
    http
}

/// Accepts until the stop is requested, then tells every open connection to finish
/// (hyper's graceful_shutdown: an idle one closes at once, a busy one after its
/// response) and returns when all of them have. Accepted sockets have TCP_NODELAY
/// from the listener (serve::listen).
async fn serve(listener: TcpListener, state: State, stop: Stop) {
    let http = http1_builder();
    let graceful = GracefulShutdown::new();
    let service = service(state);
    loop {
        let Some(stream) = serve::accept(&listener, &stop, "HTTP/1.1").await else {
            break;
        };
        // One service per connection (a clone: one more reference to the state).
        let conn = graceful.watch(http.serve_connection(TokioIo::new(stream), service.clone()));
        tokio::spawn(async move {
            // A connection error (a client gone mid-request, a malformed request
            // hyper already answered with 400) is that connection's end: no log.
            let _ = conn.await;
        });
    }
    drop(listener);
    graceful.shutdown().await;
}
