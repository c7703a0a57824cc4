//! Rocket 0.5 + tokio + sqlx 0.8 server for the web-framework benchmark harness.
//!
//! One process: a multi-threaded tokio runtime with exactly `BENCH_WORKERS` worker
//! threads (built here from Rocket's `workers` setting, as `#[rocket::main]` would build
//! it, but from the harness's value instead of a Rocket.toml) serves every connection,
//! and all of them share one sqlx pool, held as Rocket managed state, whose size is the
//! whole connection budget (`BENCH_DB_POOL_SIZE`), because the manifest declares
//! `concurrency = "threads"`. Rocket's whole configuration is set in code (a Figment
//! built from a `rocket::Config` value, no Rocket.toml, no `ROCKET_*` variables): only
//! the harness's environment decides anything. What is not Rocket-specific
//! (configuration, the contract's parsing, validation and bodies, the sqlx pool and
//! queries, the database suite) is shared with actix-web and axum: servers/_rscommon.

mod handlers;

use std::net::{SocketAddr, ToSocketAddrs};
use std::process::ExitCode;
use std::time::Duration;

use rocket::config::{Config as RocketConfig, Ident, LogLevel, Shutdown, Sig};
use rocket::data::{Limits, ToByteUnit};
use rocket::figment::Figment;
use rocket::{catchers, routes, Build, Rocket};
use webbench_common::config::Config;
use webbench_common::contract::{AppState, MAX_BODY};
use webbench_common::db::{self, Db};

use handlers::App;

/// BENCH_SERVER_ID's default; no ORM variant (manifest: orm = [false]), so
/// BENCH_ORM=1 is refused at start-up.
const SERVER: &str = "rocket";
/// What the connections call themselves on PostgreSQL (pg_stat_activity).
const APPLICATION_NAME: &str = "webbench-rocket";
/// The runtime's worker threads' name (the manifest's [workers] match). Rocket's own,
/// "rocket-worker-thread", would be cut to 15 characters by Linux.
const THREAD_NAME: &str = "rocket-worker";

/// After SIGTERM: Rocket's grace period (in-flight requests finish, idle keep-alive
/// connections are closed), then its mercy period (reads cancelled, writes may end),
/// in whole seconds; Rocket then waits at most one more second for the last tasks.
const GRACE_S: u32 = 1;
const MERCY_S: u32 = 1;
/// Then how long closing the pool's connections may take. 1 + 1 + 1 + 0.5 s stays
/// under the harness's SIGKILL after 5 s.
const POOL_CLOSE: Duration = Duration::from_millis(500);

