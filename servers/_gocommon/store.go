package gocommon

// The database side, raw drivers: pgx v5 (pgxpool) for PostgreSQL and
// go-sql-driver/mysql through database/sql for MySQL/MariaDB. Every value is a bound
// parameter; each statement is prepared once per connection and reused, so after
// warm-up a statement costs one round trip.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// User is the contract's user object, exactly these six keys. It is also the GORM
// model of gin's ORM variant: table "users", primary key user_id. encoding/json writes time.Time
// as RFC 3339 (fractional seconds only when non-zero); times are converted to UTC
// before answering, so the offset is always "Z".
type User struct {
	UserID     int32     `json:"user_id" gorm:"column:user_id;primaryKey"`
	Username   string    `json:"username" gorm:"column:username"`
	Email      *string   `json:"email" gorm:"column:email"`
	CreatedAt  time.Time `json:"created_at" gorm:"column:created_at"`
	UpdatedAt  time.Time `json:"updated_at" gorm:"column:updated_at"`
	IsArchived bool      `json:"is_archived" gorm:"column:is_archived"`
}

// UTC converts both times to UTC, for answering.
func (u *User) UTC() *User {
	u.CreatedAt = u.CreatedAt.UTC()
	u.UpdatedAt = u.UpdatedAt.UTC()
	return u
}

// Fortune is one row of table fortune (the suite's /fortunes/), also gin's GORM model.
type Fortune struct {
	ID      int32  `gorm:"column:id;primaryKey"`
	Message string `gorm:"column:message"`
}

// Store is what the handlers need. A nil *User with a nil error means "no such user".
type Store interface {
	GetUser(ctx context.Context, id int32) (*User, error)
	UpdateUser(ctx context.Context, id int32, username, email string) (*User, error)
	// Fortunes: the whole fortune table, one SELECT.
	Fortunes(ctx context.Context) ([]Fortune, error)
	// WriteUsers (the suite's /updates/): one single-row UPDATE of username and
	// updated_at per user, in the order given (the caller sorts by id), autocommitted,
	// awaited one after another.
	WriteUsers(ctx context.Context, users []*User) error
	Close()
}

const (
	pgSelect = "SELECT user_id, username, email, created_at, updated_at, is_archived FROM users WHERE user_id = $1"
	// One statement: RETURNING gives the row as stored after the update.
	pgUpdate = "UPDATE users SET username = $1, email = $2, updated_at = now() WHERE user_id = $3 " +
		"RETURNING user_id, username, email, created_at, updated_at, is_archived"

	pgFortunes = "SELECT id, message FROM fortune"
	// The suite's /updates/: updated_at is the server's time, a bound parameter.
	pgWrite = "UPDATE users SET username = $1, updated_at = $2 WHERE user_id = $3"

	mySelect = "SELECT user_id, username, email, created_at, updated_at, is_archived FROM users WHERE user_id = ?"
	// MySQL has no UPDATE ... RETURNING: one UPDATE, then one SELECT. UTC_TIMESTAMP(6)
	// because the column holds naive UTC with microseconds.
	myUpdate   = "UPDATE users SET username = ?, email = ?, updated_at = UTC_TIMESTAMP(6) WHERE user_id = ?"
	myFortunes = "SELECT id, message FROM fortune"
	myWrite    = "UPDATE users SET username = ?, updated_at = ? WHERE user_id = ?"
)

// ------------------------------------------------------------------ PostgreSQL

// PgURL: the pgx connection string, no TLS, application_name webbench-<server id>.
func PgURL(cfg *Config) string {
	u := url.URL{
		Scheme: "postgres",
		User:   url.UserPassword(cfg.DBUser, cfg.DBPassword),
		Host:   net.JoinHostPort(cfg.DBHost, strconv.Itoa(cfg.DBPort)),
		Path:   "/" + cfg.DBName,
		// Loopback / plain TCP: no TLS negotiation round trip.
		RawQuery: "sslmode=disable&application_name=webbench-" + url.QueryEscape(cfg.ServerID),
	}
	return u.String()
}

type pgStore struct{ pool *pgxpool.Pool }

