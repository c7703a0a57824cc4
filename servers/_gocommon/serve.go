package gocommon

// Start-up and shutdown around a framework's server: the pool opened before
// listening, SIGTERM/SIGINT handled, the pool closed last.

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
)

// ShutdownGrace: in-flight requests get this long after SIGTERM (the harness sends
// SIGKILL 5 s after SIGTERM).
const ShutdownGrace = 2 * time.Second

// OpenStore opens the store (open, or the raw one when open is nil) within 60 s, or
// ends the process. It runs before the server listens: every connection of the
// budget exists by the time /ping/ answers.
func OpenStore(cfg *Config, open func(context.Context, *Config) (Store, error)) Store {
	if open == nil {
		open = OpenRaw
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	store, err := open(ctx, cfg)
	if err != nil {
		log.Fatalf("cannot open the %s pool: %v", cfg.DB, err)
	}
	return store
}

// Run listens on BENCH_HOST:BENCH_PORT and serves (serve) until SIGTERM or SIGINT;
// then shutdown, given ShutdownGrace, stops accepting and lets in-flight requests
// finish; then the pool is closed (persistent connections are closed at shutdown,
// not left to the OS) and the process exits.
func Run(cfg *Config, store Store, serve func(net.Listener) error, shutdown func(context.Context) error) {
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		CloseStore(store)
		log.Fatalf("cannot listen on %s: %v", addr, err)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	served := make(chan error, 1)
	go func() { served <- serve(ln) }()

	exit := 0
	select {
	case sig := <-stop:
		ctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
		if err := shutdown(ctx); err != nil {
			log.Printf("%v: in-flight requests did not finish in %v; closing", sig, ShutdownGrace)
		}
		cancel()
	case err := <-served:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Printf("server error: %v", err)
			exit = 1
		}
	}
	CloseStore(store)
	os.Exit(exit)
}
