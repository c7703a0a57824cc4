//! What the Rust servers (servers/actix-web, axum, hyper, rocket, warp, ...) share, so that each server
//! keeps only its framework's code: routing, extractors, responses, runtime set-up.
//!
//! - [`config`]: the harness's `BENCH_*` environment variables.
//! - [`contract`]: token check, user-id parsing, PATCH body validation, the `/plain/`,
//!   `/to_json/`, user and error bodies, the order of the checks a user endpoint makes,
//!   and [`contract::UserStore`], what a user endpoint needs from the database.
//! - [`db`]: the sqlx pool (every connection opened at start-up) and the raw queries.
//! - [`suite`]: the database suite (`/queries/`, `/updates/`, `/fortunes/`,
//!   `/cached/`): `n` parsing, the ids the server draws, the fortunes' sorting and
//!   askama template, the moka cache, and [`suite::SuiteStore`], what the suite needs
//!   from the database beyond a user SELECT.
//! - [`workloads`]: the HTTP workloads (`/upload/`'s limit and CRC-32, `/delay/`'s wait
//!   and body, the `/static/` mount).
//! - [`serve`] and [`reply`] (feature `tokio-http`, for axum, hyper and warp): the
//!   process around a tokio server (runtime, signals, pool, listener, graceful stop)
//!   and the contract's answers as `http::Response`s, `/upload/` and `/delay/` too.
//! - [`http1`] (feature `hyper-server`): hyper's HTTP/1.1-only accept loop (hyper's
//!   main listener, and warp's when it runs tower-http's compression).
//! - [`protocols`] (feature `tls`): the TLS and h2c listeners the harness asks for by
//!   environment (servers/README.md "Protocols a server speaks itself") and the one
//!   rustls 0.23 server configuration (ring, TLS 1.3 only, TLS13_AES_128_GCM_SHA256).
//! - [`listeners`] (feature `own-protocols`, for axum and hyper, on hyper 1): those
//!   listeners served with tokio-rustls and hyper's own HTTP/1 and HTTP/2 connections.
//! - [`ws`] (feature `ws`, for axum, hyper and warp): the close status a tungstenite-based
//!   WebSocket echo sends when a read fails (1007, 1002, 1009).
//!
//! Nothing here knows an HTTP framework: a server maps its request onto these functions
//! and turns their `Result<body, Failure>` into its own response type. Everything on
//! the request path is generic (monomorphised in the server's crate) or `#[inline]`,
//! so a server compiles to what it did when this code was its own.

pub mod config;
pub mod contract;
pub mod db;
pub mod suite;
pub mod workloads;

#[cfg(feature = "hyper-server")]
pub mod http1;
#[cfg(feature = "own-protocols")]
pub mod listeners;
#[cfg(feature = "tls")]
pub mod protocols;
#[cfg(feature = "tokio-http")]
pub mod reply;
#[cfg(feature = "tokio-http")]
pub mod serve;
#[cfg(feature = "testing")]
pub mod testing;
#[cfg(feature = "ws")]
pub mod ws;
