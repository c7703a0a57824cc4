package main

// Unit tests without a database: parsing, and the router with a fake store
// (`go test ./...` in this folder). The contract itself is checked against real
// databases by tests/integration/test_contract.py.

import (
	"context"
	"encoding/json"
	"net/http/httptest"
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

type fakeStore struct{ updates int }

func (f *fakeStore) GetUser(_ context.Context, id int32) (*User, error) {
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

func (f *fakeStore) Close() {}

func TestRouter(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	store := &fakeStore{}
	r := newRouter(&app{token: "tok", store: store, pingBody: []byte(`{"server":"gin"}`),
		ctx: context.Background()})
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
	r := newRouter(&app{token: "tok", pingBody: []byte(`{}`), ctx: context.Background()})
	for _, method := range []string{"GET", "PATCH"} {
		req := httptest.NewRequest(method, "/user/1/", strings.NewReader(`{"username":"a","email":"b"}`))
		req.Header.Set("token", "tok")
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		if w.Code != 404 || w.Body.String() != `{"error":"no database"}` {
			t.Errorf("%s without database: %d %s", method, w.Code, w.Body.String())
		}
	}
}