fn main() -> ExitCode {
    let cfg = match Config::from_env(SERVER, None) {
        Ok(cfg) => cfg,
        Err(e) => {
            eprintln!("rocket: configuration error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let addr = match (cfg.host.as_str(), cfg.port)
        .to_socket_addrs()
        .map(|mut a| a.next())
    {
        Ok(Some(addr)) => addr,
        Ok(None) | Err(_) => {
            eprintln!("rocket: cannot resolve BENCH_HOST={:?}", cfg.host);
            return ExitCode::FAILURE;
        }
    };
    let figment = production_figment(&cfg, addr);
    let rocket_cfg: RocketConfig = match RocketConfig::try_from(&figment) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("rocket: invalid configuration: {e}");
            return ExitCode::FAILURE;
        }
    };

    // The runtime Rocket's `#[rocket::main]`/`rocket::execute` would build, from the
    // same settings: `workers` worker threads (= BENCH_WORKERS, the harness's count for
    // a work-stealing runtime: the usable CPUs, at most W; README "Fairness") and
    // `max_blocking` blocking threads (only used at start-up: the database host's DNS
    // lookup). Built here because Rocket's own reads `workers` from Rocket.toml /
    // ROCKET_WORKERS, not from a Figment given in code.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(rocket_cfg.workers)
        .max_blocking_threads(rocket_cfg.max_blocking)
        .thread_name(THREAD_NAME)
        .enable_io()
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("rocket: cannot build the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(run(cfg, figment));
    // Whatever is still running (a connection past the shutdown periods) is dropped:
    // Rocket's `shutdown.force`, which only its own runtime would apply.
    runtime.shutdown_timeout(Duration::from_millis(200));
    code
}

/// Rocket's production configuration, every value set here (manifest [notes] say why
/// each is what it is). Based on `Config::release_default()`, the release profile
/// selected, so nothing depends on how the binary was built or on files and variables
/// of the machine it runs on.
fn production_figment(cfg: &Config, addr: SocketAddr) -> Figment {
    let shutdown = Shutdown {
        ctrlc: true,
        signals: [Sig::Term].into_iter().collect(),
        grace: GRACE_S,
        mercy: MERCY_S,
        force: true,
        ..Shutdown::default()
    };
    let config = RocketConfig {
        address: addr.ip(),
        port: addr.port(),
        workers: cfg.workers,
        // Rocket's and tokio's default; nothing on the request path blocks.
        max_blocking: 512,
        // No `Server:` header, as actix-web and axum send none.
        ident: Ident::none(),
        // No client IP is ever read; trust no proxy header.
        ip_header: None,
        // Only "bytes" is read (the PATCH body, handlers.rs); no Json/Form/String guard.
        limits: Limits::default().limit("bytes", MAX_BODY.bytes()),
        // Non-zero: HTTP/1.1 keep-alive on (hyper 0.14 has no HTTP/1 idle timeout; the
        // number is only HTTP/2's ping interval, and HTTP/2 is not compiled in).
        keep_alive: 5,
        shutdown,
        log_level: LogLevel::Off,
        cli_colors: false,
        ..RocketConfig::release_default()
    };
    Figment::from(config).select(RocketConfig::RELEASE_PROFILE)
}

/// The application: the contract's routes, the JSON catcher, the state.
fn app(figment: Figment, state: App) -> Rocket<Build> {
    rocket::custom(figment)
        .manage(state)
        .mount(
            "/",
            routes![
                handlers::ping,
                handlers::get_user,
                handlers::patch_user,
                handlers::plain,
                handlers::to_json,
                handlers::queries,
                handlers::updates,
                handlers::fortunes,
                handlers::cached,
                handlers::upload,
                handlers::delay,
                handlers::ws,
            ],
        )
        .register("/", catchers![handlers::catch_all])
}

async fn run(cfg: Config, figment: Figment) -> ExitCode {
    // Opened before the server listens: every connection of the budget exists by the
    // time /ping/ answers.
    let db = match db::connect(&cfg, APPLICATION_NAME).await {
        Ok(db) => db,
        Err(e) => {
            eprintln!("rocket: cannot open the {} pool: {e}", cfg.db.as_str());
            return ExitCode::FAILURE;
        }
    };
    let rocket = app(figment, AppState::new(&cfg, db));

    // Launched as a task on the worker threads, not in block_on on the main thread:
    // hyper's accept loop runs inside this future, and the main thread must not be an
    // extra thread serving work. Rocket handles SIGTERM/SIGINT itself (config above).
    let launched = match tokio::spawn(rocket.launch()).await {
        Ok(result) => result,
        Err(e) => {
            eprintln!("rocket: the server task failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    match launched {
        Ok(rocket) => {
            close_pool(&rocket.state::<App>().map(|s| &s.db)).await;
            ExitCode::SUCCESS
        }
        Err(e) => {
            // kind() marks the error as seen: Rocket panics when dropping one that was
            // not (an abort, with panic = "abort").
            let code = match e.kind() {
                // Shut down, but a connection outlived the grace and mercy periods.
                rocket::error::ErrorKind::Shutdown(rocket, _) => {
                    close_pool(&rocket.state::<App>().map(|s| &s.db)).await;
                    ExitCode::SUCCESS
                }
                _ => ExitCode::FAILURE,
            };
            eprintln!("rocket: {e}");
            code
        }
    }
}

/// Persistent connections are closed at shutdown, not left to the OS (bounded: a
/// request cut off at shutdown may still hold a connection).
async fn close_pool(db: &Option<&Db>) {
    if let Some(db) = db {
        if tokio::time::timeout(POOL_CLOSE, db.close()).await.is_err() {
            eprintln!("rocket: the pool did not close within {POOL_CLOSE:?}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocket::http::{Header, Method, Status};
    use rocket::local::blocking::Client;

    fn cfg() -> Config {
        Config {
            port: 0,
            workers: 2,
            ..Config::without_database("rocket")
        }
    }

    /// The application as main() builds it, without a database (BENCH_DB=none).
    fn client() -> Client {
        let cfg = cfg();
        let figment = production_figment(&cfg, "127.0.0.1:0".parse().unwrap());
        Client::untracked(app(figment, AppState::new(&cfg, Db::None))).unwrap()
    }

    #[test]
    fn production_config() {
        let cfg = cfg();
        let figment = production_figment(&cfg, "127.0.0.1:8130".parse().unwrap());
        let c = RocketConfig::try_from(&figment).unwrap();
        assert_eq!(c.profile, RocketConfig::RELEASE_PROFILE);
        assert_eq!((c.workers, c.port), (2, 8130));
        assert_eq!(c.log_level, LogLevel::Off);
        assert!(!c.cli_colors);
        assert_eq!(c.ident.as_str(), None);
        assert_eq!(c.limits.get("bytes"), Some(MAX_BODY.bytes()));
        assert!(c.keep_alive > 0);
        assert_eq!((c.shutdown.grace, c.shutdown.mercy), (GRACE_S, MERCY_S));
    }

    #[test]
    fn answers() {
        let client = client();
        let tok = || Header::new("token", "tok");

        let res = client.get("/ping/").dispatch();
        assert_eq!(res.status(), Status::Ok);
        assert_eq!(
            res.headers().get_one("Content-Type"),
            Some("application/json")
        );
        assert_eq!(res.headers().get_one("Server"), None);
        assert_eq!(
            res.into_string().unwrap(),
            r#"{"database":"none","orm":false,"server":"rocket"}"#
        );

        let res = client
            .get("/plain/?param1=a%20b&param3=c")
            .header(tok())
            .dispatch();
        assert_eq!(res.status(), Status::Ok);
        assert_eq!(
            res.headers().get_one("Content-Type"),
            Some("text/plain; charset=utf-8")
        );
        assert_eq!(res.into_string().unwrap(), "param1=a b, param2=, param3=c");

        let res = client.get("/to_json/?param2=x").header(tok()).dispatch();
        assert_eq!(
            res.into_string().unwrap(),
            r#"{"param1":null,"param2":"x","param3":null}"#
        );

        // The token first, then "no database", then the id.
        for (method, path) in [
            (Method::Get, "/plain/"),
            (Method::Get, "/user/1/"),
            (Method::Patch, "/user/abc/"),
            (Method::Get, "/queries/?n=2"),
            (Method::Get, "/fortunes/"),
        ] {
            let res = client.req(method, path).dispatch();
            assert_eq!(res.status(), Status::Unauthorized, "{method} {path}");
            assert_eq!(res.into_string().unwrap(), r#"{"error":"invalid token"}"#);
        }
        // /ws/: the token before the handshake; a GET that is no handshake is a JSON 400
        // (the echo itself is checked over a socket: bench.verify.websocket).
        let res = client.get("/ws/").dispatch();
        assert_eq!(res.status(), Status::Unauthorized);
        let res = client.get("/ws/").header(tok()).dispatch();
        assert_eq!(res.status(), Status::BadRequest);
        assert_eq!(
            res.into_string().unwrap(),
            r#"{"error":"not a websocket handshake"}"#
        );
        let res = client.post("/ws/").header(tok()).dispatch();
        assert_eq!(res.status(), Status::MethodNotAllowed);

        let res = client.get("/user/abc/").header(tok()).dispatch();
        assert_eq!(res.status(), Status::NotFound);
        assert_eq!(res.into_string().unwrap(), r#"{"error":"no database"}"#);
        let big = vec![b'x'; MAX_BODY + 1];
        let res = client.patch("/user/1/").header(tok()).body(big).dispatch();
        assert_eq!(res.into_string().unwrap(), r#"{"error":"no database"}"#);
    }

    #[test]
    fn errors_are_json() {
        let client = client();
        let res = client.get("/nowhere/").dispatch();
        assert_eq!(res.status(), Status::NotFound);
        assert_eq!(
            res.headers().get_one("Content-Type"),
            Some("application/json")
        );
        assert_eq!(res.into_string().unwrap(), r#"{"error":"not found"}"#);

        for (method, path, allow) in [
            (Method::Post, "/plain/", "GET, HEAD"),
            (Method::Delete, "/user/1/", "GET, HEAD, PATCH"),
            (Method::Put, "/cached/?n=3", "GET, HEAD"),
            (Method::Patch, "/ping/", "GET, HEAD"),
        ] {
            let res = client.req(method, path).dispatch();
            assert_eq!(res.status(), Status::MethodNotAllowed, "{method} {path}");
            assert_eq!(res.headers().get_one("Allow"), Some(allow));
            assert_eq!(
                res.into_string().unwrap(),
                r#"{"error":"method not allowed"}"#
            );
        }
        // A HEAD is the GET route's answer without its body.
        let res = client.head("/ping/").dispatch();
        assert_eq!(res.status(), Status::Ok);
        assert_eq!(res.into_string().unwrap_or_default(), "");
    }

    #[test]
    fn upload_and_delay() {
        use webbench_common::testing::{UPLOAD_ANSWER, UPLOAD_BODY};
        let client = client();
        let tok = || Header::new("token", "tok");
        let res = client
            .post("/upload/")
            .header(tok())
            .body(UPLOAD_BODY)
            .dispatch();
        assert_eq!(res.status(), Status::Ok);
        assert_eq!(res.into_string().unwrap(), UPLOAD_ANSWER);
        let big = vec![0u8; 8 * 1024 * 1024 + 1];
        let res = client.post("/upload/").header(tok()).body(big).dispatch();
        assert_eq!(res.status(), Status::PayloadTooLarge);
        assert!(res.into_string().unwrap().starts_with(r#"{"error":"#));
        let declared = Header::new("Content-Length", "8388609");
        let res = client
            .post("/upload/")
            .header(tok())
            .header(declared)
            .dispatch();
        assert_eq!(res.status(), Status::PayloadTooLarge);
        let res = client.post("/upload/").body(UPLOAD_BODY).dispatch();
        assert_eq!(res.status(), Status::Unauthorized);
        let res = client.get("/upload/").header(tok()).dispatch();
        assert_eq!(res.status(), Status::MethodNotAllowed);
        assert_eq!(res.headers().get_one("Allow"), Some("POST"));

        let res = client.get("/delay/").header(tok()).dispatch();
        assert_eq!(res.status(), Status::Ok);
        assert_eq!(
            res.headers().get_one("Content-Type"),
            Some("text/plain; charset=utf-8")
        );
        assert_eq!(res.into_string().unwrap(), "delayed 10 ms");
        let res = client.post("/delay/").header(tok()).dispatch();
        assert_eq!(res.status(), Status::MethodNotAllowed);
        // No static mount (manifest [unsupported]): a JSON 404 like any unknown path.
        let res = client.get("/static/1k.txt").dispatch();
        assert_eq!(res.status(), Status::NotFound);
    }
}
