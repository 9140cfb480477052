package runtime_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/host/internal/runtime"
)

// TestBlameMissingConfig: a key the plugin asked for and did not get is
// named in the hint whatever the plugin says; the failure is the operator's
// for certain when the plugin crashed, said nothing, names the key or
// complains of configuration, and otherwise the hint leaves the agent its
// own way out.
func TestBlameMissingConfig(t *testing.T) {
	cases := []struct {
		message  string
		missing  []string
		crashed  bool
		wantKeys []string
		certain  bool
	}{
		{"ASSEMBLYAI_API_KEY config must be set", []string{"ASSEMBLYAI_API_KEY"}, false, []string{"ASSEMBLYAI_API_KEY"}, true},
		{"plugin p failed: panic: runtime error: index out of range [0] with length 0", []string{"FOO_API_KEY"}, true, []string{"FOO_API_KEY"}, true},
		{"", []string{"token"}, false, []string{"token"}, true},
		{"No api-key configured", []string{"api-key"}, false, []string{"api-key"}, true},
		{"missing config", []string{"token", "region"}, false, []string{"token", "region"}, true},
		{"the region is needed", []string{"token", "region"}, false, []string{"region"}, true},
		// The plugin may do without these: the setting is named, the
		// agent's way out kept.
		{"request failed: 401 unauthorized", []string{"API_KEY"}, false, []string{"API_KEY"}, false},
		{"Invalid timezone 'Mars/Base'", []string{"default_tz"}, false, []string{"default_tz"}, false},
		{"Error: 'time' argument is required", []string{"timezone"}, false, []string{"timezone"}, false},
	}
	for _, c := range cases {
		v, ok := runtime.BlameMissingConfig("p", "t", c.message, c.missing, c.crashed)
		if !ok || v.Certain != c.certain || !slices.Equal(v.Keys, c.wantKeys) {
			t.Errorf("BlameMissingConfig(%q, %v, crashed %v) = %+v, %v; want keys %v, certain %v", c.message, c.missing, c.crashed, v, ok, c.wantKeys, c.certain)
		}
		for _, k := range c.wantKeys {
			if !strings.Contains(v.Hint, "plugins.settings.p.config."+k) {
				t.Errorf("%q: hint %q does not name %s", c.message, v.Hint, k)
			}
		}
		if strings.Contains(v.Hint, "authors") || strings.Contains(v.Hint, "restart the server") {
			t.Errorf("%q: hint %q", c.message, v.Hint)
		}
		if !c.certain && !strings.Contains(v.Hint, "call t again") {
			t.Errorf("%q: an uncertain hint %q leaves the agent no way out", c.message, v.Hint)
		}
	}
	if _, ok := runtime.BlameMissingConfig("p", "t", "No api-key configured", nil, false); ok {
		t.Error("blamed without a missing key: the message alone is ConfigBlame's")
	}
}
