package main

// The contract's endpoints on fasthttp with fasthttp/router. The rules themselves
// (error bodies, ids, the PATCH body, the suite) are servers/_gocommon's, shared with
// gin; this file is fasthttp's side of them. Every failure is a JSON
// {"error": "..."} with a 4xx status; only a database failure (never client input)
// gives a 500.

import (
	"encoding/json"
	"errors"
	"log"
	"net"
	"net/http"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"webbench/gocommon"
)

type app struct {
	*gocommon.App
	templates fortunesTemplate
}

func (a *app) authorized(ctx *fasthttp.RequestCtx) bool {
	// Peek finds the header under its normalised name ("Token") without allocating;
	// comparing string(b) with a string allocates nothing either.
	return string(ctx.Request.Header.Peek("token")) == a.Token
}

func fail(ctx *fasthttp.RequestCtx, status int, body []byte) {
	ctx.SetStatusCode(status)
	ctx.SetContentType(gocommon.JSONType)
	ctx.SetBody(body)
}

// writeJSON: encoding/json, as gin's c.JSON (HTML-escaping <, > and & as \u003c...).
func writeJSON(ctx *fasthttp.RequestCtx, v any) {
	b, err := json.Marshal(v)
	if err != nil { // the contract's types always marshal
		log.Printf("json: %v", err)
		fail(ctx, http.StatusInternalServerError, gocommon.ErrInternal)
		return
	}
	ctx.SetContentType(gocommon.JSONType)
	ctx.SetBody(b)
}

func (a *app) ping(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType(gocommon.JSONType)
	ctx.SetBody(a.PingBody)
}

func userResponse(ctx *fasthttp.RequestCtx, u *gocommon.User, err error) {
	if status, body := gocommon.UserFailure(u, err); status != 0 {
		fail(ctx, status, body)
		return
	}
	writeJSON(ctx, u)
}

// userID runs the checks every user route makes, in the contract's order: the token
// (401), a database (404 "no database"), then the id (404). ok is false when it has
// already answered.
func (a *app) userID(ctx *fasthttp.RequestCtx) (id int32, ok bool) {
	if !a.authorized(ctx) {
		fail(ctx, http.StatusUnauthorized, gocommon.ErrToken)
		return 0, false
	}
	raw, _ := ctx.UserValue("id").(string)
	id, status, body := a.UserID(raw)
	if status != 0 {
		fail(ctx, status, body)
		return 0, false
	}
	return id, true
}

func (a *app) getUser(ctx *fasthttp.RequestCtx) {
	id, ok := a.userID(ctx)
	if !ok {
		return
	}
	u, err := a.Store.GetUser(a.Ctx, id)
	userResponse(ctx, u, err)
}

func (a *app) patchUser(ctx *fasthttp.RequestCtx) {
	id, ok := a.userID(ctx)
	if !ok {
		return
	}
	// The body, whatever its Content-Type, was read by fasthttp before the handler
	// (at most Server.MaxRequestBodySize = MaxBody; larger is refused by errorHandler);
	// checked again here for a request that did not come through the Server.
	body := ctx.PostBody()
	if len(body) > gocommon.MaxBody {
		fail(ctx, http.StatusBadRequest, gocommon.ErrBodyTooLarge)
		return
	}
	username, email, err := gocommon.ParseUpdate(body)
	if err != nil {
		fail(ctx, http.StatusBadRequest, gocommon.ErrorBody(err.Error()))
		return
	}
	u, err := a.Store.UpdateUser(a.Ctx, id, username, email)
	userResponse(ctx, u, err)
}

var paramNames = [3]string{"param1", "param2", "param3"}

// params: param1..param3 from the query string, URL-decoded by fasthttp's Args (`+`
// is a space; the first occurrence wins). ok=false when a parameter is absent.
func params(ctx *fasthttp.RequestCtx) (v [3]string, ok [3]bool) {
	args := ctx.QueryArgs()
	for i, name := range paramNames {
		if b := args.Peek(name); b != nil {
			v[i], ok[i] = string(b), true
		} else {
			ok[i] = args.Has(name) // present without '=': an empty value
		}
	}
	return
}

