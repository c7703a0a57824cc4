//! hyper 1's HTTP/1.1 connection on the main listener (BENCH_PORT), for a server that
//! runs its own accept loop: servers/hyper always, and servers/warp when it runs
//! tower-http's compression (warp::serve takes only warp filters, not a tower stack;
//! warp's documented way to tower middleware is `warp::service`, served by hyper).
//! The connection settings are hyper's defaults, stated (servers/hyper's manifest
//! notes say why each is what it is).

use std::error::Error as StdError;

use hyper::body::{Body, Incoming};
use hyper::server::conn::http1;
use hyper::service::Service;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

use crate::serve::{accept, Stop};

/// hyper's HTTP/1.1 connection settings: its defaults, stated.
pub fn builder() -> http1::Builder {
    let mut http = http1::Builder::new();
    http
        // Persistent connections (HTTP/1.1's default, and HTTP/1.0's keep-alive).
        .keep_alive(true)
        // A Date header on every response, from hyper's once-a-second cache.
        .auto_date_header(true)
        // Each response is flushed when written; no waiting for a pipelined next one.
        .pipeline_flush(false);
    // No timer, so no header-read timeout (hyper's 30 s default only applies with a
    // timer) and no max_buf_size / max_headers change.
    http
}

/// Accepts until the stop is requested, serving each connection with `service` over
/// hyper's HTTP/1.1 connection (no sniffing for HTTP/2), then tells every open
/// connection to finish (hyper's graceful_shutdown: an idle one closes at once, a busy
/// one after its response) and returns when all of them have. Accepted sockets have
/// TCP_NODELAY from the listener (serve::listen).
pub async fn serve<S, B>(listener: TcpListener, service: S, stop: Stop)
where
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn StdError + Send + Sync>>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    let http = builder();
    let graceful = GracefulShutdown::new();
    while let Some(stream) = accept(&listener, &stop, "HTTP/1.1").await {
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
