//! actix-web's side of the Rust servers, shared by two binaries: `webbench-actix`
//! (servers/actix-web: raw sqlx or SeaORM) and `webbench-actix-diesel`
//! (servers/actix-diesel: diesel-async). Each binary opens its store and calls
//! [`serve`]; the routes, the handlers ([`handlers`], generic over the store) and
//! HttpServer's settings are the same code in both, so their rows differ only by the
//! store. What is not actix-specific is webbench-common (servers/_rscommon).
//!
//! Besides HTTP/1.1 on BENCH_PORT, the listeners the harness may ask for
//! (servers/README.md "Protocols a server speaks itself"): TLS 1.3 on BENCH_TLS_PORT,
//! actix-web's own rustls 0.23 listener (bind_rustls_0_23) with webbench-common's one
//! rustls configuration (ring, TLS 1.3 only, TLS13_AES_128_GCM_SHA256; actix sets ALPN
//! h2 + http/1.1 itself), and h2c on BENCH_H2C_PORT (bind_auto_h2c: HTTP/2 with prior
//! knowledge, found by the preface). Same App, same workers, same graceful stop.
//!
//! The HTTP workloads (servers/README.md): `/upload/` and `/delay/` in [`handlers`],
//! `/static/` by actix-files' `Files` (only when BENCH_STATIC_DIR is set), and actix-web's
//! `Compress` middleware around the whole App only when BENCH_COMPRESSION=1 (a second
//! App type: the App and the server set-up are macros, [`app!`] and [`server!`]).

pub mod handlers;

use std::process::ExitCode;
use std::time::Duration;

use actix_web::middleware::Compress;
use actix_web::web;
use actix_web::{App, HttpServer};
use webbench_common::config::Config;
use webbench_common::contract::AppState;
use webbench_common::protocols::{tls_config, OwnProtocols};
use webbench_common::suite::SuiteStore;
use webbench_common::workloads::STATIC_MOUNT;