func (a *app) plain(ctx *fasthttp.RequestCtx) {
	if !a.authorized(ctx) {
		fail(ctx, http.StatusUnauthorized, gocommon.ErrToken)
		return
	}
	v, _ := params(ctx)
	ctx.SetContentType(gocommon.TextType)
	ctx.SetBody(gocommon.PlainBody(v))
}

func (a *app) toJSON(ctx *fasthttp.RequestCtx) {
	if !a.authorized(ctx) {
		fail(ctx, http.StatusUnauthorized, gocommon.ErrToken)
		return
	}
	v, ok := params(ctx)
	writeJSON(ctx, gocommon.NewToJSONBody(&v, ok))
}

// notFound: any path that is not one of the contract's routes.
func notFound(ctx *fasthttp.RequestCtx) {
	fail(ctx, http.StatusNotFound, gocommon.ErrNotFound)
}

// methodNotAllowed: a known path with a method it does not serve (the router has
// already set the Allow header).
func methodNotAllowed(ctx *fasthttp.RequestCtx) {
	fail(ctx, http.StatusMethodNotAllowed, gocommon.ErrMethodNotAllowed)
}

// recovered: fasthttp itself recovers no panic (one would end the process); the
// router's PanicHandler answers a JSON 500 instead (no code path is known to panic on
// client input).
func recovered(ctx *fasthttp.RequestCtx, v any) {
	log.Printf("panic: %v", v)
	ctx.Response.Reset()
	fail(ctx, http.StatusInternalServerError, gocommon.ErrInternal)
}

// errorHandler: fasthttp calls it for a request it could not read (before any
// route); the answer is JSON like every other error, and fasthttp closes the
// connection after it. A body over MaxRequestBodySize is the contract's 400 "body too
// large" (as gin answers it), a request head over ReadBufferSize 431, a read that
// timed out 408, anything else unparseable 400.
func errorHandler(ctx *fasthttp.RequestCtx, err error) {
	var small *fasthttp.ErrSmallBuffer
	var netErr net.Error
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		fail(ctx, http.StatusBadRequest, gocommon.ErrBodyTooLarge)
	case errors.As(err, &small):
		fail(ctx, http.StatusRequestHeaderFieldsTooLarge, gocommon.ErrorBody("request header too large"))
	case errors.As(err, &netErr) && netErr.Timeout():
		fail(ctx, http.StatusRequestTimeout, gocommon.ErrorBody("request timeout"))
	default:
		fail(ctx, http.StatusBadRequest, gocommon.ErrBadRequest)
	}
}

func newRouter(core *gocommon.App) fasthttp.RequestHandler {
	a := &app{App: core, templates: newFortunesTemplate()}
	r := router.New()
	// 404 for an unknown path even when it differs from a route by a slash or by
	// case, as on the other servers; never a redirect.
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	// A known path with another method: 405 with Allow (the router's default, stated).
	r.HandleMethodNotAllowed = true
	// OPTIONS is not a contract route: 405 like any other method, not the router's
	// automatic 200 with Allow.
	r.HandleOPTIONS = false
	r.NotFound = notFound
	r.MethodNotAllowed = methodNotAllowed
	r.PanicHandler = recovered

	r.GET("/ping/", a.ping)
	r.GET("/user/{id}/", a.getUser)
	r.PATCH("/user/{id}/", a.patchUser)
	r.GET("/plain/", a.plain)
	r.GET("/to_json/", a.toJSON)
	r.GET("/queries/", a.queries)
	r.GET("/updates/", a.updates)
	r.GET("/fortunes/", a.fortunes)
	r.GET("/cached/", a.cached)
	return r.Handler
}
