//! The contract's request handling without an HTTP framework (CONTRACT.md and
//! servers/README.md): the token check, the `{id}` parsing, the PATCH body validation,
//! every body the servers answer, and the order in which each endpoint checks things.
//!
//! Each function takes what a server extracts from its request (the `token` header,
//! the `{id}` capture, the query string, the PATCH body) and returns the response body
//! or a [`Failure`]: a status and a reason for the JSON `{"error": "..."}` body. The
//! server turns that into its framework's response; every failure is a 4xx except a
//! database error (500). Nothing here can panic on client input: with
//! `panic = "abort"` a panic would kill the server.

use std::borrow::Cow;
use std::fmt::Display;
use std::future::Future;
use std::path::PathBuf;

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

use crate::config::Config;
use crate::db::User;

/// The header every endpoint but `/ping/` requires, holding the configured token.
pub const TOKEN_HEADER: &str = "token";
/// The Content-Type of every JSON answer (users, `/to_json/`, `/ping/`, errors).
pub const CONTENT_TYPE_JSON: &str = "application/json";
/// The Content-Type of `/plain/`.
pub const CONTENT_TYPE_TEXT: &str = "text/plain; charset=utf-8";

/// A PATCH body is two strings of at most 256 characters; anything far larger is
/// refused before it is buffered, with a 400 like every other bad body (the
/// contract allows 400 or 422 for bad bodies, so not 413). The servers' body readers
/// stop at this many bytes.
pub const MAX_BODY: usize = 64 * 1024;
/// The columns are varchar(256) / VARCHAR(256): longer values would be a database
/// error (a 5xx), so they are refused up front with a 400.
const MAX_FIELD_CHARS: usize = 256;

/// Where users live: the raw sqlx queries (`db::Db`) or an ORM (actix-web's
/// `orm::OrmDb`). The functions below are generic over it and a server picks the
/// variant once at start-up, so each variant's handlers are compiled for it alone:
/// the raw path never touches the ORM.
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

/// Shared by all workers (behind one `Arc`: actix's `web::Data`, axum's `State`).
pub struct AppState<S> {
    token: Box<[u8]>,
    /// `BENCH_STATIC_DIR`: the folder `/static/` serves, or `None` (then `/static/` is
    /// not mounted: 404).
    pub static_dir: Option<PathBuf>,
    /// `BENCH_COMPRESSION=1`: the server wraps its routes in its compression middleware.
    pub compression: bool,
    pub db: S,
    /// `/ping/`'s answer never changes: serialised once at start-up.
    pub ping_body: Bytes,
    /// `/cached/`'s in-process cache (suite.rs): one per process, empty at start-up.
    pub cache: crate::suite::UserCache,
}

impl<S> AppState<S> {
    pub fn new(cfg: &Config, db: S) -> AppState<S> {
        let ping = serde_json::json!({
            "server": cfg.server_id,
            "database": cfg.db.as_str(),
            "orm": cfg.orm,
        });
        AppState {
            token: cfg.token.as_bytes().into(),
            static_dir: cfg.static_dir.clone(),
            compression: cfg.compression,
            db,
            ping_body: Bytes::from(serde_json::to_vec(&ping).unwrap_or_default()),
            cache: crate::suite::new_cache(),
        }
    }

    /// `header`: the request's `token` header, if it has one.
    #[inline]
    pub fn authorized(&self, header: Option<&[u8]>) -> bool {
        match header {
            Some(v) => v == &*self.token,
            None => false,
        }
    }
}

/// The statuses the contract's failures use; each server maps them onto its
/// framework's status type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    BadRequest,
    Unauthorized,
    NotFound,
    MethodNotAllowed,
    /// An `/upload/` body over [`crate::workloads::UPLOAD_LIMIT`].
    PayloadTooLarge,
    InternalServerError,
}

impl Status {
    /// Every status, for the servers' tests of their mapping.
    pub const ALL: [Status; 6] = [
        Status::BadRequest,
        Status::Unauthorized,
        Status::NotFound,
        Status::MethodNotAllowed,
        Status::PayloadTooLarge,
        Status::InternalServerError,
    ];

    pub const fn as_u16(self) -> u16 {
        match self {
            Status::BadRequest => 400,
            Status::Unauthorized => 401,
            Status::NotFound => 404,
            Status::MethodNotAllowed => 405,
            Status::PayloadTooLarge => 413,
            Status::InternalServerError => 500,
        }
    }
}

