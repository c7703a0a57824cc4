package main

// The contract's endpoints on gin. The rules themselves (error bodies, ids, the PATCH
// body, the suite) are servers/_gocommon's; this file is gin's side of them. Every
// failure is a JSON {"error": "..."} with a 4xx status; only a database failure (never
// client input) gives a 500.

import (
	"io"
	"log"
	"net/http"

	"github.com/gin-gonic/gin"

	"webbench/gocommon"
)

type app struct{ *gocommon.App }

func (a app) authorized(c *gin.Context) bool {
	// Direct map access with the canonical key: Header.Get would canonicalise
	// "token" (an allocation) on every request.
	v := c.Request.Header["Token"]
	return len(v) > 0 && v[0] == a.Token
}

func fail(c *gin.Context, status int, body []byte) {
	c.Data(status, gocommon.JSONType, body)
}

func (a app) ping(c *gin.Context) {
	c.Data(http.StatusOK, gocommon.JSONType, a.PingBody)
}

func userResponse(c *gin.Context, u *gocommon.User, err error) {
	if status, body := gocommon.UserFailure(u, err); status != 0 {
		fail(c, status, body)
		return
	}
	c.JSON(http.StatusOK, u)
}

// userID runs the checks every user route makes, in the contract's order: the token
// (401), a database (404 "no database"), then the id (404). ok is false when it has
// already answered.
func (a app) userID(c *gin.Context) (id int32, ok bool) {
	if !a.authorized(c) {
		fail(c, http.StatusUnauthorized, gocommon.ErrToken)
		return 0, false
	}
	id, status, body := a.UserID(c.Param("id"))
	if status != 0 {
		fail(c, status, body)
		return 0, false
	}
	return id, true
}

func (a app) getUser(c *gin.Context) {
	id, ok := a.userID(c)
	if !ok {
		return
	}
	u, err := a.Store.GetUser(a.Ctx, id)
	userResponse(c, u, err)
}

func (a app) patchUser(c *gin.Context) {
	id, ok := a.userID(c)
	if !ok {
		return
	}
	// The body is read as bytes whatever its Content-Type, and parsed here.
	if c.Request.ContentLength > gocommon.MaxBody {
		fail(c, http.StatusBadRequest, gocommon.ErrBodyTooLarge)
		return
	}
	body, err := io.ReadAll(io.LimitReader(c.Request.Body, gocommon.MaxBody+1))
	if err != nil {
		fail(c, http.StatusBadRequest, gocommon.ErrorBody("could not read body"))
		return
	}
	if len(body) > gocommon.MaxBody {
		fail(c, http.StatusBadRequest, gocommon.ErrBodyTooLarge)
		return
	}
	username, email, err := gocommon.ParseUpdate(body)
	if err != nil {
		fail(c, http.StatusBadRequest, gocommon.ErrorBody(err.Error()))
		return
	}
	u, err := a.Store.UpdateUser(a.Ctx, id, username, email)
	userResponse(c, u, err)
}

// params: param1..param3 from the query string, URL-decoded by net/url (`+` is a
// space; the first occurrence wins). ok=false when a parameter is absent.
func params(c *gin.Context) (v [3]string, ok [3]bool) {
	v[0], ok[0] = c.GetQuery("param1")
	v[1], ok[1] = c.GetQuery("param2")
	v[2], ok[2] = c.GetQuery("param3")
	return
}

func (a app) plain(c *gin.Context) {
	if !a.authorized(c) {
		fail(c, http.StatusUnauthorized, gocommon.ErrToken)
		return
	}
	v, _ := params(c)
	c.Data(http.StatusOK, gocommon.TextType, gocommon.PlainBody(v))
}

func (a app) toJSON(c *gin.Context) {
	if !a.authorized(c) {
		fail(c, http.StatusUnauthorized, gocommon.ErrToken)
		return
	}
	v, ok := params(c)
	c.JSON(http.StatusOK, gocommon.NewToJSONBody(&v, ok))
}

// notFound: any path that is not one of the contract's routes.
func notFound(c *gin.Context) {
	fail(c, http.StatusNotFound, gocommon.ErrNotFound)
}

// methodNotAllowed: a known path with a method it does not serve (gin has already
// set the Allow header).
func methodNotAllowed(c *gin.Context) {
	fail(c, http.StatusMethodNotAllowed, gocommon.ErrMethodNotAllowed)
}

// recovered: gin's Recovery middleware calls this after a panic (no code path is
// known to panic on client input); the client gets a JSON 500, not a dropped
// connection.
func recovered(c *gin.Context, _ any) {
	c.Abort()
	fail(c, http.StatusInternalServerError, gocommon.ErrInternal)
}

func newRouter(core *gocommon.App) *gin.Engine {
	a := app{core}
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
	r.SetHTMLTemplate(gocommon.NewTemplates())

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
