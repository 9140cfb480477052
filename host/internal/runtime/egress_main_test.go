package runtime_test

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// TestMain makes httptest's TLS certificate (a CA certificate for
// 127.0.0.1, ::1 and example.com) a system root for the whole test binary,
// through SSL_CERT_FILE, before anything loads the system roots: the egress
// client verifies TLS against the system roots, as in production.
func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "plugboard-runtime-ca")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		srv := httptest.NewTLSServer(http.NotFoundHandler())
		cert := srv.Certificate()
		srv.Close()
		file := filepath.Join(dir, "ca.pem")
		if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.Setenv("SSL_CERT_FILE", file)
		os.Unsetenv("SSL_CERT_DIR")
		return m.Run()
	}())
}
