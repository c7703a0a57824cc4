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

pub mod handlers;

use std::process::ExitCode;
use std::time::Duration;

use actix_web::web;
use actix_web::{App, HttpServer};
use webbench_common::config::Config;
use webbench_common::contract::AppState;
use webbench_common::protocols::{tls_config, OwnProtocols};
use webbench_common::suite::SuiteStore;

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

    let app_state = state.clone();
    // No `.wrap(Logger)` (and no logger initialised): no per-request access log.
    let server = HttpServer::new(move || {
        App::new()
            .app_data(app_state.clone())
            .service(
                web::resource("/ping/")
                    .route(web::get().to(handlers::ping::<S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            .service(
                web::resource("/user/{id}/")
                    .route(web::get().to(handlers::get_user::<S>))
                    .route(web::patch().to(handlers::patch_user::<S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            .service(
                web::resource("/plain/")
                    .route(web::get().to(handlers::plain::<S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            .service(
                web::resource("/to_json/")
                    .route(web::get().to(handlers::to_json::<S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            // The database suite (CONTRACT.md section 6).
            .service(
                web::resource("/queries/")
                    .route(web::get().to(handlers::queries::<S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            .service(
                web::resource("/updates/")
                    .route(web::get().to(handlers::updates::<S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            .service(
                web::resource("/fortunes/")
                    .route(web::get().to(handlers::fortunes::<S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            .service(
                web::resource("/cached/")
                    .route(web::get().to(handlers::cached::<S>))
                    .default_service(web::to(handlers::method_not_allowed)),
            )
            // Unknown routes get the contract's JSON error, not actix's empty 404.
            .default_service(web::to(handlers::not_found))
    })
    // BENCH_WORKERS worker threads, each with its own single-threaded runtime.
    .workers(cfg.workers)
    // The harness stops the server between cases; don't linger 30 s (actix's
    // default) on idle keep-alive connections during graceful shutdown.
    .shutdown_timeout(5)
    // Same idle keep-alive as actix's default, stated: wrk keeps connections busy.
    .keep_alive(Duration::from_secs(5));

    // Every listener is bound before run(): /ping/ answers only once all of them are
    // open, and a busy port or an unreadable certificate ends start-up with the reason.
    let host = cfg.host.as_str();
    let bound = server
        .bind((host, cfg.port))
        .map_err(|e| format!("cannot bind {host}:{}: {e}", cfg.port))
        .and_then(|server| match own.tls() {
            None => Ok(server),
            Some((port, cert, key)) => {
                // ALPN left empty: actix puts h2 (feature "http2") and http/1.1 first.
                let config = tls_config(cert, key, &[])?;
                server
                    .bind_rustls_0_23((host, port), config)
                    .map_err(|e| format!("cannot bind {host}:{port} (TLS): {e}"))
            }
        })
        .and_then(|server| match own.h2c_port() {
            None => Ok(server),
            Some(port) => server
                .bind_auto_h2c((host, port))
                .map_err(|e| format!("cannot bind {host}:{port} (h2c): {e}")),
        });
    let server = match bound {
        Ok(server) => server,
        Err(e) => {
            eprintln!("{name}: {e}");
            state.db.close().await;
            return ExitCode::FAILURE;
        }
    };

    let result = server.run().await;
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
