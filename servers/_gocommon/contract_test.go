package gocommon

// Unit tests of the shared parsing (`go test ./...` in this folder); the routes are
// tested in each server's folder with contracttest, and against real databases by
// tests/integration/test_contract.py.

import (
	"strings"
	"testing"
)

func TestParseID(t *testing.T) {
	cases := map[string]int32{
		"1": 1, "0010": 10, "0000000001": 1, "2147483647": 2147483647,
	}
	for raw, want := range cases {
		if got, ok := ParseID(raw); !ok || got != want {
			t.Errorf("ParseID(%q) = %d, %v; want %d", raw, got, ok, want)
		}
	}
	for _, raw := range []string{"", "0", "00000000001", "2147483648", "99999999999999999999",
		"-1", "+1", "1a", "１", " 1", "1.0"} {
		if got, ok := ParseID(raw); ok {
			t.Errorf("ParseID(%q) = %d, accepted", raw, got)
		}
	}
}

func TestParseUpdate(t *testing.T) {
	good := map[string][2]string{
		`{"username":"a","email":"b"}`:                                {"a", "b"},
		`{"username":"a","email":""}`:                                 {"a", ""},
		`{"username":"\u00e9t\u00e9","email":"b","x":1}`:              {"été", "b"},
		`{"username":"\ud83d\ude00","email":"b"}`:                     {"😀", "b"},
		`{"username":"` + strings.Repeat("é", 256) + `","email":"b"}`: {strings.Repeat("é", 256), "b"},
	}
	for body, want := range good {
		u, e, err := ParseUpdate([]byte(body))
		if err != nil || u != want[0] || e != want[1] {
			t.Errorf("ParseUpdate(%.40q) = %q, %q, %v", body, u, e, err)
		}
	}
	bad := []string{
		``, `not json`, `[]`, `[1,2]`, `null`, `1`, `"s"`, `{}`,
		`{"username":"a"}`, `{"email":"a"}`,
		`{"username":1,"email":"b"}`, `{"username":"a","email":2}`,
		`{"username":null,"email":"b"}`, `{"username":"a","email":null}`,
		`{"username":["a"],"email":"b"}`, `{"username":"","email":"b"}`,
		`{"USERNAME":"a","email":"b"}`,
		`{"username":"a\u0000","email":"b"}`,
		`{"username":"\ud800","email":"b"}`, `{"username":"\udc00x","email":"b"}`,
		`{"username":"\ud800\u0041","email":"b"}`,
		"{\"username\":\"\xff\",\"email\":\"b\"}",
		`{"username":"` + strings.Repeat("é", 257) + `","email":"b"}`,
		`{"username":"a","email":"` + strings.Repeat("u", 257) + `"}`,
		strings.Repeat("[", 100000),
		`{"username":"a","email":"b"} trailing`,
	}
	for _, body := range bad {
		if u, e, err := ParseUpdate([]byte(body)); err == nil {
			t.Errorf("ParseUpdate(%.40q) accepted: %q, %q", body, u, e)
		}
	}
}

func TestParseN(t *testing.T) {
	cases := map[string]int{
		"": 1, "0": 1, "00": 1, "1": 1, "7": 7, "20": 20, "0020": 20, "499": 499, "500": 500,
		"501": 500, "5000": 500, "99999999999999999999": 500, "000000000000000000001": 1,
		strings.Repeat("9", 1000): 500,
		"abc":                     1, "-3": 1, "+3": 1, "1.5": 1, "1e3": 1, " 5": 1, "5 ": 1, "0x10": 1, "５": 1, "٣": 1,
	}
	for raw, want := range cases {
		if got := ParseN(raw); got != want {
			t.Errorf("ParseN(%.30q) = %d, want %d", raw, got, want)
		}
	}
}

func TestDistinctIDs(t *testing.T) {
	for _, n := range []int{1, 20, 500} {
		ids := DistinctIDs(n)
		if len(ids) != n {
			t.Fatalf("DistinctIDs(%d): %d ids", n, len(ids))
		}
		for i, id := range ids {
			if id < 1 || id > UsersCount || (i > 0 && id <= ids[i-1]) {
				t.Fatalf("DistinctIDs(%d): %v not ascending distinct in 1..10000", n, ids)
			}
		}
	}
}