/// A failed request: its status and the reason in its JSON body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failure {
    pub status: Status,
    pub reason: &'static str,
}

impl Failure {
    /// A missing or wrong `token` header.
    pub const INVALID_TOKEN: Failure = Failure::new(Status::Unauthorized, "invalid token");
    /// A user endpoint with `BENCH_DB=none`.
    pub const NO_DATABASE: Failure = Failure::new(Status::NotFound, "no database");
    /// No such user (or an id that cannot be one), or no such route.
    pub const NOT_FOUND: Failure = Failure::new(Status::NotFound, "not found");
    /// A known path with a method it does not serve.
    pub const METHOD_NOT_ALLOWED: Failure =
        Failure::new(Status::MethodNotAllowed, "method not allowed");
    /// The only 5xx: the database failed (never client input).
    pub const DATABASE_ERROR: Failure = Failure::new(Status::InternalServerError, "database error");
    /// Cannot happen (serialising strings, numbers and timestamps), but not a panic.
    pub const SERIALISATION_FAILED: Failure =
        Failure::new(Status::InternalServerError, "serialisation failed");

    pub const fn new(status: Status, reason: &'static str) -> Failure {
        Failure { status, reason }
    }

    /// A bad PATCH body (the server's own body reader uses this too).
    pub const fn bad_request(reason: &'static str) -> Failure {
        Failure::new(Status::BadRequest, reason)
    }

    /// The JSON body `{"error": reason}`.
    pub fn body(self) -> Vec<u8> {
        #[derive(Serialize)]
        struct Err<'a> {
            error: &'a str,
        }
        // Serialising a struct of one &str cannot fail.
        serde_json::to_vec(&Err { error: self.reason }).unwrap_or_default()
    }
}

/// What `GET` and `PATCH /user/{id}/` check before anything else, in this order: the
/// token (401), a database at all (404 "no database"), then the `{id}` capture (404
/// "not found", no query). `raw_id` is only called once the first two passed; `None`
/// is a capture the framework could not give (missing, or not UTF-8).
#[inline]
pub fn user_id<'a, S: UserStore>(
    state: &AppState<S>,
    token: Option<&[u8]>,
    raw_id: impl FnOnce() -> Option<&'a str>,
) -> Result<i32, Failure> {
    if !state.authorized(token) {
        return Err(Failure::INVALID_TOKEN);
    }
    if !state.db.has_database() {
        return Err(Failure::NO_DATABASE);
    }
    raw_id().and_then(parse_id).ok_or(Failure::NOT_FOUND)
}

/// `GET /user/{id}/`, once [`user_id`] passed: one SELECT, the user's JSON.
pub async fn get_user<S: UserStore>(db: &S, id: i32) -> Result<Vec<u8>, Failure> {
    user_or_not_found(db.get(id).await)
}

/// `PATCH /user/{id}/`, once [`user_id`] passed and the server read the body (raw
/// bytes whatever the Content-Type, at most [`MAX_BODY`]): the body is validated
/// (400), then one UPDATE (+ one SELECT on MySQL), the stored user's JSON.
pub async fn update_user<S: UserStore>(db: &S, id: i32, body: &[u8]) -> Result<Vec<u8>, Failure> {
    let (username, email) = parse_update(body).map_err(Failure::bad_request)?;
    user_or_not_found(db.update(id, username, email).await)
}

#[inline]
fn user_or_not_found<E: Display>(found: Result<Option<User>, E>) -> Result<Vec<u8>, Failure> {
    match found {
        Ok(Some(user)) => user_json(&user),
        Ok(None) => Err(Failure::NOT_FOUND),
        Err(e) => Err(db_error(e)),
    }
}

/// The user object, exactly the contract's keys (see [`User`]).
#[inline]
pub fn user_json(user: &User) -> Result<Vec<u8>, Failure> {
    serde_json::to_vec(user).map_err(|_| Failure::SERIALISATION_FAILED)
}

fn db_error(e: impl Display) -> Failure {
    // Errors only, never per request: this is not an access log.
    eprintln!("database error: {e}");
    Failure::DATABASE_ERROR
}

