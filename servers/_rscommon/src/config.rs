//! Configuration: read only from the environment variables the harness passes
//! (servers/README.md). Nothing here is hard-coded that the harness controls.

use std::env;
use std::fmt;
use std::path::PathBuf;

/// Which database the server talks to (`BENCH_DB`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DbKind {
    None,
    Postgres,
    Mysql,
}

impl DbKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DbKind::None => "none",
            DbKind::Postgres => "postgres",
            DbKind::Mysql => "mysql",
        }
    }
}

pub struct Config {
    pub server_id: String,
    pub host: String,
    pub port: u16,
    pub workers: usize,
    pub token: String,
    pub db: DbKind,
    /// `BENCH_ORM=1`: the server's ORM variant instead of the raw sqlx queries (db.rs).
    /// Always false for a server without one (`from_env` refuses `BENCH_ORM=1` there).
    pub orm: bool,
    pub db_host: String,
    pub db_port: u16,
    pub db_name: String,
    pub db_user: String,
    pub db_password: String,
    pub pool_size: u32,
    /// `BENCH_STATIC_DIR`, an existing folder (made absolute), or `None` when unset:
    /// then `/static/` is not mounted.
    pub static_dir: Option<PathBuf>,
    /// `BENCH_COMPRESSION=1`: response compression on (servers/README.md, "The HTTP
    /// workloads"); unset or 0: no compression middleware at all.
    pub compression: bool,
}

