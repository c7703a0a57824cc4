package webbench.vertx;

import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import java.util.concurrent.TimeUnit;

/**
 * Start-up: one Vert.x instance with W event loops (BENCH_WORKERS), the one SQL pool of
 * the process opened in full, then W instances of ServerVerticle deployed, one per event
 * loop, all on the same port (and on the TLS and h2c ports when the harness asks for
 * them). SIGTERM (the JVM's shutdown hook): Vert.x is closed, which
 * undeploys the verticles (their servers stop) and closes the pool.
 */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    Config cfg;
    try {
      cfg = Config.fromEnv(System.getenv());
    } catch (Config.Invalid e) {
      System.err.println("vertx: " + e.getMessage());
      System.exit(2);
      return;
    }
    VertxOptions options = new VertxOptions()
        // W event loops = W workers (concurrency = "threads"), as actix-web's W workers
        .setEventLoopPoolSize(cfg.workers())
        // no handler here blocks, so the worker pool (executeBlocking) is never used: a
        // small one instead of the default 20 threads. The internal blocking pool keeps
        // Vert.x's default (20): StaticHandler's file-system calls (FileSystem.exists
        // per /static/ request) run on it.
        .setWorkerPoolSize(2);
    Vertx vertx = Vertx.vertx(options);

    Future<Store> store = cfg.hasDatabase() ? Store.open(vertx, cfg) : Future.succeededFuture(null);
    store
        .compose(db -> {
          ServerVerticle.Shared shared = ServerVerticle.Shared.of(cfg, db);
          return vertx.deployVerticle(() -> new ServerVerticle(shared),
              new DeploymentOptions().setInstances(cfg.workers()));
        })
        .onSuccess(id -> System.err.println("vertx: listening on " + cfg.host() + ":" + cfg.port()
            + " with " + cfg.workers() + " event loops, database " + cfg.db()
            + (cfg.hasDatabase() ? ", pool " + cfg.poolSize() : "")
            + (cfg.tlsPort() != 0 ? "; TLS 1.3 (h2, http/1.1) on " + cfg.host() + ":" + cfg.tlsPort() : "")
            + (cfg.h2cPort() != 0 ? "; h2c on " + cfg.host() + ":" + cfg.h2cPort() : "")))
        .onFailure(e -> {
          System.err.println("vertx: start-up failed: " + e);
          System.exit(1);
        });

    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        // undeploys every verticle first (each server stops accepting, in-flight
        // requests get 1 s), then runs the close hooks: the pool, built on this Vert.x
        Future<Void> closing = vertx.close();
        closing.toCompletionStage().toCompletableFuture().get(3, TimeUnit.SECONDS);
      } catch (Exception e) {
        // the JVM exits anyway; the harness's SIGKILL comes 5 s after SIGTERM
      }
    }, "vertx-shutdown"));
  }
}
