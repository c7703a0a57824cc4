//! Routing and responses by hand: hyper hands over a `Request` and wants a `Response`,
//! nothing in between. [`handle`] matches the path (exact strings, plus the one
//! `/user/{id}/` pattern), then the method, maps the request onto
//! `webbench_common::contract` / `suite` (token check, id parsing, body validation,
//! the bodies) and turns the answer into a `Response<Full<Bytes>>`.
//!
//! Every failure is a JSON `{"error": "..."}` with a 4xx status; only a database
//! failure (not any client input) gives a 500. Nothing here can panic on client input:
//! with `panic = "abort"` a panic would kill the server.

use std::error::Error as StdError;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Body as HttpBody, Bytes};
use hyper::header::HeaderValue;
use hyper::{HeaderMap, Method, Request, StatusCode};
use percent_encoding::percent_decode_str;
use webbench_common::contract::{self, AppState, Failure, MAX_BODY};
use webbench_common::db::Db;
use webbench_common::reply::{self, token, HTML, JSON, TEXT};
use webbench_common::suite;

/// Every response body: whole, in memory, so hyper sends a `Content-Length`.
pub type Body = Full<Bytes>;
/// Shared by all worker threads behind one `Arc` (src/main.rs).
pub type State = AppState<Db>;

/// Every response (src/main.rs names it for the service all listeners share).
pub type Response = hyper::Response<Body>;
/// The `Allow` header of a 405 (RFC 9110 §15.5.6), as axum sends it: a GET resource
/// answers HEAD too.
const ALLOW_GET: HeaderValue = HeaderValue::from_static("GET,HEAD");
const ALLOW_USER: HeaderValue = HeaderValue::from_static("GET,HEAD,PATCH");

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
        _ => {
            let id = path.strip_prefix("/user/")?.strip_suffix('/')?;
            if id.is_empty() || id.contains('/') {
                return None;
            }
            Route::User(id)
        }
    })
}

fn failure(f: Failure) -> Response {
    reply::failure(f)
}

fn json(answer: Result<Vec<u8>, Failure>) -> Response {
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
pub async fn handle<B>(state: &State, req: Request<B>) -> Response
where
    B: HttpBody,
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
        _ if !get => reply::method_not_allowed(ALLOW_GET),
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
}
