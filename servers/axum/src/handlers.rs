//! The contract's endpoints. Every failure is a JSON `{"error": "..."}` with a 4xx
//! status; only a database failure (not any client input) gives a 500. Nothing here
//! can panic on client input: with `panic = "abort"` a panic would kill the server.
//!
//! Handlers take the whole `Request` (and the path captures as a `Result`) rather than
//! axum's typed extractors (`Path<i32>`, `Json<T>`, `Query<T>`, `TypedHeader`): an
//! extractor that fails answers with its own plain-text rejection before the handler
//! runs, which would skip the token check and break the JSON error contract.

use std::borrow::Cow;
use std::sync::Arc;

use axum::body::{self, Body, Bytes};
use axum::extract::rejection::RawPathParamsRejection;
use axum::extract::{RawPathParams, Request, State};
use axum::http::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Serialize;
use serde_json::Value;

use crate::db::{Db, User};

/// Shared by all worker threads (one `Arc`, cloned into every request's `State`).
pub struct AppState {
    pub token: Box<[u8]>,
    pub db: Db,
    /// `/ping/`'s answer never changes: serialised once at start-up.
    pub ping_body: Bytes,
}

pub type AppStateRef = State<Arc<AppState>>;
/// The `{id}` capture, percent-decoded by axum. A rejection (a capture that does not
/// decode to UTF-8) is kept as an `Err` and answered as "not found" after the token
/// check, never with axum's plain-text 400.
type IdParam = Result<RawPathParams, RawPathParamsRejection>;

const TOKEN_HEADER: HeaderName = HeaderName::from_static("token");
const JSON: HeaderValue = HeaderValue::from_static("application/json");
const TEXT: HeaderValue = HeaderValue::from_static("text/plain; charset=utf-8");

/// A PATCH body is two strings of at most 256 characters; anything far larger is
/// refused before it is buffered, with a 400 like every other bad body (the
/// contract allows 400 or 422 for bad bodies, so not 413).
const MAX_BODY: usize = 64 * 1024;
/// The columns are varchar(256) / VARCHAR(256): longer values would be a database
/// error (a 5xx), so they are refused up front with a 400.
const MAX_FIELD_CHARS: usize = 256;

fn typed_response(status: StatusCode, content_type: HeaderValue, body: Body) -> Response {
    let mut res = Response::new(body);
    *res.status_mut() = status;
    res.headers_mut().insert(CONTENT_TYPE, content_type);
    res
}

fn json_response(status: StatusCode, body: impl Into<Body>) -> Response {
    typed_response(status, JSON, body.into())
}

pub fn error(status: StatusCode, reason: &str) -> Response {
    #[derive(Serialize)]
    struct Err<'a> {
        error: &'a str,
    }
    // Serialising a struct of one &str cannot fail.
    json_response(
        status,
        serde_json::to_vec(&Err { error: reason }).unwrap_or_default(),
    )
}

#[inline]
fn authorized(headers: &HeaderMap, state: &AppState) -> bool {
    match headers.get(TOKEN_HEADER) {
        Some(v) => v.as_bytes() == &*state.token,
        None => false,
    }
}

fn unauthorized() -> Response {
    error(StatusCode::UNAUTHORIZED, "invalid token")
}

/// `{id}` as the contract's user_id (a PostgreSQL `integer`): ASCII digits only, at
/// most 10 of them, 1..=2147483647 (servers/README.md, as every server does it). A
/// sign, an empty or non-numeric segment, 0, or an id too large for the column is
/// simply "not found" (404) without touching the database.
fn parse_id(raw: &str) -> Option<i32> {
    if raw.is_empty() || raw.len() > 10 || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    raw.parse::<i32>().ok().filter(|&id| id >= 1)
}

fn id_of(params: &IdParam) -> Option<i32> {
    let params = params.as_ref().ok()?;
    let (_, raw) = params.iter().find(|(name, _)| *name == "id")?;
    parse_id(raw)
}

fn user_response(user: &User) -> Response {
    match serde_json::to_vec(user) {
        Ok(body) => json_response(StatusCode::OK, body),
        Err(_) => error(StatusCode::INTERNAL_SERVER_ERROR, "serialisation failed"),
    }
}

