package main

// The database suite (CONTRACT.md section 6) on fasthttp: /queries/, /updates/,
// /fortunes/ and /cached/; what they do is servers/_gocommon's suite.go. Token first
// (401), then "no database" (404).

import (
	"html/template"
	"log"
	"net/http"

	"github.com/valyala/fasthttp"

	"webbench/gocommon"
)

// fortunesTemplate: html/template (Go's own; fasthttp has no template engine),
// parsed once at start-up.
type fortunesTemplate = *template.Template

func newFortunesTemplate() fortunesTemplate { return gocommon.NewTemplates() }

// suiteGuard: the token (401), then a database (404). ok=false when answered.
func (a *app) suiteGuard(ctx *fasthttp.RequestCtx) bool {
	if !a.authorized(ctx) {
		fail(ctx, http.StatusUnauthorized, gocommon.ErrToken)
		return false
	}
	if status, body := a.NeedDB(); status != 0 {
		fail(ctx, status, body)
		return false
	}
	return true
}

// n: the first n in the query string (gocommon.ParseN: 1..500, never an error).
func n(ctx *fasthttp.RequestCtx) int {
	return gocommon.ParseN(string(ctx.QueryArgs().Peek("n")))
}

// users answers a list of users, or the 500 of a database error.
func users(ctx *fasthttp.RequestCtx, users []*gocommon.User, err error) {
	if err != nil {
		status, body := gocommon.DBFailure(err)
		fail(ctx, status, body)
		return
	}
	writeJSON(ctx, users)
}

func (a *app) queries(ctx *fasthttp.RequestCtx) {
	if a.suiteGuard(ctx) {
		u, err := a.Queries(n(ctx))
		users(ctx, u, err)
	}
}

func (a *app) updates(ctx *fasthttp.RequestCtx) {
	if a.suiteGuard(ctx) {
		u, err := a.Updates(n(ctx))
		users(ctx, u, err)
	}
}

func (a *app) cached(ctx *fasthttp.RequestCtx) {
	if a.suiteGuard(ctx) {
		u, err := a.Cached(n(ctx))
		users(ctx, u, err)
	}
}

// GET /fortunes/: the template writes straight into the response body
// (RequestCtx is an io.Writer); text/html; charset=utf-8.
func (a *app) fortunes(ctx *fasthttp.RequestCtx) {
	if !a.suiteGuard(ctx) {
		return
	}
	fortunes, err := a.Fortunes()
	if err != nil {
		status, body := gocommon.DBFailure(err)
		fail(ctx, status, body)
		return
	}
	ctx.SetContentType(gocommon.HTMLType)
	if err := gocommon.RenderFortunes(ctx, a.templates, fortunes); err != nil {
		log.Printf("fortunes template: %v", err)
		ctx.ResetBody()
		fail(ctx, http.StatusInternalServerError, gocommon.ErrInternal)
	}
}
