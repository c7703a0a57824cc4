package main

// The routes through gin's router with a fake store (`go test ./...` in this folder):
// the cases are servers/_gocommon/contracttest's, shared with fasthttp. The contract
// itself is checked against real databases by tests/integration/test_contract.py.

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"webbench/gocommon"
	"webbench/gocommon/contracttest"
)

func server(a *gocommon.App) contracttest.Do {
	gin.SetMode(gin.ReleaseMode)
	r := newRouter(a)
	return func(method, path, token, body string) contracttest.Response {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("token", token)
		}
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		return contracttest.Response{Status: w.Code, Type: w.Header().Get("Content-Type"), Body: w.Body.Bytes()}
	}
}

func TestRouter(t *testing.T)       { contracttest.Router(t, server) }
func TestNoDatabase(t *testing.T)   { contracttest.NoDatabase(t, server) }
func TestSuiteRoutes(t *testing.T)  { contracttest.Suite(t, server) }
func TestFortunesPage(t *testing.T) { contracttest.FortunesPage(t, server) }
