package main

// Unit tests without a database: parsing, and the router with a fake store
// (`go test ./...` in this folder). The contract itself is checked against real
// databases by tests/integration/test_contract.py.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
)

func TestParseID(t *testing.T) {
	cases := map[string]int32{
		"1": 1, "0010": 10, "0000000001": 1, "2147483647": 2147483647,
	}
	for raw, want := range cases {
		if got, ok := parseID(raw); !ok || got != want {
			t.Errorf("parseID(%q) = %d, %v; want %d", raw, got, ok, want)
		}
	}
	for _, raw := range []string{"", "0", "00000000001", "2147483648", "99999999999999999999",
		"-1", "+1", "1a", "１", " 1", "1.0"} {
		if got, ok := parseID(raw); ok {
			t.Errorf("parseID(%q) = %d, accepted", raw, got)
		}
	}
}

func TestParseUpdate(t *testing.T) {
	good := map[string][2]string{
		`{"username":"a","email":"b"}`:                                {"a", "b"},
		`{"username":"a","email":""}`:                                 {"a", ""},
		`{"username":"\u00e9t\u00e9","email":"b","x":1}`:              {"été", "b"},
		`{"username":"\ud83d\ude00","email":"b"}`:                     {"😀", "b"},
		`{"username":"` + strings.Repeat("é", 256) + `","email":"b"}`: {strings.Repeat("é", 256), "b"},
	}
	for body, want := range good {
		u, e, err := parseUpdate([]byte(body))
		if err != nil || u != want[0] || e != want[1] {
			t.Errorf("parseUpdate(%.40q) = %q, %q, %v", body, u, e, err)
		}
	}
	bad := []string{
		``, `not json`, `[]`, `[1,2]`, `null`, `1`, `"s"`, `{}`,
		`{"username":"a"}`, `{"email":"a"}`,
		`{"username":1,"email":"b"}`, `{"username":"a","email":2}`,
		`{"username":null,"email":"b"}`, `{"username":"a","email":null}`,
		`{"username":["a"],"email":"b"}`, `{"username":"","email":"b"}`,
		`{"USERNAME":"a","email":"b"}`,
		`{"username":"a\u0000","email":"b"}`,
		`{"username":"\ud800","email":"b"}`, `{"username":"\udc00x","email":"b"}`,
		`{"username":"\ud800\u0041","email":"b"}`,
		"{\"username\":\"\xff\",\"email\":\"b\"}",
		`{"username":"` + strings.Repeat("é", 257) + `","email":"b"}`,
		`{"username":"a","email":"` + strings.Repeat("u", 257) + `"}`,
		strings.Repeat("[", 100000),
		`{"username":"a","email":"b"} trailing`,
	}
	for _, body := range bad {
		if u, e, err := parseUpdate([]byte(body)); err == nil {
			t.Errorf("parseUpdate(%.40q) accepted: %q, %q", body, u, e)
		}
	}
}

type fakeStore struct {
	updates int
	gets    int     // GetUser calls (one SELECT each in a real store)
	written []*User // WriteUsers' rows, in the order given
	selects int     // Fortunes calls
}

func (f *fakeStore) GetUser(_ context.Context, id int32) (*User, error) {
	f.gets++
	if id > 10000 {
		return nil, nil
	}
	email := "e@example.com"
	stamp := time.Date(2024, 1, 1, 0, 0, int(id), 0, time.FixedZone("x", 3600))
	u := &User{UserID: id, Username: "u", Email: &email, CreatedAt: stamp, UpdatedAt: stamp}
	return u.utc(), nil
}

func (f *fakeStore) UpdateUser(ctx context.Context, id int32, username, email string) (*User, error) {
	f.updates++
	u, err := f.GetUser(ctx, id)
	if u != nil {
		u.Username, u.Email = username, &email
	}
	return u, err
}

// The contract's fortune table (CONTRACT.md section 6), in id order.
var contractFortunes = []Fortune{
	{1, "Benchmarks measure what they measure."},
	{2, `<script>alert("escape me")</script>`},
	{3, `Tom & Jerry's "quoted" <b>bold</b> claim`},
	{4, "A median without its interval is an anecdote."},
	{5, "Zero errors is the only acceptable number."},
	{6, "Keep-alive or close: say which."},
	{7, "Cold caches tell the truth."},
	{8, "Latency hides in the tail."},
	{9, "フレームワークの速さは測り方次第。"},
	{10, "Ünïcödé must survive the round trip."},
	{11, `'single' & "double" quotes`},
	{12, "Every request deserves an answer."},
}

