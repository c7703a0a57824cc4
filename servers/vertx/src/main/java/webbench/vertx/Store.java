package webbench.vertx;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.mysqlclient.MySQLBuilder;
import io.vertx.mysqlclient.MySQLConnectOptions;
import io.vertx.pgclient.PgBuilder;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.pgclient.SslMode;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowIterator;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;

/**
 * The raw variant's database side: one Vert.x SQL client pool for the whole process
 * (vertx-pg-client or vertx-mysql-client) and the contract's statements, each a prepared
 * query with bound parameters (Tuple), never string formatting. The clients prepare a
 * statement once per connection and keep it (setCachePreparedStatements), so after
 * warm-up a statement is one Bind/Execute round trip.
 */
final class Store {
  private static final String COLUMNS = "user_id, username, email, created_at, updated_at, is_archived";
  private static final String PG_SELECT = "SELECT " + COLUMNS + " FROM users WHERE user_id = $1";
  // One statement: RETURNING gives the row as stored after the update.
  private static final String PG_UPDATE =
      "UPDATE users SET username = $1, email = $2, updated_at = now() WHERE user_id = $3 RETURNING " + COLUMNS;
  private static final String PG_UPDATE_ROW = "UPDATE users SET username = $1, updated_at = $2 WHERE user_id = $3";
  private static final String MY_SELECT = "SELECT " + COLUMNS + " FROM users WHERE user_id = ?";
  // MySQL/MariaDB have no UPDATE ... RETURNING: one UPDATE, then one SELECT on the same
  // connection. UTC_TIMESTAMP(6): the column holds naive UTC with microseconds.
  private static final String MY_UPDATE =
      "UPDATE users SET username = ?, email = ?, updated_at = UTC_TIMESTAMP(6) WHERE user_id = ?";
  private static final String MY_UPDATE_ROW = "UPDATE users SET username = ?, updated_at = ? WHERE user_id = ?";
  // The same text on both engines.
  private static final String FORTUNES = "SELECT id, message FROM fortune";

  private final Pool pool;
  private final boolean postgres;
  private final String select;
  private final String updateRow;

  private Store(Pool pool, boolean postgres) {
    this.pool = pool;
    this.postgres = postgres;
    this.select = postgres ? PG_SELECT : MY_SELECT;
    this.updateRow = postgres ? PG_UPDATE_ROW : MY_UPDATE_ROW;
  }

  /**
   * The pool for cfg.db, every connection of it open when the future completes. One pool
   * for the process (concurrency = threads: BENCH_DB_POOL_SIZE is the whole budget),
   * shared by the W verticle instances; eventLoopSize = W spreads its connections over
   * the W event loops, whatever thread opens them (see manifest.toml [notes] pool).
   */
  static Future<Store> open(Vertx vertx, Config cfg) {
    PoolOptions poolOptions = new PoolOptions()
        .setMaxSize(cfg.poolSize())
        .setEventLoopSize(cfg.workers())
        // persistent connections for the whole run: never closed for idling or age
        .setIdleTimeout(0)
        .setMaxLifetime(0)
        // under load requests queue for a connection (unbounded queue, 30 s) rather than fail
        .setMaxWaitQueueSize(-1)
        .setConnectionTimeout(30)
        .setName("webbench-" + cfg.db());
    boolean postgres = cfg.db().equals("postgres");
    Pool pool;
    if (postgres) {
      PgConnectOptions options = new PgConnectOptions()
          .setHost(cfg.dbHost())
          .setPort(cfg.dbPort())
          .setDatabase(cfg.dbName())
          .setUser(cfg.dbUser())
          .setPassword(cfg.dbPassword())
          .setSslMode(SslMode.DISABLE)
          .setCachePreparedStatements(true)
          .setPreparedStatementCacheMaxSize(16)
          // one command in flight per connection: no pipelining ([suite] pipelining = false)
          .setPipeliningLimit(1)
          .addProperty("application_name", cfg.serverId());
      pool = PgBuilder.pool().with(poolOptions).connectingTo(options).using(vertx).build();
    } else {
      MySQLConnectOptions options = new MySQLConnectOptions()
          .setHost(cfg.dbHost())
          .setPort(cfg.dbPort())
          .setDatabase(cfg.dbName())
          .setUser(cfg.dbUser())
          .setPassword(cfg.dbPassword())
          .setSslMode(io.vertx.mysqlclient.SslMode.DISABLED)
          .setCharset("utf8mb4")
          // false (the default, stated): the client sets CLIENT_FOUND_ROWS, so an
          // UPDATE's row count is the rows matched, not the rows changed
          .setUseAffectedRows(false)
          .setCachePreparedStatements(true)
          .setPreparedStatementCacheMaxSize(16)
          .setPipeliningLimit(1);
      pool = MySQLBuilder.pool().with(poolOptions).connectingTo(options).using(vertx).build();
    }
    Store store = new Store(pool, postgres);
    return store.openAll(cfg.poolSize()).map(store);
  }

