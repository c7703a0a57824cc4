package gocommon

// The HTTP workloads besides the contract (servers/README.md, "The HTTP workloads"):
// /upload/'s checksum and limit, /delay/'s wait and answer, the static mount's prefix.
// Serving the files and compressing answers is each framework's own (its handlers.go).

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"sync"
	"time"
)

const (
	// MaxUpload: the largest /upload/ body accepted (8 MiB); one byte more is a 413.
	MaxUpload = 8 << 20
	// DelayFor: how long /delay/ waits before answering.
	DelayFor = 10 * time.Millisecond
	// StaticPrefix: where BENCH_STATIC_DIR is mounted.
	StaticPrefix = "/static/"
)

var (
	// DelayBody: /delay/'s answer, text/plain.
	DelayBody = []byte("delayed 10 ms")
	// UploadTooLarge: the answer to an /upload/ body over MaxUpload.
	UploadTooLarge = Fail(http.StatusRequestEntityTooLarge, ErrorBody("body too large (max 8 MiB)"))
)

// UploadSum is /upload/'s answer: the body's length and CRC-32 (IEEE, as zlib's
// crc32) in 8 lowercase hex digits.
type UploadSum struct {
	Bytes int64  `json:"bytes"`
	CRC32 string `json:"crc32"`
}

// checksum is an io.Writer that counts and checksums what it is given.
type checksum struct {
	crc uint32
	n   int64
}

func (c *checksum) Write(p []byte) (int, error) {
	c.crc = crc32.Update(c.crc, crc32.IEEETable, p)
	c.n += int64(len(p))
	return len(p), nil
}

// copyBuffers: io.Copy's 32 KiB buffers, reused across uploads.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// writerOnly hides checksum's ReadFrom from io.CopyBuffer (which would call it back).
type writerOnly struct{ io.Writer }

// ReadFrom: io.Copy(checksum, body) reads the body through a pooled buffer.
func (c *checksum) ReadFrom(r io.Reader) (int64, error) {
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	return io.CopyBuffer(writerOnly{c}, r, *buf)
}

// Upload: POST /upload/. read writes the body into w as it arrives (or at once, when
// the framework has buffered it), and returns ErrTooLarge for a body over MaxUpload;
// it is called only once the token is good.
func (a *App) Upload(authorized bool, read func(w io.Writer) error) Reply {
	if !authorized {
		return Unauthorized
	}
	var sum checksum
	err := read(&sum)
	switch {
	case errors.Is(err, ErrTooLarge) || sum.n > MaxUpload:
		return UploadTooLarge
	case err != nil:
		return Fail(http.StatusBadRequest, ErrorBody("could not read body"))
	}
	return JSON(UploadSum{Bytes: sum.n, CRC32: fmt.Sprintf("%08x", sum.crc)})
}

// Delay: GET /delay/. time.Sleep parks the request's goroutine on the runtime's timer:
// the OS thread (one of GOMAXPROCS) runs other goroutines meanwhile.
func (a *App) Delay(authorized bool) Reply {
	if !authorized {
		return Unauthorized
	}
	time.Sleep(DelayFor)
	return Reply{http.StatusOK, TextType, DelayBody}
}