func (f *fakeStore) Fortunes(context.Context) ([]Fortune, error) {
	f.selects++
	return slices.Clone(contractFortunes), nil
}

func (f *fakeStore) WriteUsers(_ context.Context, users []*User) error {
	f.written = append(f.written, users...)
	return nil
}

func (f *fakeStore) Close() {}

func TestRouter(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	store := &fakeStore{}
	r := newRouter(newApp("tok", store, []byte(`{"server":"gin"}`)))
	type tc struct {
		method, path, token, body string
		status                    int
		ctype, want               string
	}
	cases := []tc{
		{"GET", "/ping/", "", "", 200, "application/json", `{"server":"gin"}`},
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
		{"PATCH", "/user/5/", "tok", strings.Repeat(" ", maxBody+1), 400, "application/json", `{"error":"body too large"}`},
		{"GET", "/plain/?param1=a&param2=b&param3=c", "tok", "", 200, "text/plain", "param1=a, param2=b, param3=c"},
		{"GET", "/plain/?param1=a%20b&param2=%C3%A9t%C3%A9&param3=%26%3D%2C", "tok", "", 200, "text/plain", "param1=a b, param2=été, param3=&=,"},
		{"GET", "/plain/?param1=x+y&param3=c&param1=z", "tok", "", 200, "text/plain", "param1=x y, param2=, param3=c"},
		{"GET", "/plain/", "", "", 401, "application/json", `{"error":"invalid token"}`},
		{"GET", "/to_json/?param1=a&param2=&param1=z", "tok", "", 200, "application/json", `{"param1":"a","param2":"","param3":null}`},
		{"GET", "/to_json/?param1=%3Cb%3E", "tok", "", 200, "application/json", `{"param1":"\u003cb\u003e","param2":null,"param3":null}`},
		{"GET", "/to_json/", "", "", 401, "application/json", `{"error":"invalid token"}`},
	}
	for _, c := range cases {
		req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
		if c.token != "" {
			req.Header.Set("token", c.token)
		}
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		label := c.method + " " + c.path
		if w.Code != c.status {
			t.Errorf("%s: status %d, want %d (%s)", label, w.Code, c.status, w.Body.String())
		}
		if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, c.ctype) {
			t.Errorf("%s: Content-Type %q, want %q", label, ct, c.ctype)
		}
		if got := w.Body.String(); got != c.want {
			t.Errorf("%s: body %s, want %s", label, got, c.want)
		}
		if c.ctype == "application/json" && !json.Valid(w.Body.Bytes()) {
			t.Errorf("%s: body is not JSON", label)
		}
	}
	if store.updates != 2 {
		t.Errorf("store saw %d updates, want 2 (bad bodies must not reach it)", store.updates)
	}
}

func TestNoDatabase(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	r := newRouter(newApp("tok", nil, []byte(`{}`)))
	for _, rq := range [][2]string{{"GET", "/user/1/"}, {"PATCH", "/user/1/"}, {"GET", "/queries/?n=3"},
		{"GET", "/updates/?n=3"}, {"GET", "/fortunes/"}, {"GET", "/cached/?n=3"}} {
		req := httptest.NewRequest(rq[0], rq[1], strings.NewReader(`{"username":"a","email":"b"}`))
		req.Header.Set("token", "tok")
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		if w.Code != 404 || w.Body.String() != `{"error":"no database"}` {
			t.Errorf("%s %s without database: %d %s", rq[0], rq[1], w.Code, w.Body.String())
		}
	}
}

func TestParseN(t *testing.T) {
	cases := map[string]int{
		"": 1, "0": 1, "00": 1, "1": 1, "7": 7, "20": 20, "0020": 20, "499": 499, "500": 500,
		"501": 500, "5000": 500, "99999999999999999999": 500, "000000000000000000001": 1,
		strings.Repeat("9", 1000): 500,
		"abc":                     1, "-3": 1, "+3": 1, "1.5": 1, "1e3": 1, " 5": 1, "5 ": 1, "0x10": 1, "５": 1, "٣": 1,
	}
	for raw, want := range cases {
		if got := parseN(raw); got != want {
			t.Errorf("parseN(%.30q) = %d, want %d", raw, got, want)
		}
	}
}

// suiteGet runs one request through the router and returns the recorder.
func suiteGet(r http.Handler, path, token string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", path, nil)
	if token != "" {
		req.Header.Set("token", token)
	}
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	return w
}

