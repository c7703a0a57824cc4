package main

// The contract's endpoints. Every failure is a JSON {"error": "..."} with a 4xx status;
// only a database failure (never client input) gives a 500.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
)

const (
	jsonType = "application/json; charset=utf-8"
	textType = "text/plain; charset=utf-8"
	// A PATCH body is two strings of at most 256 characters; anything far larger is
	// refused before it is buffered, with a 400 like every other bad body.
	maxBody = 64 << 10
	// The columns are varchar(256): longer values would be a database error (a 5xx),
	// so they are refused up front with a 400.
	maxFieldChars = 256
)

func errorBody(reason string) []byte {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{reason}) // a struct of one string cannot fail to marshal
	return b
}

// The fixed error bodies, serialised once.
var (
	errToken            = errorBody("invalid token")
	errNotFound         = errorBody("not found")
	errNoDB             = errorBody("no database")
	errMethodNotAllowed = errorBody("method not allowed")
	errDatabase         = errorBody("database error")
	errInternal         = errorBody("internal error")
)

type app struct {
	token string
	store Store // nil for BENCH_DB=none
	// /ping/'s answer never changes: serialised once at start-up.
	pingBody []byte
	// Queries run on a context that a client disconnect does not cancel: cancelling
	// a query mid-flight makes pgx and go-sql-driver close that connection, and the
	// fixed-size pool would then have to reconnect. A query finishes and its
	// connection goes back to the pool.
	ctx context.Context
	// /cached/'s in-process cache (suite.go), this process's own.
	cache *userCache
}

func newApp(token string, store Store, pingBody []byte) *app {
	return &app{token: token, store: store, pingBody: pingBody, ctx: context.Background(),
		cache: newUserCache()}
}

func (a *app) authorized(c *gin.Context) bool {
	// Direct map access with the canonical key: Header.Get would canonicalise
	// "token" (an allocation) on every request.
	v := c.Request.Header["Token"]
	return len(v) > 0 && v[0] == a.token
}

func fail(c *gin.Context, status int, body []byte) {
	c.Data(status, jsonType, body)
}

// parseID: the contract's user_id (an int4): ASCII digits only, at most 10 of them,
// 1..2147483647. Anything else (a sign, empty, non-numeric, 0, too large) is simply
// "not found" (404) without touching the database.
func parseID(raw string) (int32, bool) {
	if len(raw) == 0 || len(raw) > 10 {
		return 0, false
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] < '0' || raw[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(raw, 10, 32)
	if err != nil || n < 1 {
		return 0, false
	}
	return int32(n), true
}

func (a *app) ping(c *gin.Context) {
	c.Data(http.StatusOK, jsonType, a.pingBody)
}

func (a *app) userResponse(c *gin.Context, u *User, err error) {
	switch {
	case err != nil:
		// Errors only, never per request: this is not an access log.
		log.Printf("database error: %v", err)
		fail(c, http.StatusInternalServerError, errDatabase)
	case u == nil:
		fail(c, http.StatusNotFound, errNotFound)
	default:
		c.JSON(http.StatusOK, u)
	}
}

// userID runs the checks every user route makes, in the contract's order: the token
// (401), a database (404 "no database"), then the id (404). ok is false when it has
// already answered.
func (a *app) userID(c *gin.Context) (id int32, ok bool) {
	if !a.authorized(c) {
		fail(c, http.StatusUnauthorized, errToken)
		return 0, false
	}
	if a.store == nil {
		fail(c, http.StatusNotFound, errNoDB)
		return 0, false
	}
	id, ok = parseID(c.Param("id"))
	if !ok {
		fail(c, http.StatusNotFound, errNotFound)
	}
	return id, ok
}

func (a *app) getUser(c *gin.Context) {
	id, ok := a.userID(c)
	if !ok {
		return
	}
	u, err := a.store.GetUser(a.ctx, id)
	a.userResponse(c, u, err)
}

// badBody is a PATCH body that breaks the contract; its text is the 400's reason.
type badBody string

func (e badBody) Error() string { return string(e) }

// jsonString decodes one JSON value that must be a string (not null, not a number).
func jsonString(field string, raw json.RawMessage) (string, error) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", badBody(field + " must be a string")
	}
	if loneSurrogate(raw) {
		// encoding/json would silently turn it into U+FFFD; the other servers refuse it.
		return "", badBody(field + " is not valid Unicode text")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", badBody(field + " must be a string")
	}
	return s, nil
}

// loneSurrogate reports whether a JSON string token (already known to be valid JSON)
// has a \uD800-\uDFFF escape that is not half of a surrogate pair.
func loneSurrogate(tok []byte) bool {
	hex4 := func(b []byte) (rune, bool) {
		if len(b) < 4 {
			return 0, false
		}
		n, err := strconv.ParseUint(string(b[:4]), 16, 16)
		return rune(n), err == nil
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] != '\\' {
			continue
		}
		if i+1 >= len(tok) {
			return false
		}
		if tok[i+1] != 'u' {
			i++ // a two-character escape such as \" or \\
			continue
		}
		r, ok := hex4(tok[i+2:])
		if !ok {
			return true
		}
		i += 5
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true // a low surrogate without a high one before it
		case r >= 0xD800 && r <= 0xDBFF:
			if i+6 >= len(tok) || tok[i+1] != '\\' || tok[i+2] != 'u' {
				return true
			}
			low, ok := hex4(tok[i+3:])
			if !ok || low < 0xDC00 || low > 0xDFFF {
				return true
			}
			i += 6
		}
	}
	return false
}

