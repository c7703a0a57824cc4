package main

// The routes through gin's router with a fake store (`go test ./...` in this folder):
// the cases are servers/_gocommon/contracttest's, shared with fasthttp. The contract
// itself is checked against real databases by tests/integration/test_contract.py.

import (
	"net"
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

func TestRouter(t *testing.T)         { contracttest.Router(t, server) }
func TestNoDatabase(t *testing.T)     { contracttest.NoDatabase(t, server) }
func TestSuiteRoutes(t *testing.T)    { contracttest.Suite(t, server) }
func TestFortunesPage(t *testing.T)   { contracttest.FortunesPage(t, server) }
func TestUpload(t *testing.T)         { contracttest.Upload(t, server) }
func TestDelay(t *testing.T)          { contracttest.Delay(t, server) }
func TestStatic(t *testing.T)         { contracttest.Static(t, server) }
func TestWebSocketToken(t *testing.T) { contracttest.WebSocketToken(t, server) }

// TestWebSocket: a real net/http server around the router (httptest's recorder
// cannot be hijacked), raw frames over TCP.
func TestWebSocket(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	srv := httptest.NewServer(newRouter(gocommon.NewApp("tok", nil, []byte(`{}`))))
	defer srv.Close()
	contracttest.WebSocket(t, func() net.Conn {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return conn
	})
}

// gin-contrib/gzip has gzip only (no br)
func TestCompression(t *testing.T) { contracttest.Compression(t, server, nil) }
