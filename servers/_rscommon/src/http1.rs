//! hyper 1's HTTP/1.1 connection on the main listener (BENCH_PORT), for a server that
//! runs its own accept loop: servers/hyper always, and servers/warp when it runs
//! tower-http's compression (warp::serve takes only warp filters, not a tower stack;
//! warp's documented way to tower middleware is `warp::service`, served by hyper).
//! The connection settings are hyper's defaults, stated (servers/hyper's manifest
//! notes say why each is what it is). Every connection is served `with_upgrades()`, so
//! that a request's `hyper::upgrade::on` (the WebSocket echo's `GET /ws/`) gets the
//! connection once the 101 is written; hyper-util's GracefulShutdown has no impl for that
//! connection type (http1::UpgradeableConnection), so [`Upgrades`] does its work for it.

use std::error::Error as StdError;
use std::pin::pin;

use hyper::body::{Body, Incoming};
use hyper::server::conn::http1::{self, UpgradeableConnection};
use hyper::service::Service;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;

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
    let graceful = Upgrades::new();
    while let Some(stream) = accept(&listener, &stop, "HTTP/1.1").await {
        // One service per connection (a clone: one more reference to the state).
        let conn = http
            .serve_connection(TokioIo::new(stream), service.clone())
            .with_upgrades();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            // A connection error (a client gone mid-request, a malformed request
            // hyper already answered with 400) is that connection's end: no log.
            let _ = watcher.watch(conn).await;
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// hyper-util's GracefulShutdown (the same watch channel) for hyper's HTTP/1 connection
/// served with upgrades: [`Upgrades::shutdown`] tells every watched connection to finish
/// (hyper's graceful_shutdown: an idle one closes at once, a busy one after its response)
/// and returns once all of them have. A connection already upgraded (a WebSocket) has
/// left hyper and is not waited for, as under axum::serve.
pub struct Upgrades(watch::Sender<()>);

/// One connection's side of [`Upgrades`], taken before its task is spawned.
pub struct UpgradesWatcher(watch::Receiver<()>);

impl Upgrades {
    pub fn new() -> Upgrades {
        Upgrades(watch::channel(()).0)
    }

    pub fn watcher(&self) -> UpgradesWatcher {
        UpgradesWatcher(self.0.subscribe())
    }

    /// Signals every watcher, then waits until each has dropped (its connection ended).
    pub async fn shutdown(self) {
        let _ = self.0.send(());
        self.0.closed().await;
    }
}

impl Default for Upgrades {
    fn default() -> Upgrades {
        Upgrades::new()
    }
}

impl UpgradesWatcher {
    /// Serves `conn` to its end, asking it to finish gracefully once the shutdown is
    /// signalled.
    pub async fn watch<I, S, B>(mut self, conn: UpgradeableConnection<I, S>) -> hyper::Result<()>
    where
        S: Service<Request<Incoming>, Response = Response<B>>,
        S::Error: Into<Box<dyn StdError + Send + Sync>>,
        I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
        B: Body + 'static,
        B::Error: Into<Box<dyn StdError + Send + Sync>>,
    {
        let mut conn = pin!(conn);
        tokio::select! {
            done = conn.as_mut() => return done,
            // Err: the Upgrades is gone, which only happens after a shutdown.
            _ = self.0.changed() => conn.as_mut().graceful_shutdown(),
        }
        conn.await
    }
}
