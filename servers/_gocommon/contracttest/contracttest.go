// Package contracttest checks a Go server's routes without a database: a fake store
// and the contract's cases, run through whatever the framework offers for an
// in-process request (gin: httptest; fasthttp: a RequestCtx). Used by each server's
// _test.go; the contract itself is checked against real databases by
// tests/integration/test_contract.py.
package contracttest

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"webbench/gocommon"
)

type User = gocommon.User
type Fortune = gocommon.Fortune

// Response is what a route answered.
type Response struct {
	Status int
	Type   string // Content-Type
	Body   []byte
	Header http.Header
}

// Do runs one request through a server's router in-process ("" token: no header);
// header: more request headers, as name, value, name, value...
type Do func(method, path, token, body string, header ...string) Response

// NewServer builds a server's router around app and returns how to call it.
type NewServer func(app *gocommon.App) Do

// FakeStore answers like the users table of 10,000 rows and counts the calls.
type FakeStore struct {
	Updates int
	Gets    int     // GetUser calls (one SELECT each in a real store)
	Written []*User // WriteUsers' rows, in the order given
	Selects int     // Fortunes calls
}

func (f *FakeStore) GetUser(_ context.Context, id int32) (*User, error) {
	f.Gets++
	if id > 10000 {
		return nil, nil
	}
	email := "e@example.com"
	stamp := time.Date(2024, 1, 1, 0, 0, int(id), 0, time.FixedZone("x", 3600))
	u := &User{UserID: id, Username: "u", Email: &email, CreatedAt: stamp, UpdatedAt: stamp}
	return u.UTC(), nil
}

func (f *FakeStore) UpdateUser(ctx context.Context, id int32, username, email string) (*User, error) {
	f.Updates++
	u, err := f.GetUser(ctx, id)
	if u != nil {
		u.Username, u.Email = username, &email
	}
	return u, err
}

// ContractFortunes: the contract's fortune table (CONTRACT.md section 6), in id order.
var ContractFortunes = []Fortune{
	{ID: 1, Message: "Benchmarks measure what they measure."},
	{ID: 2, Message: `<script>alert("escape me")</script>`},
	{ID: 3, Message: `Tom & Jerry's "quoted" <b>bold</b> claim`},
	{ID: 4, Message: "A median without its interval is an anecdote."},
	{ID: 5, Message: "Zero errors is the only acceptable number."},
	{ID: 6, Message: "Keep-alive or close: say which."},
	{ID: 7, Message: "Cold caches tell the truth."},
	{ID: 8, Message: "Latency hides in the tail."},
	{ID: 9, Message: "フレームワークの速さは測り方次第。"},
	{ID: 10, Message: "Ünïcödé must survive the round trip."},
	{ID: 11, Message: `'single' & "double" quotes`},
	{ID: 12, Message: "Every request deserves an answer."},
}

func (f *FakeStore) Fortunes(context.Context) ([]Fortune, error) {
	f.Selects++
	return slices.Clone(ContractFortunes), nil
}

func (f *FakeStore) WriteUsers(_ context.Context, users []*User) error {
	f.Written = append(f.Written, users...)
	return nil
}

func (f *FakeStore) Close() {}

