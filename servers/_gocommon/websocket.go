package gocommon

// GET /ws/ (servers/README.md, "WebSocket"): the one RFC 6455 check the Go servers'
// WebSocket libraries leave to the application. gorilla/websocket (gin) and its fork
// fasthttp/websocket (fasthttp) reassemble fragments, answer pings, answer a close
// frame with a close frame, and close with 1002 on an unmasked client frame
// (Conn.handleProtocolError) themselves, but hand a text message over without
// validating its UTF-8 (RFC 6455 §8.1: the endpoint MUST fail the connection, with
// 1007, §7.4.1). Each server's echo loop calls InvalidText on every message it read.

import (
	"encoding/binary"
	"time"
	"unicode/utf8"
)

// WSPath: where the WebSocket echo is served.
const WSPath = "/ws/"

// The RFC 6455 opcodes and status the check uses; gorilla's TextMessage and
// CloseMessage are these numbers in both libraries.
const (
	wsText        = 1
	wsClose       = 8
	wsInvalidData = 1007 // CloseInvalidFramePayloadData
)

// WSCloseWait: how long the close frame may take to be written (gorilla's own
// writeWait for the close it sends on a protocol error is 1 s).
const WSCloseWait = time.Second

// WSControlWriter is what both libraries' *websocket.Conn have for control frames.
type WSControlWriter interface {
	WriteControl(messageType int, data []byte, deadline time.Time) error
}

// invalidUTF8Close: the close frame's payload, status 1007 and a reason.
var invalidUTF8Close = func() []byte {
	reason := "invalid UTF-8 in a text message"
	b := make([]byte, 2, 2+len(reason))
	binary.BigEndian.PutUint16(b, wsInvalidData)
	return append(b, reason...)
}()

// InvalidText: for a text message whose payload is not UTF-8, sends the close frame
// 1007 and reports true; the caller then stops reading and closes the connection.
// Any other message: false, nothing sent (utf8.Valid runs over text messages only).
func InvalidText(c WSControlWriter, messageType int, p []byte) bool {
	if messageType != wsText || utf8.Valid(p) {
		return false
	}
	_ = c.WriteControl(wsClose, invalidUTF8Close, time.Now().Add(WSCloseWait))
	return true
}

// WSConn is what the echo needs of both libraries' *websocket.Conn.
type WSConn interface {
	WSControlWriter
	ReadMessage() (messageType int, p []byte, err error)
	WriteMessage(messageType int, data []byte) error
}

// Echo sends every message read back as it came (its type and bytes), until a read or a
// write fails or a text message is not UTF-8 (InvalidText). The caller closes the
// connection after (gin: deferred; fasthttp: when the upgrade handler returns).
func Echo(conn WSConn) {
	for {
		mt, msg, err := conn.ReadMessage()
		if err != nil || InvalidText(conn, mt, msg) {
			return
		}
		if err := conn.WriteMessage(mt, msg); err != nil {
			return
		}
	}
}
