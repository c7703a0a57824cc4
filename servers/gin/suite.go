package main

// The database suite (CONTRACT.md section 6) on gin: /queries/, /updates/, /fortunes/
// and /cached/; what they do is servers/_gocommon's suite.go. Token first (401), then
// "no database" (404).

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"webbench/gocommon"
)

// suiteGuard: the token (401), then a database (404). ok=false when answered.
func (a app) suiteGuard(c *gin.Context) bool {
	if !a.authorized(c) {
		fail(c, http.StatusUnauthorized, gocommon.ErrToken)
		return false
	}
	if status, body := a.NeedDB(); status != 0 {
		fail(c, status, body)
		return false
	}
	return true
}

// users answers a list of users, or the 500 of a database error.
func users(c *gin.Context, users []*gocommon.User, err error) {
	if err != nil {
		status, body := gocommon.DBFailure(err)
		fail(c, status, body)
		return
	}
	c.JSON(http.StatusOK, users)
}

func (a app) queries(c *gin.Context) {
	if a.suiteGuard(c) {
		u, err := a.Queries(gocommon.ParseN(c.Query("n")))
		users(c, u, err)
	}
}

func (a app) updates(c *gin.Context) {
	if a.suiteGuard(c) {
		u, err := a.Updates(gocommon.ParseN(c.Query("n")))
		users(c, u, err)
	}
}

func (a app) cached(c *gin.Context) {
	if a.suiteGuard(c) {
		u, err := a.Cached(gocommon.ParseN(c.Query("n")))
		users(c, u, err)
	}
}

// GET /fortunes/: rendered by gin's c.HTML with the html/template set on the engine
// (text/html; charset=utf-8).
func (a app) fortunes(c *gin.Context) {
	if !a.suiteGuard(c) {
		return
	}
	fortunes, err := a.Fortunes()
	if err != nil {
		status, body := gocommon.DBFailure(err)
		fail(c, status, body)
		return
	}
	c.HTML(http.StatusOK, gocommon.FortunesTemplate, fortunes)
}
