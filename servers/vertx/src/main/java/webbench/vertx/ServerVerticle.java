package webbench.vertx;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.buffer.Buffer;
import io.netty.handler.codec.compression.Brotli;
import io.netty.handler.codec.compression.CompressionOptions;
import io.netty.handler.codec.compression.StandardCompressionOptions;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.JdkSSLEngineOptions;
import io.vertx.core.net.PemKeyCertOptions;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import io.vertx.ext.web.handler.FileSystemAccess;
import io.vertx.ext.web.handler.PlatformHandler;
import io.vertx.ext.web.handler.StaticHandler;
import io.vertx.ext.web.templ.handlebars.HandlebarsTemplateEngine;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * One event loop's HTTP server: W instances of this verticle are deployed (Main), each
 * on its own event loop, all listening on the same port; Vert.x hands each accepted
 * connection to one of them in turn, and that loop serves it from then on. When the
 * harness asks for them (servers/README.md, "Protocols a server speaks itself"), every
 * instance also listens on BENCH_TLS_PORT (TLS 1.3, ALPN h2 and http/1.1) and on
 * BENCH_H2C_PORT (HTTP/2 with prior knowledge), with the same router, shared the same way.
 */
final class ServerVerticle extends VerticleBase {
  static final String FORTUNES_TEMPLATE = "templates/fortunes.hbs";