func decodeUsers(t *testing.T, w *httptest.ResponseRecorder) []User {
	t.Helper()
	var users []User
	if err := json.Unmarshal(w.Body.Bytes(), &users); err != nil {
		t.Fatalf("not a JSON array of users: %v: %s", err, w.Body.String())
	}
	return users
}

func TestSuiteRoutes(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	store := &fakeStore{}
	r := newRouter(newApp("tok", store, []byte(`{}`)))
	for _, path := range []string{"/queries/", "/updates/?n=2", "/fortunes/", "/cached/"} {
		for _, token := range []string{"", "bad"} {
			w := suiteGet(r, path, token)
			if w.Code != 401 || w.Body.String() != `{"error":"invalid token"}` {
				t.Errorf("%s token %q: %d %s", path, token, w.Code, w.Body.String())
			}
		}
	}
	if store.gets != 0 || store.selects != 0 {
		t.Errorf("unauthorized requests reached the store")
	}
	for query, want := range map[string]int{"": 1, "?n=": 1, "?n=0": 1, "?n=abc": 1, "?n=-3": 1,
		"?n=7": 7, "?n=501": 500, "?n=99999999999999999999": 500, "?n=3&n=9": 3} {
		for _, path := range []string{"/queries/", "/updates/", "/cached/"} {
			w := suiteGet(r, path+query, "tok")
			if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
				t.Fatalf("%s%s: %d %s", path, query, w.Code, w.Body.String())
			}
			if got := len(decodeUsers(t, w)); got != want {
				t.Errorf("%s%s: %d users, want %d", path, query, got, want)
			}
		}
	}

	store.gets = 0
	if got := decodeUsers(t, suiteGet(r, "/queries/?n=20", "tok")); len(got) != 20 || store.gets != 20 {
		t.Errorf("queries n=20: %d users, %d SELECTs", len(got), store.gets)
	}

	// updates: distinct ids, one read each, written in ascending id order, answered as written
	store.gets, store.written = 0, nil
	users := decodeUsers(t, suiteGet(r, "/updates/?n=500", "tok"))
	if len(users) != 500 || store.gets != 500 || len(store.written) != 500 {
		t.Fatalf("updates n=500: %d users, %d reads, %d writes", len(users), store.gets, len(store.written))
	}
	for i, u := range store.written {
		if i > 0 && u.UserID <= store.written[i-1].UserID {
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
	for range 5 {
		suiteGet(r, "/cached/?n=500", "tok")
	}
	a2 := newApp("tok", store, []byte(`{}`))
	r2 := newRouter(a2)
	store.gets = 0
	// until every id of 1..10000 has been drawn (about 200 requests of 500)
	for i := 0; i < 2000 && a2.cache.Len() < usersCount; i++ {
		suiteGet(r2, "/cached/?n=500", "tok")
	}
	if a2.cache.Len() != usersCount || store.gets != usersCount {
		t.Errorf("cache holds %d rows after %d reads, want %d and one read each", a2.cache.Len(), store.gets, usersCount)
	}
	store.gets = 0
	if got := decodeUsers(t, suiteGet(r2, "/cached/?n=500", "tok")); len(got) != 500 || store.gets != 0 {
		t.Errorf("warm cache: %d users, %d SELECTs (want 0)", len(got), store.gets)
	}
}

func TestDistinctIDs(t *testing.T) {
	for _, n := range []int{1, 20, 500} {
		ids := distinctIDs(n)
		if len(ids) != n {
			t.Fatalf("distinctIDs(%d): %d ids", n, len(ids))
		}
		for i, id := range ids {
			if id < 1 || id > usersCount || (i > 0 && id <= ids[i-1]) {
				t.Fatalf("distinctIDs(%d): %v not ascending distinct in 1..10000", n, ids)
			}
		}
	}
}

func TestFortunesPage(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	store := &fakeStore{}
	r := newRouter(newApp("tok", store, []byte(`{}`)))
	w := suiteGet(r, "/fortunes/", "tok")
	if w.Code != 200 || w.Header().Get("Content-Type") != "text/html; charset=utf-8" || store.selects != 1 {
		t.Fatalf("fortunes: %d %q, %d SELECTs", w.Code, w.Header().Get("Content-Type"), store.selects)
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
	if got := w.Body.String(); got != want {
		t.Errorf("fortunes page:\n got %s\nwant %s", got, want)
	}
	if strings.Contains(w.Body.String(), "<script>") || strings.Contains(w.Body.String(), "<b>") {
		t.Errorf("unescaped markup in the page")
	}
}
