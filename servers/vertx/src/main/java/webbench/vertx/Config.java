package webbench.vertx;

import java.util.Map;

/**
 * The harness's BENCH_* environment (servers/README.md), read once at start-up. Nothing
 * is hard-coded: the event-loop count, the pool size and the addresses all come from it.
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
    int poolSize) {

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
    int port = positive(env, "BENCH_PORT", null);
    if (port > 65535) {
      throw new Invalid("BENCH_PORT " + port + " is not a port");
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
        positive(env, "BENCH_DB_POOL_SIZE", 1));
  }

  boolean hasDatabase() {
    return !db.equals("none");
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