/// The App of every worker: the contract's routes, the workloads' (`/upload/`,
/// `/delay/`, and `/static/` when BENCH_STATIC_DIR is set) and the JSON 404, for the
/// store type `$S`. A macro because `App`'s type changes with the middleware wrapped
/// around it (see [`serve`]).
macro_rules! app {
    ($S:ty, $state:expr) => {{
        let state: web::Data<AppState<$S>> = $state;
        let static_dir = state.static_dir.clone();
        App::new()
            .app_data(state)
            .service(
                web::resource("/ping/")
                    .route(web::get().to(handlers::ping::<$S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            .service(
                web::resource("/user/{id}/")
                    .route(web::get().to(handlers::get_user::<$S>))
                    .route(web::patch().to(handlers::patch_user::<$S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            .service(
                web::resource("/plain/")
                    .route(web::get().to(handlers::plain::<$S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            .service(
                web::resource("/to_json/")
                    .route(web::get().to(handlers::to_json::<$S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            // The database suite (CONTRACT.md section 6).
            .service(
                web::resource("/queries/")
                    .route(web::get().to(handlers::queries::<$S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            .service(
                web::resource("/updates/")
                    .route(web::get().to(handlers::updates::<$S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            .service(
                web::resource("/fortunes/")
                    .route(web::get().to(handlers::fortunes::<$S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            .service(
                web::resource("/cached/")
                    .route(web::get().to(handlers::cached::<$S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            // The HTTP workloads (servers/README.md).
            .service(
                web::resource("/upload/")
                    .route(web::post().to(handlers::upload::<$S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            .service(
                web::resource("/delay/")
                    .route(web::get().to(handlers::delay::<$S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            // The WebSocket echo (servers/README.md "WebSocket").
            .service(
                web::resource("/ws/")
                    .route(web::get().to(handlers::ws::<$S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            .configure(|app| {
                if let Some(dir) = static_dir {
                    app.service(static_files(dir));
                }
            })
            // Unknown routes get the contract's JSON error, not actix's empty 404.
            .default_service(web::to(handlers::not_found))
    }};
}

/// HttpServer around the App `$factory` makes, with the settings below and every
/// listener bound (the main one, and the TLS / h2c ones `$own` asks for): the server,
/// ready to run, or why it cannot start. A macro for the same reason as [`app!`].
macro_rules! server {
    ($cfg:expr, $own:expr, $factory:expr) => {{
        let server = HttpServer::new($factory)
            // BENCH_WORKERS worker threads, each with its own single-threaded runtime.
            .workers($cfg.workers)
            // The harness stops the server between cases; don't linger 30 s (actix's
            // default) on idle keep-alive connections during graceful shutdown.
            .shutdown_timeout(5)
            // Same idle keep-alive as actix's default, stated: wrk keeps connections busy.
            .keep_alive(Duration::from_secs(5));
        // Every listener is bound before run(): /ping/ answers only once all of them
        // are open, and a busy port or an unreadable certificate ends start-up with the
        // reason.
        let host = $cfg.host.as_str();
        server
            .bind((host, $cfg.port))
            .map_err(|e| format!("cannot bind {host}:{}: {e}", $cfg.port))
            .and_then(|server| match $own.tls() {
                None => Ok(server),
                Some((port, cert, key)) => {
                    // ALPN left empty: actix puts h2 (feature "http2") and http/1.1 first.
                    let config = tls_config(cert, key, &[])?;
                    server
                        .bind_rustls_0_23((host, port), config)
                        .map_err(|e| format!("cannot bind {host}:{port} (TLS): {e}"))
                }
            })
            .and_then(|server| match $own.h2c_port() {
                None => Ok(server),
                Some(port) => server
                    .bind_auto_h2c((host, port))
                    .map_err(|e| format!("cannot bind {host}:{port} (h2c): {e}")),
            })
            .map(HttpServer::run)
    }};
}

/// `/static/`: actix-files' `Files` service over the folder, with its defaults: ETag
/// (from the inode, size and mtime) and Last-Modified on every file, 304 on a matching
/// If-None-Match / If-Modified-Since, a single Range answered 206, Content-Type from the
/// extension (text/plain; charset=utf-8 for .txt), no directory listing, no hidden
/// files, GET and HEAD only (405 otherwise). Its path guard (PathBufWrap) decodes the
/// tail once, refuses an encoded `/` (`..%2f`: 400) and resolves `..` without ever
/// leaving the folder; a name not in it is 404.
fn static_files(dir: std::path::PathBuf) -> actix_files::Files {
    actix_files::Files::new(STATIC_MOUNT, dir)
}

/// Serves the contract with `db` until SIGTERM/SIGINT, then closes `db`. `name`
/// prefixes the error messages (the server's id). Call it from `#[actix_web::main]`
/// once the store has opened all its connections.
pub async fn serve<S: SuiteStore>(name: &str, cfg: Config, db: S) -> ExitCode {
    let own = match OwnProtocols::from_env() {
        Ok(own) => own,
        Err(e) => {
            eprintln!("{name}: configuration error: {e}");
            db.close().await;
            return ExitCode::FAILURE;
        }
    };
    let state = web::Data::new(AppState::new(&cfg, db));

    // Two App types, one with actix-web's Compress middleware around everything and one
    // without any (BENCH_COMPRESSION unset: no response passes an encoder, not even a
    // disabled `Condition`), so the App and the server set-up are macros written once.
    let app_state = state.clone();
    let server = if cfg.compression {
        server!(cfg, own, move || app!(S, app_state.clone())
            .wrap(Compress::default()))
    } else {
        server!(cfg, own, move || app!(S, app_state.clone()))
    };
    let server = match server {
        Ok(server) => server,
        Err(e) => {
            eprintln!("{name}: {e}");
            state.db.close().await;
            return ExitCode::FAILURE;
        }
    };

    let result = server.await;
    // Persistent connections are closed at shutdown, not left to the OS.
    state.db.close().await;
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: server error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use actix_web::http::{header, Method, StatusCode};
    use actix_web::test::{call_service, init_service, read_body, TestRequest};
    use actix_web::web::Bytes;
    use webbench_common::config::Config;
    use webbench_common::db::Db;
    use webbench_common::testing::{self, CLIMBS, UPLOAD_ANSWER, UPLOAD_BODY};

    use super::*;

    fn state(static_dir: Option<std::path::PathBuf>) -> web::Data<AppState<Db>> {
        let cfg = Config {
            static_dir,
            ..Config::without_database("actix-web")
        };
        web::Data::new(AppState::new(&cfg, Db::None))
    }

    async fn body(res: actix_web::dev::ServiceResponse) -> (StatusCode, Bytes) {
        (res.status(), read_body(res).await)
    }

    #[actix_web::test]
    async fn upload_and_delay() {
        let app = init_service(app!(Db, state(None))).await;
        let upload = |body: &'static [u8]| {
            TestRequest::post()
                .uri("/upload/")
                .insert_header(("token", "tok"))
                .insert_header((header::CONTENT_TYPE, "application/octet-stream"))
                .set_payload(body)
                .to_request()
        };
        let res = call_service(&app, upload(UPLOAD_BODY)).await;
        assert_eq!(
            body(res).await,
            (StatusCode::OK, Bytes::from_static(UPLOAD_ANSWER.as_bytes()))
        );
        let res = call_service(&app, upload(b"")).await;
        assert_eq!(
            body(res).await.1,
            Bytes::from_static(br#"{"bytes": 0, "crc32": "00000000"}"#)
        );

        let big = TestRequest::post()
            .uri("/upload/")
            .insert_header(("token", "tok"))
            .set_payload(vec![0u8; 8 * 1024 * 1024 + 1])
            .to_request();
        let (status, bytes) = body(call_service(&app, big).await).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        assert!(bytes.starts_with(br#"{"error":"#));

        let no_token = TestRequest::post().uri("/upload/").to_request();
        assert_eq!(
            call_service(&app, no_token).await.status(),
            StatusCode::UNAUTHORIZED
        );
        let get = TestRequest::get()
            .uri("/upload/")
            .insert_header(("token", "tok"));
        assert_eq!(
            call_service(&app, get.to_request()).await.status(),
            StatusCode::METHOD_NOT_ALLOWED
        );

        let delay = TestRequest::get()
            .uri("/delay/")
            .insert_header(("token", "tok"));
        let started = std::time::Instant::now();
        let res = call_service(&app, delay.to_request()).await;
        assert!(started.elapsed() >= DELAY_AT_LEAST);
        assert_eq!(
            res.headers().get(header::CONTENT_TYPE).unwrap(),
            "text/plain; charset=utf-8"
        );
        assert_eq!(
            body(res).await,
            (StatusCode::OK, Bytes::from_static(b"delayed 10 ms"))
        );
        let post = TestRequest::post()
            .uri("/delay/")
            .insert_header(("token", "tok"));
        assert_eq!(
            call_service(&app, post.to_request()).await.status(),
            StatusCode::METHOD_NOT_ALLOWED
        );
        let no_token = TestRequest::get().uri("/delay/").to_request();
        assert_eq!(
            call_service(&app, no_token).await.status(),
            StatusCode::UNAUTHORIZED
        );
    }

    const DELAY_AT_LEAST: Duration = Duration::from_millis(10);

    /// /ws/: the token before the handshake; a GET that is no handshake is a JSON 400.
    /// (The echo itself is checked over a socket: bench.verify.websocket.)
    #[actix_web::test]
    async fn websocket_route() {
        let app = init_service(app!(Db, state(None))).await;
        let res = call_service(&app, TestRequest::get().uri("/ws/").to_request()).await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
        let req = TestRequest::get()
            .uri("/ws/")
            .insert_header(("token", "tok"));
        let (status, bytes) = body(call_service(&app, req.to_request()).await).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(&bytes[..], br#"{"error":"not a websocket handshake"}"#);
        let req = TestRequest::post()
            .uri("/ws/")
            .insert_header(("token", "tok"));
        assert_eq!(
            call_service(&app, req.to_request()).await.status(),
            StatusCode::METHOD_NOT_ALLOWED
        );
    }

    #[actix_web::test]
    async fn static_files_and_traversal() {
        let folder = testing::static_folder("actix");
        let app = init_service(app!(Db, state(Some(folder)))).await;
        let res = call_service(&app, TestRequest::get().uri("/static/1k.txt").to_request()).await;
        assert_eq!(res.status(), StatusCode::OK);
        assert!(res.headers().contains_key(header::ETAG));
        assert!(res.headers().contains_key(header::LAST_MODIFIED));
        let etag = res.headers().get(header::ETAG).unwrap().clone();
        assert_eq!(body(res).await.1.len(), testing::FILE_SIZE);

        let conditional = TestRequest::get()
            .uri("/static/1k.txt")
            .insert_header((header::IF_NONE_MATCH, etag));
        let res = call_service(&app, conditional.to_request()).await;
        assert_eq!(res.status(), StatusCode::NOT_MODIFIED);
        let ranged = TestRequest::get()
            .uri("/static/1k.txt")
            .insert_header((header::RANGE, "bytes=100-199"));
        let res = call_service(&app, ranged.to_request()).await;
        assert_eq!(res.status(), StatusCode::PARTIAL_CONTENT);
        assert_eq!(
            res.headers().get(header::CONTENT_RANGE).unwrap(),
            "bytes 100-199/1024"
        );

        for path in CLIMBS.into_iter().chain(["/static/nope.txt"]) {
            let res = call_service(&app, TestRequest::get().uri(path).to_request()).await;
            let (status, bytes) = body(res).await;
            assert!(status.is_client_error(), "{path}: {status}");
            assert_ne!(&bytes[..], testing::OUTSIDE, "{path}");
        }
        let post = TestRequest::default()
            .method(Method::POST)
            .uri("/static/1k.txt");
        assert!(call_service(&app, post.to_request())
            .await
            .status()
            .is_client_error());

        // Without BENCH_STATIC_DIR nothing is mounted.
        let bare = init_service(app!(Db, state(None))).await;
        let res = call_service(&bare, TestRequest::get().uri("/static/1k.txt").to_request()).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND);
    }
}
