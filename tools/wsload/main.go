// wsload: the harness's WebSocket load generator (bench/load/wsload.py runs it).
//
// Each of -connections connections opens the handshake to -url (header `token`), then
// sends a text message of -size bytes, waits for its echo, checks it byte for byte and
// times the round trip, and sends the next, until -duration has passed: the closed loop,
// as a wrk connection runs it. A compiled client because k6's WebSocket module spent more
// CPU per message than the servers it measured (docs/tests-measured.md, "websocket").
//
// It prints one JSON object on stdout: the messages sent and echoed, the errors by kind,
// the bytes received, the window, and every round trip's latency in whole microseconds as
// [value, count] pairs (the harness puts them in its HDR histogram: bench/core/histogram.py).
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

type tally struct {
	sent, echoed, bytes int64
	errs                map[string]int64
	latencyUs           map[int64]int64
}

func newTally() *tally {
	return &tally{errs: map[string]int64{}, latencyUs: map[int64]int64{}}
}

// frameBytes is what a server's unmasked frame of n payload bytes takes on the wire.
func frameBytes(n int) int64 {
	switch {
	case n < 126:
		return int64(n + 2)
	case n < 65536:
		return int64(n + 4)
	}
	return int64(n + 10)
}

// message is connection i's payload: it differs between connections, so an echo sent to
// the wrong one never passes for its own.
func message(size, i int) []byte {
	b := make([]byte, size)
	for k := range b {
		b[k] = alphabet[(k*7+i)%len(alphabet)]
	}
	return b
}

func kindOf(err error) string {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return "read"
}

func runConnection(i int, dialer *websocket.Dialer, url string, header http.Header,
	size int, timeout time.Duration, deadline time.Time, t *tally) {
	payload := message(size, i)
	for time.Now().Before(deadline) {
		conn, _, err := dialer.Dial(url, header)
		if err != nil {
			t.errs["connect"]++
			time.Sleep(10 * time.Millisecond)
			continue
		}
		for time.Now().Before(deadline) {
			start := time.Now()
			conn.SetWriteDeadline(start.Add(timeout))
			if err := conn.WriteMessage(websocket.TextMessage, payload); err != nil {
				t.errs["write"]++
				break
			}
			t.sent++
			conn.SetReadDeadline(start.Add(timeout))
			kind, got, err := conn.ReadMessage()
			if err != nil {
				t.errs[kindOf(err)]++
				break
			}
			elapsed := time.Since(start).Microseconds()
			t.echoed++
			t.bytes += frameBytes(len(got))
			t.latencyUs[elapsed]++
			if kind != websocket.TextMessage || string(got) != string(payload) {
				t.errs["status"]++ // an answer, but not the echo
			}
		}
		// the close handshake, untimed; then the next connection (after an error) or the end
		conn.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(timeout))
		conn.Close()
	}
}

func main() {
	url := flag.String("url", "", "ws://host:port/ws/ or wss://...")
	connections := flag.Int("connections", 1, "connections, each one message in flight")
	duration := flag.Float64("duration", 10, "seconds of load")
	size := flag.Int("size", 32, "bytes per message")
	timeout := flag.Float64("timeout", 5, "seconds a handshake or an echo may take")
	token := flag.String("token", "", "the `token` header of the handshake")
	ca := flag.String("ca", "", "over wss: the only CA trusted (PEM); TLS 1.3 only")
	version := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *version {
		fmt.Println("wsload 1 (gorilla/websocket v1.5.3)")
		return
	}
	if *url == "" || *connections < 1 || *duration <= 0 || *size < 0 || *timeout <= 0 {
		fmt.Fprintln(os.Stderr, "wsload: -url, -connections >= 1, -duration > 0, -size >= 0 and -timeout > 0 are needed")
		os.Exit(2)
	}
	to := time.Duration(*timeout * float64(time.Second))
	dialer := &websocket.Dialer{HandshakeTimeout: to, ReadBufferSize: 65536, WriteBufferSize: 65536,
		EnableCompression: false}
	if *ca != "" {
		pem, err := os.ReadFile(*ca)
		if err != nil {
			fmt.Fprintln(os.Stderr, "wsload:", err)
			os.Exit(2)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			fmt.Fprintln(os.Stderr, "wsload: no certificate in", *ca)
			os.Exit(2)
		}
		dialer.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13,
			NextProtos: []string{"http/1.1"}}
	}
	header := http.Header{}
	if *token != "" {
		header.Set("token", *token)
	}
	start := time.Now()
	deadline := start.Add(time.Duration(*duration * float64(time.Second)))
	tallies := make([]*tally, *connections)
	var wg sync.WaitGroup
	for i := range tallies {
		tallies[i] = newTally()
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			runConnection(i, dialer, *url, header, *size, to, deadline, tallies[i])
		}(i)
	}
	wg.Wait()
	window := time.Since(start).Seconds()
	total := newTally()
	for _, t := range tallies {
		total.sent += t.sent
		total.echoed += t.echoed
		total.bytes += t.bytes
		for k, v := range t.errs {
			total.errs[k] += v
		}
		for k, v := range t.latencyUs {
			total.latencyUs[k] += v
		}
	}
	values := make([]int64, 0, len(total.latencyUs))
	for v := range total.latencyUs {
		values = append(values, v)
	}
	sort.Slice(values, func(a, b int) bool { return values[a] < values[b] })
	pairs := make([][2]int64, len(values))
	for k, v := range values {
		pairs[k] = [2]int64{v, total.latencyUs[v]}
	}
	out := map[string]any{"sent": total.sent, "echoed": total.echoed, "bytes": total.bytes,
		"duration_s": window, "errors": total.errs, "latency_us": pairs,
		"connections": *connections, "size": *size}
	json.NewEncoder(os.Stdout).Encode(out)
}
