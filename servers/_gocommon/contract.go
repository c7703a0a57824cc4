package gocommon

// The contract's rules that do not depend on the framework: error bodies, the id in
// the path, the PATCH body, /ping/'s answer. Every failure is a JSON
// {"error": "..."} with a 4xx status; only a database failure (never client input)
// gives a 500.

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

const (
	JSONType = "application/json; charset=utf-8"
	TextType = "text/plain; charset=utf-8"
	HTMLType = "text/html; charset=utf-8"
	// A PATCH body is two strings of at most 256 characters; anything far larger is
	// refused before it is buffered, with a 400 like every other bad body.
	MaxBody = 64 << 10
	// The columns are varchar(256): longer values would be a database error (a 5xx),
	// so they are refused up front with a 400.
	maxFieldChars = 256
)

// ErrorBody is {"error": reason} as JSON.
func ErrorBody(reason string) []byte {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{reason}) // a struct of one string cannot fail to marshal
	return b
}

// The fixed error bodies, serialised once.
var (
	ErrToken            = ErrorBody("invalid token")
	ErrNotFound         = ErrorBody("not found")
	ErrNoDB             = ErrorBody("no database")
	ErrMethodNotAllowed = ErrorBody("method not allowed")
	ErrDatabase         = ErrorBody("database error")
	ErrInternal         = ErrorBody("internal error")
	ErrBodyTooLarge     = ErrorBody("body too large")
	ErrBadRequest       = ErrorBody("bad request")
)

// PingBody: /ping/'s answer, which never changes, serialised once at start-up.
func PingBody(cfg *Config) []byte {
	b, _ := json.Marshal(map[string]any{"server": cfg.ServerID, "database": cfg.DB, "orm": cfg.ORM})
	return b
}

// App is a server's state that its handlers share, whatever the framework.
type App struct {
	Token string
	Store Store // nil for BENCH_DB=none
	// /ping/'s answer.
	PingBody []byte
	// Queries run on a context that a client disconnect does not cancel: cancelling
	// a query mid-flight makes pgx and go-sql-driver close that connection, and the
	// fixed-size pool would then have to reconnect. A query finishes and its
	// connection goes back to the pool.
	Ctx context.Context
	// /cached/'s in-process cache (suite.go), this process's own.
	Cache *UserCache
	// The HTTP workloads' settings (Config.StaticDir, Config.Compression): the folder
	// mounted at /static/ ("": not mounted) and whether answers are compressed.
	StaticDir   string
	Compression bool
}

func NewApp(token string, store Store, pingBody []byte) *App {
	return &App{Token: token, Store: store, PingBody: pingBody, Ctx: context.Background(),
		Cache: NewUserCache()}
}

// NewAppFrom: the App a server runs with, from its settings.
func NewAppFrom(cfg *Config, store Store) *App {
	a := NewApp(cfg.Token, store, PingBody(cfg))
	a.StaticDir, a.Compression = cfg.StaticDir, cfg.Compression
	return a
}

// ParseID: the contract's user_id (an int4): ASCII digits only, at most 10 of them,
// 1..2147483647. Anything else (a sign, empty, non-numeric, 0, too large) is simply
// "not found" (404) without touching the database.
func ParseID(raw string) (int32, bool) {
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

// ParseUpdate validates a PATCH body: a JSON object with a string "username"
// (non-empty) and a string "email", each at most 256 characters and free of NUL
// (PostgreSQL rejects NUL in text); other keys are ignored. Keys match exactly (a
// json struct tag would also accept "USERNAME"), and null is not a string. The
// error's text is the 400's reason.
func ParseUpdate(body []byte) (username, email string, err error) {
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

// PlainBody: /plain/'s text from param1..param3 (absent ones as "").
func PlainBody(v [3]string) []byte {
	b := make([]byte, 0, 30+len(v[0])+len(v[1])+len(v[2]))
	b = append(b, "param1="...)
	b = append(b, v[0]...)
	b = append(b, ", param2="...)
	b = append(b, v[1]...)
	b = append(b, ", param3="...)
	b = append(b, v[2]...)
	return b
}

// ToJSONBody is /to_json/'s object: a missing parameter is null, a present empty one "".
type ToJSONBody struct {
	Param1 *string `json:"param1"`
	Param2 *string `json:"param2"`
	Param3 *string `json:"param3"`
}

// NewToJSONBody: v are the values, ok whether each was present.
func NewToJSONBody(v *[3]string, ok [3]bool) *ToJSONBody {
	var out ToJSONBody
	if ok[0] {
		out.Param1 = &v[0]
	}
	if ok[1] {
		out.Param2 = &v[1]
	}
	if ok[2] {
		out.Param3 = &v[2]
	}
	return &out
}
