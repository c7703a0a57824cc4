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
	"encoding/json"
	"errors"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"
)

// shutdownGrace: in-flight requests get this long after SIGTERM (the harness sends
// SIGKILL 5 s after SIGTERM).
const shutdownGrace = 2 * time.Second

func openStore(ctx context.Context, cfg *config) (Store, error) {
	switch {
	case cfg.db == dbNone:
		return nil, nil
	case cfg.orm:
		return openGorm(ctx, cfg)
	case cfg.db == dbPostgres:
		return openPostgres(ctx, cfg)
	default:
		return openMySQL(ctx, cfg)
	}
}

func main() {
	log.SetPrefix("gin: ")
	cfg, err := configFromEnv()
	if err != nil {
		log.Fatalf("configuration error: %v", err)
	}
	// BENCH_WORKERS OS threads run Go code at once (an explicit value also turns off
	// Go's automatic GOMAXPROCS updates from the cgroup CPU limit), unless GOMAXPROCS is
	// in the environment: then the Go runtime has already applied it (a settings sweep,
	// run_bench.py --server-env GOMAXPROCS=2,8).
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(cfg.workers)
	}
	// No debug route listing or warnings; set before the engine is created.
	gin.SetMode(gin.ReleaseMode)

	// Opened before the server listens: every connection of the budget exists by the
	// time /ping/ answers.
	openCtx, cancelOpen := context.WithTimeout(context.Background(), 60*time.Second)
	store, err := openStore(openCtx, cfg)
	cancelOpen()
	if err != nil {
		log.Fatalf("cannot open the %s pool: %v", cfg.db, err)
	}

	ping, _ := json.Marshal(map[string]any{"server": cfg.serverID, "database": cfg.db, "orm": cfg.orm})
	a := newApp(cfg.token, store, ping)
	srv := &http.Server{
		Handler: newRouter(a),
		// Headers of a well-behaved client arrive at once; a stalled one is dropped.
		ReadHeaderTimeout: 10 * time.Second,
	}

	addr := net.JoinHostPort(cfg.host, strconv.Itoa(cfg.port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		closeStore(store)
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
	closeStore(store)
	os.Exit(exit)
}

// closeStore closes the pool, waiting at most one second (pgxpool.Close waits for
// connections still in use).
func closeStore(s Store) {
	if s == nil {
		return
	}
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		log.Printf("database pool did not close within 1s")
	}
}