// OpenPostgres opens the whole pool (cfg.PoolSize connections) before returning.
func OpenPostgres(ctx context.Context, cfg *Config) (Store, error) {
	pc, err := pgxpool.ParseConfig(PgURL(cfg))
	if err != nil {
		return nil, err
	}
	n := int32(cfg.PoolSize)
	// concurrency = "threads": one process, so BENCH_DB_POOL_SIZE is the whole budget;
	// MinConns = MaxConns keeps the pool at exactly that size.
	pc.MaxConns, pc.MinConns = n, n
	// Never retire a connection for its age (<= 0 disables the lifetime check). The idle
	// rule only trims connections above MinConns, which cannot exist when Min = Max.
	pc.MaxConnLifetime = 0
	pc.MaxConnLifetimeJitter = 0
	// pgxpool pings a connection idle for more than 1 s on acquire by default: an extra
	// round trip. A broken connection still surfaces as a query error.
	pc.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	// Default exec mode (QueryExecModeCacheStatement, stated): each statement is
	// prepared once per connection, then runs as one Bind/Execute round trip.
	pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, err
	}
	// Open every connection now: hold all of them at once (so each Acquire has to
	// connect), then give them back. pgxpool only fills MinConns in the background.
	conns := make([]*pgxpool.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range n {
		c, err := pool.Acquire(ctx)
		if err != nil {
			pool.Close()
			return nil, err
		}
		conns = append(conns, c)
	}
	return &pgStore{pool: pool}, nil
}

// TableName: the GORM table names (gin's ORM variant; GORM would say "fortunes").
func (User) TableName() string    { return "users" }
func (Fortune) TableName() string { return "fortune" }

// OpenRaw opens the raw store of cfg.DB (nil, nil for BENCH_DB=none).
func OpenRaw(ctx context.Context, cfg *Config) (Store, error) {
	switch cfg.DB {
	case DBNone:
		return nil, nil
	case DBPostgres:
		return OpenPostgres(ctx, cfg)
	default:
		return OpenMySQL(ctx, cfg)
	}
}

// CloseStore closes the pool, waiting at most one second (pgxpool.Close waits for
// connections still in use).
func CloseStore(s Store) {
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

func scanRow(row interface{ Scan(...any) error }) (*User, error) {
	var u User
	err := row.Scan(&u.UserID, &u.Username, &u.Email, &u.CreatedAt, &u.UpdatedAt, &u.IsArchived)
	if errors.Is(err, pgx.ErrNoRows) || errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return u.UTC(), nil
}

func (s *pgStore) GetUser(ctx context.Context, id int32) (*User, error) {
	return scanRow(s.pool.QueryRow(ctx, pgSelect, id))
}

func (s *pgStore) UpdateUser(ctx context.Context, id int32, username, email string) (*User, error) {
	return scanRow(s.pool.QueryRow(ctx, pgUpdate, username, email, id))
}

func (s *pgStore) Fortunes(ctx context.Context) ([]Fortune, error) {
	// Query + CollectRows: pgx's usual way to read a result set into structs (by
	// column position); the rows are closed when collected.
	rows, err := s.pool.Query(ctx, pgFortunes)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[Fortune])
}

func (s *pgStore) WriteUsers(ctx context.Context, users []*User) error {
	// One Exec per row, each awaited before the next (no pgx.Batch: that would
	// pipeline the statements, which the manifest does not declare).
	for _, u := range users {
		if _, err := s.pool.Exec(ctx, pgWrite, u.Username, u.UpdatedAt, u.UserID); err != nil {
			return err
		}
	}
	return nil
}

func (s *pgStore) Close() { s.pool.Close() }

// ----------------------------------------------------------------------- MySQL

// MySQLConfig: DATETIME(6) values are UTC. parseTime + loc=UTC reads them as UTC
// time.Time (and writes time.Time parameters in UTC); the session time_zone is
// +00:00 too, so NOW()-like functions agree. ClientFoundRows makes RowsAffected
// count matched rows, so 0 means "no such user".
func MySQLConfig(cfg *Config) *mysql.Config {
	mc := mysql.NewConfig()
	mc.User = cfg.DBUser
	mc.Passwd = cfg.DBPassword
	mc.Net = "tcp"
	mc.Addr = net.JoinHostPort(cfg.DBHost, strconv.Itoa(cfg.DBPort))
	mc.DBName = cfg.DBName
	mc.ParseTime = true
	mc.Loc = time.UTC
	mc.Params = map[string]string{"time_zone": "'+00:00'"}
	mc.ClientFoundRows = true
	// utf8mb4 like the table, sent in the handshake (no SET NAMES round trip).
	mc.Collation = "utf8mb4_general_ci"
	// Stated defaults: real server-side prepared statements (no client-side
	// interpolation), no TLS.
	mc.InterpolateParams = false
	mc.TLSConfig = "false"
	return mc
}