// Router: the contract's user, plain and to_json routes, errors and methods.
func Router(t *testing.T, newServer NewServer) {
	t.Helper()
	store := &FakeStore{}
	do := newServer(gocommon.NewApp("tok", store, []byte(`{"server":"x"}`)))
	type tc struct {
		method, path, token, body string
		status                    int
		ctype, want               string
	}
	cases := []tc{
		{"GET", "/ping/", "", "", 200, "application/json", `{"server":"x"}`},
		{"GET", "/user/5/", "tok", "", 200, "application/json",
			`{"user_id":5,"username":"u","email":"e@example.com","created_at":"2023-12-31T23:00:05Z","updated_at":"2023-12-31T23:00:05Z","is_archived":false}`},
		{"GET", "/user/5/", "", "", 401, "application/json", `{"error":"invalid token"}`},
		{"GET", "/user/5/", "bad", "", 401, "application/json", `{"error":"invalid token"}`},
		{"PATCH", "/user/5/", "", `{"username":"a","email":"b"}`, 401, "application/json", `{"error":"invalid token"}`},
		{"GET", "/user/10001/", "tok", "", 404, "application/json", `{"error":"not found"}`},
		{"GET", "/user/abc/", "tok", "", 404, "application/json", `{"error":"not found"}`},
		{"GET", "/user/0/", "tok", "", 404, "application/json", `{"error":"not found"}`},
		{"GET", "/user/5", "tok", "", 404, "application/json", `{"error":"not found"}`},
		{"GET", "/nope", "", "", 404, "application/json", `{"error":"not found"}`},
		{"GET", "/PING/", "", "", 404, "application/json", `{"error":"not found"}`},
		{"POST", "/ping/", "", "", 405, "application/json", `{"error":"method not allowed"}`},
		{"DELETE", "/user/5/", "tok", "", 405, "application/json", `{"error":"method not allowed"}`},
		{"PATCH", "/plain/", "tok", "", 405, "application/json", `{"error":"method not allowed"}`},
		{"PATCH", "/user/5/", "tok", `{"username":"a","email":"b"}`, 200, "application/json",
			`{"user_id":5,"username":"a","email":"b","created_at":"2023-12-31T23:00:05Z","updated_at":"2023-12-31T23:00:05Z","is_archived":false}`},
		{"PATCH", "/user/10001/", "tok", `{"username":"a","email":"b"}`, 404, "application/json", `{"error":"not found"}`},
		{"PATCH", "/user/5/", "tok", `{"username":"a"}`, 400, "application/json", `{"error":"username and email are required"}`},
		{"PATCH", "/user/5/", "tok", ``, 400, "application/json", `{"error":"body is not valid JSON"}`},
		{"PATCH", "/user/5/", "tok", strings.Repeat(" ", gocommon.MaxBody+1), 400, "application/json", `{"error":"body too large"}`},
		{"GET", "/plain/?param1=a&param2=b&param3=c", "tok", "", 200, "text/plain", "param1=a, param2=b, param3=c"},
		{"GET", "/plain/?param1=a%20b&param2=%C3%A9t%C3%A9&param3=%26%3D%2C", "tok", "", 200, "text/plain", "param1=a b, param2=été, param3=&=,"},
		{"GET", "/plain/?param1=x+y&param3=c&param1=z", "tok", "", 200, "text/plain", "param1=x y, param2=, param3=c"},
		{"GET", "/plain/", "", "", 401, "application/json", `{"error":"invalid token"}`},
		{"GET", "/to_json/?param1=a&param2=&param1=z", "tok", "", 200, "application/json", `{"param1":"a","param2":"","param3":null}`},
		{"GET", "/to_json/?param1=%3Cb%3E", "tok", "", 200, "application/json", `{"param1":"\u003cb\u003e","param2":null,"param3":null}`},
		{"GET", "/to_json/", "", "", 401, "application/json", `{"error":"invalid token"}`},
	}
	for _, c := range cases {
		r := do(c.method, c.path, c.token, c.body)
		label := c.method + " " + c.path
		if r.Status != c.status {
			t.Errorf("%s: status %d, want %d (%s)", label, r.Status, c.status, r.Body)
		}
		if !strings.HasPrefix(r.Type, c.ctype) {
			t.Errorf("%s: Content-Type %q, want %q", label, r.Type, c.ctype)
		}
		if got := string(r.Body); got != c.want {
			t.Errorf("%s: body %.200s, want %s", label, got, c.want)
		}
		if c.ctype == "application/json" && !json.Valid(r.Body) {
			t.Errorf("%s: body is not JSON", label)
		}
	}
	if store.Updates != 2 {
		t.Errorf("store saw %d updates, want 2 (bad bodies must not reach it)", store.Updates)
	}
}

// NoDatabase: every database route answers 404 "no database" without a store.
func NoDatabase(t *testing.T, newServer NewServer) {
	t.Helper()
	do := newServer(gocommon.NewApp("tok", nil, []byte(`{}`)))
	for _, rq := range [][2]string{{"GET", "/user/1/"}, {"PATCH", "/user/1/"}, {"GET", "/queries/?n=3"},
		{"GET", "/updates/?n=3"}, {"GET", "/fortunes/"}, {"GET", "/cached/?n=3"}} {
		r := do(rq[0], rq[1], "tok", `{"username":"a","email":"b"}`)
		if r.Status != 404 || string(r.Body) != `{"error":"no database"}` {
			t.Errorf("%s %s without database: %d %s", rq[0], rq[1], r.Status, r.Body)
		}
	}
}

func decodeUsers(t *testing.T, r Response) []User {
	t.Helper()
	var users []User
	if err := json.Unmarshal(r.Body, &users); err != nil {
		t.Fatalf("not a JSON array of users: %v: %s", err, r.Body)
	}
	return users
}

