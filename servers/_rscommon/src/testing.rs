//! What the Rust servers' unit tests of the HTTP workloads share (feature `testing`,
//! which each server turns on in its dev-dependencies only): a static folder laid out as
//! the harness lays it (bench/infra/static_files.py), the paths that climb out of it,
//! and the requests every server answers the same way.

use std::path::PathBuf;

/// The file in [`static_folder`]'s folder and its size.
pub const FILE: &str = "1k.txt";
pub const FILE_SIZE: usize = 1024;
/// `/static/` paths that try to climb out of the folder to the file beside it: each
/// must be a 4xx, never that file, never a 5xx.
pub const CLIMBS: [&str; 5] = [
    "/static/../outside.txt",
    "/static/%2e%2e/outside.txt",
    "/static/..%2foutside.txt",
    "/static/%2e%2e%2foutside.txt",
    "/static/%2E%2E%2Foutside.txt",
];
/// What `outside.txt` holds: a body equal to it means the server climbed out.
pub const OUTSIDE: &[u8] = b"never served\n";
/// The body `/upload/` gets in the tests and its answer (zlib.crc32(b"123456789")).
pub const UPLOAD_BODY: &[u8] = b"123456789";
pub const UPLOAD_ANSWER: &str = r#"{"bytes": 9, "crc32": "cbf43926"}"#;

/// A folder `files` holding [`FILE`], with `outside.txt` beside it, under the temporary
/// folder, named after `server` and the process (tests of one binary share it).
pub fn static_folder(server: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("webbench-{server}-{}", std::process::id()));
    let dir = root.join("files");
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    std::fs::write(dir.join(FILE), "x".repeat(FILE_SIZE)).expect("a file in it");
    std::fs::write(root.join("outside.txt"), OUTSIDE).expect("a file beside it");
    dir
}
