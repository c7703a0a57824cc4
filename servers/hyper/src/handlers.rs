//! Routing and responses by hand: hyper hands over a `Request` and wants a `Response`,
//! nothing in between. [`handle`] matches the path (exact strings, plus the one
//! `/user/{id}/` pattern), then the method, maps the request onto
//! `webbench_common::contract` / `suite` (token check, id parsing, body validation,
//! the bodies) and turns the answer into a `Response<Full<Bytes>>`.
//!
//! Every failure is a JSON `{"error": "..."}` with a 4xx status; only a database
//! failure (not any client input) gives a 500. Nothing here can panic on client input:
//! with `panic = "abort"` a panic would kill the server.

use std::convert::Infallible;
use std::error::Error as StdError;
use std::sync::Arc;

use http_body_util::{BodyExt, Either, Full, Limited};
use hyper::body::{Body as HttpBody, Bytes};
use hyper::header::HeaderValue;
use hyper::{HeaderMap, Method, Request, StatusCode, Uri};
use percent_encoding::percent_decode_str;
use tower::ServiceExt;
use tower_http::services::fs::ServeFileSystemResponseBody;
use tower_http::services::ServeDir;
use webbench_common::contract::{self, AppState, Failure, MAX_BODY};
use webbench_common::db::Db;
use webbench_common::reply::{self, token, HTML, JSON, TEXT};
use webbench_common::suite;
use webbench_common::workloads::STATIC_MOUNT;

/// The body of every answer of [`handle`]: whole, in memory, so hyper sends a
/// `Content-Length`.
pub type Whole = Full<Bytes>;
/// Every response body: [`handle`]'s, or a static file's as tower-http's ServeDir
/// streams it (its Content-Length set).
pub type Body = Either<Whole, ServeFileSystemResponseBody>;
/// Shared by all worker threads behind one `Arc` (src/main.rs).
pub type State = AppState<Db>;

/// Every response (src/main.rs names it for the service all listeners share).
pub type Response = hyper::Response<Body>;
/// [`handle`]'s responses.
type Answer = hyper::Response<Whole>;
/// The `Allow` header of a 405 (RFC 9110 §15.5.6), as axum sends it: a GET resource
/// answers HEAD too.
const ALLOW_GET: HeaderValue = HeaderValue::from_static("GET,HEAD");
const ALLOW_USER: HeaderValue = HeaderValue::from_static("GET,HEAD,PATCH");
const ALLOW_POST: HeaderValue = HeaderValue::from_static("POST");
const ALLOW_WS: HeaderValue = HeaderValue::from_static("GET");

/// What every request of every connection shares, behind one `Arc`: the state, and
/// `/static/`'s ServeDir when BENCH_STATIC_DIR is set.
pub struct App {
    state: webbench_common::serve::State,
    statics: Option<ServeDir>,
}

impl App {
    pub fn new(state: webbench_common::serve::State) -> App {
        // tower-http's ServeDir with its defaults: see the manifest's notes.static.
        let statics = state.static_dir.as_ref().map(ServeDir::new);
        App { state, statics }
    }
}

/// Every request: `/static/...` to ServeDir when it is mounted, anything else to the
/// hand-written routes ([`handle`]). Generic over the request body only so the tests
/// can hand in a `Full<Bytes>`; the server instantiates it for hyper's `Incoming`.
pub async fn respond<B>(app: Arc<App>, req: Request<B>) -> Result<Response, Infallible>
where
    B: HttpBody + Unpin + Send + 'static,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    if let Some(statics) = &app.statics {
        if let Some(uri) = static_uri(req.uri()) {
            return Ok(serve_static(statics.clone(), uri, req).await);
        }
    }
    Ok(handle(&app.state, req).await.map(Either::Left))
}

/// The URI ServeDir is given for a `/static/...` request: the path after the mount (as
/// axum's nest_service strips it; `/static` alone is `/`), the query kept. `None` for
/// any other path (`/staticx` too).
fn static_uri(uri: &Uri) -> Option<Uri> {
    let rest = uri.path().strip_prefix(STATIC_MOUNT)?;
    if !(rest.is_empty() || rest.starts_with('/')) {
        return None;
    }
    let path = if rest.is_empty() { "/" } else { rest };
    let rebuilt = match uri.query() {
        Some(query) => Uri::try_from(format!("{path}?{query}")),
        None => Uri::try_from(path),
    };
    // The parts of a valid URI make a valid one; were it not, the routes' JSON 404.
    rebuilt.ok()
}

