package main

// Configuration: read only from the environment variables the harness passes
// (servers/README.md). Nothing the harness controls is hard-coded here.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Which database the server talks to (BENCH_DB).
const (
	dbNone     = "none"
	dbPostgres = "postgres"
	dbMySQL    = "mysql"
)

type config struct {
	serverID   string
	host       string
	port       int
	workers    int
	token      string
	db         string // dbNone, dbPostgres or dbMySQL
	orm        bool   // BENCH_ORM=1: the GORM variant
	dbHost     string
	dbPort     int
	dbName     string
	dbUser     string
	dbPassword string
	poolSize   int
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

func configFromEnv() (*config, error) {
	cfg := &config{
		serverID: envOr("BENCH_SERVER_ID", "gin"),
		host:     envOr("BENCH_HOST", "127.0.0.1"),
		token:    envOr("BENCH_TOKEN", "hardcoded_token"),
		dbHost:   envOr("BENCH_DB_HOST", "127.0.0.1"),
		dbName:   envOr("BENCH_DB_NAME", "webservers_bench"),
		dbUser:   envOr("BENCH_DB_USER", "bench"),
		// An empty password is a legitimate value, so no default here.
		dbPassword: os.Getenv("BENCH_DB_PASSWORD"),
	}
	switch strings.ToLower(envOr("BENCH_DB", dbNone)) {
	case "none":
		cfg.db = dbNone
	case "postgres", "postgresql":
		cfg.db = dbPostgres
	case "mysql", "mariadb":
		cfg.db = dbMySQL
	default:
		return nil, fmt.Errorf("BENCH_DB=%q: expected postgres, mysql or none", os.Getenv("BENCH_DB"))
	}
	switch envOr("BENCH_ORM", "0") {
	case "0", "false", "False":
		cfg.orm = false
	case "1", "true", "True":
		cfg.orm = true
	default:
		return nil, fmt.Errorf("BENCH_ORM=%q: expected 0 or 1", os.Getenv("BENCH_ORM"))
	}
	var err error
	if cfg.port, err = envInt("BENCH_PORT", "8000"); err != nil {
		return nil, err
	}
	if cfg.workers, err = envInt("BENCH_WORKERS", "8"); err != nil {
		return nil, err
	}
	if cfg.workers < 1 {
		return nil, fmt.Errorf("BENCH_WORKERS must be at least 1")
	}
	if cfg.poolSize, err = envInt("BENCH_DB_POOL_SIZE", "8"); err != nil {
		return nil, err
	}
	if cfg.db != dbNone && cfg.poolSize < 1 {
		return nil, fmt.Errorf("BENCH_DB_POOL_SIZE must be at least 1")
	}
	defPort := "5432"
	if cfg.db == dbMySQL {
		defPort = "3306"
	}
	if cfg.dbPort, err = envInt("BENCH_DB_PORT", defPort); err != nil {
		return nil, err
	}
	return cfg, nil
}
