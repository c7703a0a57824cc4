package webbench.vertx;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * The harness's BENCH_* environment (servers/README.md), read once at start-up. Nothing
 * is hard-coded: the event-loop count, the pool size and the addresses all come from it.
 * The listeners the server speaks itself besides HTTP/1.1 on BENCH_PORT (servers/README.md,
 * "Protocols a server speaks itself"): tlsPort with tlsCert / tlsKey (PEM paths) and
 * h2cPort, each 0 / null when the harness does not ask for it. The HTTP workloads
 * (servers/README.md): staticDir, the folder /static/ serves (BENCH_STATIC_DIR; null: no
 * /static/ route at all), and compression (BENCH_COMPRESSION=1: the HTTP server's gzip,
 * deflate and br; otherwise none).
 */
record Config(
    String serverId,
    String host,
    int port,
    int workers,
    String token,
    String db,
    boolean orm,
    String dbHost,
    int dbPort,
    String dbName,
    String dbUser,
    String dbPassword,
    int poolSize,
    int tlsPort,
    String tlsCert,
    String tlsKey,
    int h2cPort,
    String staticDir,
    boolean compression) {

  static final class Invalid extends RuntimeException {
    Invalid(String message) {
      super(message);
    }
  }

  static Config fromEnv(Map<String, String> env) {
    String db = env.getOrDefault("BENCH_DB", "none");
    if (db.isEmpty()) {
      db = "none";
    }
    if (!db.equals("postgres") && !db.equals("mysql") && !db.equals("none")) {
      throw new Invalid("BENCH_DB must be postgres, mysql or none, got " + db);
    }
    int port = port(env, "BENCH_PORT", null);
    int tlsPort = port(env, "BENCH_TLS_PORT", 0);
    String tlsCert = null;
    String tlsKey = null;
    if (tlsPort != 0) {
      tlsCert = readable(env, "BENCH_TLS_CERT");
      tlsKey = readable(env, "BENCH_TLS_KEY");
    }
    int h2cPort = port(env, "BENCH_H2C_PORT", 0);
    String staticDir = env.get("BENCH_STATIC_DIR");
    if (staticDir != null && staticDir.isEmpty()) {
      staticDir = null;
    }
    if (staticDir != null && !Files.isDirectory(Path.of(staticDir))) {
      throw new Invalid("BENCH_STATIC_DIR " + staticDir + " is not a directory");
    }
    return new Config(
        nonEmpty(env, "BENCH_SERVER_ID", "vertx"),
        nonEmpty(env, "BENCH_HOST", "127.0.0.1"),
        port,
        positive(env, "BENCH_WORKERS", 1),
        env.getOrDefault("BENCH_TOKEN", ""),
        db,
        "1".equals(env.get("BENCH_ORM")),
        nonEmpty(env, "BENCH_DB_HOST", "127.0.0.1"),
        db.equals("none") ? 0 : positive(env, "BENCH_DB_PORT", db.equals("postgres") ? 5432 : 3306),
        nonEmpty(env, "BENCH_DB_NAME", "webservers_bench"),
        nonEmpty(env, "BENCH_DB_USER", "bench"),
        env.getOrDefault("BENCH_DB_PASSWORD", ""),
        positive(env, "BENCH_DB_POOL_SIZE", 1),
        tlsPort,
        tlsCert,
        tlsKey,
        h2cPort,
        staticDir == null ? null : Path.of(staticDir).toAbsolutePath().normalize().toString(),
        "1".equals(env.get("BENCH_COMPRESSION")));
  }

  boolean hasDatabase() {
    return !db.equals("none");
  }

  /** A port 1..65535; `fallback` (0: no such listener) when unset or empty. */
  private static int port(Map<String, String> env, String name, Integer fallback) {
    String raw = env.get(name);
    if ((raw == null || raw.isEmpty()) && fallback != null && fallback == 0) {
      return 0;
    }
    int port = positive(env, name, fallback);
    if (port > 65535) {
      throw new Invalid(name + " " + port + " is not a port");
    }
    return port;
  }

  /** A file path the harness must give with BENCH_TLS_PORT, readable now. */
  private static String readable(Map<String, String> env, String name) {
    String path = env.get(name);
    if (path == null || path.isEmpty()) {
      throw new Invalid(name + " is required with BENCH_TLS_PORT");
    }
    if (!Files.isReadable(Path.of(path))) {
      throw new Invalid(name + " " + path + " cannot be read");
    }
    return path;
  }

  private static String nonEmpty(Map<String, String> env, String name, String fallback) {
    String value = env.get(name);
    return value == null || value.isEmpty() ? fallback : value;
  }

  private static int positive(Map<String, String> env, String name, Integer fallback) {
    String raw = env.get(name);
    if (raw == null || raw.isEmpty()) {
      if (fallback == null) {
        throw new Invalid(name + " is required");
      }
      return fallback;
    }
    try {
      int value = Integer.parseInt(raw);
      if (value >= 1 && raw.chars().allMatch(c -> c >= '0' && c <= '9')) {
        return value;
      }
    } catch (NumberFormatException e) {
      // fall through
    }
    throw new Invalid(name + " must be a positive integer, got \"" + raw + "\"");
  }
}
