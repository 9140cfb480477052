package metrics

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MinTokenBytes is the shortest bearer token the metrics endpoint takes.
const MinTokenBytes = 32

// Path is where the endpoint serves the metrics.
const Path = "/metrics"

// ScrapeTimeout bounds one scrape's gathering; a slower one answers 503.
const ScrapeTimeout = 10 * time.Second

// ReadToken reads the bearer token of the metrics endpoint from file
// (surrounding whitespace ignored) and refuses one shorter than
// MinTokenBytes or with spaces or control characters in it.
func ReadToken(file string) ([]byte, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSpace(b)
	if len(b) < MinTokenBytes {
		return nil, fmt.Errorf("%s: the token is %d bytes; it needs at least %d random ones (e.g. openssl rand -hex 32)", file, len(b), MinTokenBytes)
	}
	if bytes.IndexFunc(b, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return nil, fmt.Errorf("%s: the token must be printable without spaces", file)
	}
	return b, nil
}

// Handler serves GET /metrics to requests bearing token, and 401 with
// WWW-Authenticate to any other: agents in attempts reach loopback too,
// so the address is no credential. A token shorter than MinTokenBytes
// panics: the caller checks it first (ReadToken).
func (m *Metrics) Handler(token []byte) http.Handler {
	if len(token) < MinTokenBytes {
		panic("metrics: token shorter than MinTokenBytes")
	}
	// Compared as digests: equal lengths, so the comparison's time says
	// nothing of the token's length either.
	want := sha256.Sum256(token)
	prom := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		Registry:            m.reg,
		Timeout:             ScrapeTimeout,
		MaxRequestsInFlight: 4,
		ErrorHandling:       promhttp.ContinueOnError,
	})
	mux := http.NewServeMux()
	mux.Handle("GET "+Path, prom)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		sum := sha256.Sum256([]byte(got))
		if !ok || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="plugboard metrics"`)
			http.Error(w, "a bearer token is required (serve --metrics-token-file)", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// Server returns the HTTP server of the endpoint: Handler behind timeouts
// that keep a slow or idle client from holding a connection.
func (m *Metrics) Server(token []byte) *http.Server {
	return &http.Server{
		Handler:           m.Handler(token),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      ScrapeTimeout + 5*time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
}
