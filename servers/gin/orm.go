package main

// The ORM variant: GORM v2 over database/sql (pgx's stdlib driver on PostgreSQL,
// go-sql-driver/mysql on MySQL/MariaDB), configured so that a request costs exactly
// the contract's statements:
//
//   get user:    db.Take(&u, id)                  -> 1 SELECT ... WHERE user_id = ? LIMIT ?
//   update user: PostgreSQL: Model(&User{UserID: id}).Clauses(clause.Returning{}).Updates(map)
//                            -> 1 UPDATE ... RETURNING *
//                MySQL:      the same Updates without RETURNING -> 1 UPDATE,
//                            then Take -> 1 SELECT (skipped when no row matched)
//
// and no BEGIN/COMMIT: SkipDefaultTransaction is set (GORM otherwise wraps every
// write in a transaction).

import (
	"context"
	"database/sql"
	"errors"
	"log"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"webbench/gocommon"
)

type gormStore struct {
	db    *gorm.DB
	sqlDB *sql.DB
	// PostgreSQL: UPDATE ... RETURNING; MySQL: UPDATE then SELECT.
	returning bool
}

// User and Fortune are the GORM models (their table names: gocommon's TableName).
type (
	User    = gocommon.User
	Fortune = gocommon.Fortune
)

func openGorm(ctx context.Context, cfg *gocommon.Config) (*gormStore, error) {
	var (
		sqlDB     *sql.DB
		dialector gorm.Dialector
	)
	switch cfg.DB {
	case gocommon.DBPostgres:
		cc, err := pgx.ParseConfig(gocommon.PgURL(cfg))
		if err != nil {
			return nil, err
		}
		// Default exec mode, stated: pgx prepares each statement once per connection.
		cc.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
		// pgx's database/sql driver pings a connection that was idle for more than
		// 1 s when database/sql hands it out again (ResetSession): no pre-ping.
		sqlDB = stdlib.OpenDB(*cc, stdlib.OptionShouldPing(
			func(context.Context, stdlib.ShouldPingParams) bool { return false }))
		dialector = postgres.New(postgres.Config{Conn: sqlDB})
	case gocommon.DBMySQL:
		connector, err := mysql.NewConnector(gocommon.MySQLConfig(cfg))
		if err != nil {
			return nil, err
		}
		sqlDB = sql.OpenDB(connector)
		dialector = gormmysql.New(gormmysql.Config{
			Conn: sqlDB,
			// No SELECT VERSION() at start-up: the version only tunes GORM's migrator,
			// which this server does not use.
			SkipInitializeWithVersion: true,
			// MariaDB >= 10.5 has RETURNING for INSERT/DELETE but not for UPDATE.
			DisableWithReturning: true,
		})
	default:
		return nil, errors.New("the ORM variant needs a database")
	}
	if err := gocommon.OpenSQLPool(ctx, sqlDB, cfg.PoolSize); err != nil {
		_ = sqlDB.Close()
		return nil, err
	}
	db, err := gorm.Open(dialector, &gorm.Config{
		// Every create/update/delete would otherwise run in BEGIN ... COMMIT.
		SkipDefaultTransaction: true,
		// MySQL: GORM prepares each distinct SQL once (a database/sql *sql.Stmt,
		// prepared lazily on each pool connection) so a query is one
		// COM_STMT_EXECUTE, not prepare + execute + close. PostgreSQL: pgx already
		// caches prepared statements per connection.
		PrepareStmt: cfg.DB == gocommon.DBMySQL,
		// The pool was opened and checked just above.
		DisableAutomaticPing: true,
		// SELECT names the model's six columns instead of *.
		QueryFields: true,
		// updated_at is set by GORM (autoUpdateTime on UpdatedAt), in UTC.
		NowFunc: func() time.Time { return time.Now().UTC() },
		// Errors only (no SQL log, no slow-query log); a missing user is not an error.
		Logger: logger.New(log.Default(), logger.Config{
			LogLevel:                  logger.Error,
			IgnoreRecordNotFoundError: true,
			Colorful:                  false,
		}),
	})
	if err != nil {
		_ = sqlDB.Close()
		return nil, err
	}
	return &gormStore{db: db, sqlDB: sqlDB, returning: cfg.DB == gocommon.DBPostgres}, nil
}

func (s *gormStore) GetUser(ctx context.Context, id int32) (*User, error) {
	var u User
	err := s.db.WithContext(ctx).Take(&u, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return u.UTC(), nil
}

func (s *gormStore) UpdateUser(ctx context.Context, id int32, username, email string) (*User, error) {
	// The primary key set on the model becomes the WHERE clause. A map (not a struct)
	// so that an empty email is written too; GORM adds updated_at itself.
	u := User{UserID: id}
	q := s.db.WithContext(ctx).Model(&u)
	if s.returning {
		q = q.Clauses(clause.Returning{})
	}
	res := q.Updates(map[string]any{"username": username, "email": email})
	if res.Error != nil {
		return nil, res.Error
	}
	// MySQL: ClientFoundRows, so matched rows; PostgreSQL: rows RETURNING gave back.
	if res.RowsAffected == 0 {
		return nil, nil
	}
	if s.returning {
		return u.UTC(), nil
	}
	return s.GetUser(ctx, id)
}

func (s *gormStore) Fortunes(ctx context.Context) ([]Fortune, error) {
	// db.Find on a slice: one SELECT fortune.id, fortune.message FROM fortune.
	var fortunes []Fortune
	if err := s.db.WithContext(ctx).Find(&fortunes).Error; err != nil {
		return nil, err
	}
	return fortunes, nil
}

func (s *gormStore) WriteUsers(ctx context.Context, users []*User) error {
	// GORM's usual single-row update: the primary key on the model is the WHERE
	// clause; updated_at is given explicitly (the server's time, already in the
	// response), so GORM's autoUpdateTime does not replace it. No transaction
	// (SkipDefaultTransaction), one statement per row, awaited.
	for _, u := range users {
		err := s.db.WithContext(ctx).Model(&User{UserID: u.UserID}).
			Updates(map[string]any{"username": u.Username, "updated_at": u.UpdatedAt}).Error
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *gormStore) Close() {
	_ = s.sqlDB.Close()
}
