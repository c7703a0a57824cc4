//! The process around a tokio server (axum, hyper, warp): one sequence for all of them,
//! so each server's main.rs holds only how its framework serves a listener.
//!
//! 1. configuration from the environment ([`Config::from_env`]);
//! 2. a multi-threaded tokio runtime with exactly `BENCH_WORKERS` worker threads, named
//!    `<server>-worker` (the manifest's `[workers]` match on it), not `#[tokio::main]`'s
//!    one per core: the harness's count for a work-stealing runtime (the usable CPUs,
//!    at most W; README "Fairness"). The main thread only waits in `block_on` (it does
//!    not drive a multi-threaded runtime's I/O driver), so the workers do all the work;
//! 3. SIGTERM and SIGINT handlers, installed first, so a stop during start-up is clean;
//! 4. the whole pool opened before the server listens: every connection of the budget
//!    exists by the time /ping/ answers;
//! 5. the listener ([`listen`]), and the server's own TLS and h2c listeners if the
//!    harness asks for them ([`main_with_protocols`], servers/_rscommon/src/listeners.rs;
//!    [`main`] opens none), then the framework's accept loop as a task on the workers
//!    (each connection a task there too), so /ping/ answers only once every listener is
//!    open;
//! 6. on a signal, a graceful stop: the server is told to stop accepting and to close
//!    idle keep-alive connections (the other listeners too), in-flight requests get
//!    [`GRACE`] (one deadline for all listeners), the pool's
//!    connections are closed (bounded by [`POOL_CLOSE`]) rather than left to the OS,
//!    and whatever still runs is dropped with the runtime. The harness sends SIGKILL
//!    5 s after SIGTERM; 1.5 + 0.5 + 0.2 s stays well under it.

use std::fmt::Debug;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::config::Config;
use crate::contract::AppState;
use crate::db::{self, Db};

/// After SIGTERM: how long in-flight requests may take to finish before the process
/// exits anyway (idle keep-alive connections are closed at once).
pub const GRACE: Duration = Duration::from_millis(1500);
/// Then how long closing the pool's connections may take.
pub const POOL_CLOSE: Duration = Duration::from_millis(500);
/// Then how long the runtime waits for tasks still running (a connection past GRACE).
const RUNTIME_SHUTDOWN: Duration = Duration::from_millis(200);
/// The listen backlog: what tokio's `TcpListener::bind` uses.
const BACKLOG: u32 = 1024;
/// After an accept error that is not one connection's (EMFILE, ENFILE, ENOBUFS): wait
/// before accepting again, as axum's and hyper 0.14's accept loops do, rather than spin.
const ACCEPT_BACKOFF: Duration = Duration::from_secs(1);

/// What a server's accept loop is given: the state every request shares.
pub type State = Arc<AppState<Db>>;

/// Told once, when the process is to stop; the accept loop waits on it.
#[derive(Clone)]
pub struct Stop(Arc<Notify>);

impl Stop {
    fn new() -> Stop {
        Stop(Arc::new(Notify::new()))
    }

    /// Resolves once the stop is requested (at once if it already was).
    pub async fn requested(&self) {
        self.0.notified().await
    }
}

/// The accept loops a server runs besides its main listener's (its own TLS and h2c
/// listeners), each a task with a [`Stop`] of its own; none for [`main`].
#[derive(Default)]
pub struct Others(Vec<(Stop, JoinHandle<()>)>);

impl Others {
    /// Spawns `serve(stop)` on the runtime: an accept loop that returns once it has
    /// stopped accepting and its connections have finished after the stop.
    pub fn spawn<F, Fut>(&mut self, serve: F)
    where
        F: FnOnce(Stop) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let stop = Stop::new();
        let task = tokio::spawn(serve(stop.clone()));
        self.0.push((stop, task));
    }
}

