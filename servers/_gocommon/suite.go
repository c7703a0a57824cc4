package gocommon

// The database suite (CONTRACT.md section 6): /queries/, /updates/, /fortunes/ and
// /cached/, without the framework. Same rules as the user routes: token first (401),
// then "no database" (404, App.NeedDB), never a 5xx for client input. Every statement
// of a request is awaited before the next one is sent (no pipelining, no parallel
// queries).

import (
	"errors"
	"html/template"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

const (
	maxN = 500
	// UsersCount: ids of the users table, 1..UsersCount
	UsersCount = 10000
	// The cache holds every row of the table: no eviction once warm, no expiry.
	cacheSize = UsersCount
)

// The fortunes page, whitespace free, rendered by html/template: its contextual
// autoescaping escapes every {{.Message}} as HTML text (& < > " ' become entities).
const fortunesHTML = `<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>` +
	`<tr><th>id</th><th>message</th></tr>` +
	`{{range .}}<tr><td>{{.ID}}</td><td>{{.Message}}</td></tr>{{end}}` +
	`</table></body></html>`

// FortunesTemplate: the name of the page's template in NewTemplates' set.
const FortunesTemplate = "fortunes"

// NewTemplates parses the fortunes page (html/template, parsed once at start-up).
func NewTemplates() *template.Template {
	return template.Must(template.New(FortunesTemplate).Parse(fortunesHTML))
}

// RenderFortunes writes the page of fortunes (already sorted) with t.
func RenderFortunes(w io.Writer, t *template.Template, fortunes []Fortune) error {
	return t.ExecuteTemplate(w, FortunesTemplate, fortunes)
}

// UserCache: hashicorp/golang-lru/v2, a fixed-capacity LRU (one mutex), sized to all
// 10,000 rows, entries never expire. One per process.
type UserCache = lru.Cache[int32, *User]

func NewUserCache() *UserCache {
	c, err := lru.New[int32, *User](cacheSize)
	if err != nil { // only for a size <= 0
		panic(err)
	}
	return c
}

// errMissingRow: a row of the fixed table that is not there (the database is not in
// the contract's state); a 500, never caused by client input.
var errMissingRow = errors.New("a users row between 1 and 10000 is missing")

// ParseN: the suite's n. ASCII digits only -> min(value, 500), 0 -> 1 (a digit string
// of any length saturates at 500, never overflows); anything else (missing, empty,
// a sign, a dot, a letter) -> 1. Never an error.
func ParseN(raw string) int {
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

func randomID() int32 { return int32(rand.IntN(UsersCount)) + 1 }

// DistinctIDs: n different ids, uniform in 1..10000, in ascending order (the order
// the UPDATEs go in, so concurrent requests lock rows in the same order).
func DistinctIDs(n int) []int32 {
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

// readUser: one SELECT by primary key; a missing row is an error here (the ids are
// drawn from the table's fixed range).
func (a *App) readUser(id int32) (*User, error) {
	u, err := a.Store.GetUser(a.Ctx, id)
	if err == nil && u == nil {
		err = errMissingRow
	}
	return u, err
}

// Queries (GET /queries/?n=N): N ids drawn with repeats, one SELECT each, one after
// another.
func (a *App) Queries(n int) ([]*User, error) {
	users := make([]*User, n)
	for i := range users {
		u, err := a.readUser(randomID())
		if err != nil {
			return nil, err
		}
		users[i] = u
	}
	return users, nil
}

// Updates (GET /updates/?n=N): N distinct ids; each row read (SELECT by primary key),
// then username = "u" + 1..1000000 and updated_at = now (UTC, truncated to
// microseconds, what both databases store) written with one UPDATE per row in
// ascending id order. The answer is the rows as written.
func (a *App) Updates(n int) ([]*User, error) {
	ids := DistinctIDs(n)
	users := make([]*User, len(ids))
	for i, id := range ids {
		u, err := a.readUser(id)
		if err != nil {
			return nil, err
		}
		users[i] = u
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	for _, u := range users {
		u.Username = "u" + strconv.Itoa(rand.IntN(1000000)+1)
		u.UpdatedAt = now
	}
	if err := a.Store.WriteUsers(a.Ctx, users); err != nil {
		return nil, err
	}
	return users, nil
}

const addedFortune = "A fortune added at request time."

// SortFortunes adds the request-time fortune and sorts by message. Go compares strings
// byte by byte, and UTF-8 byte order is code-point order.
func SortFortunes(fortunes []Fortune) []Fortune {
	fortunes = append(fortunes, Fortune{ID: 0, Message: addedFortune})
	slices.SortFunc(fortunes, func(x, y Fortune) int { return strings.Compare(x.Message, y.Message) })
	return fortunes
}

// Fortunes (GET /fortunes/): one SELECT of the table, one row added in memory, sorted;
// the framework renders them with the template.
func (a *App) Fortunes() ([]Fortune, error) {
	fortunes, err := a.Store.Fortunes(a.Ctx)
	if err != nil {
		return nil, err
	}
	return SortFortunes(fortunes), nil
}

// Cached (GET /cached/?n=N): N ids drawn with repeats, served from the process's LRU;
// a miss is one SELECT by primary key (through the ORM in an ORM variant), then
// cached. Concurrent misses of one id may each read it once; the cache keeps one.
func (a *App) Cached(n int) ([]*User, error) {
	users := make([]*User, n)
	for i := range users {
		id := randomID()
		u, ok := a.Cache.Get(id)
		if !ok {
			var err error
			if u, err = a.readUser(id); err != nil {
				return nil, err
			}
			a.Cache.Add(id, u)
		}
		users[i] = u
	}
	return users, nil
}
