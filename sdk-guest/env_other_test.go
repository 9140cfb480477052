//go:build !wasip1

package sdk

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/plugboard/plugboard/abi"
)

func TestConfigFromTestEnv(t *testing.T) {
	if _, ok := Config("greeting"); ok {
		t.Fatal("Config reads a value with no test environment")
	}
	restore := SetTestEnv(TestEnv{Config: map[string]string{"greeting": "hi", "empty": ""}})
	if v, ok := Config("greeting"); v != "hi" || !ok {
		t.Errorf(`Config("greeting") = %q, %t`, v, ok)
	}
	if v, ok := Config("empty"); v != "" || ok {
		t.Errorf(`Config("empty") = %q, %t; an empty value reads as not set, as config_get does`, v, ok)
	}
	restore()
	if _, ok := Config("greeting"); ok {
		t.Error("restore left the value")
	}
}

func TestHTTPFromTestEnv(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Method", r.Method)
		w.WriteHeader(http.StatusTeapot)
		w.Write([]byte(r.Header.Get("X-Token") + ":" + string(b)))
	}))
	defer srv.Close()

	var env *abi.Envelope
	if _, err := HTTP(HTTPRequest{URL: srv.URL}); !errors.As(err, &env) || env.Code != abi.CodePermissionDenied {
		t.Fatalf("HTTP without a client = %v, want permission_denied", err)
	}
	defer SetTestEnv(TestEnv{HTTPClient: srv.Client(), AllowedHosts: []string{srv.Listener.Addr().String()}})()

	resp, err := HTTP(HTTPRequest{Method: "post", URL: srv.URL + "/x", Header: map[string]string{"X-Token": "t"}, Body: []byte("body")})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusTeapot || string(resp.Body) != "t:body" || resp.Header["X-Method"] != "POST" {
		t.Errorf("response = %d %v %q", resp.Status, resp.Header, resp.Body)
	}
	if _, err := HTTP(HTTPRequest{URL: "http://example.com/"}); !errors.As(err, &env) || env.Code != abi.CodePermissionDenied {
		t.Errorf("HTTP to a host not allowed = %v, want permission_denied", err)
	}
	for _, bad := range []HTTPRequest{{Method: "BREW", URL: srv.URL}, {URL: "/relative"}, {URL: "ftp://x/"}} {
		if _, err := HTTP(bad); err == nil {
			t.Errorf("HTTP(%+v) succeeded", bad)
		}
	}
}

func TestOpenDirFromTestEnv(t *testing.T) {
	data, outside := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(data, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "sub", "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(data, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDir("/data"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("OpenDir with nothing mounted = %v, want not exist", err)
	}
	defer SetTestEnv(TestEnv{Dirs: map[string]string{"/data/": data}})()

	for _, dir := range []string{"/data", "data", "/data/sub/.."} {
		root, err := OpenDir(dir)
		if err != nil {
			t.Fatalf("OpenDir(%q): %v", dir, err)
		}
		if _, err := root.Stat("sub/a.txt"); err != nil {
			t.Errorf("OpenDir(%q): %v", dir, err)
		}
		if _, err := root.Open("link"); err == nil {
			t.Errorf("OpenDir(%q) follows a link out of the directory", dir)
		}
		root.Close()
	}
	root, err := OpenDir("/data/sub")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if _, err := root.Stat("a.txt"); err != nil {
		t.Error(err)
	}
	for _, dir := range []string{"/dat", "/other", "/"} {
		if _, err := OpenDir(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("OpenDir(%q) = %v, want not exist", dir, err)
		}
	}
}
