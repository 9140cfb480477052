//go:build !wasip1

package sdk

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/plugboard/plugboard/abi"
)

// TestEnv is what a native test gives Config, HTTP and OpenDir in place of
// the operator's settings (SetTestEnv). The zero value is the default
// sandbox: no configuration values, no HTTP, no directories.
type TestEnv struct {
	// Config holds the values Config reads.
	Config map[string]string
	// HTTPClient sends HTTP's requests (an httptest.Server's Client, say);
	// nil refuses every request with permission_denied, as the host does
	// for a plugin without allowed_hosts.
	HTTPClient *http.Client
	// AllowedHosts are the host:port pairs HTTP may reach (an
	// httptest.Server's Listener.Addr()); a request elsewhere is refused
	// with permission_denied. Empty: any, when HTTPClient is set.
	AllowedHosts []string
	// Dirs maps the directories the plugin sees (absolute, e.g. /data) to
	// directories of the test (t.TempDir()); OpenDir opens them.
	Dirs map[string]string
}

// testEnv is the environment SetTestEnv installed; testDirs its Dirs
// with cleaned guest paths.
var (
	testEnv  TestEnv
	testDirs map[string]string
)

func configGet(key string) (string, bool) {
	v, ok := testEnv.Config[key]
	return v, ok && v != ""
}

func httpSend(req HTTPRequest) (*HTTPResponse, error) {
	env := testEnv
	u, err := url.Parse(req.URL)
	if err != nil {
		return nil, fmt.Errorf("sdk.HTTP: %w", err)
	}
	if env.HTTPClient == nil {
		return nil, httpRefused(req.URL, "the test environment allows no HTTP",
			"give the test an HTTP server to reach (sdktest.Env.Server, or sdk.TestEnv.HTTPClient)")
	}
	if len(env.AllowedHosts) > 0 && !slices.Contains(env.AllowedHosts, u.Host) {
		return nil, httpRefused(req.URL, fmt.Sprintf("host %s is not allowed (allowed: %s)", u.Host, strings.Join(env.AllowedHosts, ", ")),
			"send requests only to the test server's URL (take it from a configuration value)")
	}
	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	}
	hr, err := http.NewRequest(req.Method, req.URL, body)
	if err != nil {
		return nil, fmt.Errorf("sdk.HTTP: %w", err)
	}
	for k, v := range req.Header {
		hr.Header.Set(k, v)
	}
	resp, err := env.HTTPClient.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("sdk.HTTP: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("sdk.HTTP: reading the response of %s %s: %w", req.Method, req.URL, err)
	}
	header := make(map[string]string, len(resp.Header))
	for k, vs := range resp.Header {
		header[k] = strings.Join(vs, ", ")
	}
	return &HTTPResponse{Status: resp.StatusCode, Header: header, Body: b}, nil
}

// httpRefused is the envelope of a request the sandbox does not send.
func httpRefused(url, why, hint string) *abi.Envelope {
	return abi.NewEnvelope(abi.CodePermissionDenied, "HTTP request to "+url+" refused: "+why, hint).WithDetail("url", url)
}

// openDir opens dir under the longest mounted directory holding it.
func openDir(dir string) (*os.Root, error) {
	best := ""
	for g := range testDirs {
		if (dir == g || g == "/" || strings.HasPrefix(dir, g+"/")) && len(g) > len(best) {
			best = g
		}
	}
	if best == "" {
		return nil, &os.PathError{Op: "opendir", Path: dir,
			Err: fmt.Errorf("%w: no directory is mounted there in this test (sdktest.Env.Dirs)", os.ErrNotExist)}
	}
	root, err := os.OpenRoot(testDirs[best])
	if err != nil {
		return nil, err
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(dir, best), "/")
	if rel == "" {
		return root, nil
	}
	defer root.Close()
	return root.OpenRoot(filepath.FromSlash(rel))
}
