//! The listeners a tokio server on hyper 1 (axum, hyper) opens besides HTTP/1.1 on
//! BENCH_PORT when the harness asks for them (servers/README.md, "Protocols a server
//! speaks itself"): TLS 1.3 on BENCH_TLS_PORT with the run's certificate, HTTP/1.1 or
//! HTTP/2 by ALPN, and HTTP/2 with prior knowledge on BENCH_H2C_PORT. The reference is
//! servers/_gocommon/listeners.go. Each is an accept loop of its own (a task on the
//! runtime's workers, each connection a task too) serving the same hyper service as
//! the main listener's router, with hyper 1's own HTTP/1 and HTTP/2 connections.
//!
//! - TLS: rustls 0.23 through tokio-rustls 0.26, the `ring` crypto provider with one
//!   cipher suite, TLS13_AES_128_GCM_SHA256, and TLS 1.3 only (src/protocols.rs,
//!   [`tls_config`]). ALPN
//!   offers h2 and http/1.1 (the server's order wins: h2 when the client offers both);
//!   a client offering only other protocols gets the no_application_protocol alert
//!   (rustls does so whenever the server has ALPN protocols and none matches). The
//!   protocol is chosen from ALPN alone, not sniffed from the first bytes: "h2" gets
//!   hyper's HTTP/2 connection, "http/1.1" or no ALPN at all its HTTP/1 one, so a
//!   connection never speaks another protocol than the one it negotiated.
//! - h2c: hyper's HTTP/2 connection on plain TCP, prior knowledge only (an HTTP/1.1
//!   request there, or an `Upgrade: h2c`, is a protocol error, not served).
//! - Session resumption: rustls's server defaults (src/protocols.rs).
//! - HTTP/1.1 and HTTP/2: hyper 1's connection defaults, none changed. HTTP/2 (hyper
//!   1.12's proto/h2/server.rs `Config::default`): SETTINGS_MAX_CONCURRENT_STREAMS 200
//!   per connection ("not part of the stability of hyper"), initial stream and
//!   connection windows 1 MiB each (no adaptive window), SETTINGS_MAX_FRAME_SIZE 16 KiB,
//!   SETTINGS_MAX_HEADER_LIST_SIZE 16 KiB, a 400 KiB send buffer per stream, no
//!   keep-alive PINGs, no extended CONNECT. HTTP/1.1: keep-alive, a Date header, no
//!   header-read timeout (no timer given), served with upgrades (a WebSocket handshake,
//!   `GET /ws/`, takes the connection after its 101), as on hyper's main listener.
//! - Stop: like the main listener: stop accepting, tell every connection to finish
//!   (hyper's graceful shutdown: HTTP/1 closes when idle, HTTP/2 sends GOAWAY and
//!   finishes its open streams), within the process's grace period (serve.rs).

use std::error::Error as StdError;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::{Body, Incoming};
use hyper::server::conn::{http1, http2};
use hyper::service::Service;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::http1::Upgrades;
use crate::protocols::{tls_config, OwnProtocols, ALPN};
use crate::serve::{accept, listen, Others, Stop};

/// A TLS handshake not finished by then is dropped (a client that connects and sends
/// nothing would otherwise hold its task until the process stops).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Reads the certificate and opens every listener `own` asks for on `host`, then serves
/// `service` on each (an accept loop per listener in `others`). Nothing is served
/// unless everything could be opened: an unreadable certificate or a busy port is the
/// error, with the reason.
pub async fn open_and_serve<S, B>(
    own: &OwnProtocols,
    host: &str,
    service: S,
    others: &mut Others,
) -> Result<(), String>
where
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn StdError + Send + Sync>>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    let tls = match own.tls() {
        None => None,
        Some((port, cert, key)) => {
            let config = tls_config(cert, key, &ALPN)?;
            let listener = listen(host, port)
                .await
                .map_err(|e| format!("cannot listen on {host}:{port} (TLS): {e}"))?;
            Some((listener, TlsAcceptor::from(Arc::new(config))))
        }
    };
    let h2c = match own.h2c_port() {
        None => None,
        Some(port) => Some(
            listen(host, port)
                .await
                .map_err(|e| format!("cannot listen on {host}:{port} (h2c): {e}"))?,
        ),
    };
    if let Some((listener, acceptor)) = tls {
        let service = service.clone();
        others.spawn(|stop| serve_tls(listener, acceptor, service, stop));
    }
    if let Some(listener) = h2c {
        others.spawn(|stop| serve_h2c(listener, service, stop));
    }
    Ok(())
}

/// hyper's two connection builders, with their defaults (the module's documentation);
/// HTTP/2 streams are spawned on the runtime (TokioExecutor).
struct Builders {
    http1: http1::Builder,
    http2: http2::Builder<TokioExecutor>,
}

impl Builders {
    fn new() -> Arc<Builders> {
        Arc::new(Builders {
            http1: http1::Builder::new(),
            http2: http2::Builder::new(TokioExecutor::new()),
        })
    }
}

async fn serve_tls<S, B>(listener: TcpListener, acceptor: TlsAcceptor, service: S, stop: Stop)
where
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn StdError + Send + Sync>>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    let builders = Builders::new();
    // HTTP/2 connections are watched by hyper-util's GracefulShutdown, HTTP/1.1 ones
    // (served with upgrades) by http1::Upgrades: both are told at the stop.
    let graceful = GracefulShutdown::new();
    let graceful_h1 = Upgrades::new();
    while let Some(stream) = accept(&listener, &stop, "TLS").await {
        let (acceptor, builders, service) = (acceptor.clone(), builders.clone(), service.clone());
        // Taken before the task runs: a stop during the handshake still reaches it.
        let watcher = graceful.watcher();
        let upgrades = graceful_h1.watcher();
        tokio::spawn(async move {
            // A failed handshake (no common protocol, version or suite, the client
            // gone) or one past the timeout is that connection's end: no log.
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => tls,
                _ => return,
            };
            let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2".as_slice());
            let io = TokioIo::new(tls);
            // A connection error (a client gone, a malformed request hyper already
            // answered) is that connection's end: no log, as on the main listener.
            if h2 {
                let _ = watcher
                    .watch(builders.http2.serve_connection(io, service))
                    .await;
            } else {
                // with_upgrades: `GET /ws/` (WebSocket over HTTP/1.1, wss) takes the
                // connection after its 101.
                let conn = builders.http1.serve_connection(io, service).with_upgrades();
                let _ = upgrades.watch(conn).await;
            }
        });
    }
    drop(listener);
    tokio::join!(graceful.shutdown(), graceful_h1.shutdown());
}

async fn serve_h2c<S, B>(listener: TcpListener, service: S, stop: Stop)
where
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn StdError + Send + Sync>>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    let builders = Builders::new();
    let graceful = GracefulShutdown::new();
    while let Some(stream) = accept(&listener, &stop, "h2c").await {
        let conn = builders
            .http2
            .serve_connection(TokioIo::new(stream), service.clone());
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
    drop(listener);
    graceful.shutdown().await;
}
