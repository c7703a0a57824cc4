package main

// The routes through fasthttp's router with a fake store (`go test ./...` in this
// folder): the cases are servers/_gocommon/contracttest's, shared with gin. The
// contract itself is checked against real databases by
// tests/integration/test_contract.py.

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"webbench/gocommon"
	"webbench/gocommon/contracttest"
)

// server runs the production fasthttp.Server (newServer: its limits and
// errorHandler included) on an in-memory listener, one connection per request.
func server(t *testing.T) contracttest.NewServer {
	return func(a *gocommon.App) contracttest.Do {
		ln := fasthttputil.NewInmemoryListener()
		handler, cleanup, err := newRouter(a)
		if err != nil {
			t.Fatal(err)
		}
		srv := newServer(handler)
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Shutdown(); _ = ln.Close(); cleanup() })
		return func(method, path, token, body string, header ...string) contracttest.Response {
			conn, err := ln.Dial()
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var req fasthttp.Request
			req.Header.SetMethod(method)
			req.SetRequestURI("http://localhost" + path)
			// sent as written (/static/../x), not resolved by the client
			req.URI().DisablePathNormalizing = true
			if token != "" {
				req.Header.Set("token", token)
			}
			for i := 0; i+1 < len(header); i += 2 {
				req.Header.Set(header[i], header[i+1])
			}
			if body != "" {
				req.SetBodyString(body)
			}
			go func() { _, _ = req.WriteTo(conn) }()
			var resp fasthttp.Response
			resp.SkipBody = method == "HEAD"
			if err := resp.Read(bufio.NewReader(conn)); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			h := http.Header{}
			for name, value := range resp.Header.All() {
				h.Add(string(name), string(value))
			}
			return contracttest.Response{Status: resp.StatusCode(), Type: string(resp.Header.ContentType()),
				Body: append([]byte(nil), resp.Body()...), Header: h}
		}
	}
}

func TestRouter(t *testing.T)         { contracttest.Router(t, server(t)) }
func TestNoDatabase(t *testing.T)     { contracttest.NoDatabase(t, server(t)) }
func TestSuiteRoutes(t *testing.T)    { contracttest.Suite(t, server(t)) }
func TestFortunesPage(t *testing.T)   { contracttest.FortunesPage(t, server(t)) }
func TestUpload(t *testing.T)         { contracttest.Upload(t, server(t)) }
func TestDelay(t *testing.T)          { contracttest.Delay(t, server(t)) }
func TestStatic(t *testing.T)         { contracttest.Static(t, server(t)) }
func TestWebSocketToken(t *testing.T) { contracttest.WebSocketToken(t, server(t)) }

// TestWebSocket: the production fasthttp.Server on an in-memory listener, raw frames.
func TestWebSocket(t *testing.T) {
	ln := fasthttputil.NewInmemoryListener()
	handler, cleanup, err := newRouter(gocommon.NewApp("tok", nil, []byte(`{}`)))
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(handler)
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Shutdown(); _ = ln.Close(); cleanup() }()
	contracttest.WebSocket(t, func() net.Conn {
		conn, err := ln.Dial()
		if err != nil {
			t.Fatal(err)
		}
		return conn
	})
}

// fasthttp's compressors offer br besides gzip
func TestCompression(t *testing.T) {
	contracttest.Compression(t, server(t), contracttest.Decoders{
		"br": func(b []byte) ([]byte, error) { return fasthttp.AppendUnbrotliBytes(nil, b) },
	})
}

// TestServerHeaders: the production settings as a client sees them: a Date, no
// Server header, and a JSON 400 for a request fasthttp cannot parse.
func TestServerHeaders(t *testing.T) {
	ln := fasthttputil.NewInmemoryListener()
	handler, _, err := newRouter(gocommon.NewApp("tok", nil, []byte(`{}`)))
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(handler)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Shutdown()
	raw := func(request string) string {
		conn, err := ln.Dial()
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		go func() { _, _ = conn.Write([]byte(request)) }()
		var resp fasthttp.Response
		if err := resp.Read(bufio.NewReader(conn)); err != nil {
			t.Fatal(err)
		}
		return resp.String()
	}
	got := raw("GET /ping/ HTTP/1.1\r\nHost: x\r\n\r\n")
	if !strings.Contains(got, "\r\nDate: ") || strings.Contains(got, "\r\nServer:") {
		t.Errorf("ping headers: %q", got)
	}
	got = raw("GET /ping/ HTTP/1.1\r\nHost: x\r\nContent-Length: zz\r\n\r\n")
	if !strings.HasPrefix(got, "HTTP/1.1 400") || !strings.HasSuffix(got, `{"error":"bad request"}`) {
		t.Errorf("bad request: %q", got)
	}
}