/// `GET /plain/`: the token, then the body `param1=a, param2=b, param3=c` (a missing
/// one is empty), served as [`CONTENT_TYPE_TEXT`].
#[inline]
pub fn plain<S>(state: &AppState<S>, token: Option<&[u8]>, query: &str) -> Result<String, Failure> {
    if !state.authorized(token) {
        return Err(Failure::INVALID_TOKEN);
    }
    let [p1, p2, p3] = params(query);
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
    Ok(body)
}

/// `GET /to_json/`: the token, then `{"param1": "a", "param2": "b", "param3": "c"}`
/// (a missing one is null).
#[inline]
pub fn to_json<S>(
    state: &AppState<S>,
    token: Option<&[u8]>,
    query: &str,
) -> Result<Vec<u8>, Failure> {
    if !state.authorized(token) {
        return Err(Failure::INVALID_TOKEN);
    }
    #[derive(Serialize)]
    struct Params<'a> {
        param1: Option<&'a str>,
        param2: Option<&'a str>,
        param3: Option<&'a str>,
    }
    let [p1, p2, p3] = params(query);
    let out = Params {
        param1: p1.as_deref(),
        param2: p2.as_deref(),
        param3: p3.as_deref(),
    };
    serde_json::to_vec(&out).map_err(|_| Failure::SERIALISATION_FAILED)
}

/// `{id}` as the contract's user_id (a PostgreSQL `integer`): ASCII digits only, at
/// most 10 of them, 1..=2147483647 (servers/README.md, as every server does it). A
/// sign, an empty or non-numeric segment, 0, or an id too large for the column is
/// simply "not found" (404) without touching the database.
#[inline]
fn parse_id(raw: &str) -> Option<i32> {
    if raw.is_empty() || raw.len() > 10 || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    raw.parse::<i32>().ok().filter(|&id| id >= 1)
}

/// Validates a PATCH body: a JSON object with string `username` (non-empty) and
/// string `email`, each at most 256 characters and free of NUL (PostgreSQL rejects
/// NUL in text). Parsed through `serde_json::Value` so every malformed body becomes
/// our own 400 message, never a framework extractor's non-contract error.
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