/// `/static/...`: tower-http's ServeDir, which percent-decodes the path, refuses any
/// `..` (or other non-normal) component with a 404 before touching the disk, and
/// answers Range, If-None-Match / If-Modified-Since itself.
async fn serve_static<B>(statics: ServeDir, uri: Uri, req: Request<B>) -> Response
where
    B: HttpBody + Send + 'static,
{
    let (mut parts, body) = req.into_parts();
    parts.uri = uri;
    match statics.oneshot(Request::from_parts(parts, body)).await {
        Ok(res) => res.map(Either::Right),
        Err(never) => match never {},
    }
}

/// The contract's routes. `User` holds the raw (still percent-encoded) `{id}` segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route<'a> {
    Ping,
    Plain,
    ToJson,
    Queries,
    Updates,
    Fortunes,
    Cached,
    Upload,
    Delay,
    /// The WebSocket echo (src/ws.rs).
    Ws,
    User(&'a str),
}

/// The route of a path (the URI's path only: the query string is not part of it), or
/// `None` for any other path (404). Paths are matched as sent, before any
/// percent-decoding, as axum's and actix-web's routers match them; `{id}` is one
/// non-empty segment.
#[inline]
fn find(path: &str) -> Option<Route<'_>> {
    Some(match path {
        "/ping/" => Route::Ping,
        "/plain/" => Route::Plain,
        "/to_json/" => Route::ToJson,
        "/queries/" => Route::Queries,
        "/updates/" => Route::Updates,
        "/fortunes/" => Route::Fortunes,
        "/cached/" => Route::Cached,
        "/upload/" => Route::Upload,
        "/delay/" => Route::Delay,
        "/ws/" => Route::Ws,
        _ => {
            let id = path.strip_prefix("/user/")?.strip_suffix('/')?;
            if id.is_empty() || id.contains('/') {
                return None;
            }
            Route::User(id)
        }
    })
}

fn failure(f: Failure) -> Answer {
    reply::failure(f)
}

fn json(answer: Result<Vec<u8>, Failure>) -> Answer {
    reply::json(answer)
}

/// The token, a database, then the `{id}` segment, percent-decoded (contract::user_id).
/// A segment that does not decode to UTF-8 is "not found", as axum's capture is.
#[inline]
fn user_id(state: &State, headers: &HeaderMap, raw: &str) -> Result<i32, Failure> {
    // Borrowed (no copy) unless the segment has a `%`; decoded before the token check
    // but looked at only after it, as the contract orders the checks.
    let decoded = percent_decode_str(raw).decode_utf8().ok();
    contract::user_id(state, token(headers), || decoded.as_deref())
}

/// A PATCH body as bytes, whatever its Content-Type: at most [`MAX_BODY`] of them
/// (`Limited` fails as soon as the body passes the cap, without reading the rest).
async fn read_body<B>(body: B) -> Result<Bytes, Failure>
where
    B: HttpBody,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    match Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(_) => Err(Failure::bad_request(
            "could not read body or body too large",
        )),
    }
}

