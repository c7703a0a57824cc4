package contracttest

// GET /ws/ (servers/README.md, "WebSocket"): the token before the upgrade through
// each server's router, then a session of raw RFC 6455 frames on a real connection
// (the framework's own server, in-process): echo, fragments, ping, and the three ways
// a connection must close. bench/verify/websocket.py checks the same on a running
// server.

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"webbench/gocommon"
)

// WebSocketToken: a handshake without the token, or with another, is the JSON 401
// before any upgrade; another method is the 405.
func WebSocketToken(t *testing.T, newServer NewServer) {
	t.Helper()
	do := newServer(gocommon.NewApp("tok", nil, []byte(`{}`)))
	handshake := []string{"Connection", "Upgrade", "Upgrade", "websocket",
		"Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}
	for _, c := range []struct {
		method, token string
		status        int
		want          string
	}{
		{"GET", "", 401, `{"error":"invalid token"}`},
		{"GET", "bad", 401, `{"error":"invalid token"}`},
		{"POST", "tok", 405, `{"error":"method not allowed"}`},
	} {
		r := do(c.method, gocommon.WSPath, c.token, "", handshake...)
		if r.Status != c.status || !strings.HasPrefix(r.Type, "application/json") || string(r.Body) != c.want {
			t.Errorf("%s /ws/ token %q: %d %q %s, want %d %s", c.method, c.token, r.Status, r.Type, r.Body, c.status, c.want)
		}
	}
}

// Dial opens a new connection to a server running the router (token "tok").
type Dial func() net.Conn

// WebSocket: one connection per case, each opened with a good handshake.
func WebSocket(t *testing.T, dial Dial) {
	t.Helper()
	open := func() (net.Conn, *bufio.Reader) {
		conn := dial()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		key := "dGhlIHNhbXBsZSBub25jZQ=="
		fmt.Fprintf(conn, "GET /ws/ HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
			"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\ntoken: tok\r\n\r\n", key)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		if resp.StatusCode != 101 || resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) ||
			resp.Header.Get("Sec-WebSocket-Extensions") != "" {
			t.Fatalf("handshake: %d %v", resp.StatusCode, resp.Header)
		}
		return conn, br
	}
	send := func(conn net.Conn, frames ...[]byte) {
		if _, err := conn.Write(bytes.Join(frames, nil)); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	expect := func(label string, br *bufio.Reader, opcode byte, payload []byte) {
		t.Helper()
		op, got, err := readFrame(br)
		if err != nil || op != opcode || !bytes.Equal(got, payload) {
			t.Errorf("%s: opcode %d, %d bytes (%.40q), %v; want opcode %d, %d bytes",
				label, op, len(got), got, err, opcode, len(payload))
		}
	}
	conn, br := open()
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10/16)
	for _, c := range []struct {
		label   string
		opcode  byte
		payload []byte
	}{
		{"text", 1, []byte("hello é😀")}, {"binary", 2, []byte{0, 1, 2, 0xff, 0xc3}},
		{"empty text", 1, nil}, {"64 KiB text", 1, big},
	} {
		send(conn, frame(c.opcode, true, true, c.payload))
		expect(c.label, br, c.opcode, c.payload)
	}
	send(conn, frame(1, false, true, []byte("frag")), frame(9, true, true, []byte("p")),
		frame(0, false, true, []byte("men")), frame(0, true, true, []byte("ted")))
	expect("a ping between fragments", br, 10, []byte("p"))
	expect("a message in 3 fragments", br, 1, []byte("fragmented"))
	send(conn, frame(10, true, true, []byte("unsolicited")), frame(1, true, true, []byte("after")))
	expect("a message after an unsolicited pong", br, 1, []byte("after"))
	send(conn, frame(8, true, true, []byte{0x03, 0xe8, 'b', 'y', 'e'}))
	closeCode(t, "a close (1000)", br, 1000)
	conn.Close()

	conn, br = open()
	send(conn, frame(1, true, true, []byte("bad \xc3\x28 utf-8")))
	closeCode(t, "invalid UTF-8", br, 1007)
	conn.Close()

	conn, br = open()
	send(conn, frame(1, true, false, []byte("unmasked")))
	closeCode(t, "an unmasked frame", br, 1002)
	conn.Close()
}

// closeCode: the next frame is a close with code, then the server closes TCP.
func closeCode(t *testing.T, label string, br *bufio.Reader, code uint16) {
	t.Helper()
	op, p, err := readFrame(br)
	if err != nil || op != 8 || len(p) < 2 || binary.BigEndian.Uint16(p) != code {
		t.Errorf("%s: opcode %d payload %q (%v), want a close %d", label, op, p, err, code)
		return
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("%s: the connection stayed open after the close frame (%v)", label, err)
	}
}

// frame: one client frame, masked (with a fixed key) unless told otherwise.
func frame(opcode byte, fin, masked bool, payload []byte) []byte {
	b := []byte{opcode, 0}
	if fin {
		b[0] |= 0x80
	}
	switch n := len(payload); {
	case n < 126:
		b[1] = byte(n)
	case n < 1<<16:
		b[1] = 126
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b[1] = 127
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	if !masked {
		return append(b, payload...)
	}
	b[1] |= 0x80
	key := [4]byte{0x37, 0xfa, 0x21, 0x3d}
	b = append(b, key[:]...)
	for i, c := range payload {
		b = append(b, c^key[i%4])
	}
	return b
}

// readFrame: one server frame (never masked); fin is not looked at (the servers send
// each message as one frame).
func readFrame(br *bufio.Reader) (opcode byte, payload []byte, err error) {
	var h [2]byte
	if _, err = io.ReadFull(br, h[:]); err != nil {
		return 0, nil, err
	}
	if h[1]&0x80 != 0 {
		return 0, nil, fmt.Errorf("a masked server frame")
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		_, err = io.ReadFull(br, l[:])
		n = uint64(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		_, err = io.ReadFull(br, l[:])
		n = binary.BigEndian.Uint64(l[:])
	}
	if err != nil {
		return 0, nil, err
	}
	payload = make([]byte, n)
	_, err = io.ReadFull(br, payload)
	return h[0] & 0x0f, payload, err
}