/// Runs the server `name` (BENCH_SERVER_ID's default; no ORM variant, so BENCH_ORM=1 is
/// refused at start-up) as the whole process and returns its exit code. `serve` gets the
/// listener, the state and the stop, and returns the framework's accept loop: a future
/// that ends when it has stopped accepting and its connections have finished after
/// [`Stop::requested`], or on its own only when serving failed for good (its output is
/// then printed).
pub fn main<F, Fut>(name: &'static str, serve: F) -> ExitCode
where
    F: FnOnce(TcpListener, State, Stop) -> Fut,
    Fut: Future + Send + 'static,
    Fut::Output: Debug + Send + 'static,
{
    start(name, serve, |_, _| async { Ok(Others::default()) })
}

/// [`main`], and besides the main listener the TLS and h2c listeners the harness asks
/// for by environment (BENCH_TLS_PORT + BENCH_TLS_CERT + BENCH_TLS_KEY, BENCH_H2C_PORT;
/// servers/README.md "Protocols a server speaks itself"), opened before the main
/// listener is served and serving what `service` makes of the state: the same routes
/// as a hyper service (src/listeners.rs). Without those variables, exactly [`main`].
#[cfg(feature = "own-protocols")]
pub fn main_with_protocols<F, Fut, M, S, B>(name: &'static str, serve: F, service: M) -> ExitCode
where
    F: FnOnce(TcpListener, State, Stop) -> Fut,
    Fut: Future + Send + 'static,
    Fut::Output: Debug + Send + 'static,
    M: FnOnce(State) -> S,
    S: hyper::service::Service<http::Request<hyper::body::Incoming>, Response = http::Response<B>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let own = match crate::protocols::OwnProtocols::from_env() {
        Ok(own) => own,
        Err(e) => {
            eprintln!("{name}: configuration error: {e}");
            return ExitCode::FAILURE;
        }
    };
    if own.is_empty() {
        return main(name, serve);
    }
    start(name, serve, move |cfg: &Config, state: &State| {
        let host = cfg.host.clone();
        let service = service(state.clone());
        async move {
            let mut others = Others::default();
            crate::listeners::open_and_serve(&own, &host, service, &mut others).await?;
            Ok(others)
        }
    })
}

/// [`main`] with `others`: what opens and spawns the other listeners, once the main one
/// is open and before it is served (an error: the reason the server cannot start).
fn start<F, Fut, O, OFut>(name: &'static str, serve: F, others: O) -> ExitCode
where
    F: FnOnce(TcpListener, State, Stop) -> Fut,
    Fut: Future + Send + 'static,
    Fut::Output: Debug + Send + 'static,
    O: FnOnce(&Config, &State) -> OFut,
    OFut: Future<Output = Result<Others, String>>,
{
    let cfg = match Config::from_env(name, None) {
        Ok(cfg) => cfg,
        Err(e) => {
            eprintln!("{name}: configuration error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cfg.workers)
        .thread_name(format!("{name}-worker"))
        .enable_io()
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{name}: cannot build the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(run(name, cfg, serve, others));
    runtime.shutdown_timeout(RUNTIME_SHUTDOWN);
    code
}

async fn run<F, Fut, O, OFut>(name: &'static str, cfg: Config, serve: F, others: O) -> ExitCode
where
    F: FnOnce(TcpListener, State, Stop) -> Fut,
    Fut: Future + Send + 'static,
    Fut::Output: Debug + Send + 'static,
    O: FnOnce(&Config, &State) -> OFut,
    OFut: Future<Output = Result<Others, String>>,
{
    let (mut sigterm, mut sigint) = match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(t), Ok(i)) => (t, i),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("{name}: cannot install signal handlers: {e}");
            return ExitCode::FAILURE;
        }
    };
    // What the connections call themselves on PostgreSQL (pg_stat_activity).
    let db = match db::connect(&cfg, &format!("webbench-{name}")).await {
        Ok(db) => db,
        Err(e) => {
            eprintln!("{name}: cannot open the {} pool: {e}", cfg.db.as_str());
            return ExitCode::FAILURE;
        }
    };
    let state = Arc::new(AppState::new(&cfg, db));
    let listener = match listen(&cfg.host, cfg.port).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("{name}: cannot listen on {}:{}: {e}", cfg.host, cfg.port);
            state.db.close().await;
            return ExitCode::FAILURE;
        }
    };

    let others = match others(&cfg, &state).await {
        Ok(others) => others,
        Err(e) => {
            eprintln!("{name}: {e}");
            drop(listener);
            state.db.close().await;
            return ExitCode::FAILURE;
        }
    };

    let stop = Stop::new();
    let mut server = tokio::spawn(serve(listener, state.clone(), stop.clone()));
    let mut code = ExitCode::SUCCESS;
    tokio::select! {
        _ = sigterm.recv() => {}
        _ = sigint.recv() => {}
        result = &mut server => {
            eprintln!("{name}: server stopped: {result:?}");
            code = ExitCode::FAILURE;
        }
    }

    // notify_one keeps the permit if the accept loop is not waiting at this moment.
    stop.0.notify_one();
    for (stop, _) in &others.0 {
        stop.0.notify_one();
    }
    // One deadline for every listener's in-flight requests.
    let deadline = Instant::now() + GRACE;
    if !server.is_finished()
        && tokio::time::timeout_at(deadline, &mut server)
            .await
            .is_err()
    {
        eprintln!("{name}: connections still open after {GRACE:?}; exiting anyway");
        server.abort();
    }
    for (_, mut task) in others.0 {
        if tokio::time::timeout_at(deadline, &mut task).await.is_err() {
            eprintln!("{name}: TLS/h2c connections still open after {GRACE:?}; exiting anyway");
            task.abort();
        }
    }
    // Bounded: a request aborted above may still hold a connection.
    if tokio::time::timeout(POOL_CLOSE, state.db.close())
        .await
        .is_err()
    {
        eprintln!("{name}: the pool did not close within {POOL_CLOSE:?}");
    }
    code
}

/// The next accepted socket (TCP_NODELAY inherited from the listener, serve::listen),
/// or None once the stop is requested. A connection that died before it was accepted
/// is skipped; any other error (out of file descriptors...) is reported, then the loop
/// waits a moment instead of spinning on it. Every Rust accept loop here uses this one.
pub async fn accept(listener: &TcpListener, stop: &Stop, what: &str) -> Option<TcpStream> {
    loop {
        let error = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => return Some(stream),
                Err(e) => e,
            },
            _ = stop.requested() => return None,
        };
        if matches!(
            error.kind(),
            io::ErrorKind::ConnectionRefused
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::ConnectionReset
        ) {
            continue;
        }
        eprintln!("accept error on the {what} listener: {error}");
        tokio::select! {
            _ = tokio::time::sleep(ACCEPT_BACKOFF) => {}
            _ = stop.requested() => return None,
        }
    }
}