/// param1..param3 from the query string, URL-decoded (`+` is a space, as in HTML
/// forms; invalid UTF-8 is replaced, never an error). The first occurrence wins.
#[inline]
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DbKind;
    use chrono::{TimeZone, Utc};
    use std::pin::pin;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Poll, Waker};

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

    /// A store whose every call is ready at once and counted.
    struct Fake {
        has_database: bool,
        /// Ok(true): user 1; Ok(false): no such user; Err: a database error.
        answer: Result<bool, &'static str>,
        calls: AtomicUsize,
    }

    impl Fake {
        fn new(has_database: bool, answer: Result<bool, &'static str>) -> Fake {
            let calls = AtomicUsize::new(0);
            Fake {
                has_database,
                answer,
                calls,
            }
        }

        fn answer(&self) -> Result<Option<User>, &'static str> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            self.answer.map(|found| found.then(user_1))
        }
    }

    impl UserStore for Fake {
        type Error = &'static str;
        fn has_database(&self) -> bool {
            self.has_database
        }
        async fn get(&self, _id: i32) -> Result<Option<User>, &'static str> {
            self.answer()
        }
        async fn update(&self, _: i32, _: String, _: String) -> Result<Option<User>, &'static str> {
            self.answer()
        }
        async fn close(&self) {}
    }

    fn user_1() -> User {
        let created = Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 1).unwrap();
        User {
            user_id: 1,
            username: "user1_c4ca4".into(),
            email: None,
            created_at: created,
            updated_at: created + chrono::Duration::microseconds(1_500),
            is_archived: false,
        }
    }

    const USER_1: &str = r#"{"user_id":1,"username":"user1_c4ca4","email":null,"created_at":"2024-01-01T00:00:01Z","updated_at":"2024-01-01T00:00:01.001500Z","is_archived":false}"#;

    fn state<S>(db: S) -> AppState<S> {
        let cfg = Config {
            db: DbKind::Mysql,
            orm: true,
            ..Config::without_database("srv")
        };
        AppState::new(&cfg, db)
    }

    /// Runs a future that never waits (the fake store's).
    fn ready<F: Future>(f: F) -> F::Output {
        match pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(out) => out,
            Poll::Pending => panic!("the fake store never waits"),
        }
    }

    #[test]
    fn fixed_bodies() {
        let s = state(());
        assert_eq!(
            &s.ping_body[..],
            br#"{"database":"mysql","orm":true,"server":"srv"}"#
        );
        assert_eq!(Failure::NOT_FOUND.body(), br#"{"error":"not found"}"#);
        assert_eq!(
            Failure::bad_request("a \"b\"").body(),
            br#"{"error":"a \"b\""}"#
        );
        assert_eq!(Failure::DATABASE_ERROR.status.as_u16(), 500);
        assert_eq!(user_json(&user_1()).unwrap(), USER_1.as_bytes());
    }

    #[test]
    fn token() {
        let s = state(());
        assert!(s.authorized(Some(b"tok")));
        assert!(!s.authorized(Some(b"tok ")));
        assert!(!s.authorized(Some(b"")));
        assert!(!s.authorized(None));
    }

    #[test]
    fn plain_and_to_json() {
        let s = state(());
        let q = "param3=c&param1=a%2Cb+c&param2=%E2%82%AC";
        assert_eq!(
            plain(&s, Some(b"tok"), q).unwrap(),
            "param1=a,b c, param2=€, param3=c"
        );
        assert_eq!(
            plain(&s, Some(b"tok"), "").unwrap(),
            "param1=, param2=, param3="
        );
        assert_eq!(plain(&s, None, q), Err(Failure::INVALID_TOKEN));
        assert_eq!(
            to_json(&s, Some(b"tok"), "param2=%22x%22").unwrap(),
            br#"{"param1":null,"param2":"\"x\"","param3":null}"#
        );
        assert_eq!(to_json(&s, Some(b"bad"), q), Err(Failure::INVALID_TOKEN));
    }

    #[test]
    fn user_checks_in_order() {
        let called = std::cell::Cell::new(false);
        let seen = &called;
        // The `{id}` capture, noting that it was looked at.
        let id = move |raw: Option<&'static str>| {
            move || {
                seen.set(true);
                raw
            }
        };
        let no_db = state(Fake::new(false, Ok(true)));
        assert_eq!(
            user_id(&no_db, None, id(Some("1"))),
            Err(Failure::INVALID_TOKEN)
        );
        assert_eq!(
            user_id(&no_db, Some(b"tok"), id(Some("1"))),
            Err(Failure::NO_DATABASE)
        );
        assert!(!called.get());
        let db = state(Fake::new(true, Ok(true)));
        assert_eq!(
            user_id(&db, Some(b"x"), id(Some("1"))),
            Err(Failure::INVALID_TOKEN)
        );
        assert!(!called.get());
        assert_eq!(user_id(&db, Some(b"tok"), id(Some("7"))), Ok(7));
        assert_eq!(
            user_id(&db, Some(b"tok"), id(Some("0"))),
            Err(Failure::NOT_FOUND)
        );
        assert_eq!(
            user_id(&db, Some(b"tok"), id(None)),
            Err(Failure::NOT_FOUND)
        );
        assert_eq!(db.db.calls.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn user_answers() {
        let found = Fake::new(true, Ok(true));
        assert_eq!(ready(get_user(&found, 1)).unwrap(), USER_1.as_bytes());
        let body = br#"{"username":"u","email":"e","x":1}"#;
        assert_eq!(
            ready(update_user(&found, 1, body)).unwrap(),
            USER_1.as_bytes()
        );
        assert_eq!(found.calls.load(Ordering::Relaxed), 2);

        let missing = Fake::new(true, Ok(false));
        assert_eq!(ready(get_user(&missing, 1)), Err(Failure::NOT_FOUND));
        assert_eq!(
            ready(update_user(&missing, 1, body)),
            Err(Failure::NOT_FOUND)
        );

        let broken = Fake::new(true, Err("boom"));
        assert_eq!(ready(get_user(&broken, 1)), Err(Failure::DATABASE_ERROR));
        assert_eq!(
            ready(update_user(&broken, 1, body)),
            Err(Failure::DATABASE_ERROR)
        );

        // A bad body never reaches the store.
        let bad = br#"{"username":"","email":"e"}"#;
        assert_eq!(
            ready(update_user(&found, 1, bad)),
            Err(Failure::bad_request("username must not be empty"))
        );
        assert_eq!(found.calls.load(Ordering::Relaxed), 2);
    }
}