#[derive(Debug)]
pub struct ConfigError(String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn var_or(name: &str, default: &str) -> String {
    match env::var(name) {
        Ok(v) if !v.is_empty() => v,
        _ => default.to_owned(),
    }
}

fn parse_num<T: std::str::FromStr>(name: &str, default: &str) -> Result<T, ConfigError> {
    let raw = var_or(name, default);
    raw.trim()
        .parse()
        .map_err(|_| ConfigError(format!("{name}={raw:?} is not a valid number")))
}

/// `BENCH_ORM`: anything but a clear 0/1 is refused rather than silently run as the
/// other variant, and so is 1 for a server that has no ORM variant (`orm_name` None),
/// rather than report a variant it does not implement.
fn parse_orm(raw: &str, server: &str, orm_name: Option<&str>) -> Result<bool, ConfigError> {
    match (raw, orm_name) {
        ("0" | "false" | "False", _) => Ok(false),
        ("1" | "true" | "True", Some(_)) => Ok(true),
        (other, Some(name)) => Err(ConfigError(format!(
            "BENCH_ORM={other:?}: expected 0 (raw sqlx) or 1 ({name})"
        ))),
        (other, None) => Err(ConfigError(format!(
            "BENCH_ORM={other:?}: {server} has no ORM variant"
        ))),
    }
}

/// `BENCH_COMPRESSION`: `1` (or `true`) turns compression on; unset, empty or `0` leaves
/// it off; anything else is refused rather than guessed. For a server whose compressed
/// and plain stacks are different types, so that its main() picks one before
/// [`Config::from_env`] (which reports a bad value and stops the start).
pub fn compression_from_env() -> Result<bool, ConfigError> {
    match env::var("BENCH_COMPRESSION").unwrap_or_default().trim() {
        "" | "0" | "false" | "False" => Ok(false),
        "1" | "true" | "True" => Ok(true),
        other => Err(ConfigError(format!(
            "BENCH_COMPRESSION={other:?}: expected 1 (on) or 0 / unset (off)"
        ))),
    }
}

/// `BENCH_STATIC_DIR`: unset or empty is `None`; otherwise it must be a folder (a static
/// handler given a missing one would serve nothing, or worse, actix-files its working
/// directory), returned absolute.
fn static_dir_from_env() -> Result<Option<PathBuf>, ConfigError> {
    let raw = env::var_os("BENCH_STATIC_DIR").unwrap_or_default();
    if raw.is_empty() {
        return Ok(None);
    }
    let dir = PathBuf::from(&raw);
    match dir.canonicalize() {
        Ok(abs) if abs.is_dir() => Ok(Some(abs)),
        _ => Err(ConfigError(format!(
            "BENCH_STATIC_DIR={:?} is not a folder",
            dir.display()
        ))),
    }
}

impl Config {
    /// A server on 127.0.0.1 with no database (BENCH_DB=none), one worker and token
    /// "tok": what the servers' unit tests build their state from.
    pub fn without_database(server_id: &str) -> Config {
        Config {
            server_id: server_id.into(),
            host: "127.0.0.1".into(),
            port: 1,
            workers: 1,
            token: "tok".into(),
            db: DbKind::None,
            orm: false,
            db_host: String::new(),
            db_port: 1,
            db_name: String::new(),
            db_user: String::new(),
            db_password: String::new(),
            pool_size: 1,
            static_dir: None,
            compression: false,
        }
    }

    /// `server`: the server's id, `BENCH_SERVER_ID`'s default. `orm_name`: the name of
    /// the server's ORM variant (manifest `orm = [false, true]`), or `None` when it only
    /// has the raw-driver variant (`orm = [false]`).
    pub fn from_env(server: &str, orm_name: Option<&str>) -> Result<Config, ConfigError> {
        let db = match var_or("BENCH_DB", "none").to_ascii_lowercase().as_str() {
            "none" => DbKind::None,
            "postgres" | "postgresql" => DbKind::Postgres,
            "mysql" | "mariadb" => DbKind::Mysql,
            other => {
                return Err(ConfigError(format!(
                    "BENCH_DB={other:?}: expected postgres, mysql or none"
                )))
            }
        };
        let orm = parse_orm(&var_or("BENCH_ORM", "0"), server, orm_name)?;
        let workers: usize = parse_num("BENCH_WORKERS", "8")?;
        if workers == 0 {
            return Err(ConfigError("BENCH_WORKERS must be at least 1".into()));
        }
        let pool_size: u32 = parse_num("BENCH_DB_POOL_SIZE", "8")?;
        if db != DbKind::None && pool_size == 0 {
            return Err(ConfigError("BENCH_DB_POOL_SIZE must be at least 1".into()));
        }
        let default_db_port = if db == DbKind::Mysql { "3306" } else { "5432" };
        Ok(Config {
            server_id: var_or("BENCH_SERVER_ID", server),
            host: var_or("BENCH_HOST", "127.0.0.1"),
            port: parse_num("BENCH_PORT", "8000")?,
            workers,
            token: var_or("BENCH_TOKEN", "hardcoded_token"),
            db,
            orm,
            db_host: var_or("BENCH_DB_HOST", "127.0.0.1"),
            db_port: parse_num("BENCH_DB_PORT", default_db_port)?,
            db_name: var_or("BENCH_DB_NAME", "webservers_bench"),
            db_user: var_or("BENCH_DB_USER", "bench"),
            // An empty password is a legitimate value, so no var_or here.
            db_password: env::var("BENCH_DB_PASSWORD").unwrap_or_default(),
            pool_size,
            static_dir: static_dir_from_env()?,
            compression: compression_from_env()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orm_flag() {
        let orm = Some("SeaORM");
        assert!(!parse_orm("0", "actix-web", orm).unwrap());
        assert!(parse_orm("1", "actix-web", orm).unwrap());
        assert!(parse_orm("True", "actix-web", orm).unwrap());
        assert!(!parse_orm("false", "axum", None).unwrap());
        assert_eq!(
            parse_orm("yes", "actix-web", orm).unwrap_err().to_string(),
            r#"BENCH_ORM="yes": expected 0 (raw sqlx) or 1 (SeaORM)"#
        );
        assert_eq!(
            parse_orm("1", "axum", None).unwrap_err().to_string(),
            r#"BENCH_ORM="1": axum has no ORM variant"#
        );
    }
}
