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

use warp::http::HeaderValue;
use warp::reply::Response;
use warp::{path, Filter};
use webbench_common::contract::TOKEN_HEADER;

use crate::handlers::{self, State, Token, ALLOW_GET, ALLOW_USER};

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
            .and(state)
            .and(token())
            .and(query())
            .then(handlers::cached)
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
}
