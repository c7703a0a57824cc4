//! The routes as warp filters, combined with `or` and ending in `recover`.
//!
//! Each route matches its **path first, then its method** (`path!("ping").and(get())`),
//! and each known path ends in a branch that answers any other method itself (JSON 405
//! with `Allow`). The order matters because of how warp picks the rejection it answers
//! when every route refused: of the combined rejections it prefers anything over
//! 404 and 405 over 404. With the method first (`get().and(path!(...))`, the usual
//! style of warp's examples), a `POST /nope/` would be refused 405 by every GET route
//! and 404 only by the path filters, so an unknown path would be a 405. Path first,
//! an unknown path is refused 404 by every route, and `recover` turns that into the
//! contract's JSON 404 (warp's default is a plain-text `404 Not Found` body).
//!
//! No `warp::log` / `warp::trace` filter: no access log.

use std::convert::Infallible;

use warp::filters::BoxedFilter;
use warp::http::HeaderValue;
use warp::reply::Response;
use warp::{path, Filter, Reply};
use webbench_common::contract::TOKEN_HEADER;

use crate::handlers::{self, State, Token, ALLOW_GET, ALLOW_POST, ALLOW_USER};

/// The shared state, one `Arc` clone per request.
fn with_state(state: State) -> impl Filter<Extract = (State,), Error = Infallible> + Clone {
    warp::any().map(move || state.clone())
}

/// The `token` header's raw bytes if there is one. `warp::header::value` rather than
/// `header::optional::<String>`, which would refuse a value that is not visible ASCII
/// with warp's plain-text 400 instead of the contract's 401.
fn token() -> impl Filter<Extract = (Token,), Error = Infallible> + Copy {
    warp::header::value(TOKEN_HEADER)
        .map(Some)
        .or(warp::any().map(|| None))
        .unify()
}

/// The raw query string, if there is one (`warp::query::raw` refuses a request without
/// one; `query::<T>()` would refuse an undecodable one with a plain-text 400). Decoded
/// by webbench_common, as every Rust server does.
fn query() -> impl Filter<Extract = (Option<String>,), Error = Infallible> + Copy {
    warp::query::raw()
        .map(Some)
        .or(warp::any().map(|| None))
        .unify()
}

/// The raw `Content-Length` header, if there is one (`/upload/` refuses a declared
/// length over the limit before reading).
fn content_length() -> impl Filter<Extract = (Option<HeaderValue>,), Error = Infallible> + Copy {
    warp::header::value("content-length")
        .map(Some)
        .or(warp::any().map(|| None))
        .unify()
}

/// `/static/`: warp's own `warp::fs::dir` over BENCH_STATIC_DIR (see the manifest's
/// notes.static), or, without it, a route that matches nothing (404 like any unknown
/// path). Boxed because the two differ in type; it is the last route tried, so only a
/// request no other route took goes through the box.
fn statics(state: &State) -> BoxedFilter<(Response,)> {
    match &state.static_dir {
        Some(dir) => warp::path("static")
            .and(warp::fs::dir(dir.clone()))
            .map(|file: warp::fs::File| file.into_response())
            .boxed(),
        None => warp::any()
            .and_then(|| async { Err::<Response, _>(warp::reject::not_found()) })
            .boxed(),
    }
}

/// Any method the path's routes did not take: JSON 405 with `Allow`.
fn other_method(
    allow: HeaderValue,
) -> impl Filter<Extract = (Response,), Error = Infallible> + Clone {
    warp::any().map(move || handlers::method_not_allowed(allow.clone()))
}