// OpenSQLPool sizes a database/sql pool to exactly n persistent connections and opens
// all of them now.
func OpenSQLPool(ctx context.Context, db *sql.DB, n int) error {
	db.SetMaxOpenConns(n)
	// database/sql keeps only 2 idle connections by default and would close the rest.
	db.SetMaxIdleConns(n)
	// 0 = never close a connection for its age or idleness.
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	// Hold n connections at once, so each db.Conn has to dial a new one, then return
	// them all to the pool.
	conns := make([]*sql.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for range n {
		c, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	return nil
}

type mysqlStore struct {
	db           *sql.DB
	selStmt      *sql.Stmt
	updStmt      *sql.Stmt
	fortunesStmt *sql.Stmt
	writeStmt    *sql.Stmt
}

// OpenMySQL opens the whole pool (cfg.PoolSize connections) and prepares the statements.
func OpenMySQL(ctx context.Context, cfg *Config) (Store, error) {
	connector, err := mysql.NewConnector(MySQLConfig(cfg))
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	if err := OpenSQLPool(ctx, db, cfg.PoolSize); err != nil {
		_ = db.Close()
		return nil, err
	}
	// Prepared once here; database/sql prepares each *sql.Stmt lazily on every pool
	// connection it runs on and reuses it there, so a request is one COM_STMT_EXECUTE
	// (without this, go-sql-driver would prepare, execute and close per query: three
	// round trips).
	s := &mysqlStore{db: db}
	for _, p := range []struct {
		stmt **sql.Stmt
		sql  string
	}{{&s.selStmt, mySelect}, {&s.updStmt, myUpdate}, {&s.fortunesStmt, myFortunes}, {&s.writeStmt, myWrite}} {
		if *p.stmt, err = db.PrepareContext(ctx, p.sql); err != nil {
			break
		}
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("prepare: %w", err)
	}
	return s, nil
}

func (s *mysqlStore) GetUser(ctx context.Context, id int32) (*User, error) {
	return scanRow(s.selStmt.QueryRowContext(ctx, id))
}

func (s *mysqlStore) UpdateUser(ctx context.Context, id int32, username, email string) (*User, error) {
	res, err := s.updStmt.ExecContext(ctx, username, email, id)
	if err != nil {
		return nil, err
	}
	// ClientFoundRows: matched rows, not only changed ones. 0 = no such user: no SELECT.
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return nil, err
	}
	// Autocommit: the UPDATE is committed, so the SELECT (on whichever pool connection)
	// reads the row as stored.
	return scanRow(s.selStmt.QueryRowContext(ctx, id))
}

func (s *mysqlStore) Fortunes(ctx context.Context) ([]Fortune, error) {
	rows, err := s.fortunesStmt.QueryContext(ctx)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	fortunes := make([]Fortune, 0, 16)
	for rows.Next() {
		var f Fortune
		if err := rows.Scan(&f.ID, &f.Message); err != nil {
			return nil, err
		}
		fortunes = append(fortunes, f)
	}
	return fortunes, rows.Err()
}

func (s *mysqlStore) WriteUsers(ctx context.Context, users []*User) error {
	// One prepared single-row UPDATE per user, each awaited (database/sql has no
	// pipelining); autocommit, so each row lock is held for one statement only.
	for _, u := range users {
		if _, err := s.writeStmt.ExecContext(ctx, u.Username, u.UpdatedAt, u.UserID); err != nil {
			return err
		}
	}
	return nil
}

func (s *mysqlStore) Close() {
	for _, st := range []*sql.Stmt{s.selStmt, s.updStmt, s.fortunesStmt, s.writeStmt} {
		if st != nil {
			_ = st.Close()
		}
	}
	_ = s.db.Close()
}
