package contracttest

// The HTTP workloads' routes (servers/README.md, "The HTTP workloads"): /upload/,
// /delay/, /static/ and compression, through each server's own router.

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"webbench/gocommon"
)

// Upload: the checksum of known bodies, the 8 MiB limit, the token, the methods.
func Upload(t *testing.T, newServer NewServer) {
	t.Helper()
	do := newServer(gocommon.NewApp("tok", nil, []byte(`{}`)))
	full := strings.Repeat("0123456789abcdef", gocommon.MaxUpload/16)
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	cases := []struct {
		method, path, token, body string
		status                    int
		want                      string
	}{
		// zlib.crc32(b"123456789") is the CRC-32 check value
		{"POST", "/upload/", "tok", "123456789", 200, `{"bytes":9,"crc32":"cbf43926"}`},
		{"POST", "/upload/", "tok", "The quick brown fox jumps over the lazy dog", 200, `{"bytes":43,"crc32":"414fa339"}`},
		{"POST", "/upload/", "tok", "", 200, `{"bytes":0,"crc32":"00000000"}`},
		{"POST", "/upload/", "tok", string(binary), 200, `{"bytes":256,"crc32":"29058c73"}`},
		{"POST", "/upload/", "tok", full, 200,
			fmt.Sprintf(`{"bytes":%d,"crc32":"%08x"}`, gocommon.MaxUpload, crc32.ChecksumIEEE([]byte(full)))},
		{"POST", "/upload/", "tok", full + "x", 413, ``},
		{"POST", "/upload/", "", "123", 401, `{"error":"invalid token"}`},
		{"POST", "/upload/", "bad", "123", 401, `{"error":"invalid token"}`},
		{"GET", "/upload/", "tok", "", 405, `{"error":"method not allowed"}`},
		{"PUT", "/upload/", "tok", "123", 405, `{"error":"method not allowed"}`},
		{"POST", "/upload", "tok", "123", 404, `{"error":"not found"}`},
	}
	for _, c := range cases {
		r := do(c.method, c.path, c.token, c.body, "Content-Type", "application/octet-stream")
		label := fmt.Sprintf("%s %s (%d bytes)", c.method, c.path, len(c.body))
		if r.Status != c.status || !strings.HasPrefix(r.Type, "application/json") {
			t.Errorf("%s: %d %q, want %d JSON (%.200s)", label, r.Status, r.Type, c.status, r.Body)
		}
		if c.want != "" && string(r.Body) != c.want {
			t.Errorf("%s: body %.200s, want %s", label, r.Body, c.want)
		}
		if c.status == 413 && !bytes.HasPrefix(r.Body, []byte(`{"error":`)) {
			t.Errorf("%s: body %.200s, want a JSON error", label, r.Body)
		}
	}
}

// Delay: 10 ms, then the exact text; the token, the methods.
func Delay(t *testing.T, newServer NewServer) {
	t.Helper()
	do := newServer(gocommon.NewApp("tok", nil, []byte(`{}`)))
	start := time.Now()
	r := do("GET", "/delay/", "tok", "")
	if took := time.Since(start); took < gocommon.DelayFor {
		t.Errorf("/delay/ answered after %v, before %v", took, gocommon.DelayFor)
	}
	if r.Status != 200 || !strings.HasPrefix(r.Type, "text/plain") || string(r.Body) != "delayed 10 ms" {
		t.Errorf("/delay/: %d %q %q", r.Status, r.Type, r.Body)
	}
	for _, c := range []struct {
		method, token string
		status        int
	}{{"GET", "", 401}, {"GET", "bad", 401}, {"POST", "tok", 405}, {"DELETE", "tok", 405}} {
		r := do(c.method, "/delay/", c.token, "")
		if r.Status != c.status || !strings.HasPrefix(r.Type, "application/json") {
			t.Errorf("%s /delay/ token %q: %d %q %s, want %d JSON", c.method, c.token, r.Status, r.Type, r.Body, c.status)
		}
	}
}

// staticDir: a folder "files" holding a.txt (text, 4000 bytes), and outside.txt
// beside it that must never be served.
func staticDir(t *testing.T) (dir string, content []byte) {
	t.Helper()
	root := t.TempDir()
	dir = filepath.Join(root, "files")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for i := 0; b.Len() < 4000; i++ {
		fmt.Fprintf(&b, "line %d of a static file the benchmark serves\n", i)
	}
	content = b.Bytes()[:4000]
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), content, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "outside.txt"), []byte("OUTSIDE the folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, content
}

// TraversalPaths climb out of the static folder to outside.txt.
var TraversalPaths = []string{
	"/static/../outside.txt", "/static/%2e%2e/outside.txt", "/static/..%2foutside.txt",
	"/static/%2e%2e%2foutside.txt", "/static/%2E%2E/outside.txt", "/static/a/../../outside.txt",
	"/static/..%5coutside.txt", "/static/%2e%2e%5coutside.txt",
}

