package gocommon

// The listeners a net/http server opens besides HTTP/1.1 on BENCH_PORT when the
// harness asks for them (servers/README.md, "Protocols"): TLS on BENCH_TLS_PORT and
// HTTP/2 with prior knowledge on BENCH_H2C_PORT, served by net/http itself (crypto/tls,
// and the HTTP/2 bundled in net/http; no golang.org/x/net/http2 needed since Go 1.24's
// http.Protocols). Each is an http.Server of its own around the same handler, so the
// TLS one offers by ALPN exactly h2 and http/1.1 and the h2c one speaks HTTP/2 only.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strconv"
	"time"
)

// OwnListeners are the started extra servers; Shutdown stops them with the main one.
type OwnListeners struct {
	servers []*http.Server
}

// ServeOwnListeners opens every listener cfg asks for and serves handler on it; an
// error (a bad certificate, a busy port) before anything is served.
func ServeOwnListeners(cfg *Config, handler http.Handler) (*OwnListeners, error) {
	own := &OwnListeners{}
	if cfg.TLSPort != 0 {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("BENCH_TLS_CERT / BENCH_TLS_KEY: %w", err)
		}
		protocols := new(http.Protocols)
		protocols.SetHTTP1(true)
		protocols.SetHTTP2(true)
		srv := newServer(handler, protocols)
		// TLS 1.3 only, as the harness checks on the wire; crypto/tls has no TLS 1.3
		// cipher suite setting and picks TLS_AES_128_GCM_SHA256 first where both sides
		// have AES hardware. Session tickets stay on (crypto/tls's default).
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}}
		ln, err := listen(cfg.Host, cfg.TLSPort)
		if err != nil {
			return nil, err
		}
		// ServeTLS sets ALPN from Protocols: h2, http/1.1
		own.start(srv, func() error { return srv.ServeTLS(ln, "", "") })
	}
	if cfg.H2CPort != 0 {
		protocols := new(http.Protocols)
		protocols.SetUnencryptedHTTP2(true)
		srv := newServer(handler, protocols)
		ln, err := listen(cfg.Host, cfg.H2CPort)
		if err != nil {
			own.Shutdown(context.Background())
			return nil, err
		}
		own.start(srv, func() error { return srv.Serve(ln) })
	}
	return own, nil
}

func newServer(handler http.Handler, protocols *http.Protocols) *http.Server {
	// HTTP2 nil: net/http's defaults (250 concurrent streams per connection)
	return &http.Server{Handler: handler, Protocols: protocols, ReadHeaderTimeout: 10 * time.Second}
}

func listen(host string, port int) (net.Listener, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	return ln, nil
}

func (o *OwnListeners) start(srv *http.Server, serve func() error) {
	o.servers = append(o.servers, srv)
	go func() {
		if err := serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Fatalf("listener %s: %v", srv.Addr, err)
		}
	}()
}

// Shutdown stops accepting on every extra listener and lets in-flight requests finish
// until ctx ends; then closes what is left.
func (o *OwnListeners) Shutdown(ctx context.Context) error {
	var first error
	for _, srv := range o.servers {
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
			if first == nil {
				first = err
			}
		}
	}
	return first
}
