package main

// The contract's endpoints on fasthttp with fasthttp/router. What each route answers
// is servers/_gocommon's (reply.go: the checks in the contract's order, the stores,
// the suite), shared with gin; this file reads the request the fasthttp way and
// writes the answer. Every failure is a JSON {"error": "..."} with a 4xx status; only
// a database failure (never client input) gives a 500.

import (
	"bytes"
	"errors"
	"html/template"
	"io"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/fasthttp/router"
	"github.com/fasthttp/websocket"
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
		// handler, at most Server.MaxRequestBodySize (larger: errorHandler); PatchUser
		// refuses one over MaxBody.
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

// POST /upload/: fasthttp reads a request's whole body into a pooled buffer before
// the handler (at most Server.MaxRequestBodySize = MaxUpload; larger: errorHandler's
// 413), so the checksum runs over the buffered body.
func (a *app) upload(ctx *fasthttp.RequestCtx) {
	reply(ctx, a.Upload(a.authorized(ctx), func(w io.Writer) error {
		_, err := w.Write(ctx.PostBody())
		return err
	}))
}

// GET /delay/: the request's goroutine sleeps (gocommon.App.Delay), no thread is held.
func (a *app) delay(ctx *fasthttp.RequestCtx) { reply(ctx, a.Delay(a.authorized(ctx))) }

// upgrader: fasthttp/websocket's defaults, stated: 4 KiB read and write buffers per
// connection (ReadBufferSize/WriteBufferSize 0), no compression, no subprotocol,
// same-origin check (a request without Origin, as the harness's, passes). A handshake
// it refuses (no Sec-WebSocket-Key, another version, a cross-origin request) is a JSON
// error like every other, not its plain-text one.
var upgrader = websocket.FastHTTPUpgrader{
	EnableCompression: false,
	Error: func(ctx *fasthttp.RequestCtx, status int, reason error) {
		reply(ctx, gocommon.Fail(status, gocommon.ErrorBody(reason.Error())))
	},
}

// GET /ws/: the token first (a JSON 401, no handshake), then the upgrade: fasthttp
// answers 101, hijacks the connection and runs the handler below on a goroutine of
// its own (the worker goroutine goes back to the pool), with the read deadline
// (ReadTimeout) cleared: no idle timeout. No read limit (the library's default: a
// message is read whole, whatever its size). fasthttp/websocket (a fork of
// gorilla/websocket) answers pings and close frames and closes with 1002 on an
// unmasked frame; it does not check a text message's UTF-8, so gocommon.InvalidText
// does (close 1007) in gocommon.Echo. fasthttp closes the connection when the handler returns.
func (a *app) ws(ctx *fasthttp.RequestCtx) {
	if !a.authorized(ctx) {
		reply(ctx, gocommon.Unauthorized)
		return
	}
	_ = upgrader.Upgrade(ctx, func(conn *websocket.Conn) {
		defer conn.Close()
		gocommon.Echo(conn)
	}) // an error: the upgrader has answered the bad handshake (Error above)
}

// staticFiles: fasthttp's own file server (fasthttp.FS) over dir, for /static/{name}:
// Last-Modified and a weak ETag (304 on If-Modified-Since / If-None-Match), single
// byte ranges (206), the type from the extension, sendfile for files over 8 KiB
// (smaller ones are cached in memory), open files cached (FSHandlerCacheDuration).
// With compress, FS compresses each file once (br, else gzip, by Accept-Encoding) into
// a folder of its own (removed by the returned cleanup) and serves that copy; a Range
// request gets the file as is.
func staticFiles(dir string, compress bool) (fasthttp.RequestHandler, func(), error) {
	fs := &fasthttp.FS{
		Root: dir,
		// /static/name -> /name, on the path as fasthttp normalised it (ctx.Path())
		PathRewrite:     fasthttp.NewPathSlashesStripper(1),
		PathNotFound:    notFound,
		AcceptByteRange: true,
		GenerateETag:    true,
		// no index files, no listings (FS's defaults, stated)
		IndexNames:         nil,
		GenerateIndexPages: false,
	}
	cleanup := func() {}
	if compress {
		// The compressed copies go beside the files unless CompressRoot says
		// otherwise; the harness's folder is not the server's to write in.
		root, err := os.MkdirTemp("", "fasthttp-compressed-")
		if err != nil {
			return nil, nil, err
		}
		fs.Compress, fs.CompressBrotli, fs.CompressRoot = true, true, root
		cleanup = func() { _ = os.RemoveAll(root) }
	}
	serve := fs.NewRequestHandler()
	prefix := []byte(gocommon.StaticPrefix)
	return func(ctx *fasthttp.RequestCtx) {
		// The router matched the raw path; ctx.Path() is that path percent-decoded
		// with "." and ".." resolved, so a path that climbed out of /static/ (%2e%2e,
		// ..%2f) is no longer under it: 404, as is /static/ itself or a directory.
		p := ctx.Path()
		if !bytes.HasPrefix(p, prefix) || len(p) == len(prefix) || p[len(p)-1] == '/' {
			notFound(ctx)
			return
		}
		serve(ctx)
	}, cleanup, nil
}

// compressed: BENCH_COMPRESSION=1 wraps a route in fasthttp's CompressHandlerBrotliLevel
// (br, else gzip, else deflate, by Accept-Encoding; Vary: Accept-Encoding) at
// fasthttp's default levels; it leaves bodies under 200 bytes as they are.
func compressed(on bool, h fasthttp.RequestHandler) fasthttp.RequestHandler {
	if !on {
		return h
	}
	return fasthttp.CompressHandlerBrotliLevel(h, fasthttp.CompressBrotliDefaultCompression, fasthttp.CompressDefaultCompression)
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
// connection after it. A body over MaxRequestBodySize (8 MiB, /upload/'s limit) is
// 413, a request head over ReadBufferSize 431, a read that timed out 408, anything
// else unparseable 400.
func errorHandler(ctx *fasthttp.RequestCtx, err error) {
	var small *fasthttp.ErrSmallBuffer
	var netErr net.Error
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		reply(ctx, gocommon.UploadTooLarge)
	case errors.As(err, &small):
		reply(ctx, gocommon.Fail(http.StatusRequestHeaderFieldsTooLarge, gocommon.ErrorBody("request header too large")))
	case errors.As(err, &netErr) && netErr.Timeout():
		reply(ctx, gocommon.Fail(http.StatusRequestTimeout, gocommon.ErrorBody("request timeout")))
	default:
		reply(ctx, gocommon.Fail(http.StatusBadRequest, gocommon.ErrBadRequest))
	}
}

// newRouter: the routes; cleanup removes what they leave on disk (static's compressed
// copies).
func newRouter(core *gocommon.App) (handler fasthttp.RequestHandler, cleanup func(), err error) {
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

	for _, route := range []struct {
		method, path string
		handle       fasthttp.RequestHandler
	}{
		{"GET", "/ping/", a.ping},
		{"GET", "/user/{id}/", a.getUser},
		{"PATCH", "/user/{id}/", a.patchUser},
		{"GET", "/plain/", a.plain},
		{"GET", "/to_json/", a.toJSON},
		{"GET", "/queries/", a.queries},
		{"GET", "/updates/", a.updates},
		{"GET", "/fortunes/", a.fortunes},
		{"GET", "/cached/", a.cached},
		{"POST", "/upload/", a.upload},
		{"GET", "/delay/", a.delay},
	} {
		r.Handle(route.method, route.path, compressed(core.Compression, route.handle))
	}
	// a 101 and frames: nothing to compress (and no permessage-deflate)
	r.GET(gocommon.WSPath, a.ws)
	cleanup = func() {}
	if core.StaticDir != "" {
		// FS compresses by itself (and leaves a Range uncompressed): not wrapped
		var static fasthttp.RequestHandler
		if static, cleanup, err = staticFiles(core.StaticDir, core.Compression); err != nil {
			return nil, nil, err
		}
		r.GET(gocommon.StaticPrefix+"{filepath:*}", static)
		r.HEAD(gocommon.StaticPrefix+"{filepath:*}", static)
	}
	return r.Handler, cleanup, nil
}
