package main

// The database suite (CONTRACT.md section 6): /queries/, /updates/, /fortunes/ and
// /cached/. Same rules as the user routes: token first (401), then "no database"
// (404), never a 5xx for client input. Every statement of a request is awaited before
// the next one is sent (no pipelining, no parallel queries).

import (
	"errors"
	"html/template"
	"log"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	lru "github.com/hashicorp/golang-lru/v2"
)

const (
	maxN = 500
	// ids of the users table, 1..usersCount
	usersCount = 10000
	// The cache holds every row of the table: no eviction once warm, no expiry.
	cacheSize = usersCount
)

// The fortunes page, whitespace free, rendered by html/template: its contextual
// autoescaping escapes every {{.Message}} as HTML text (& < > " ' become entities).
const fortunesHTML = `<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>` +
	`<tr><th>id</th><th>message</th></tr>` +
	`{{range .}}<tr><td>{{.ID}}</td><td>{{.Message}}</td></tr>{{end}}` +
	`</table></body></html>`

const fortunesTemplate = "fortunes"

func newTemplates() *template.Template {
	return template.Must(template.New(fortunesTemplate).Parse(fortunesHTML))
}

// userCache: hashicorp/golang-lru/v2, a fixed-capacity LRU (one mutex), sized to all
// 10,000 rows, entries never expire. One per process.
type userCache = lru.Cache[int32, *User]

func newUserCache() *userCache {
	c, err := lru.New[int32, *User](cacheSize)
	if err != nil { // only for a size <= 0
		panic(err)
	}
	return c
}

// errMissingRow: a row of the fixed table that is not there (the database is not in
// the contract's state); a 500, never caused by client input.
var errMissingRow = errors.New("a users row between 1 and 10000 is missing")

// parseN: the suite's n. ASCII digits only -> min(value, 500), 0 -> 1 (a digit string
// of any length saturates at 500, never overflows); anything else (missing, empty,
// a sign, a dot, a letter) -> 1. Never an error.
func parseN(raw string) int {
	if raw == "" {
		return 1
	}
	n := 0
	for i := 0; i < len(raw); i++ {
		d := raw[i]
		if d < '0' || d > '9' {
			return 1
		}
		if n <= maxN { // at most 5009: no overflow however long the string
			n = n*10 + int(d-'0')
		}
	}
	return max(1, min(n, maxN))
}

func randomID() int32 { return int32(rand.IntN(usersCount)) + 1 }

// distinctIDs: n different ids, uniform in 1..10000, in ascending order (the order
// the UPDATEs go in, so concurrent requests lock rows in the same order).
func distinctIDs(n int) []int32 {
	seen := make(map[int32]struct{}, n)
	ids := make([]int32, 0, n)
	for len(ids) < n {
		id := randomID()
		if _, dup := seen[id]; !dup {
			seen[id] = struct{}{}
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// suiteGuard: the token (401), then a database (404). ok=false when answered.
func (a *app) suiteGuard(c *gin.Context) bool {
	if !a.authorized(c) {
		fail(c, http.StatusUnauthorized, errToken)
		return false
	}
	if a.store == nil {
		fail(c, http.StatusNotFound, errNoDB)
		return false
	}
	return true
}

func (a *app) dbFailure(c *gin.Context, err error) {
	log.Printf("database error: %v", err)
	fail(c, http.StatusInternalServerError, errDatabase)
}

// readUser: one SELECT by primary key; a missing row is an error here (the ids are
// drawn from the table's fixed range).
func (a *app) readUser(id int32) (*User, error) {
	u, err := a.store.GetUser(a.ctx, id)
	if err == nil && u == nil {
		err = errMissingRow
	}
	return u, err
}

// GET /queries/?n=N: N ids drawn with repeats, one SELECT each, one after another.
func (a *app) queries(c *gin.Context) {
	if !a.suiteGuard(c) {
		return
	}
	n := parseN(c.Query("n"))
	users := make([]*User, n)
	for i := range users {
		u, err := a.readUser(randomID())
		if err != nil {
			a.dbFailure(c, err)
			return
		}
		users[i] = u
	}
	c.JSON(http.StatusOK, users)
}

// GET /updates/?n=N: N distinct ids; each row read (SELECT by primary key), then
// username = "u" + 1..1000000 and updated_at = now (UTC, truncated to microseconds,
// what both databases store) written with one UPDATE per row in ascending id order.
// The answer is the rows as written.
func (a *app) updates(c *gin.Context) {
	if !a.suiteGuard(c) {
		return
	}
	ids := distinctIDs(parseN(c.Query("n")))
	users := make([]*User, len(ids))
	for i, id := range ids {
		u, err := a.readUser(id)
		if err != nil {
			a.dbFailure(c, err)
			return
		}
		users[i] = u
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	for _, u := range users {
		u.Username = "u" + strconv.Itoa(rand.IntN(1000000)+1)
		u.UpdatedAt = now
	}
	if err := a.store.WriteUsers(a.ctx, users); err != nil {
		a.dbFailure(c, err)
		return
	}
	c.JSON(http.StatusOK, users)
}

const addedFortune = "A fortune added at request time."

// sortFortunes adds the request-time fortune and sorts by message. Go compares strings
// byte by byte, and UTF-8 byte order is code-point order.
func sortFortunes(fortunes []Fortune) []Fortune {
	fortunes = append(fortunes, Fortune{ID: 0, Message: addedFortune})
	slices.SortFunc(fortunes, func(x, y Fortune) int { return strings.Compare(x.Message, y.Message) })
	return fortunes
}

// GET /fortunes/: one SELECT of the table, one row added in memory, sorted, rendered
// by gin's c.HTML with the html/template set on the engine (text/html; charset=utf-8).
func (a *app) fortunes(c *gin.Context) {
	if !a.suiteGuard(c) {
		return
	}
	fortunes, err := a.store.Fortunes(a.ctx)
	if err != nil {
		a.dbFailure(c, err)
		return
	}
	c.HTML(http.StatusOK, fortunesTemplate, sortFortunes(fortunes))
}

// GET /cached/?n=N: N ids drawn with repeats, served from the process's LRU; a miss is
// one SELECT by primary key (through the ORM in the ORM variant), then cached.
// Concurrent misses of one id may each read it once; the cache keeps one.
func (a *app) cached(c *gin.Context) {
	if !a.suiteGuard(c) {
		return
	}
	n := parseN(c.Query("n"))
	users := make([]*User, n)
	for i := range users {
		id := randomID()
		u, ok := a.cache.Get(id)
		if !ok {
			var err error
			if u, err = a.readUser(id); err != nil {
				a.dbFailure(c, err)
				return
			}
			a.cache.Add(id, u)
		}
		users[i] = u
	}
	c.JSON(http.StatusOK, users)
}
