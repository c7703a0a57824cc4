package gocommon

// Every route's answer as a Reply (status, content type, body), from what the
// framework read off the request: whether the token matched, the id from the path,
// the query values, the body. The order of the checks is the contract's: the token
// (401), a database (404 "no database"), the id (404), the body (400). A framework's
// handler reads the request, calls one of these and writes the Reply (the fortunes
// page, which a framework renders itself, is the exception: FortunesList).

import (
	"encoding/json"
	"errors"
	"log"
	"net/http"
)

// Reply is a finished answer.
type Reply struct {
	Status int
	Type   string
	Body   []byte
}

// Fail is a JSON error answer.
func Fail(status int, body []byte) Reply { return Reply{status, JSONType, body} }

// The fixed error answers.
var (
	NotFound         = Fail(http.StatusNotFound, ErrNotFound)
	MethodNotAllowed = Fail(http.StatusMethodNotAllowed, ErrMethodNotAllowed)
	Internal         = Fail(http.StatusInternalServerError, ErrInternal)
	Unauthorized     = Fail(http.StatusUnauthorized, ErrToken)
	NoDatabase       = Fail(http.StatusNotFound, ErrNoDB)
	BodyTooLarge     = Fail(http.StatusBadRequest, ErrBodyTooLarge)
)

// JSON: 200 with v as encoding/json writes it (as gin's c.JSON: HTML-escaping <, >
// and & as \u003c...).
func JSON(v any) Reply {
	b, err := json.Marshal(v)
	if err != nil { // the contract's types always marshal
		log.Printf("json: %v", err)
		return Internal
	}
	return Reply{http.StatusOK, JSONType, b}
}

// DBFailure logs a database error (errors only, never per request: this is not an
// access log) and gives the 500 to answer.
func DBFailure(err error) Reply {
	log.Printf("database error: %v", err)
	return Fail(http.StatusInternalServerError, ErrDatabase)
}

// Ping: GET /ping/ (no token).
func (a *App) Ping() Reply { return Reply{http.StatusOK, JSONType, a.PingBody} }

// guard: the token (401), then a database (404); ok when both are there.
func (a *App) guard(authorized bool) (Reply, bool) {
	switch {
	case !authorized:
		return Unauthorized, false
	case a.Store == nil:
		return NoDatabase, false
	}
	return Reply{}, true
}

// userID: guard, then the id from the path (404).
func (a *App) userID(authorized bool, rawID string) (int32, Reply, bool) {
	if r, ok := a.guard(authorized); !ok {
		return 0, r, false
	}
	id, ok := ParseID(rawID)
	if !ok {
		return 0, NotFound, false
	}
	return id, Reply{}, true
}

func userReply(u *User, err error) Reply {
	switch {
	case err != nil:
		return DBFailure(err)
	case u == nil:
		return NotFound
	}
	return JSON(u)
}

// GetUser: GET /user/{id}/, one SELECT.
func (a *App) GetUser(authorized bool, rawID string) Reply {
	id, r, ok := a.userID(authorized, rawID)
	if !ok {
		return r
	}
	return userReply(a.Store.GetUser(a.Ctx, id))
}

// ErrTooLarge: what a body reader returns for a body over MaxBody.
var ErrTooLarge = errors.New("body too large")

// PatchUser: PATCH /user/{id}/. read gives the body, whatever its Content-Type (at
// most MaxBody+1 bytes, or ErrTooLarge); it is called only once the token, the
// database and the id are good.
func (a *App) PatchUser(authorized bool, rawID string, read func() ([]byte, error)) Reply {
	id, r, ok := a.userID(authorized, rawID)
	if !ok {
		return r
	}
	body, err := read()
	switch {
	case errors.Is(err, ErrTooLarge) || len(body) > MaxBody:
		return BodyTooLarge
	case err != nil:
		return Fail(http.StatusBadRequest, ErrorBody("could not read body"))
	}
	username, email, err := ParseUpdate(body)
	if err != nil {
		return Fail(http.StatusBadRequest, ErrorBody(err.Error()))
	}
	return userReply(a.Store.UpdateUser(a.Ctx, id, username, email))
}

// Plain: GET /plain/; v are param1..param3 (absent ones "").
func (a *App) Plain(authorized bool, v [3]string) Reply {
	if !authorized {
		return Unauthorized
	}
	return Reply{http.StatusOK, TextType, PlainBody(v)}
}

// ToJSON: GET /to_json/; ok says which of param1..param3 were present.
func (a *App) ToJSON(authorized bool, v [3]string, ok [3]bool) Reply {
	if !authorized {
		return Unauthorized
	}
	return JSON(NewToJSONBody(&v, ok))
}

func usersReply(users []*User, err error) Reply {
	if err != nil {
		return DBFailure(err)
	}
	return JSON(users)
}

// QueriesReply: GET /queries/?n=N (rawN: the first n, "" when absent).
func (a *App) QueriesReply(authorized bool, rawN string) Reply {
	if r, ok := a.guard(authorized); !ok {
		return r
	}
	return usersReply(a.Queries(ParseN(rawN)))
}

// UpdatesReply: GET /updates/?n=N.
func (a *App) UpdatesReply(authorized bool, rawN string) Reply {
	if r, ok := a.guard(authorized); !ok {
		return r
	}
	return usersReply(a.Updates(ParseN(rawN)))
}

// CachedReply: GET /cached/?n=N.
func (a *App) CachedReply(authorized bool, rawN string) Reply {
	if r, ok := a.guard(authorized); !ok {
		return r
	}
	return usersReply(a.Cached(ParseN(rawN)))
}

// FortunesList: GET /fortunes/'s rows, sorted, for the framework to render with
// NewTemplates' template; ok=false: answer the Reply instead.
func (a *App) FortunesList(authorized bool) ([]Fortune, Reply, bool) {
	if r, ok := a.guard(authorized); !ok {
		return nil, r, false
	}
	fortunes, err := a.Fortunes()
	if err != nil {
		return nil, DBFailure(err), false
	}
	return fortunes, Reply{}, true
}