  private static final CharSequence CONTENT_TYPE = HttpHeaders.CONTENT_TYPE;
  private static final CharSequence DATE = HttpHeaders.DATE;
  private static final CharSequence ALLOW = HttpHeaders.ALLOW;
  private static final CharSequence VARY = HttpHeaders.VARY;
  private static final CharSequence ACCEPT_ENCODING = HttpHeaders.createOptimized("Accept-Encoding");
  private static final CharSequence JSON = HttpHeaders.createOptimized(Contract.JSON_TYPE);
  private static final CharSequence TEXT = HttpHeaders.createOptimized(Contract.TEXT_TYPE);
  private static final CharSequence HTML = HttpHeaders.createOptimized(Contract.HTML_TYPE);
  // IMF-fixdate (RFC 9110 5.6.7): two-digit day, English names, GMT
  private static final DateTimeFormatter IMF_FIXDATE =
      DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.ENGLISH);

  // TLS 1.3 only, with the one cipher suite every server and proxy of a run uses
  // (bench/infra/certs.py), checked on the wire by the harness
  static final String TLS_VERSION = "TLSv1.3";
  static final String CIPHER_SUITE = "TLS_AES_128_GCM_SHA256";

  // /ws/'s limits (Vert.x's defaults, stated)
  static final int WS_MAX_FRAME = HttpServerOptions.DEFAULT_MAX_WEBSOCKET_FRAME_SIZE;
  static final int WS_MAX_MESSAGE = HttpServerOptions.DEFAULT_MAX_WEBSOCKET_MESSAGE_SIZE;

  private final Shared shared;
  private final String token;
  private HandlebarsTemplateEngine templates;
  /** BENCH_PORT's server. */
  private HttpServer server;
  /** The listeners the harness asked for (TLS, h2c), opened before BENCH_PORT's. */
  private final List<Listener> extra = new ArrayList<>();

  private record Listener(String name, int port, HttpServer server) {}

  private CharSequence date = now();
  /** /upload/'s copy buffer: the body goes through the CRC in slices of this size (one
   * per verticle: its handlers all run on its one event loop). */
  private final byte[] scratch = new byte[64 * 1024];
  /** /ws/'s strict UTF-8 decoder (one per verticle, as scratch). */
  private final java.nio.charset.CharsetDecoder utf8 = WebSocketEcho.utf8Decoder();

  /** What all W instances share: the settings, the one pool, the one cache. */
  record Shared(Config cfg, Store store, Suite suite, Buffer pingBody) {
    static Shared of(Config cfg, Store store) {
      Buffer ping = new JsonObject()
          .put("server", cfg.serverId())
          .put("database", cfg.db())
          .put("orm", cfg.orm())
          .toBuffer();
      return new Shared(cfg, store, store == null ? null : new Suite(store), ping);
    }
  }

  ServerVerticle(Shared shared) {
    this.shared = shared;
    this.token = shared.cfg().token();
  }

  private static CharSequence now() {
    return HttpHeaders.createOptimized(IMF_FIXDATE.format(ZonedDateTime.now(ZoneOffset.UTC)));
  }

  @Override
  public Future<?> start() {
    // The Date header (RFC 9110: an origin server with a clock sends one; Vert.x does
    // not add it): formatted once a second per event loop, not per response.
    vertx.setPeriodic(1000, id -> date = now());
    templates = HandlebarsTemplateEngine.create(vertx);
    Config cfg = shared.cfg();
    Router router = router();
    server = vertx.createHttpServer(options(cfg.port())
        // HTTP/1.1 only (the harness's clients): no h2c upgrade handling per request
        .setHttp2ClearTextEnabled(false)).requestHandler(router);
    // The listeners the harness asked for, each its own HttpServer around the same
    // router; like BENCH_PORT, each port is shared by the W instances (Vert.x hands an
    // accepted connection to one of them in turn). HTTP/2 keeps Vert.x's defaults
    // (HttpServerOptions.initialSettings: 100 concurrent streams per connection, an
    // initial stream window of 65,535 bytes, 16 KiB frames, an 8 KiB header list, a 4 KiB
    // HPACK table; the connection window left at RFC 9113's 65,535 bytes).
    if (cfg.tlsPort() != 0) {
      extra.add(new Listener("BENCH_TLS_PORT", cfg.tlsPort(), vertx.createHttpServer(options(cfg.tlsPort())
          .setSsl(true)
          // the JDK's TLS (JSSE) through Netty's JdkSslContext, stated (also Vert.x's
          // choice without netty-tcnative, which this build does not have)
          .setSslEngineOptions(new JdkSSLEngineOptions())
          .setKeyCertOptions(new PemKeyCertOptions().setCertPath(cfg.tlsCert()).setKeyPath(cfg.tlsKey()))
          .setEnabledSecureTransportProtocols(Set.of(TLS_VERSION))
          .addEnabledCipherSuite(CIPHER_SUITE)
          // ALPN: h2 preferred, then http/1.1; with the JDK engine Vert.x asks Netty for
          // FATAL_ALERT, so a handshake offering neither is refused
          .setUseAlpn(true)
          .setAlpnVersions(List.of(HttpVersion.HTTP_2, HttpVersion.HTTP_1_1)))
          .requestHandler(router)));
    }
    if (cfg.h2cPort() != 0) {
      // HTTP/2 with prior knowledge over TCP (Vert.x reads the connection preface; it
      // also answers HTTP/1.1 and an Upgrade: h2c there, which the harness never sends)
      extra.add(new Listener("BENCH_H2C_PORT", cfg.h2cPort(), vertx.createHttpServer(options(cfg.h2cPort())
          .setHttp2ClearTextEnabled(true)).requestHandler(router)));
    }
    // Load and compile the fortunes template now (Vert.x's template engines cache it):
    // the first request would otherwise read it from the class path on the event loop.
    Future<?> warm = templates.render(Suite.sample(), FORTUNES_TEMPLATE);
    // the extra listeners first, then BENCH_PORT: /ping/ answers only once they are open
    // (a certificate that cannot be read or a busy port fails the deployment: Main exits)
    return warm
        .compose(ok -> Future.all(extra.stream().map(this::listen).toList()))
        .compose(ok -> server.listen());
  }

  /** An extra listener's listen(), a failure naming it (a busy port, a bad key). */
  private Future<HttpServer> listen(Listener listener) {
    return listener.server().listen().recover(e -> Future.failedFuture(new IllegalStateException(
        listener.name() + ": cannot listen on " + shared.cfg().host() + ":" + listener.port() + ": " + e, e)));
  }

  /**
   * What every listener shares: BENCH_HOST, compression only with BENCH_COMPRESSION=1,
   * TCP_NODELAY, no idle timeout.
   */
  private HttpServerOptions options(int port) {
    HttpServerOptions options = new HttpServerOptions()
        .setHost(shared.cfg().host())
        .setPort(port)
        .setCompressionSupported(shared.cfg().compression())
        .setTcpNoDelay(true)
        // keep-alive on, no idle timeout (Vert.x's defaults, stated)
        .setIdleTimeout(0)
        .setMaxHeaderSize(8192)
        // /ws/: Vert.x's defaults, stated: a frame of up to 65,536 bytes of payload (a
        // 64 KiB message fits in one frame), a message of up to 262,144 bytes reassembled;
        // no compression extension (permessage-deflate, and the old per-frame one, off: never
        // negotiated, and a frame with RSV bits set is refused); unmasked client frames
        // refused (acceptUnmaskedFrames false)
        .setMaxWebSocketFrameSize(WS_MAX_FRAME)
        .setMaxWebSocketMessageSize(WS_MAX_MESSAGE)
        .setPerMessageWebSocketCompressionSupported(false)
        .setPerFrameWebSocketCompressionSupported(false)
        .setAcceptUnmaskedFrames(false);
    if (shared.cfg().compression()) {
      // Netty's HttpContentCompressor chooses by Accept-Encoding (br first on a tie);
      // every answer is compressed whatever its size (Vert.x's threshold 0, stated).
      options.setCompressionContentSizeThreshold(HttpServerOptions.DEFAULT_COMPRESSION_CONTENT_SIZE_THRESHOLD)
          .setCompressors(compressors());
    }
    return options;
  }

  /**
   * Vert.x's own gzip and deflate (level 6, window 15, memory level 8: what it uses when
   * no compressor is named), and br at Netty's default (quality 4, text mode) when
   * Brotli4j's native library loads on this platform.
   */
  static List<CompressionOptions> compressors() {
    List<CompressionOptions> compressors = new ArrayList<>();
    if (Brotli.isAvailable()) {
      compressors.add(StandardCompressionOptions.brotli());
    }
    int level = HttpServerOptions.DEFAULT_COMPRESSION_LEVEL;
    compressors.add(StandardCompressionOptions.gzip(level, 15, 8));
    compressors.add(StandardCompressionOptions.deflate(level, 15, 8));
    return compressors;
  }

  @Override
  public Future<?> stop() {
    // Stop accepting on every listener; in-flight requests get at most 1 s (the harness
    // SIGKILLs after 5).
    List<Future<Void>> closing = new ArrayList<>();
    closing.add(server.shutdown(1, TimeUnit.SECONDS));
    extra.forEach(listener -> closing.add(listener.server().shutdown(1, TimeUnit.SECONDS)));
    return Future.all(closing);
  }

  private Router router() {
    Router router = Router.router(vertx);
    Config cfg = shared.cfg();
    if (cfg.compression()) {
      // Netty's compressor sets Content-Encoding but no Vary: every answer says that it
      // depends on Accept-Encoding (StaticHandler adds none when one is there already)
      router.route().handler(ctx -> {
        ctx.response().putHeader(VARY, ACCEPT_ENCODING);
        ctx.next();
      });
    }
    router.get("/ping/").handler(ctx -> send(ctx, 200, JSON, shared.pingBody()));
    router.get("/plain/").handler(this::plain);
    router.get("/to_json/").handler(this::toJson);
    String user = "/user/([^/]+)/";
    router.getWithRegex(user).handler(this::getUser);
    // token, database and id first; only then is the body read (64 KiB cap, any type).
    // vertx-web runs a route's handlers in a fixed order of kinds (platform, ..., body,
    // ..., user) and refuses a user handler before the BodyHandler: the check is marked
    // a PlatformHandler so that it runs, and answers, before any body byte is read.
    router.patchWithRegex(user)
        .handler((PlatformHandler) this::checkPatch)
        .handler(BodyHandler.create(false).setBodyLimit(Contract.MAX_BODY).setHandleFileUploads(false)
            .setMergeFormAttributes(false).setPreallocateBodyBuffer(false))
        .handler(this::patchUser);
    router.get("/queries/").handler(ctx -> rows(ctx, Suite::queries));
    router.get("/updates/").handler(ctx -> rows(ctx, Suite::updates));
    router.get("/fortunes/").handler(this::fortunes);
    router.get("/cached/").handler(ctx -> rows(ctx, Suite::cached));
    // the HTTP workloads
    // WebSocket echo: the token before the upgrade (a 401 JSON answer, no handshake), then
    // Vert.x's handshake (toWebSocket: a 101, or Vert.x's own 400 / 426 answer to an HTTP/1.1
    // request that is not a valid upgrade) and the echo on this verticle's event loop. Over
    // HTTP/2 (the TLS listener's ALPN h2) Vert.x 5.0 has no WebSocket (RFC 8441) and answers
    // nothing itself: a JSON 400.
    router.get("/ws/").handler(ctx -> {
      if (authorized(ctx)) {
        ctx.request().toWebSocket().onComplete(
            ws -> WebSocketEcho.serve(ws, utf8, WS_MAX_MESSAGE),
            e -> send(ctx, 400, JSON, Contract.NOT_WEBSOCKET));
      }
    });
    if (cfg.staticDir() != null) {
      staticFiles(router, cfg);
    }
    // token first, then BodyHandler reads the whole body (as for PATCH): 8 MiB at most,
    // a declared or counted length over it is a 413
    router.post("/upload/")
        .handler((PlatformHandler) ctx -> {
          if (authorized(ctx)) {
            ctx.next();
          }
        })
        .handler(BodyHandler.create(false).setBodyLimit(Contract.MAX_UPLOAD).setHandleFileUploads(false)
            .setMergeFormAttributes(false))
        .handler(ctx -> send(ctx, 200, JSON, Contract.upload(ctx.body().buffer(), scratch)));
    // a timer on this event loop, which serves other requests meanwhile
    router.get("/delay/").handler(ctx -> {
      if (authorized(ctx)) {
        vertx.setTimer(Contract.DELAY_MS, id -> send(ctx, 200, TEXT, Contract.DELAYED));
      }
    });
    // every failure is a JSON body: unknown path, wrong method, a body over the cap or
    // unreadable, anything thrown
    router.errorHandler(404, ctx -> send(ctx, 404, JSON, Contract.NOT_FOUND));
    router.errorHandler(405, this::methodNotAllowed);
    router.errorHandler(400, ctx -> send(ctx, 400, JSON, Contract.error("bad request")));
    // over BodyHandler's cap: /upload/'s 413 as the contract says, PATCH's a 400
    router.errorHandler(413, ctx -> send(ctx, "/upload/".equals(ctx.request().path()) ? 413 : 400,
        JSON, Contract.BODY_TOO_LARGE));
    router.errorHandler(403, ctx -> send(ctx, 403, JSON, Contract.error("forbidden")));
    router.errorHandler(416, ctx -> send(ctx, 416, JSON, Contract.error("range not satisfiable")));
    router.errorHandler(500, ctx -> {
      if (ctx.failure() != null) {
        System.err.println("internal error: " + ctx.failure());
      }
      send(ctx, 500, JSON, Contract.INTERNAL_ERROR);
    });
    return router;
  }

  /**
   * GET and HEAD /static/*: vertx-web's StaticHandler on BENCH_STATIC_DIR (an absolute
   * path, hence FileSystemAccess.ROOT), its defaults otherwise. A name it does not find,
   * or one that climbs out of the folder, falls through to the router's JSON 404.
   */
  private void staticFiles(Router router, Config cfg) {
    StaticHandler files = StaticHandler.create(FileSystemAccess.ROOT, cfg.staticDir())
        // the harness never changes the files while the server runs (Vert.x's default,
        // stated): their properties are cached, Last-Modified answered from the cache
        .setFilesReadOnly(true)
        .setDirectoryListing(false);
    var route = router.route("/static/*").method(HttpMethod.GET).method(HttpMethod.HEAD);
    if (cfg.compression()) {
      // a byte range is sent as it is on disk: Content-Range counts the file's bytes, so
      // the compressor must not encode it (StaticHandler's own way to skip compression)
      route.handler(ctx -> {
        if (ctx.request().headers().contains("Range")) {
          ctx.response().putHeader(HttpHeaders.CONTENT_ENCODING, HttpHeaders.IDENTITY);
        }
        ctx.next();
      });
    }
    route.handler(files);
  }

  // ------------------------------------------------------------------ responses

  private void send(RoutingContext ctx, int status, CharSequence type, Buffer body) {
    HttpServerResponse response = ctx.response();
    if (response.ended()) {
      return;
    }
    response.setStatusCode(status).putHeader(CONTENT_TYPE, type).putHeader(DATE, date).end(body);
  }

  private void methodNotAllowed(RoutingContext ctx) {
    String path = ctx.request().path();
    String allow = path.startsWith("/user/") ? "GET, PATCH"
        : path.equals("/upload/") ? "POST"
        : path.startsWith("/static/") ? "GET, HEAD"
        : "GET";
    ctx.response().putHeader(ALLOW, allow);
    send(ctx, 405, JSON, Contract.METHOD_NOT_ALLOWED);
  }

  private boolean authorized(RoutingContext ctx) {
    if (token.equals(ctx.request().getHeader("token"))) {
      return true;
    }
    send(ctx, 401, JSON, Contract.INVALID_TOKEN);
    return false;
  }

  private void databaseError(RoutingContext ctx, Throwable e) {
    System.err.println("database error: " + e);
    send(ctx, 500, JSON, Contract.DATABASE_ERROR);
  }

  private void userOrNotFound(RoutingContext ctx, JsonObject user) {
    if (user == null) {
      send(ctx, 404, JSON, Contract.NOT_FOUND);
    } else {
      send(ctx, 200, JSON, user.toBuffer());
    }
  }

  /** The first value of a query parameter, percent-decoded (+ is a space); null if absent. */
  private static String param(RoutingContext ctx, String name) {
    List<String> values = ctx.queryParam(name);
    return values.isEmpty() ? null : values.get(0);
  }

  // ------------------------------------------------------------------ handlers

  private void plain(RoutingContext ctx) {
    if (!authorized(ctx)) {
      return;
    }
    String p1 = param(ctx, "param1");
    String p2 = param(ctx, "param2");
    String p3 = param(ctx, "param3");
    String body = "param1=" + (p1 == null ? "" : p1)
        + ", param2=" + (p2 == null ? "" : p2)
        + ", param3=" + (p3 == null ? "" : p3);
    send(ctx, 200, TEXT, Buffer.buffer(body));
  }

  private void toJson(RoutingContext ctx) {
    if (!authorized(ctx)) {
      return;
    }
    JsonObject body = new JsonObject()
        .put("param1", param(ctx, "param1"))
        .put("param2", param(ctx, "param2"))
        .put("param3", param(ctx, "param3"));
    send(ctx, 200, JSON, body.toBuffer());
  }

  /** Token, then the database, then the id: the id, or -1 when answered already. */
  private int userId(RoutingContext ctx) {
    if (!authorized(ctx)) {
      return -1;
    }
    if (shared.store() == null) {
      send(ctx, 404, JSON, Contract.NO_DATABASE);
      return -1;
    }
    int id = Contract.parseUserId(ctx.pathParam("param0"));
    if (id < 0) {
      send(ctx, 404, JSON, Contract.NOT_FOUND);
    }
    return id;
  }

  private void getUser(RoutingContext ctx) {
    int id = userId(ctx);
    if (id < 0) {
      return;
    }
    shared.store().getUser(id).onComplete(
        user -> userOrNotFound(ctx, user), e -> databaseError(ctx, e));
  }

  private void checkPatch(RoutingContext ctx) {
    int id = userId(ctx);
    if (id >= 0) {
      ctx.put("id", id);
      ctx.next();
    }
  }

  private void patchUser(RoutingContext ctx) {
    int id = ctx.get("id");
    Contract.Patch patch;
    try {
      patch = Contract.parsePatch(ctx.body().buffer());
    } catch (Contract.BadBody e) {
      send(ctx, 400, JSON, Contract.error(e.getMessage()));
      return;
    }
    shared.store().updateUser(id, patch.username(), patch.email()).onComplete(
        user -> userOrNotFound(ctx, user), e -> databaseError(ctx, e));
  }

  /** The suite's routes: token, then the database (none: 404), then n. */
  private boolean suiteReady(RoutingContext ctx) {
    if (!authorized(ctx)) {
      return false;
    }
    if (shared.suite() == null) {
      send(ctx, 404, JSON, Contract.NO_DATABASE);
      return false;
    }
    return true;
  }

  /** /queries/, /updates/ and /cached/: the rows the suite gives for n, as JSON. */
  private void rows(RoutingContext ctx, java.util.function.BiFunction<Suite, Integer, Future<io.vertx.core.json.JsonArray>> work) {
    if (suiteReady(ctx)) {
      work.apply(shared.suite(), Contract.parseCount(param(ctx, "n"))).onComplete(
          rows -> send(ctx, 200, JSON, rows.toBuffer()), e -> databaseError(ctx, e));
    }
  }

  private void fortunes(RoutingContext ctx) {
    if (suiteReady(ctx)) {
      shared.suite().fortunes().onComplete(
          context -> templates.render(context, FORTUNES_TEMPLATE).onComplete(
              html -> send(ctx, 200, HTML, html),
              e -> ctx.fail(500, e)),
          e -> databaseError(ctx, e));
    }
  }
}