/// The listening socket, with TCP_NODELAY set on it before `listen`: Linux copies it to
/// every accepted socket, so each response is sent at once, not held back by Nagle's
/// algorithm waiting for the client's ACK (as actix-web sets it), with no system call
/// per connection and whether or not the framework has a hook on accepted connections
/// (warp 0.4 has none). Otherwise what tokio's `TcpListener::bind` does: each resolved
/// address in turn, SO_REUSEADDR, backlog 1024.
pub async fn listen(host: &str, port: u16) -> io::Result<TcpListener> {
    let mut last = io::Error::new(io::ErrorKind::AddrNotAvailable, "no address");
    for addr in tokio::net::lookup_host((host, port)).await? {
        match bind(addr) {
            Ok(listener) => return Ok(listener),
            Err(e) => last = e,
        }
    }
    Err(last)
}

fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.set_nodelay(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap()
            .block_on(f)
    }

    /// The option the servers rely on: an accepted socket inherits TCP_NODELAY.
    #[test]
    fn an_accepted_connection_has_tcp_nodelay() {
        block_on(async {
            let listener = listen("127.0.0.1", 0).await.unwrap();
            let addr = listener.local_addr().unwrap();
            let _client = tokio::net::TcpStream::connect(addr).await.unwrap();
            let (accepted, _) = listener.accept().await.unwrap();
            assert!(accepted.nodelay().unwrap());
        });
    }

    #[test]
    fn a_busy_port_is_an_error_not_a_second_listener() {
        block_on(async {
            let first = listen("127.0.0.1", 0).await.unwrap();
            let port = first.local_addr().unwrap().port();
            assert!(listen("127.0.0.1", port).await.is_err());
        });
    }
}
