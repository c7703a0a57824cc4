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

use axum::routing::{get, patch, post};
use axum::Router;
use hyper_util::service::TowerToHyperService;
use tower_http::compression::CompressionLayer;
use tower_http::services::ServeDir;
use webbench_common::serve::{self, State, Stop};
use webbench_common::workloads::STATIC_MOUNT;

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

/// The contract's routes and the HTTP workloads'. No tracing/TraceLayer: no per-request
/// access log; no middleware at all unless BENCH_COMPRESSION=1 asks for tower-http's
/// CompressionLayer around everything. Each known path gets its own 405 fallback (like
/// actix's per-resource default_service); any other path gets the router's 404 fallback.
fn router(state: State) -> Router {
    let mut router = routes(state.clone());
    if let Some(dir) = &state.static_dir {
        // tower-http's ServeDir under /static (axum strips the prefix), see the
        // manifest's notes.static.
        router = router.nest_service(STATIC_MOUNT, ServeDir::new(dir));
    }
    if state.compression {
        // Its defaults: gzip at flate2's level 6, br at quality 4, bodies of 32 bytes
        // and more, not images, gRPC or event streams, never a Range answer.
        router = router.layer(CompressionLayer::new());
    }
    router
}

fn routes(state: State) -> Router {
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
        // The HTTP workloads (servers/README.md).
        .route(
            "/upload/",
            post(handlers::upload).fallback(handlers::method_not_allowed),
        )
        .route(
            "/delay/",
            get(handlers::delay).fallback(handlers::method_not_allowed),
        )
        // The WebSocket echo (servers/README.md "WebSocket").
        .route(
            "/ws/",
            get(handlers::ws).fallback(handlers::method_not_allowed),
        )
        .fallback(handlers::not_found)
        .with_state(state)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use axum::body::{to_bytes, Body};
    use axum::http::{header, Request, StatusCode};
    use tower::ServiceExt;
    use webbench_common::config::Config;
    use webbench_common::contract::AppState;
    use webbench_common::db::Db;
    use webbench_common::testing::{self, CLIMBS, UPLOAD_ANSWER, UPLOAD_BODY};

    use super::router;

    fn make(static_dir: Option<std::path::PathBuf>, compression: bool) -> axum::Router {
        let cfg = Config {
            static_dir,
            compression,
            ..Config::without_database("axum")
        };
        router(Arc::new(AppState::new(&cfg, Db::None)))
    }

    async fn call(
        app: &axum::Router,
        req: Request<Body>,
    ) -> (StatusCode, header::HeaderMap, Vec<u8>) {
        let res = app.clone().oneshot(req).await.unwrap();
        let (parts, body) = res.into_parts();
        (
            parts.status,
            parts.headers,
            to_bytes(body, usize::MAX).await.unwrap().to_vec(),
        )
    }

    fn get(uri: &str) -> axum::http::request::Builder {
        Request::get(uri).header("token", "tok")
    }

    #[tokio::test]
    async fn upload_and_delay() {
        let app = make(None, false);
        let post = |body: Vec<u8>| {
            Request::post("/upload/")
                .header("token", "tok")
                .body(Body::from(body))
                .unwrap()
        };
        let (status, _, body) = call(&app, post(UPLOAD_BODY.to_vec())).await;
        assert_eq!(
            (status, body.as_slice()),
            (StatusCode::OK, UPLOAD_ANSWER.as_bytes())
        );
        let (status, _, body) = call(&app, post(vec![1; 8 * 1024 * 1024 + 1])).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        assert!(body.starts_with(br#"{"error":"#));
        let (status, ..) = call(&app, get("/upload/").body(Body::empty()).unwrap()).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);

        let (status, headers, body) = call(&app, get("/delay/").body(Body::empty()).unwrap()).await;
        assert_eq!(
            (status, body.as_slice()),
            (StatusCode::OK, &b"delayed 10 ms"[..])
        );
        assert_eq!(headers[header::CONTENT_TYPE], "text/plain; charset=utf-8");
        let no_token = Request::get("/delay/").body(Body::empty()).unwrap();
        assert_eq!(call(&app, no_token).await.0, StatusCode::UNAUTHORIZED);
    }

    /// /ws/: the token before the handshake; a GET that is no handshake is a JSON 400.
    /// (The echo itself is checked over a socket: bench.verify.websocket.)
    #[tokio::test]
    async fn websocket_route() {
        let app = make(None, false);
        let no_token = Request::get("/ws/").body(Body::empty()).unwrap();
        assert_eq!(call(&app, no_token).await.0, StatusCode::UNAUTHORIZED);
        let (status, _, body) = call(&app, get("/ws/").body(Body::empty()).unwrap()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body, br#"{"error":"not a websocket handshake"}"#);
        let post = Request::post("/ws/").header("token", "tok");
        let (status, ..) = call(&app, post.body(Body::empty()).unwrap()).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    }

    #[tokio::test]
    async fn static_files_and_traversal() {
        let app = make(Some(testing::static_folder("axum")), false);
        let (status, headers, body) =
            call(&app, get("/static/1k.txt").body(Body::empty()).unwrap()).await;
        assert_eq!((status, body.len()), (StatusCode::OK, testing::FILE_SIZE));
        assert!(headers.contains_key(header::LAST_MODIFIED));
        let etag = headers[header::ETAG].clone();
        let req = get("/static/1k.txt")
            .header(header::IF_NONE_MATCH, etag)
            .body(Body::empty())
            .unwrap();
        assert_eq!(call(&app, req).await.0, StatusCode::NOT_MODIFIED);
        let req = get("/static/1k.txt")
            .header(header::RANGE, "bytes=100-199")
            .body(Body::empty())
            .unwrap();
        let (status, headers, body) = call(&app, req).await;
        assert_eq!((status, body.len()), (StatusCode::PARTIAL_CONTENT, 100));
        assert_eq!(headers[header::CONTENT_RANGE], "bytes 100-199/1024");
        for path in CLIMBS.into_iter().chain(["/static/nope.txt"]) {
            let (status, _, body) = call(&app, get(path).body(Body::empty()).unwrap()).await;
            assert!(status.is_client_error(), "{path}: {status}");
            assert_ne!(body, testing::OUTSIDE, "{path}");
        }
        let bare = make(None, false);
        assert_eq!(
            call(&bare, get("/static/1k.txt").body(Body::empty()).unwrap())
                .await
                .0,
            StatusCode::NOT_FOUND
        );
    }

    #[tokio::test]
    async fn compression_is_negotiated() {
        let app = make(Some(testing::static_folder("axum")), true);
        let req = get("/static/1k.txt")
            .header(header::ACCEPT_ENCODING, "gzip")
            .body(Body::empty())
            .unwrap();
        let (_, headers, _) = call(&app, req).await;
        assert_eq!(headers[header::CONTENT_ENCODING], "gzip");
        assert_eq!(headers[header::VARY], "accept-encoding");
        let req = get("/static/1k.txt").body(Body::empty()).unwrap();
        let (_, headers, body) = call(&app, req).await;
        assert!(!headers.contains_key(header::CONTENT_ENCODING));
        assert_eq!(body.len(), testing::FILE_SIZE);
    }
}
