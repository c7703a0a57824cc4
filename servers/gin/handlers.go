package main

// The contract's endpoints on gin. What each route answers is servers/_gocommon's
// (reply.go: the checks in the contract's order, the stores, the suite); this file
// reads the request the gin way and writes the answer. Every failure is a JSON
// {"error": "..."} with a 4xx status; only a database failure (never client input)
// gives a 500.

import (
	"errors"
	"io"
	"log"
	"net/http"
	"os"
	"strings"

	"github.com/gin-contrib/gzip"
	"github.com/gin-gonic/gin"
	"github.com/gorilla/websocket"

	"webbench/gocommon"
)

type app struct{ *gocommon.App }

func (a app) authorized(c *gin.Context) bool {
	// Direct map access with the canonical key: Header.Get would canonicalise
	// "token" (an allocation) on every request.
	v := c.Request.Header["Token"]
	return len(v) > 0 && v[0] == a.Token
}

func reply(c *gin.Context, r gocommon.Reply) {
	c.Data(r.Status, r.Type, r.Body)
}

func (a app) ping(c *gin.Context) { reply(c, a.Ping()) }

func (a app) getUser(c *gin.Context) {
	reply(c, a.GetUser(a.authorized(c), c.Param("id")))
}

func (a app) patchUser(c *gin.Context) {
	reply(c, a.PatchUser(a.authorized(c), c.Param("id"), func() ([]byte, error) {
		// The body is read as bytes whatever its Content-Type, at most MaxBody+1 of
		// them (a declared larger length is refused before reading).
		if c.Request.ContentLength > gocommon.MaxBody {
			return nil, gocommon.ErrTooLarge
		}
		return io.ReadAll(io.LimitReader(c.Request.Body, gocommon.MaxBody+1))
	}))
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
	v, _ := params(c)
	reply(c, a.Plain(a.authorized(c), v))
}

func (a app) toJSON(c *gin.Context) {
	v, ok := params(c)
	reply(c, a.ToJSON(a.authorized(c), v, ok))
}

// The database suite (CONTRACT.md section 6); n is the first n of the query string.
func (a app) queries(c *gin.Context) { reply(c, a.QueriesReply(a.authorized(c), c.Query("n"))) }
func (a app) updates(c *gin.Context) { reply(c, a.UpdatesReply(a.authorized(c), c.Query("n"))) }
func (a app) cached(c *gin.Context)  { reply(c, a.CachedReply(a.authorized(c), c.Query("n"))) }

// GET /fortunes/: rendered by gin's c.HTML with the html/template set on the engine
// (text/html; charset=utf-8).
func (a app) fortunes(c *gin.Context) {
	fortunes, r, ok := a.FortunesList(a.authorized(c))
	if !ok {
		reply(c, r)
		return
	}
	c.HTML(http.StatusOK, gocommon.FortunesTemplate, fortunes)
}

// POST /upload/: the body is streamed through the checksum as it arrives (never
// buffered whole); a declared length over 8 MiB is refused before reading, and a
// chunked body is cut off one byte past the limit (http.MaxBytesReader).
func (a app) upload(c *gin.Context) {
	reply(c, a.Upload(a.authorized(c), func(w io.Writer) error {
		if c.Request.ContentLength > gocommon.MaxUpload {
			return gocommon.ErrTooLarge
		}
		_, err := io.Copy(w, http.MaxBytesReader(c.Writer, c.Request.Body, gocommon.MaxUpload))
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return gocommon.ErrTooLarge
		}
		return err
	}))
}

// GET /delay/: the request's goroutine sleeps (gocommon.App.Delay), no thread is held.
func (a app) delay(c *gin.Context) { reply(c, a.Delay(a.authorized(c))) }