/// Every request. Generic over the request body only so the tests can hand in a
/// `Full<Bytes>`; the server instantiates it once, for hyper's `Incoming`.
pub async fn handle<B>(state: &State, req: Request<B>) -> Answer
where
    B: HttpBody + Unpin + Send + 'static,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    let Some(route) = find(req.uri().path()) else {
        return failure(Failure::NOT_FOUND);
    };
    // HEAD is answered as GET, body left out by hyper (Content-Length kept), as HTTP
    // asks of a GET resource and as axum's get() does.
    let get = matches!(*req.method(), Method::GET | Method::HEAD);
    let query = req.uri().query().unwrap_or("");
    let headers = req.headers();
    match route {
        Route::User(raw) if get => match user_id(state, headers, raw) {
            Ok(id) => json(contract::get_user(&state.db, id).await),
            Err(f) => failure(f),
        },
        Route::User(raw) if *req.method() == Method::PATCH => {
            let id = match user_id(state, headers, raw) {
                Ok(id) => id,
                Err(f) => return failure(f),
            };
            let body = match read_body(req.into_body()).await {
                Ok(body) => body,
                Err(f) => return failure(f),
            };
            json(contract::update_user(&state.db, id, &body).await)
        }
        Route::User(_) => reply::method_not_allowed(ALLOW_USER),
        // The HTTP workloads (webbench_common::reply: the body streamed through the
        // CRC-32 frame by frame; tokio's timer).
        Route::Upload if *req.method() == Method::POST => {
            let (parts, body) = req.into_parts();
            reply::upload(state, &parts.headers, body).await
        }
        Route::Upload => reply::method_not_allowed(ALLOW_POST),
        // GET only (a HEAD is no handshake): the token before anything of the handshake.
        Route::Ws if *req.method() == Method::GET => {
            if !state.authorized(token(headers)) {
                return failure(Failure::INVALID_TOKEN);
            }
            crate::ws::upgrade(req)
        }
        Route::Ws => reply::method_not_allowed(ALLOW_WS),
        _ if !get => reply::method_not_allowed(ALLOW_GET),
        Route::Delay => reply::delay(state, headers).await,
        Route::Ping => reply::typed(StatusCode::OK, JSON, state.ping_body.clone()),
        Route::Plain => reply::ok_or_failure(TEXT, contract::plain(state, token(headers), query)),
        Route::ToJson => json(contract::to_json(state, token(headers), query)),
        // The database suite (CONTRACT.md section 6).
        Route::Queries => json(suite::queries(state, token(headers), query).await),
        Route::Updates => json(suite::updates(state, token(headers), query).await),
        Route::Fortunes => reply::ok_or_failure(HTML, suite::fortunes(state, token(headers)).await),
        Route::Cached => json(suite::cached(state, token(headers), query).await),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::{ALLOW, CONTENT_TYPE};
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};
    use webbench_common::config::Config;

    #[test]
    fn routes() {
        assert_eq!(find("/ping/"), Some(Route::Ping));
        assert_eq!(find("/plain/"), Some(Route::Plain));
        assert_eq!(find("/to_json/"), Some(Route::ToJson));
        assert_eq!(find("/queries/"), Some(Route::Queries));
        assert_eq!(find("/updates/"), Some(Route::Updates));
        assert_eq!(find("/fortunes/"), Some(Route::Fortunes));
        assert_eq!(find("/cached/"), Some(Route::Cached));
        assert_eq!(find("/upload/"), Some(Route::Upload));
        assert_eq!(find("/delay/"), Some(Route::Delay));
        assert_eq!(find("/ws/"), Some(Route::Ws));
        assert_eq!(find("/user/12/"), Some(Route::User("12")));
        assert_eq!(find("/user/%31/"), Some(Route::User("%31")));
        assert_eq!(find("/user/abc/"), Some(Route::User("abc")));
        for path in [
            "/",
            "/ping",
            "/ping//",
            "/PING/",
            "/user/",
            "/user//",
            "/user/1",
            "/user/1/x/",
            "/user/1//",
            "//user/1/",
            "/users/1/",
            "/plain/x/",
        ] {
            assert_eq!(find(path), None, "{path}");
        }
    }

    /// A server without a database (BENCH_DB=none): nothing below ever waits.
    fn state() -> State {
        let cfg = Config::without_database("hyper");
        AppState::new(&cfg, Db::None)
    }

    fn ready<F: Future>(f: F) -> F::Output {
        match pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(out) => out,
            Poll::Pending => panic!("no database: nothing waits"),
        }
    }

    /// Status, Content-Type, Allow and body of one request.
    fn call(
        method: Method,
        uri: &str,
        token: Option<&str>,
        body: &str,
    ) -> (u16, String, Option<String>, String) {
        let mut req = Request::builder().method(method).uri(uri);
        if let Some(t) = token {
            req = req.header("token", t);
        }
        let req = req.body(Full::new(Bytes::from(body.to_owned()))).unwrap();
        let res = ready(handle(&state(), req));
        let header = |name| {
            res.headers()
                .get(name)
                .map(|v: &HeaderValue| v.to_str().unwrap().to_owned())
        };
        let (content_type, allow) = (header(CONTENT_TYPE).unwrap(), header(ALLOW));
        let status = res.status().as_u16();
        let bytes = ready(res.into_body().collect()).unwrap().to_bytes();
        (
            status,
            content_type,
            allow,
            String::from_utf8(bytes.to_vec()).unwrap(),
        )
    }

    #[test]
    fn answers() {
        let t = Some("tok");
        let json = "application/json".to_owned();
        let nf = r#"{"error":"not found"}"#.to_owned();
        let not_allowed = r#"{"error":"method not allowed"}"#.to_owned();
        let no_db = r#"{"error":"no database"}"#.to_owned();
        let invalid = r#"{"error":"invalid token"}"#.to_owned();
        assert_eq!(
            call(Method::GET, "/ping/", None, ""),
            (
                200,
                json.clone(),
                None,
                r#"{"database":"none","orm":false,"server":"hyper"}"#.into()
            )
        );
        assert_eq!(
            call(Method::GET, "/plain/?param1=a%20b&param3=c", t, ""),
            (
                200,
                "text/plain; charset=utf-8".into(),
                None,
                "param1=a b, param2=, param3=c".into()
            )
        );
        assert_eq!(
            call(Method::HEAD, "/to_json/?param2=x", t, ""),
            (
                200,
                json.clone(),
                None,
                r#"{"param1":null,"param2":"x","param3":null}"#.into()
            )
        );
        assert_eq!(
            call(Method::GET, "/plain/", None, ""),
            (401, json.clone(), None, invalid.clone())
        );
        assert_eq!(
            call(Method::GET, "/to_json/", Some("x"), ""),
            (401, json.clone(), None, invalid.clone())
        );
        assert_eq!(
            call(Method::GET, "/user/1/", None, ""),
            (401, json.clone(), None, invalid.clone())
        );
        assert_eq!(
            call(Method::PATCH, "/user/1/", t, "{}"),
            (404, json.clone(), None, no_db.clone())
        );
        assert_eq!(
            call(Method::GET, "/queries/?n=3", t, ""),
            (404, json.clone(), None, no_db.clone())
        );
        assert_eq!(
            call(Method::GET, "/fortunes/", None, ""),
            (401, json.clone(), None, invalid)
        );
        assert_eq!(
            call(Method::GET, "/nope/", t, ""),
            (404, json.clone(), None, nf.clone())
        );
        assert_eq!(
            call(Method::GET, "/user/1", t, ""),
            (404, json.clone(), None, nf)
        );
        let allow_get = Some("GET,HEAD".to_owned());
        assert_eq!(
            call(Method::POST, "/plain/", t, ""),
            (405, json.clone(), allow_get.clone(), not_allowed.clone())
        );
        assert_eq!(
            call(Method::PATCH, "/ping/", None, ""),
            (405, json.clone(), allow_get, not_allowed.clone())
        );
        // /ws/: the token before the handshake; a GET that is no handshake is a 400.
        assert_eq!(
            call(Method::GET, "/ws/", None, ""),
            (
                401,
                json.clone(),
                None,
                r#"{"error":"invalid token"}"#.into()
            )
        );
        assert_eq!(
            call(Method::GET, "/ws/", t, ""),
            (
                400,
                json.clone(),
                None,
                r#"{"error":"not a websocket handshake"}"#.into()
            )
        );
        assert_eq!(call(Method::POST, "/ws/", t, "").2, Some("GET".to_owned()));
        assert_eq!(
            call(Method::DELETE, "/user/1/", t, ""),
            (405, json, Some("GET,HEAD,PATCH".into()), not_allowed)
        );
    }

    #[test]
    fn bodies_over_the_cap_are_refused() {
        let small = Full::new(Bytes::from(vec![b'x'; MAX_BODY]));
        assert_eq!(ready(read_body(small)).unwrap().len(), MAX_BODY);
        let large = Full::new(Bytes::from(vec![b'x'; MAX_BODY + 1]));
        assert_eq!(
            ready(read_body(large)),
            Err(Failure::bad_request(
                "could not read body or body too large"
            ))
        );
    }

    /// The workloads, through [`respond`] as the service calls it (a runtime: the
    /// timer and ServeDir's file reads need one).
    mod workloads {
        use super::*;
        use hyper::header::{CONTENT_RANGE, ETAG, IF_NONE_MATCH, LAST_MODIFIED, RANGE};
        use webbench_common::testing::{self, CLIMBS, UPLOAD_ANSWER, UPLOAD_BODY};

        fn make(static_dir: Option<std::path::PathBuf>) -> Arc<App> {
            let cfg = Config {
                static_dir,
                ..Config::without_database("hyper")
            };
            Arc::new(App::new(Arc::new(AppState::new(&cfg, Db::None))))
        }

        async fn send(
            app: &Arc<App>,
            req: hyper::http::request::Builder,
            body: Vec<u8>,
        ) -> (StatusCode, HeaderMap, Vec<u8>) {
            let req = req
                .header("token", "tok")
                .body(Full::new(Bytes::from(body)))
                .unwrap();
            let res = respond(app.clone(), req).await.unwrap();
            let (parts, body) = res.into_parts();
            let bytes = body.collect().await.unwrap().to_bytes().to_vec();
            (parts.status, parts.headers, bytes)
        }

        fn get(uri: &str) -> hyper::http::request::Builder {
            Request::get(uri)
        }

        #[tokio::test]
        async fn upload_and_delay() {
            let app = make(None);
            let post = || Request::post("/upload/");
            let (status, _, body) = send(&app, post(), UPLOAD_BODY.to_vec()).await;
            assert_eq!(
                (status, body.as_slice()),
                (StatusCode::OK, UPLOAD_ANSWER.as_bytes())
            );
            let (status, _, body) = send(&app, post(), vec![0; 8 * 1024 * 1024 + 1]).await;
            assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
            assert!(body.starts_with(br#"{"error":"#));
            let (status, headers, _) = send(&app, get("/upload/"), vec![]).await;
            assert_eq!(
                (status, &headers[hyper::header::ALLOW]),
                (StatusCode::METHOD_NOT_ALLOWED, &ALLOW_POST)
            );

            let (status, _, body) = send(&app, get("/delay/"), vec![]).await;
            assert_eq!(
                (status, body.as_slice()),
                (StatusCode::OK, &b"delayed 10 ms"[..])
            );
            let (status, ..) = send(&app, Request::post("/delay/"), vec![]).await;
            assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        }

        #[tokio::test]
        async fn static_files_and_traversal() {
            let app = make(Some(testing::static_folder("hyper")));
            let (status, headers, body) = send(&app, get("/static/1k.txt"), vec![]).await;
            assert_eq!((status, body.len()), (StatusCode::OK, testing::FILE_SIZE));
            assert!(headers.contains_key(LAST_MODIFIED));
            let etag = headers[ETAG].clone();
            let conditional = get("/static/1k.txt").header(IF_NONE_MATCH, etag);
            assert_eq!(
                send(&app, conditional, vec![]).await.0,
                StatusCode::NOT_MODIFIED
            );
            let ranged = get("/static/1k.txt?x=1").header(RANGE, "bytes=100-199");
            let (status, headers, body) = send(&app, ranged, vec![]).await;
            assert_eq!((status, body.len()), (StatusCode::PARTIAL_CONTENT, 100));
            assert_eq!(headers[CONTENT_RANGE], "bytes 100-199/1024");
            for path in CLIMBS
                .into_iter()
                .chain(["/static/nope.txt", "/staticx/1k.txt"])
            {
                let (status, _, body) = send(&app, get(path), vec![]).await;
                assert!(status.is_client_error(), "{path}: {status}");
                assert_ne!(body, testing::OUTSIDE, "{path}");
            }
            let bare = make(None);
            assert_eq!(
                send(&bare, get("/static/1k.txt"), vec![]).await.0,
                StatusCode::NOT_FOUND
            );
        }
    }
}
