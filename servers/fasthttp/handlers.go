package main

// The contract's endpoints on fasthttp with fasthttp/router. What each route answers
// is servers/_gocommon's (reply.go: the checks in the contract's order, the stores,
// the suite), shared with gin; this file reads the request the fasthttp way and
// writes the answer. Every failure is a JSON {"error": "..."} with a 4xx status; only
// a database failure (never client input) gives a 500.

import (
	"errors"
	"html/template"
	"log"
	"net"
	"net/http"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"webbench/gocommon"
)

type app struct {
	*gocommon.App
	// The fortunes page: Go's html/template (fasthttp has no template engine),
	// parsed once at start-up.
	templates *template.Template
}

func (a *app) authorized(ctx *fasthttp.RequestCtx) bool {
	// Peek finds the header under its normalised name ("Token") without allocating;
	// comparing string(b) with a string allocates nothing either.
	return string(ctx.Request.Header.Peek("token")) == a.Token
}

func reply(ctx *fasthttp.RequestCtx, r gocommon.Reply) {
	ctx.SetStatusCode(r.Status)
	ctx.SetContentType(r.Type)
	ctx.SetBody(r.Body)
}

// id: the {id} path segment, as the router matched it.
func id(ctx *fasthttp.RequestCtx) string {
	s, _ := ctx.UserValue("id").(string)
	return s
}

func (a *app) ping(ctx *fasthttp.RequestCtx) { reply(ctx, a.Ping()) }

func (a *app) getUser(ctx *fasthttp.RequestCtx) {
	reply(ctx, a.GetUser(a.authorized(ctx), id(ctx)))
}

func (a *app) patchUser(ctx *fasthttp.RequestCtx) {
	reply(ctx, a.PatchUser(a.authorized(ctx), id(ctx), func() ([]byte, error) {
		// The body, whatever its Content-Type, was read by fasthttp before the
		// handler, at most Server.MaxRequestBodySize = MaxBody (larger: errorHandler).
		return ctx.PostBody(), nil
	}))
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
	v, _ := params(ctx)
	reply(ctx, a.Plain(a.authorized(ctx), v))
}

func (a *app) toJSON(ctx *fasthttp.RequestCtx) {
	v, ok := params(ctx)
	reply(ctx, a.ToJSON(a.authorized(ctx), v, ok))
}

// n: the first n of the query string ("" when absent).
func n(ctx *fasthttp.RequestCtx) string { return string(ctx.QueryArgs().Peek("n")) }

// The database suite (CONTRACT.md section 6).
func (a *app) queries(ctx *fasthttp.RequestCtx) {
	reply(ctx, a.QueriesReply(a.authorized(ctx), n(ctx)))
}
func (a *app) updates(ctx *fasthttp.RequestCtx) {
	reply(ctx, a.UpdatesReply(a.authorized(ctx), n(ctx)))
}
func (a *app) cached(ctx *fasthttp.RequestCtx) { reply(ctx, a.CachedReply(a.authorized(ctx), n(ctx))) }

// GET /fortunes/: the template writes straight into the response body (RequestCtx
// is an io.Writer); text/html; charset=utf-8.
func (a *app) fortunes(ctx *fasthttp.RequestCtx) {
	fortunes, r, ok := a.FortunesList(a.authorized(ctx))
	if !ok {
		reply(ctx, r)
		return
	}
	ctx.SetContentType(gocommon.HTMLType)
	if err := gocommon.RenderFortunes(ctx, a.templates, fortunes); err != nil {
		log.Printf("fortunes template: %v", err)
		ctx.ResetBody()
		reply(ctx, gocommon.Internal)
	}
}

// notFound: any path that is not one of the contract's routes.
func notFound(ctx *fasthttp.RequestCtx) { reply(ctx, gocommon.NotFound) }

// methodNotAllowed: a known path with a method it does not serve (the router has
// already set the Allow header).
func methodNotAllowed(ctx *fasthttp.RequestCtx) { reply(ctx, gocommon.MethodNotAllowed) }

// recovered: fasthttp itself recovers no panic (one would end the process); the
// router's PanicHandler answers a JSON 500 instead (no code path is known to panic on
// client input).
func recovered(ctx *fasthttp.RequestCtx, v any) {
	log.Printf("panic: %v", v)
	ctx.Response.Reset()
	reply(ctx, gocommon.Internal)
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
		reply(ctx, gocommon.BodyTooLarge)
	case errors.As(err, &small):
		reply(ctx, gocommon.Fail(http.StatusRequestHeaderFieldsTooLarge, gocommon.ErrorBody("request header too large")))
	case errors.As(err, &netErr) && netErr.Timeout():
		reply(ctx, gocommon.Fail(http.StatusRequestTimeout, gocommon.ErrorBody("request timeout")))
	default:
		reply(ctx, gocommon.Fail(http.StatusBadRequest, gocommon.ErrBadRequest))
	}
}

func newRouter(core *gocommon.App) fasthttp.RequestHandler {
	a := &app{App: core, templates: gocommon.NewTemplates()}
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
