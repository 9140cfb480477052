package sdk

import (
	"fmt"
	"os"
	"path"
	"strings"
)

// What a plugin may reach beyond its calls is the operator's to give, per
// plugin, under plugins.settings in plugboard's configuration file:
// configuration values, HTTP to the hosts it allows (through the host, never
// a socket), and directories mounted into the plugin's filesystem. Config,
// HTTP and OpenDir read them. Inside WebAssembly they use Extism's
// config_get and http_request and the WASI filesystem; in native tests they
// read what the test supplies (SetTestEnv, or package sdktest).

// Config returns the configuration value the operator set for key (the
// plugin's config entry under plugins.settings) and whether one is set. An
// empty value reads as not set: Extism's config_get cannot tell them apart.
func Config(key string) (string, bool) { return configGet(key) }

// HTTPRequest is one HTTP request a plugin sends through the host.
type HTTPRequest struct {
	// Method is GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS or TRACE;
	// "" means GET.
	Method string
	// URL is absolute: http or https, a host the operator allows.
	URL string
	// Header holds the request's headers, one value each.
	Header map[string]string
	// Body is sent as is; nil for none.
	Body []byte
}

// HTTPResponse is the answer to an HTTPRequest.
type HTTPResponse struct {
	// Status is the HTTP status code: a 404 or a 500 is a response, not an
	// error.
	Status int
	// Header holds the response's headers (several values joined by ","),
	// where the host passes them on.
	Header map[string]string
	Body   []byte
}

// HTTP sends req through the host and returns its response. The host sends
// it only to a host the operator allows (allowed_hosts; loopback and private
// addresses only with allow_private) and bounds the response's size and
// time. As in every Extism host, a request that fails there ends the call
// and the handler does not resume: refused, the agent gets a
// permission_denied envelope naming the setting; too large,
// resource_exhausted; unreachable, unavailable. In native tests HTTP returns
// the refusal (and a network error) as its error instead, so a handler that
// passes errors on answers the same.
func HTTP(req HTTPRequest) (*HTTPResponse, error) {
	if req.Method == "" {
		req.Method = "GET"
	}
	req.Method = strings.ToUpper(req.Method)
	if httpMethod(req.Method) < 0 {
		return nil, fmt.Errorf("sdk.HTTP: method %q is not one the host sends (GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, TRACE)", req.Method)
	}
	if !strings.HasPrefix(req.URL, "http://") && !strings.HasPrefix(req.URL, "https://") {
		return nil, fmt.Errorf("sdk.HTTP: URL %q is not an absolute http or https URL", req.URL)
	}
	return httpSend(req)
}

// httpMethod numbers the methods HTTP sends as go-pdk does
// (pdk.HTTPMethod); -1 for the others.
func httpMethod(m string) int32 {
	switch m {
	case "GET":
		return 0
	case "HEAD":
		return 1
	case "POST":
		return 2
	case "PUT":
		return 3
	case "PATCH":
		return 4
	case "DELETE":
		return 5
	case "OPTIONS":
		return 7
	case "TRACE":
		return 8
	}
	return -1
}

// OpenDir opens a directory the operator mounted into the plugin's
// filesystem (allowed_paths under plugins.settings), or one below it, as an
// *os.Root: reads and writes through it stay inside the directory, symbolic
// links included. dir is the path the plugin sees (absolute; a relative one
// is taken from /). A directory nobody mounted does not exist for the
// plugin. In native tests, dir is looked up in the directories the test
// mounted.
func OpenDir(dir string) (*os.Root, error) {
	if !path.IsAbs(dir) {
		dir = "/" + dir
	}
	return openDir(path.Clean(dir))
}