fn db_error(e: sqlx::Error) -> Response {
    // Errors only, never per request: this is not an access log.
    eprintln!("database error: {e}");
    error(StatusCode::INTERNAL_SERVER_ERROR, "database error")
}

pub async fn ping(State(state): AppStateRef) -> Response {
    json_response(StatusCode::OK, state.ping_body.clone())
}

pub async fn get_user(State(state): AppStateRef, id: IdParam, req: Request) -> Response {
    if !authorized(req.headers(), &state) {
        return unauthorized();
    }
    if let Db::None = state.db {
        return error(StatusCode::NOT_FOUND, "no database");
    }
    let Some(id) = id_of(&id) else {
        return error(StatusCode::NOT_FOUND, "not found");
    };
    match state.db.get_user(id).await {
        Ok(Some(user)) => user_response(&user),
        Ok(None) => error(StatusCode::NOT_FOUND, "not found"),
        Err(e) => db_error(e),
    }
}

/// Validates a PATCH body: a JSON object with string `username` (non-empty) and
/// string `email`, each at most 256 characters and free of NUL (PostgreSQL rejects
/// NUL in text). Parsed through `serde_json::Value` so every malformed body becomes
/// our own 400 message, never the Json extractor's non-contract error.
fn parse_update(body: &[u8]) -> Result<(String, String), &'static str> {
    let value: Value = serde_json::from_slice(body).map_err(|_| "body is not valid JSON")?;
    let Value::Object(mut map) = value else {
        return Err("body must be a JSON object");
    };
    let username = match map.remove("username") {
        Some(Value::String(s)) => s,
        Some(_) => return Err("username must be a string"),
        None => return Err("missing field: username"),
    };
    let email = match map.remove("email") {
        Some(Value::String(s)) => s,
        Some(_) => return Err("email must be a string"),
        None => return Err("missing field: email"),
    };
    if username.is_empty() {
        return Err("username must not be empty");
    }
    if username.chars().count() > MAX_FIELD_CHARS {
        return Err("username is too long (max 256 characters)");
    }
    if email.chars().count() > MAX_FIELD_CHARS {
        return Err("email is too long (max 256 characters)");
    }
    if username.contains('\0') || email.contains('\0') {
        return Err("NUL characters are not allowed");
    }
    Ok((username, email))
}

pub async fn patch_user(State(state): AppStateRef, id: IdParam, req: Request) -> Response {
    if !authorized(req.headers(), &state) {
        return unauthorized();
    }
    if let Db::None = state.db {
        return error(StatusCode::NOT_FOUND, "no database");
    }
    let Some(id) = id_of(&id) else {
        return error(StatusCode::NOT_FOUND, "not found");
    };
    // The body is taken as raw bytes whatever its Content-Type, and parsed here.
    // to_bytes stops reading (an error) once the limit is passed.
    let body = match body::to_bytes(req.into_body(), MAX_BODY).await {
        Ok(body) => body,
        Err(_) => return error(StatusCode::BAD_REQUEST, "could not read body or body too large"),
    };
    let (username, email) = match parse_update(&body) {
        Ok(fields) => fields,
        Err(reason) => return error(StatusCode::BAD_REQUEST, reason),
    };
    match state.db.update_user(id, &username, &email).await {
        Ok(Some(user)) => user_response(&user),
        Ok(None) => error(StatusCode::NOT_FOUND, "not found"),
        Err(e) => db_error(e),
    }
}

/// param1..param3 from the query string, URL-decoded (`+` is a space, as in HTML
/// forms; invalid UTF-8 is replaced, never an error). The first occurrence wins.
fn params(query: &str) -> [Option<Cow<'_, str>>; 3] {
    let mut out: [Option<Cow<'_, str>>; 3] = [None, None, None];
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        let slot = match &*key {
            "param1" => 0,
            "param2" => 1,
            "param3" => 2,
            _ => continue,
        };
        if out[slot].is_none() {
            out[slot] = Some(value);
        }
    }
    out
}

pub async fn plain(State(state): AppStateRef, req: Request) -> Response {
    if !authorized(req.headers(), &state) {
        return unauthorized();
    }
    let [p1, p2, p3] = params(req.uri().query().unwrap_or(""));
    let (p1, p2, p3) = (
        p1.as_deref().unwrap_or(""),
        p2.as_deref().unwrap_or(""),
        p3.as_deref().unwrap_or(""),
    );
    let mut body = String::with_capacity(30 + p1.len() + p2.len() + p3.len());
    body.push_str("param1=");
    body.push_str(p1);
    body.push_str(", param2=");
    body.push_str(p2);
    body.push_str(", param3=");
    body.push_str(p3);
    typed_response(StatusCode::OK, TEXT, body.into())
}