/// Every route of the contract (sections 2 and 6), and the JSON 404 for the rest.
pub fn routes(
    state: State,
) -> impl Filter<Extract = (Response,), Error = Infallible> + Clone + Send + Sync + 'static {
    let statics = statics(&state);
    let state = with_state(state);

    let ping = path!("ping").and(
        warp::get()
            .and(state.clone())
            .map(handlers::ping)
            .or(other_method(ALLOW_GET))
            .unify(),
    );

    // GET and PATCH each match the path again: the `{id}` segment is extracted by the
    // path filter, as a String whatever it holds (an `i32` param would refuse a bad id
    // with a 404 before the token is checked; the handler parses it after the token).
    let get_user = path!("user" / String)
        .and(warp::get())
        .and(state.clone())
        .and(token())
        .then(|id, state, token| handlers::get_user(state, id, token));
    let patch_user = path!("user" / String)
        .and(warp::patch())
        .and(state.clone())
        .and(token())
        .and(warp::body::stream())
        .then(|id, state, token, body| handlers::patch_user(state, id, token, body));
    let user = get_user
        .or(patch_user)
        .unify()
        .or(path!("user" / String)
            .and(other_method(ALLOW_USER))
            .map(|_, res| res))
        .unify();

    let plain = path!("plain").and(
        warp::get()
            .and(state.clone())
            .and(token())
            .and(query())
            .map(handlers::plain)
            .or(other_method(ALLOW_GET))
            .unify(),
    );
    let to_json = path!("to_json").and(
        warp::get()
            .and(state.clone())
            .and(token())
            .and(query())
            .map(handlers::to_json)
            .or(other_method(ALLOW_GET))
            .unify(),
    );

    // The database suite (CONTRACT.md section 6).
    let queries = path!("queries").and(
        warp::get()
            .and(state.clone())
            .and(token())
            .and(query())
            .then(handlers::queries)
            .or(other_method(ALLOW_GET))
            .unify(),
    );
    let updates = path!("updates").and(
        warp::get()
            .and(state.clone())
            .and(token())
            .and(query())
            .then(handlers::updates)
            .or(other_method(ALLOW_GET))
            .unify(),
    );
    let fortunes = path!("fortunes").and(
        warp::get()
            .and(state.clone())
            .and(token())
            .then(handlers::fortunes)
            .or(other_method(ALLOW_GET))
            .unify(),
    );
    let cached = path!("cached").and(
        warp::get()
            .and(state.clone())
            .and(token())
            .and(query())
            .then(handlers::cached)
            .or(other_method(ALLOW_GET))
            .unify(),
    );

    // The HTTP workloads (servers/README.md).
    let upload = path!("upload").and(
        warp::post()
            .and(state.clone())
            .and(token())
            .and(content_length())
            .and(warp::body::stream())
            .then(handlers::upload)
            .or(other_method(ALLOW_POST))
            .unify(),
    );
    // The WebSocket echo (servers/README.md "WebSocket"): warp::ws() made optional, so
    // that the handler checks the token before anything of the handshake.
    let ws = path!("ws").and(
        warp::get()
            .and(state.clone())
            .and(token())
            .and(warp::ws().map(Some).or(warp::any().map(|| None)).unify())
            .map(handlers::ws)
            .or(other_method(ALLOW_GET))
            .unify(),
    );
    let delay = path!("delay").and(
        warp::get()
            .and(state)
            .and(token())
            .then(handlers::delay)
            .or(other_method(ALLOW_GET))
            .unify(),
    );

    ping.or(user)
        .unify()
        .or(plain)
        .unify()
        .or(to_json)
        .unify()
        .or(queries)
        .unify()
        .or(updates)
        .unify()
        .or(fortunes)
        .unify()
        .or(cached)
        .unify()
        .or(upload)
        .unify()
        .or(delay)
        .unify()
        .or(ws)
        .unify()
        .or(statics)
        .unify()
        .recover(handlers::recover)
        .unify()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use warp::http::header::{ALLOW, CONTENT_TYPE};
    use webbench_common::config::Config;
    use webbench_common::contract::AppState;
    use webbench_common::db::Db;

    use super::routes;

    /// No database: what the routes answer before (or instead of) a query.
    fn state() -> crate::handlers::State {
        let cfg = Config::without_database("warp");
        Arc::new(AppState::new(&cfg, Db::None))
    }

    async fn answer(
        method: &str,
        path: &str,
        token: Option<&[u8]>,
    ) -> (u16, String, String, String) {
        let mut req = warp::test::request().method(method).path(path);
        if let Some(t) = token {
            req = req.header("token", t);
        }
        let res = req.reply(&routes(state())).await;
        let header = |name| {
            res.headers()
                .get(name)
                .map(|v: &warp::http::HeaderValue| v.to_str().unwrap_or("?").to_owned())
                .unwrap_or_default()
        };
        let (ct, allow) = (header(CONTENT_TYPE), header(ALLOW));
        (
            res.status().as_u16(),
            ct,
            allow,
            String::from_utf8_lossy(res.body()).into_owned(),
        )
    }

    const JSON: &str = "application/json";

    #[tokio::test]
    async fn known_and_unknown_paths() {
        let (s, ct, _, body) = answer("GET", "/ping/", None).await;
        assert_eq!((s, ct.as_str()), (200, JSON));
        assert_eq!(body, r#"{"database":"none","orm":false,"server":"warp"}"#);

        let (s, ct, _, body) = answer("GET", "/plain/?param1=a&param3=c", Some(b"tok")).await;
        assert_eq!(
            (s, ct.as_str(), body.as_str()),
            (
                200,
                "text/plain; charset=utf-8",
                "param1=a, param2=, param3=c"
            )
        );
        let (s, _, _, body) = answer("GET", "/to_json/", Some(b"tok")).await;
        assert_eq!(
            (s, body.as_str()),
            (200, r#"{"param1":null,"param2":null,"param3":null}"#)
        );

        // Unknown paths are a JSON 404 whatever the method (not warp's preferred 405).
        for (method, path) in [
            ("GET", "/nope/"),
            ("POST", "/nope/"),
            ("DELETE", "/"),
            ("PATCH", "/user/"),
            ("GET", "/user/1/x/"),
            ("GET", "/ping//"),
        ] {
            let (s, ct, _, body) = answer(method, path, Some(b"tok")).await;
            assert_eq!(
                (s, ct.as_str(), body.as_str()),
                (404, JSON, r#"{"error":"not found"}"#),
                "{method} {path}"
            );
        }
    }

    #[tokio::test]
    async fn wrong_methods_are_json_405_with_allow() {
        for (method, path, allow) in [
            ("POST", "/ping/", "GET"),
            ("HEAD", "/plain/", "GET"),
            ("PUT", "/to_json/", "GET"),
            ("DELETE", "/user/1/", "GET, PATCH"),
            ("POST", "/user/abc/", "GET, PATCH"),
            ("POST", "/queries/", "GET"),
            ("PATCH", "/updates/", "GET"),
            ("DELETE", "/fortunes/", "GET"),
            ("POST", "/cached/", "GET"),
        ] {
            let (s, ct, a, body) = answer(method, path, Some(b"tok")).await;
            assert_eq!(
                (s, ct.as_str(), a.as_str()),
                (405, JSON, allow),
                "{method} {path}"
            );
            if method != "HEAD" {
                assert_eq!(body, r#"{"error":"method not allowed"}"#);
            }
        }
    }

    #[tokio::test]
    async fn token_first_then_database() {
        for (method, path) in [
            ("GET", "/user/1/"),
            ("PATCH", "/user/abc/"),
            ("GET", "/plain/"),
            ("GET", "/to_json/"),
            ("GET", "/queries/?n=2"),
            ("GET", "/updates/"),
            ("GET", "/fortunes/"),
            ("GET", "/cached/"),
        ] {
            for token in [None, Some(&b"tok2"[..]), Some(&b"\xff"[..])] {
                let (s, ct, _, body) = answer(method, path, token).await;
                assert_eq!(
                    (s, ct.as_str(), body.as_str()),
                    (401, JSON, r#"{"error":"invalid token"}"#),
                    "{method} {path}"
                );
            }
        }
        for (method, path) in [
            ("GET", "/user/1/"),
            ("PATCH", "/user/1/"),
            ("GET", "/queries/"),
            ("GET", "/fortunes/"),
        ] {
            let (s, _, _, body) = answer(method, path, Some(b"tok")).await;
            assert_eq!(
                (s, body.as_str()),
                (404, r#"{"error":"no database"}"#),
                "{method} {path}"
            );
        }
    }

    /// The HTTP workloads, through the same routes.
    #[tokio::test]
    async fn upload_and_delay() {
        use webbench_common::testing::{UPLOAD_ANSWER, UPLOAD_BODY};
        let routes = routes(state());
        let upload = |body: Vec<u8>| {
            warp::test::request()
                .method("POST")
                .path("/upload/")
                .header("token", "tok")
                .body(body)
        };
        let res = upload(UPLOAD_BODY.to_vec()).reply(&routes).await;
        assert_eq!(
            (res.status().as_u16(), &res.body()[..]),
            (200, UPLOAD_ANSWER.as_bytes())
        );
        let res = upload(vec![0; 8 * 1024 * 1024 + 1]).reply(&routes).await;
        assert_eq!(res.status().as_u16(), 413);
        assert!(res.body().starts_with(br#"{"error":"#));
        let (s, _, allow, _) = answer("GET", "/upload/", Some(b"tok")).await;
        assert_eq!((s, allow.as_str()), (405, "POST"));
        let (s, _, _, _) = answer("POST", "/upload/", None).await;
        assert_eq!(s, 401);

        let (s, ct, _, body) = answer("GET", "/delay/", Some(b"tok")).await;
        assert_eq!(
            (s, ct.as_str(), body.as_str()),
            (200, "text/plain; charset=utf-8", "delayed 10 ms")
        );
        let (s, _, allow, _) = answer("POST", "/delay/", Some(b"tok")).await;
        assert_eq!((s, allow.as_str()), (405, "GET"));
    }

    /// /ws/: the token before the handshake; a GET that is no handshake is a JSON 400.
    /// (The echo itself is checked over a socket: bench.verify.websocket.)
    #[tokio::test]
    async fn websocket_route() {
        let (s, ct, _, body) = answer("GET", "/ws/", None).await;
        assert_eq!(
            (s, ct.as_str(), body.as_str()),
            (401, JSON, r#"{"error":"invalid token"}"#)
        );
        let (s, _, _, body) = answer("GET", "/ws/", Some(b"tok")).await;
        assert_eq!(
            (s, body.as_str()),
            (400, r#"{"error":"not a websocket handshake"}"#)
        );
        let (s, _, allow, _) = answer("POST", "/ws/", Some(b"tok")).await;
        assert_eq!((s, allow.as_str()), (405, "GET"));
    }

    #[tokio::test]
    async fn static_files_and_traversal() {
        use webbench_common::testing::{self, CLIMBS};
        let cfg = Config {
            static_dir: Some(testing::static_folder("warp")),
            ..Config::without_database("warp")
        };
        let routes = routes(Arc::new(AppState::new(&cfg, Db::None)));
        let get = |path: &str| warp::test::request().path(path);
        let res = get("/static/1k.txt").reply(&routes).await;
        assert_eq!(
            (res.status().as_u16(), res.body().len()),
            (200, testing::FILE_SIZE)
        );
        let modified = res.headers()["last-modified"].clone();
        let res = get("/static/1k.txt")
            .header("if-modified-since", modified)
            .reply(&routes)
            .await;
        assert_eq!(res.status().as_u16(), 304);
        let res = get("/static/1k.txt")
            .header("range", "bytes=100-199")
            .reply(&routes)
            .await;
        assert_eq!((res.status().as_u16(), res.body().len()), (206, 100));
        assert_eq!(res.headers()["content-range"], "bytes 100-199/1024");
        for path in CLIMBS.into_iter().chain(["/static/nope.txt"]) {
            let res = get(path).reply(&routes).await;
            assert!(res.status().is_client_error(), "{path}: {}", res.status());
            assert_ne!(&res.body()[..], testing::OUTSIDE, "{path}");
        }
        // Without BENCH_STATIC_DIR nothing is mounted.
        let (s, ct, _, _) = answer("GET", "/static/1k.txt", None).await;
        assert_eq!((s, ct.as_str()), (404, JSON));
    }
}