// Static: the file with its length, type and validators, 304, 206, no token, a
// missing name, a climb out of the folder, no mount without BENCH_STATIC_DIR.
func Static(t *testing.T, newServer NewServer) {
	t.Helper()
	dir, content := staticDir(t)
	a := gocommon.NewApp("tok", nil, []byte(`{}`))
	a.StaticDir = dir
	do := newServer(a)
	r := do("GET", "/static/a.txt", "", "")
	if r.Status != 200 || !bytes.Equal(r.Body, content) || !strings.HasPrefix(r.Type, "text/plain") {
		t.Fatalf("GET /static/a.txt: %d %q, %d bytes", r.Status, r.Type, len(r.Body))
	}
	if got := r.Header.Get("Content-Length"); got != "4000" {
		t.Errorf("Content-Length %q, want 4000", got)
	}
	etag, modified := r.Header.Get("ETag"), r.Header.Get("Last-Modified")
	if etag == "" && modified == "" {
		t.Errorf("neither ETag nor Last-Modified: %v", r.Header)
	}
	if etag != "" {
		if r := do("GET", "/static/a.txt", "", "", "If-None-Match", etag); r.Status != 304 || len(r.Body) != 0 {
			t.Errorf("If-None-Match %s: %d, %d bytes", etag, r.Status, len(r.Body))
		}
	}
	if modified != "" {
		if r := do("GET", "/static/a.txt", "", "", "If-Modified-Since", modified); r.Status != 304 || len(r.Body) != 0 {
			t.Errorf("If-Modified-Since %s: %d, %d bytes", modified, r.Status, len(r.Body))
		}
	}
	r = do("GET", "/static/a.txt", "", "", "Range", "bytes=100-199")
	if r.Status != 206 || !bytes.Equal(r.Body, content[100:200]) || r.Header.Get("Content-Range") != "bytes 100-199/4000" {
		t.Errorf("Range 100-199: %d %q, %q", r.Status, r.Header.Get("Content-Range"), r.Body)
	}
	if r := do("HEAD", "/static/a.txt", "", ""); r.Status != 200 || len(r.Body) != 0 {
		t.Errorf("HEAD /static/a.txt: %d, %d bytes", r.Status, len(r.Body))
	}
	for _, path := range append([]string{"/static/nope.txt", "/static/", "/static/a.txt/x"}, TraversalPaths...) {
		r := do("GET", path, "tok", "")
		if r.Status < 400 || r.Status > 499 || bytes.Contains(r.Body, []byte("OUTSIDE")) {
			t.Errorf("GET %s: %d %.100q, want a 4xx", path, r.Status, r.Body)
		}
	}
	if r := do("POST", "/static/a.txt", "", ""); r.Status != 405 && r.Status != 404 {
		t.Errorf("POST /static/a.txt: %d", r.Status)
	}
	unmounted := newServer(gocommon.NewApp("tok", nil, []byte(`{}`)))
	if r := unmounted("GET", "/static/a.txt", "", ""); r.Status != 404 || string(r.Body) != `{"error":"not found"}` {
		t.Errorf("no BENCH_STATIC_DIR: GET /static/a.txt: %d %s", r.Status, r.Body)
	}
}

// Decoders: Content-Encoding -> how to decode a body in that coding.
type Decoders map[string]func([]byte) ([]byte, error)

func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// Compression: with App.Compression each coding in codings (gzip always, then what
// the server's compressor offers, decoded by decoders) is chosen by Accept-Encoding
// for a static file and a dynamic answer, with Vary; a Range is answered as is;
// without App.Compression nothing is compressed.
func Compression(t *testing.T, newServer NewServer, decoders Decoders) {
	t.Helper()
	dir, content := staticDir(t)
	a := gocommon.NewApp("tok", nil, []byte(`{}`))
	a.StaticDir, a.Compression = dir, true
	do := newServer(a)
	long := strings.Repeat("x", 1000)
	plain := "param1=" + long + ", param2=, param3="
	all := Decoders{"gzip": gunzip}
	for coding, decode := range decoders {
		all[coding] = decode
	}
	for coding, decode := range all {
		for _, c := range []struct {
			path, token string
			want        []byte
		}{{"/static/a.txt", "", content}, {"/plain/?param1=" + long, "tok", []byte(plain)}} {
			r := do("GET", c.path, c.token, "", "Accept-Encoding", coding)
			label := fmt.Sprintf("GET %.30s Accept-Encoding %s", c.path, coding)
			if r.Status != 200 || r.Header.Get("Content-Encoding") != coding ||
				!strings.Contains(r.Header.Get("Vary"), "Accept-Encoding") {
				t.Errorf("%s: %d, Content-Encoding %q, Vary %q", label, r.Status,
					r.Header.Get("Content-Encoding"), r.Header.Get("Vary"))
				continue
			}
			if got, err := decode(r.Body); err != nil || !bytes.Equal(got, c.want) {
				t.Errorf("%s: %d bytes decode to %d bytes (%v)", label, len(r.Body), len(got), err)
			}
		}
	}
	r := do("GET", "/static/a.txt", "", "", "Accept-Encoding", "gzip", "Range", "bytes=100-199")
	if r.Status != 206 || r.Header.Get("Content-Encoding") != "" || !bytes.Equal(r.Body, content[100:200]) {
		t.Errorf("Range with Accept-Encoding: %d, Content-Encoding %q, %q", r.Status, r.Header.Get("Content-Encoding"), r.Body)
	}
	if r := do("GET", "/static/a.txt", "", ""); r.Header.Get("Content-Encoding") != "" || !bytes.Equal(r.Body, content) {
		t.Errorf("no Accept-Encoding: Content-Encoding %q", r.Header.Get("Content-Encoding"))
	}
	a2 := gocommon.NewApp("tok", nil, []byte(`{}`))
	a2.StaticDir = dir
	off := newServer(a2)
	for _, path := range []string{"/static/a.txt", "/plain/?param1=" + long} {
		if r := off("GET", path, "tok", "", "Accept-Encoding", "gzip, br"); r.Header.Get("Content-Encoding") != "" {
			t.Errorf("compression off: GET %.30s has Content-Encoding %q", path, r.Header.Get("Content-Encoding"))
		}
	}
}