pub async fn to_json(State(state): AppStateRef, req: Request) -> Response {
    if !authorized(req.headers(), &state) {
        return unauthorized();
    }
    #[derive(Serialize)]
    struct Params<'a> {
        param1: Option<&'a str>,
        param2: Option<&'a str>,
        param3: Option<&'a str>,
    }
    let [p1, p2, p3] = params(req.uri().query().unwrap_or(""));
    let out = Params {
        param1: p1.as_deref(),
        param2: p2.as_deref(),
        param3: p3.as_deref(),
    };
    match serde_json::to_vec(&out) {
        Ok(body) => json_response(StatusCode::OK, body),
        Err(_) => error(StatusCode::INTERNAL_SERVER_ERROR, "serialisation failed"),
    }
}

/// Any path that is not one of the contract's routes.
pub async fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "not found")
}

/// A known path with a method it does not serve (axum adds the `Allow` header).
pub async fn method_not_allowed() -> Response {
    error(StatusCode::METHOD_NOT_ALLOWED, "method not allowed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        assert_eq!(parse_id("1"), Some(1));
        assert_eq!(parse_id("0010"), Some(10));
        assert_eq!(parse_id("0000000001"), Some(1));
        assert_eq!(parse_id("00000000001"), None);
        assert_eq!(parse_id("0"), None);
        assert_eq!(parse_id("2147483647"), Some(i32::MAX));
        assert_eq!(parse_id("2147483648"), None);
        assert_eq!(parse_id("99999999999999999999999999"), None);
        assert_eq!(parse_id("-1"), None);
        assert_eq!(parse_id("+1"), None);
        assert_eq!(parse_id(""), None);
        assert_eq!(parse_id("1a"), None);
        assert_eq!(parse_id("１"), None);
    }

    #[test]
    fn bodies() {
        assert_eq!(
            parse_update(br#"{"username":"a","email":"b"}"#),
            Ok(("a".into(), "b".into()))
        );
        assert_eq!(
            parse_update(br#"{"username":"a","email":""}"#),
            Ok(("a".into(), "".into()))
        );
        assert!(parse_update(b"").is_err());
        assert!(parse_update(b"not json").is_err());
        assert!(parse_update(b"[1,2]").is_err());
        assert!(parse_update(b"null").is_err());
        assert!(parse_update(br#"{"username":"a"}"#).is_err());
        assert!(parse_update(br#"{"email":"a"}"#).is_err());
        assert!(parse_update(br#"{"username":"","email":"b"}"#).is_err());
        assert!(parse_update(br#"{"username":1,"email":"b"}"#).is_err());
        assert!(parse_update(br#"{"username":"a","email":null}"#).is_err());
        assert!(parse_update(br#"{"username":"a\u0000","email":"b"}"#).is_err());
        assert!(parse_update(br#"{"username":"\ud800","email":"b"}"#).is_err());
        assert!(parse_update(b"{\"username\":\"\xff\",\"email\":\"b\"}").is_err());
        let long = format!(r#"{{"username":"{}","email":"b"}}"#, "é".repeat(257));
        assert!(parse_update(long.as_bytes()).is_err());
        let ok = format!(r#"{{"username":"{}","email":"b"}}"#, "é".repeat(256));
        assert!(parse_update(ok.as_bytes()).is_ok());
        let deep = "[".repeat(100_000);
        assert!(parse_update(deep.as_bytes()).is_err());
    }

    #[test]
    fn query_params() {
        let [a, b, c] = params("param1=a%20b&param2=x+y&param3=%ZZ&param1=ignored");
        assert_eq!(a.as_deref(), Some("a b"));
        assert_eq!(b.as_deref(), Some("x y"));
        assert_eq!(c.as_deref(), Some("%ZZ"));
        let [a, b, c] = params("param2=&other=1&%FF=%FF");
        assert_eq!(
            (a.as_deref(), b.as_deref(), c.as_deref()),
            (None, Some(""), None)
        );
    }
}
