//! The contract's endpoints. Every failure is a JSON `{"error": "..."}` with a 4xx
//! status; only a database failure (not any client input) gives a 500. Nothing here
//! can panic on client input: with `panic = "abort"` a panic would kill the server.

use std::borrow::Cow;
use std::fmt::Display;
use std::future::Future;

use actix_web::body::MessageBody;
use actix_web::http::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use serde::Serialize;
use serde_json::Value;

use crate::db::User;

/// Where users live: the raw sqlx queries (`db::Db`) or the ORM (`orm::OrmDb`). The
/// handlers are generic over it and the variant is chosen once at start-up, so each
/// variant's handlers are compiled for it alone: the raw path never touches the ORM.
pub trait UserStore: Send + Sync + 'static {
    type Error: Display;
    /// False with `BENCH_DB=none`: user endpoints answer 404 "no database".
    fn has_database(&self) -> bool;
    /// One SELECT. `Ok(None)` when no row has this id.
    fn get(&self, id: i32) -> impl Future<Output = Result<Option<User>, Self::Error>>;
    /// One UPDATE (PostgreSQL: with RETURNING; MySQL: then one SELECT).
    /// `Ok(None)` when no row has this id.
    fn update(
        &self,
        id: i32,
        username: String,
        email: String,
    ) -> impl Future<Output = Result<Option<User>, Self::Error>>;
    fn close(&self) -> impl Future<Output = ()>;
}

/// Shared by all workers (wrapped in `web::Data`, i.e. an `Arc`).
pub struct AppState<S> {
    pub token: Box<[u8]>,
    pub db: S,
    /// `/ping/`'s answer never changes: serialised once at start-up.
    pub ping_body: Bytes,
}

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

fn json_response<B: MessageBody + 'static>(status: StatusCode, body: B) -> HttpResponse {
    let mut res = HttpResponse::with_body(status, body);
    res.headers_mut().insert(CONTENT_TYPE, JSON);
    res.map_into_boxed_body()
}

pub fn error(status: StatusCode, reason: &str) -> HttpResponse {
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
fn authorized<S>(req: &HttpRequest, state: &AppState<S>) -> bool {
    match req.headers().get(TOKEN_HEADER) {
        Some(v) => v.as_bytes() == &*state.token,
        None => false,
    }
}

fn unauthorized() -> HttpResponse {
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

fn user_response(user: &User) -> HttpResponse {
    match serde_json::to_vec(user) {
        Ok(body) => json_response(StatusCode::OK, body),
        Err(_) => error(StatusCode::INTERNAL_SERVER_ERROR, "serialisation failed"),
    }
}

fn db_error(e: impl Display) -> HttpResponse {
    // Errors only, never per request: this is not an access log.
    eprintln!("database error: {e}");
    error(StatusCode::INTERNAL_SERVER_ERROR, "database error")
}

pub async fn ping<S: UserStore>(state: web::Data<AppState<S>>) -> HttpResponse {
    json_response(StatusCode::OK, state.ping_body.clone())
}

pub async fn get_user<S: UserStore>(
    req: HttpRequest,
    state: web::Data<AppState<S>>,
) -> HttpResponse {
    if !authorized(&req, &state) {
        return unauthorized();
    }
    if !state.db.has_database() {
        return error(StatusCode::NOT_FOUND, "no database");
    }
    let Some(id) = parse_id(req.match_info().query("id")) else {
        return error(StatusCode::NOT_FOUND, "not found");
    };
    match state.db.get(id).await {
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

pub async fn patch_user<S: UserStore>(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState<S>>,
) -> HttpResponse {
    if !authorized(&req, &state) {
        return unauthorized();
    }
    if !state.db.has_database() {
        return error(StatusCode::NOT_FOUND, "no database");
    }
    let Some(id) = parse_id(req.match_info().query("id")) else {
        return error(StatusCode::NOT_FOUND, "not found");
    };
    // The body is taken as raw bytes whatever its Content-Type, and parsed here.
    let body = match payload.to_bytes_limited(MAX_BODY).await {
        Ok(Ok(body)) => body,
        Ok(Err(_)) => return error(StatusCode::BAD_REQUEST, "could not read body"),
        Err(_) => return error(StatusCode::BAD_REQUEST, "body too large"),
    };
    let (username, email) = match parse_update(&body) {
        Ok(fields) => fields,
        Err(reason) => return error(StatusCode::BAD_REQUEST, reason),
    };
    match state.db.update(id, username, email).await {
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

pub async fn plain<S: UserStore>(req: HttpRequest, state: web::Data<AppState<S>>) -> HttpResponse {
    if !authorized(&req, &state) {
        return unauthorized();
    }
    let [p1, p2, p3] = params(req.query_string());
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
    let mut res = HttpResponse::with_body(StatusCode::OK, body);
    res.headers_mut().insert(CONTENT_TYPE, TEXT);
    res.map_into_boxed_body()
}

pub async fn to_json<S: UserStore>(
    req: HttpRequest,
    state: web::Data<AppState<S>>,
) -> HttpResponse {
    if !authorized(&req, &state) {
        return unauthorized();
    }
    #[derive(Serialize)]
    struct Params<'a> {
        param1: Option<&'a str>,
        param2: Option<&'a str>,
        param3: Option<&'a str>,
    }
    let [p1, p2, p3] = params(req.query_string());
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
pub async fn not_found() -> HttpResponse {
    error(StatusCode::NOT_FOUND, "not found")
}

/// A known path with a method it does not serve.
pub async fn method_not_allowed() -> HttpResponse {
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