// upgrader: gorilla/websocket's defaults, stated: the hijacked connection's own
// 4 KiB bufio buffers (ReadBufferSize/WriteBufferSize 0), no compression, no
// subprotocol, same-origin check (a request without Origin, as the harness's, passes),
// no handshake timeout (ReadHeaderTimeout already bounds the request head). A
// handshake gorilla refuses (no Sec-WebSocket-Key, another version, a cross-origin
// request) is a JSON error like every other, not http.Error's text.
var upgrader = websocket.Upgrader{
	EnableCompression: false,
	Error: func(w http.ResponseWriter, _ *http.Request, status int, reason error) {
		w.Header().Set("Content-Type", gocommon.JSONType)
		w.WriteHeader(status)
		_, _ = w.Write(gocommon.ErrorBody(reason.Error()))
	},
}

// GET /ws/: the token first (a JSON 401, no handshake), then the upgrade; the
// connection is then served on this request's goroutine (net/http's per-connection
// goroutine, hijacked) until it closes. No read limit (gorilla's default: a message is
// read whole, whatever its size) and no deadline (no idle timeout). gorilla answers
// pings and close frames and closes with 1002 on an unmasked frame; it does not check
// a text message's UTF-8, so gocommon.InvalidText does (close 1007).
func (a app) ws(c *gin.Context) {
	if !a.authorized(c) {
		reply(c, gocommon.Unauthorized)
		return
	}
	conn, err := upgrader.Upgrade(c.Writer, c.Request, nil)
	if err != nil {
		return // gorilla has answered the bad handshake (400, 403 or 405)
	}
	defer conn.Close()
	gocommon.Echo(conn)
}

// filesOnly is the static folder (http.Dir: a path is cleaned, so it cannot climb out
// of the folder) without its directories: /static/ itself is not found, the JSON 404
// (gin's static handler hands a name it cannot open to NoRoute), not a listing.
type filesOnly struct{ http.Dir }

func (f filesOnly) Open(name string) (http.File, error) {
	file, err := f.Dir.Open(name)
	if err != nil {
		return nil, err
	}
	if st, err := file.Stat(); err != nil || st.IsDir() {
		file.Close()
		return nil, os.ErrNotExist
	}
	return file, nil
}

// shouldCompress: gin-contrib/gzip's own rule (the request's Accept-Encoding names
// gzip, and it is no Upgrade), and a Range request is answered as is: its 206 counts
// the file's bytes, which gzip would change.
func shouldCompress(c *gin.Context) bool {
	h := c.Request.Header
	return strings.Contains(h.Get("Accept-Encoding"), "gzip") &&
		!strings.Contains(h.Get("Connection"), "Upgrade") && h.Get("Range") == ""
}

// notFound: any path that is not one of the contract's routes.
func notFound(c *gin.Context) { reply(c, gocommon.NotFound) }

// methodNotAllowed: a known path with a method it does not serve (gin has already
// set the Allow header).
func methodNotAllowed(c *gin.Context) { reply(c, gocommon.MethodNotAllowed) }

// recovered: gin's Recovery middleware calls this after a panic (no code path is
// known to panic on client input); the client gets a JSON 500, not a dropped
// connection.
func recovered(c *gin.Context, _ any) {
	c.Abort()
	reply(c, gocommon.Internal)
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
	if core.Compression {
		// BENCH_COMPRESSION=1: gin-contrib/gzip (gin's own middleware; gzip only) at
		// compress/gzip's default level, on every route registered after it.
		r.Use(gzip.Gzip(gzip.DefaultCompression, gzip.WithCustomShouldCompressFn(shouldCompress)))
	}
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
	r.POST("/upload/", a.upload)
	r.GET("/delay/", a.delay)
	r.GET(gocommon.WSPath, a.ws)
	if core.StaticDir != "" {
		// gin's static handler (GET and HEAD /static/*filepath): net/http's
		// FileServer, so Last-Modified, 304, Range and the type from the extension.
		r.StaticFS("/static", filesOnly{http.Dir(core.StaticDir)})
	}
	return r
}
