// gin + pgx v5 / go-sql-driver/mysql (raw) or GORM (ORM) server for the
// web-framework benchmark harness.
//
// One process: GOMAXPROCS = BENCH_WORKERS, net/http serves each connection on its own
// goroutine, and all of them share one database pool whose size is the whole
// connection budget (BENCH_DB_POOL_SIZE), because the manifest declares
// concurrency = "threads". Configuration comes only from the environment
// (servers/README.md).
package main

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"

	"webbench/gocommon"
)

// shutdownGrace: in-flight requests get this long after SIGTERM (the harness sends
// SIGKILL 5 s after SIGTERM).
const shutdownGrace = 2 * time.Second

func openStore(ctx context.Context, cfg *gocommon.Config) (gocommon.Store, error) {
	if cfg.ORM && cfg.DB != gocommon.DBNone {
		return openGorm(ctx, cfg)
	}
	return gocommon.OpenRaw(ctx, cfg)
}

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

	// Opened before the server listens: every connection of the budget exists by the
	// time /ping/ answers.
	openCtx, cancelOpen := context.WithTimeout(context.Background(), 60*time.Second)
	store, err := openStore(openCtx, cfg)
	cancelOpen()
	if err != nil {
		log.Fatalf("cannot open the %s pool: %v", cfg.DB, err)
	}

	srv := &http.Server{
		Handler: newRouter(gocommon.NewApp(cfg.Token, store, gocommon.PingBody(cfg))),
		// Headers of a well-behaved client arrive at once; a stalled one is dropped.
		ReadHeaderTimeout: 10 * time.Second,
	}

	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		gocommon.CloseStore(store)
		log.Fatalf("cannot listen on %s: %v", addr, err)
	}

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	exit := 0
	select {
	case sig := <-stop:
		// Stop accepting, close idle keep-alive connections, let in-flight requests
		// finish for at most shutdownGrace, then close whatever is left.
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		if err := srv.Shutdown(ctx); err != nil {
			log.Printf("%v: in-flight requests did not finish in %v; closing", sig, shutdownGrace)
			_ = srv.Close()
		}
		cancel()
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			log.Printf("server error: %v", err)
			exit = 1
		}
	}
	// Persistent connections are closed at shutdown, not left to the OS.
	gocommon.CloseStore(store)
	os.Exit(exit)
}