  /** Acquire every connection at once (each held, so each is a new one), then release. */
  private Future<Void> openAll(int size) {
    List<Future<SqlConnection>> held = new ArrayList<>(size);
    for (int i = 0; i < size; i++) {
      held.add(pool.getConnection());
    }
    return Future.all(held).compose(all -> {
      for (Future<SqlConnection> f : held) {
        f.result().close();
      }
      return Future.<Void>succeededFuture();
    });
  }

  Future<Void> close() {
    return pool.close();
  }

  /** One SELECT by primary key; null when no row has this id. */
  Future<JsonObject> getUser(int id) {
    return pool.preparedQuery(select).execute(Tuple.of(id)).map(this::firstUser);
  }

  /**
   * One UPDATE of username, email and updated_at; PostgreSQL: RETURNING the row, MySQL:
   * then one SELECT on the same connection, none when no row matched. null: no such row.
   */
  Future<JsonObject> updateUser(int id, String username, String email) {
    if (postgres) {
      return pool.preparedQuery(PG_UPDATE).execute(Tuple.of(username, email, id)).map(this::firstUser);
    }
    return pool.withConnection(conn -> conn.preparedQuery(MY_UPDATE)
        .execute(Tuple.of(username, email, id))
        .compose(done -> done.rowCount() == 0
            ? Future.succeededFuture(null)
            : conn.preparedQuery(MY_SELECT).execute(Tuple.of(id)).map(this::firstUser)));
  }

  /** /updates/: one single-row UPDATE of username and updated_at (the server's clock). */
  Future<Void> setUsername(int id, String username, Instant stamp) {
    Object time = postgres
        ? OffsetDateTime.ofInstant(stamp, ZoneOffset.UTC)
        : LocalDateTime.ofInstant(stamp, ZoneOffset.UTC);
    return pool.preparedQuery(updateRow).execute(Tuple.of(username, time, id)).mapEmpty();
  }

  /** The whole fortune table, one SELECT. */
  Future<RowSet<Row>> fortunes() {
    return pool.preparedQuery(FORTUNES).execute();
  }

  /** The server's current UTC time at the precision both databases store. */
  static Instant now() {
    return Instant.now().truncatedTo(ChronoUnit.MICROS);
  }

  private JsonObject firstUser(RowSet<Row> rows) {
    RowIterator<Row> it = rows.iterator();
    return it.hasNext() ? user(it.next()) : null;
  }

  /**
   * The contract's user object, exactly these keys in this order. Vert.x's JSON encoder
   * writes an Instant as ISO-8601 UTC with a Z (fractional seconds only when non-zero).
   * PostgreSQL timestamptz arrives as an OffsetDateTime; MySQL DATETIME(6) as a
   * LocalDateTime that holds UTC, so UTC is attached, never shifted.
   */
  private JsonObject user(Row row) {
    return new JsonObject()
        .put("user_id", row.getInteger(0))
        .put("username", row.getString(1))
        .put("email", row.getString(2))
        .put("created_at", instant(row, 3))
        .put("updated_at", instant(row, 4))
        .put("is_archived", row.getBoolean(5));
  }

  private Instant instant(Row row, int column) {
    return postgres
        ? row.getOffsetDateTime(column).toInstant()
        : row.getLocalDateTime(column).toInstant(ZoneOffset.UTC);
  }
}
