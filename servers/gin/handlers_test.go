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
	return func(method, path, token, body string, header ...string) contracttest.Response {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("token", token)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		return contracttest.Response{Status: w.Code, Type: w.Header().Get("Content-Type"),
			Body: w.Body.Bytes(), Header: w.Result().Header}
	}
}

func TestRouter(t *testing.T)       { contracttest.Router(t, server) }
func TestNoDatabase(t *testing.T)   { contracttest.NoDatabase(t, server) }
func TestSuiteRoutes(t *testing.T)  { contracttest.Suite(t, server) }
func TestFortunesPage(t *testing.T) { contracttest.FortunesPage(t, server) }
func TestUpload(t *testing.T)       { contracttest.Upload(t, server) }
func TestDelay(t *testing.T)        { contracttest.Delay(t, server) }
func TestStatic(t *testing.T)       { contracttest.Static(t, server) }

// gin-contrib/gzip has gzip only (no br)
func TestCompression(t *testing.T) { contracttest.Compression(t, server, nil) }
