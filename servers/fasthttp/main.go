// fasthttp + pgx v5 / go-sql-driver/mysql (raw) server for the web-framework
// benchmark harness.
//
// One process: GOMAXPROCS = BENCH_WORKERS; fasthttp serves each connection on a
// goroutine of its worker pool, and all of them share one database pool whose size is
// the whole connection budget (BENCH_DB_POOL_SIZE), because the manifest declares
// concurrency = "threads". Configuration comes only from the environment
// (servers/README.md); what is not about fasthttp is servers/_gocommon's, shared with
// gin.
package main

import (
	"context"
	"log"
	"time"

	"github.com/valyala/fasthttp"

	"webbench/gocommon"
)

func newServer(handler fasthttp.RequestHandler) *fasthttp.Server {
	return &fasthttp.Server{
		Handler:      handler,
		ErrorHandler: errorHandler,
		// No Server header, as net/http (gin) sends none: Name stays empty and
		// NoDefaultServerHeader drops fasthttp's default "Server: fasthttp".
		Name:                  "",
		NoDefaultServerHeader: true,
		// Date stays on (RFC 9110 says an origin server with a clock sends it; the
		// conformance check wants it): fasthttp formats it once a second, not per
		// response.
		NoDefaultDate: false,
		// A request's head and body must arrive within 10 s of its first byte (a
		// stalled client is dropped: gin's ReadHeaderTimeout); a keep-alive
		// connection may then wait 120 s for its next request (IdleTimeout 0 would
		// mean ReadTimeout, 10 s). No WriteTimeout, as on gin.
		ReadTimeout: 10 * time.Second,
		IdleTimeout: 120 * time.Second,
		// The largest body a route takes is /upload/'s 8 MiB (fasthttp's default is
		// 4 MiB); a larger one is refused before it is read (errorHandler: 413). A
		// PATCH body over 64 KiB is PatchUser's 400.
		MaxRequestBodySize: gocommon.MaxUpload,
		// Header names are normalised (the default, stated): HTTP header names are
		// case-insensitive, and "token", "Token" or "TOKEN" must all be the token.
		DisableHeaderNamesNormalizing: false,
		// Off (the default, stated): each connection keeps its read/write buffers
		// between requests, trading memory for less CPU; 64 connections hold ~0.5 MiB.
		ReduceMemoryUsage: false,
		// The most connections served at once; beyond it a new one gets 503. The
		// default (256 Ki), stated: far above any load here, so it never bites. It
		// is not the thread count: that is GOMAXPROCS.
		Concurrency: fasthttp.DefaultConcurrency,
		// At SIGTERM a request still being answered gets "Connection: close".
		CloseOnShutdown: true,
		// Logger: the standard logger (stderr), errors only: fasthttp writes no
		// access log, and LogAllErrors stays off so resets/timeouts are not logged.
	}
}

func main() {
	log.SetPrefix("fasthttp: ")
	cfg, err := gocommon.FromEnv("fasthttp")
	if err != nil {
		log.Fatalf("configuration error: %v", err)
	}
	if cfg.ORM {
		log.Fatalf("BENCH_ORM=1: fasthttp has no ORM variant (manifest orm = [false])")
	}
	// GOMAXPROCS = BENCH_WORKERS unless GOMAXPROCS is in the environment.
	cfg.SetThreads()
	store := gocommon.OpenStore(cfg, nil) // pgx or go-sql-driver: the raw store

	handler, cleanup, err := newRouter(gocommon.NewAppFrom(cfg, store))
	if err != nil {
		gocommon.CloseStore(store)
		log.Fatalf("static files: %v", err)
	}
	srv := newServer(handler)
	// SIGTERM: ShutdownWithContext closes the listener and the idle keep-alive
	// connections and waits at most ShutdownGrace for in-flight requests; what is
	// left ends with the process.
	gocommon.Run(cfg, store, srv.Serve, func(ctx context.Context) error {
		defer cleanup()
		return srv.ShutdownWithContext(ctx)
	})
}