// Suite: /queries/, /updates/ and /cached/: the token, n, statements per request, the
// order of the UPDATEs, a warm cache.
func Suite(t *testing.T, newServer NewServer) {
	t.Helper()
	store := &FakeStore{}
	do := newServer(gocommon.NewApp("tok", store, []byte(`{}`)))
	get := func(path string) Response { return do("GET", path, "tok", "") }
	for _, path := range []string{"/queries/", "/updates/?n=2", "/fortunes/", "/cached/"} {
		for _, token := range []string{"", "bad"} {
			r := do("GET", path, token, "")
			if r.Status != 401 || string(r.Body) != `{"error":"invalid token"}` {
				t.Errorf("%s token %q: %d %s", path, token, r.Status, r.Body)
			}
		}
	}
	if store.Gets != 0 || store.Selects != 0 {
		t.Errorf("unauthorized requests reached the store")
	}
	for query, want := range map[string]int{"": 1, "?n=": 1, "?n=0": 1, "?n=abc": 1, "?n=-3": 1,
		"?n=7": 7, "?n=501": 500, "?n=99999999999999999999": 500, "?n=3&n=9": 3} {
		for _, path := range []string{"/queries/", "/updates/", "/cached/"} {
			r := get(path + query)
			if r.Status != 200 || !strings.HasPrefix(r.Type, "application/json") {
				t.Fatalf("%s%s: %d %s", path, query, r.Status, r.Body)
			}
			if got := len(decodeUsers(t, r)); got != want {
				t.Errorf("%s%s: %d users, want %d", path, query, got, want)
			}
		}
	}

	store.Gets = 0
	if got := decodeUsers(t, get("/queries/?n=20")); len(got) != 20 || store.Gets != 20 {
		t.Errorf("queries n=20: %d users, %d SELECTs", len(got), store.Gets)
	}

	// updates: distinct ids, one read each, written in ascending id order, answered as written
	store.Gets, store.Written = 0, nil
	users := decodeUsers(t, get("/updates/?n=500"))
	if len(users) != 500 || store.Gets != 500 || len(store.Written) != 500 {
		t.Fatalf("updates n=500: %d users, %d reads, %d writes", len(users), store.Gets, len(store.Written))
	}
	for i, u := range store.Written {
		if i > 0 && u.UserID <= store.Written[i-1].UserID {
			t.Fatalf("updates not in ascending distinct id order at %d", i)
		}
		got := users[i]
		if got.UserID != u.UserID || got.Username != u.Username || !got.UpdatedAt.Equal(u.UpdatedAt) {
			t.Errorf("answer %+v differs from the written row %+v", got, *u)
		}
		n, err := strconv.Atoi(strings.TrimPrefix(u.Username, "u"))
		if !strings.HasPrefix(u.Username, "u") || err != nil || n < 1 || n > 1000000 {
			t.Errorf("username %q is not u + 1..1000000", u.Username)
		}
		if u.UpdatedAt.Nanosecond()%1000 != 0 || u.UpdatedAt.Location() != time.UTC {
			t.Errorf("updated_at %v is not UTC microseconds", u.UpdatedAt)
		}
	}

	// cached: a warm cache reads nothing
	a2 := gocommon.NewApp("tok", store, []byte(`{}`))
	do2 := newServer(a2)
	store.Gets = 0
	// until every id of 1..10000 has been drawn (about 200 requests of 500)
	for i := 0; i < 2000 && a2.Cache.Len() < gocommon.UsersCount; i++ {
		do2("GET", "/cached/?n=500", "tok", "")
	}
	if a2.Cache.Len() != gocommon.UsersCount || store.Gets != gocommon.UsersCount {
		t.Errorf("cache holds %d rows after %d reads, want %d and one read each", a2.Cache.Len(), store.Gets, gocommon.UsersCount)
	}
	store.Gets = 0
	if got := decodeUsers(t, do2("GET", "/cached/?n=500", "tok", "")); len(got) != 500 || store.Gets != 0 {
		t.Errorf("warm cache: %d users, %d SELECTs (want 0)", len(got), store.Gets)
	}
}

// FortunesPage: one SELECT, the added fortune, code-point order, html/template's
// escaping, text/html; charset=utf-8.
func FortunesPage(t *testing.T, newServer NewServer) {
	t.Helper()
	store := &FakeStore{}
	do := newServer(gocommon.NewApp("tok", store, []byte(`{}`)))
	r := do("GET", "/fortunes/", "tok", "")
	if r.Status != 200 || r.Type != "text/html; charset=utf-8" || store.Selects != 1 {
		t.Fatalf("fortunes: %d %q, %d SELECTs", r.Status, r.Type, store.Selects)
	}
	// html/template's escaping: & < > as entities, " as &#34; and ' as &#39;.
	want := `<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>` +
		`<tr><th>id</th><th>message</th></tr>` +
		`<tr><td>11</td><td>&#39;single&#39; &amp; &#34;double&#34; quotes</td></tr>` +
		`<tr><td>2</td><td>&lt;script&gt;alert(&#34;escape me&#34;)&lt;/script&gt;</td></tr>` +
		`<tr><td>0</td><td>A fortune added at request time.</td></tr>` +
		`<tr><td>4</td><td>A median without its interval is an anecdote.</td></tr>` +
		`<tr><td>1</td><td>Benchmarks measure what they measure.</td></tr>` +
		`<tr><td>7</td><td>Cold caches tell the truth.</td></tr>` +
		`<tr><td>12</td><td>Every request deserves an answer.</td></tr>` +
		`<tr><td>6</td><td>Keep-alive or close: say which.</td></tr>` +
		`<tr><td>8</td><td>Latency hides in the tail.</td></tr>` +
		`<tr><td>3</td><td>Tom &amp; Jerry&#39;s &#34;quoted&#34; &lt;b&gt;bold&lt;/b&gt; claim</td></tr>` +
		`<tr><td>5</td><td>Zero errors is the only acceptable number.</td></tr>` +
		`<tr><td>10</td><td>Ünïcödé must survive the round trip.</td></tr>` +
		`<tr><td>9</td><td>フレームワークの速さは測り方次第。</td></tr>` +
		`</table></body></html>`
	if got := string(r.Body); got != want {
		t.Errorf("fortunes page:\n got %s\nwant %s", got, want)
	}
}
