// Package gocommon is what the Go servers (gin, fasthttp) share and is not about
// their framework: the settings the harness passes in the environment, the contract's
// parsing and error bodies, the raw stores for PostgreSQL (pgx v5) and MySQL/MariaDB
// (go-sql-driver/mysql), the database suite's logic, the fortunes template and the
// /cached/ LRU. A server folder keeps its framework's routing, handlers and start-up.
package gocommon

// Configuration: read only from the environment variables the harness passes
// (servers/README.md). Nothing the harness controls is hard-coded here.

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Which database the server talks to (BENCH_DB).
const (
	DBNone     = "none"
	DBPostgres = "postgres"
	DBMySQL    = "mysql"
)

type Config struct {
	ServerID   string
	Host       string
	Port       int
	Workers    int
	Token      string
	DB         string // DBNone, DBPostgres or DBMySQL
	ORM        bool   // BENCH_ORM=1: an ORM variant
	DBHost     string
	DBPort     int
	DBName     string
	DBUser     string
	DBPassword string
	PoolSize   int
	// Listeners of the server's own for other protocols than HTTP/1.1 over TCP, asked
	// for by the harness when the manifest declares them (0: none; listeners.go)
	TLSPort int    // BENCH_TLS_PORT: TLS 1.3, ALPN h2 and http/1.1
	TLSCert string // BENCH_TLS_CERT, BENCH_TLS_KEY: PEM files
	TLSKey  string
	H2CPort int // BENCH_H2C_PORT: HTTP/2 with prior knowledge over TCP
	// The HTTP workloads (workloads.go): the folder /static/ serves (BENCH_STATIC_DIR;
	// "": /static/ is not mounted) and whether responses are compressed
	// (BENCH_COMPRESSION=1; unset: no compression middleware at all)
	StaticDir   string
	Compression bool
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(name, def string) (int, error) {
	raw := envOr(name, def)
	n, err := strconv.Atoi(strings.TrimSpace(raw))
	if err != nil {
		return 0, fmt.Errorf("%s=%q is not a valid number", name, raw)
	}
	return n, nil
}

// FromEnv reads the harness's BENCH_* variables; serverID is BENCH_SERVER_ID's default.
func FromEnv(serverID string) (*Config, error) {
	cfg := &Config{
		ServerID: envOr("BENCH_SERVER_ID", serverID),
		Host:     envOr("BENCH_HOST", "127.0.0.1"),
		Token:    envOr("BENCH_TOKEN", "hardcoded_token"),
		DBHost:   envOr("BENCH_DB_HOST", "127.0.0.1"),
		DBName:   envOr("BENCH_DB_NAME", "webservers_bench"),
		DBUser:   envOr("BENCH_DB_USER", "bench"),
		// An empty password is a legitimate value, so no default here.
		DBPassword: os.Getenv("BENCH_DB_PASSWORD"),
	}
	switch strings.ToLower(envOr("BENCH_DB", DBNone)) {
	case "none":
		cfg.DB = DBNone
	case "postgres", "postgresql":
		cfg.DB = DBPostgres
	case "mysql", "mariadb":
		cfg.DB = DBMySQL
	default:
		return nil, fmt.Errorf("BENCH_DB=%q: expected postgres, mysql or none", os.Getenv("BENCH_DB"))
	}
	switch envOr("BENCH_ORM", "0") {
	case "0", "false", "False":
		cfg.ORM = false
	case "1", "true", "True":
		cfg.ORM = true
	default:
		return nil, fmt.Errorf("BENCH_ORM=%q: expected 0 or 1", os.Getenv("BENCH_ORM"))
	}
	var err error
	if cfg.Port, err = envInt("BENCH_PORT", "8000"); err != nil {
		return nil, err
	}
	if cfg.Workers, err = envInt("BENCH_WORKERS", "8"); err != nil {
		return nil, err
	}
	if cfg.Workers < 1 {
		return nil, fmt.Errorf("BENCH_WORKERS must be at least 1")
	}
	if cfg.PoolSize, err = envInt("BENCH_DB_POOL_SIZE", "8"); err != nil {
		return nil, err
	}
	if cfg.DB != DBNone && cfg.PoolSize < 1 {
		return nil, fmt.Errorf("BENCH_DB_POOL_SIZE must be at least 1")
	}
	defPort := "5432"
	if cfg.DB == DBMySQL {
		defPort = "3306"
	}
	if cfg.DBPort, err = envInt("BENCH_DB_PORT", defPort); err != nil {
		return nil, err
	}
	if cfg.TLSPort, err = envInt("BENCH_TLS_PORT", "0"); err != nil {
		return nil, err
	}
	cfg.TLSCert, cfg.TLSKey = os.Getenv("BENCH_TLS_CERT"), os.Getenv("BENCH_TLS_KEY")
	if cfg.TLSPort != 0 && (cfg.TLSCert == "" || cfg.TLSKey == "") {
		return nil, fmt.Errorf("BENCH_TLS_PORT needs BENCH_TLS_CERT and BENCH_TLS_KEY")
	}
	if cfg.H2CPort, err = envInt("BENCH_H2C_PORT", "0"); err != nil {
		return nil, err
	}
	cfg.StaticDir = os.Getenv("BENCH_STATIC_DIR")
	switch os.Getenv("BENCH_COMPRESSION") {
	case "", "0":
		cfg.Compression = false
	case "1":
		cfg.Compression = true
	default:
		return nil, fmt.Errorf("BENCH_COMPRESSION=%q: expected 1 or unset", os.Getenv("BENCH_COMPRESSION"))
	}
	return cfg, nil
}

// SetThreads: BENCH_WORKERS OS threads run Go code at once (an explicit value also
// turns off Go's automatic GOMAXPROCS updates from the cgroup CPU limit), unless
// GOMAXPROCS is in the environment: then the Go runtime has already applied it (a
// settings sweep, run_bench.py --server-env GOMAXPROCS=2,8).
func (cfg *Config) SetThreads() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(cfg.Workers)
	}
}
