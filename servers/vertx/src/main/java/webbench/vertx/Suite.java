package webbench.vertx;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Row;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The database suite (CONTRACT.md section 6) without the router: what /queries/,
 * /updates/, /fortunes/ and /cached/ send to the store and answer. Each statement
 * completes before the next is sent (one in flight per request, no pipelining, no
 * parallel statements), the updates are per-row in autocommit, as manifest.toml's
 * [suite] declares.
 */
final class Suite {
  private final Store store;
  /**
   * /cached/'s cache, one per process, shared by the W event loops: Caffeine, the JVM's
   * usual in-process cache. Room for every row (16,384 > 10,000, so its W-TinyLFU
   * admission never turns one away), no expiry.
   */
  private final Cache<Integer, JsonObject> cache =
      Caffeine.newBuilder().maximumSize(16_384).build();

  Suite(Store store) {
    this.store = store;
  }

  /** Runs step(0) .. step(n-1), each after the previous one's future completed. */
  private interface Step {
    Future<Void> run(int i);
  }

  private static Future<Void> sequence(int i, int n, Step step) {
    if (i >= n) {
      return Future.succeededFuture();
    }
    return step.run(i).compose(done -> sequence(i + 1, n, step));
  }

  /** N SELECTs by primary key of random ids (repeats allowed), one after another. */
  Future<JsonArray> queries(int n) {
    JsonArray found = new JsonArray(new ArrayList<>(n));
    return sequence(0, n, i -> store.getUser(Contract.randomId()).map(row -> {
      if (row != null) {
        found.add(row);
      }
      return null;
    })).map(found);
  }

  /**
   * N distinct rows, ascending, read (N SELECTs), then N single-row UPDATEs in ascending
   * id order, each row's username "u" + 1..1000000 and updated_at the server's clock;
   * the answer is each row as written.
   */
  Future<JsonArray> updates(int n) {
    int[] ids = Contract.distinctSortedIds(n);
    List<JsonObject> rows = new ArrayList<>(n);
    return sequence(0, n, i -> store.getUser(ids[i]).map(row -> {
      if (row != null) {
        rows.add(row);
      }
      return null;
    })).compose(read -> {
      Instant stamp = Store.now();
      for (JsonObject row : rows) {
        row.put("username", Contract.randomUsername()).put("updated_at", stamp);
      }
      return sequence(0, rows.size(), i -> {
        JsonObject row = rows.get(i);
        return store.setUsername(row.getInteger("user_id"), row.getString("username"), stamp);
      });
    }).map(written -> new JsonArray(new ArrayList<>(rows)));
  }

  /** One SELECT of the table, the request-time fortune added, sorted by code point. */
  Future<Map<String, Object>> fortunes() {
    return store.fortunes().map(rowSet -> {
      List<Map<String, Object>> list = new ArrayList<>(rowSet.size() + 1);
      for (Row row : rowSet) {
        list.add(fortune(row.getInteger(0), row.getString(1)));
      }
      list.add(fortune(0, Contract.EXTRA_FORTUNE));
      list.sort((a, b) -> Contract.compareCodePoints((String) a.get("message"), (String) b.get("message")));
      Map<String, Object> context = new HashMap<>(2);
      context.put("fortunes", list);
      return context;
    });
  }

  /** A context with the request-time fortune only: renders the template once at start-up. */
  static Map<String, Object> sample() {
    Map<String, Object> context = new HashMap<>(2);
    context.put("fortunes", List.of(fortune(0, Contract.EXTRA_FORTUNE)));
    return context;
  }

  private static Map<String, Object> fortune(int id, String message) {
    Map<String, Object> f = new HashMap<>(4);
    f.put("id", id);
    f.put("message", message);
    return f;
  }

  /**
   * N random ids from the cache; a miss is one SELECT by primary key, then cached (two
   * concurrent misses of one id may each read it). A warm cache sends no statement and
   * answers without leaving the event loop.
   */
  Future<JsonArray> cached(int n) {
    JsonArray found = new JsonArray(new ArrayList<>(n));
    return fill(found, 0, n).map(found);
  }

  private Future<Void> fill(JsonArray found, int from, int n) {
    for (int i = from; i < n; i++) {
      int id = Contract.randomId();
      JsonObject row = cache.getIfPresent(id);
      if (row == null) {
        int next = i + 1;
        return store.getUser(id).compose(read -> {
          if (read != null) {
            cache.put(id, read);
            found.add(read);
          }
          return fill(found, next, n);
        });
      }
      found.add(row);
    }
    return Future.succeededFuture();
  }
}
