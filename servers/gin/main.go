// gin + pgx v5 / go-sql-driver/mysql (raw) or GORM (ORM) server for the
// web-framework benchmark harness.
//
// One process: GOMAXPROCS = BENCH_WORKERS, net/http serves each connection on its own
// goroutine, and all of them share one database pool whose size is the whole
// connection budget (BENCH_DB_POOL_SIZE), because the manifest declares
// concurrency = "threads". Configuration comes only from the environment
// (servers/README.md); what is not about gin is servers/_gocommon's, shared with
// fasthttp.
package main

import (
	"context"
	"errors"
	"log"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"webbench/gocommon"
)

func main() {
	log.SetPrefix("gin: ")
	cfg, err := gocommon.FromEnv("gin")
	if err != nil {
		log.Fatalf("configuration error: %v", err)
	}
	// GOMAXPROCS = BENCH_WORKERS unless GOMAXPROCS is in the environment.
	cfg.SetThreads()
	// No debug route listing or warnings; set before the engine is created.
	gin.SetMode(gin.ReleaseMode)

	var open func(context.Context, *gocommon.Config) (gocommon.Store, error) // raw
	if cfg.ORM && cfg.DB != gocommon.DBNone {
		open = func(ctx context.Context, cfg *gocommon.Config) (gocommon.Store, error) {
			return openGorm(ctx, cfg)
		}
	}
	store := gocommon.OpenStore(cfg, open)

	router := newRouter(gocommon.NewAppFrom(cfg, store))
	srv := &http.Server{
		Handler: router,
		// Headers of a well-behaved client arrive at once; a stalled one is dropped.
		ReadHeaderTimeout: 10 * time.Second,
	}
	// TLS (h1-tls, h2) and h2c when the harness asks (manifest protocols), before the
	// HTTP/1.1 listener answers /ping/
	own, err := gocommon.ServeOwnListeners(cfg, router)
	if err != nil {
		gocommon.CloseStore(store)
		log.Fatalf("%v", err)
	}
	// SIGTERM: stop accepting, close idle keep-alive connections, let in-flight
	// requests finish for at most ShutdownGrace, then close whatever is left.
	gocommon.Run(cfg, store, srv.Serve, func(ctx context.Context) error {
		ownErr := own.Shutdown(ctx)
		err := srv.Shutdown(ctx)
		if err != nil {
			_ = srv.Close()
		}
		return errors.Join(err, ownErr)
	})
}