// textProblem: why s cannot be stored in a varchar(256) column, or "".
func textProblem(field, s string, allowEmpty bool) error {
	if s == "" && !allowEmpty {
		return badBody(field + " must not be empty")
	}
	if utf8.RuneCountInString(s) > maxFieldChars {
		return badBody(field + " is too long (max 256 characters)")
	}
	if strings.IndexByte(s, 0) >= 0 {
		return badBody(field + " contains a NUL character")
	}
	return nil
}

// parseUpdate validates a PATCH body: a JSON object with a string "username"
// (non-empty) and a string "email", each at most 256 characters and free of NUL
// (PostgreSQL rejects NUL in text); other keys are ignored. Keys match exactly (a
// json struct tag would also accept "USERNAME"), and null is not a string.
func parseUpdate(body []byte) (username, email string, err error) {
	// JSON text is UTF-8; encoding/json would replace invalid bytes instead of failing.
	if !utf8.Valid(body) {
		return "", "", badBody("body is not valid JSON")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return "", "", badBody("body must be a JSON object")
		}
		return "", "", badBody("body is not valid JSON")
	}
	if obj == nil { // the body was `null`
		return "", "", badBody("body must be a JSON object")
	}
	rawUser, okUser := obj["username"]
	rawEmail, okEmail := obj["email"]
	if !okUser || !okEmail {
		return "", "", badBody("username and email are required")
	}
	if username, err = jsonString("username", rawUser); err != nil {
		return "", "", err
	}
	if email, err = jsonString("email", rawEmail); err != nil {
		return "", "", err
	}
	if err = textProblem("username", username, false); err != nil {
		return "", "", err
	}
	if err = textProblem("email", email, true); err != nil {
		return "", "", err
	}
	return username, email, nil
}

func (a *app) patchUser(c *gin.Context) {
	id, ok := a.userID(c)
	if !ok {
		return
	}
	// The body is read as bytes whatever its Content-Type, and parsed here.
	if c.Request.ContentLength > maxBody {
		fail(c, http.StatusBadRequest, errorBody("body too large"))
		return
	}
	body, err := io.ReadAll(io.LimitReader(c.Request.Body, maxBody+1))
	if err != nil {
		fail(c, http.StatusBadRequest, errorBody("could not read body"))
		return
	}
	if len(body) > maxBody {
		fail(c, http.StatusBadRequest, errorBody("body too large"))
		return
	}
	username, email, err := parseUpdate(body)
	if err != nil {
		fail(c, http.StatusBadRequest, errorBody(err.Error()))
		return
	}
	u, err := a.store.UpdateUser(a.ctx, id, username, email)
	a.userResponse(c, u, err)
}

// params: param1..param3 from the query string, URL-decoded by net/url (`+` is a
// space; the first occurrence wins). ok=false when a parameter is absent.
func params(c *gin.Context) (v [3]string, ok [3]bool) {
	v[0], ok[0] = c.GetQuery("param1")
	v[1], ok[1] = c.GetQuery("param2")
	v[2], ok[2] = c.GetQuery("param3")
	return
}

func (a *app) plain(c *gin.Context) {
	if !a.authorized(c) {
		fail(c, http.StatusUnauthorized, errToken)
		return
	}
	v, _ := params(c)
	var b strings.Builder
	b.Grow(30 + len(v[0]) + len(v[1]) + len(v[2]))
	b.WriteString("param1=")
	b.WriteString(v[0])
	b.WriteString(", param2=")
	b.WriteString(v[1])
	b.WriteString(", param3=")
	b.WriteString(v[2])
	c.Data(http.StatusOK, textType, []byte(b.String()))
}

type toJSONBody struct {
	Param1 *string `json:"param1"`
	Param2 *string `json:"param2"`
	Param3 *string `json:"param3"`
}

func (a *app) toJSON(c *gin.Context) {
	if !a.authorized(c) {
		fail(c, http.StatusUnauthorized, errToken)
		return
	}
	v, ok := params(c)
	var out toJSONBody
	// A missing parameter is null, a present empty one "".
	if ok[0] {
		out.Param1 = &v[0]
	}
	if ok[1] {
		out.Param2 = &v[1]
	}
	if ok[2] {
		out.Param3 = &v[2]
	}
	c.JSON(http.StatusOK, &out)
}

// notFound: any path that is not one of the contract's routes.
func notFound(c *gin.Context) {
	fail(c, http.StatusNotFound, errNotFound)
}

// methodNotAllowed: a known path with a method it does not serve (gin has already
// set the Allow header).
func methodNotAllowed(c *gin.Context) {
	fail(c, http.StatusMethodNotAllowed, errMethodNotAllowed)
}

// recovered: gin's Recovery middleware calls this after a panic (no code path is
// known to panic on client input); the client gets a JSON 500, not a dropped
// connection.
func recovered(c *gin.Context, _ any) {
	c.Abort()
	fail(c, http.StatusInternalServerError, errInternal)
}

func newRouter(a *app) *gin.Engine {
	r := gin.New() // no Logger middleware: no access log
	// 404 for an unknown path even when it differs from a route by a slash or by
	// case, as on the other servers; never a redirect.
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	// A known path with another method: 405 (gin answers 404 by default).
	r.HandleMethodNotAllowed = true
	r.Use(gin.CustomRecoveryWithWriter(log.Writer(), recovered))
	r.NoRoute(notFound)
	r.NoMethod(methodNotAllowed)
	// The fortunes page: html/template (autoescaping), rendered by c.HTML.
	r.SetHTMLTemplate(newTemplates())

	r.GET("/ping/", a.ping)
	r.GET("/user/:id/", a.getUser)
	r.PATCH("/user/:id/", a.patchUser)
	r.GET("/plain/", a.plain)
	r.GET("/to_json/", a.toJSON)
	r.GET("/queries/", a.queries)
	r.GET("/updates/", a.updates)
	r.GET("/fortunes/", a.fortunes)
	r.GET("/cached/", a.cached)
	return r
}
