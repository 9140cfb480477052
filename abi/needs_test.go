package abi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// needsManifest is a valid manifest declaring n.
func needsManifest(n Needs) *Manifest {
	return &Manifest{Plugin: PluginInfo{Name: "p"}, Needs: n,
		Tools: []Tool{{Name: "t", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
}

// TestNeedsValid: a declaration of every kind passes Validate, survives a
// JSON round trip, and an empty one is left out of the JSON (a manifest
// without needs is byte for byte what it was).
func TestNeedsValid(t *testing.T) {
	n := Needs{
		Config: []ConfigNeed{{Key: "API_KEY", Secret: true, Required: true, Description: "the key\nfrom the console"}, {Key: "api.url"}},
		HTTP: []HTTPNeed{{Host: "api.example.com", Paths: []string{"/v1/*", "/health"}, Why: "forecasts"},
			{Host: "*.cdn.example.com"}, {Host: "127.0.0.1:8080"}, {Host: "[::1]:9000"}, {Host: "[2001:db8::1]"}, {Host: "Upper.Example.com"}},
	}
	m := needsManifest(n)
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back Manifest
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(back.Needs), fmt.Sprint(n); got != want {
		t.Errorf("round trip: %s, want %s", got, want)
	}
	if !strings.Contains(string(b), `"needs":{"config":[{"key":"API_KEY","description":"the key\nfrom the console","required":true,"secret":true}`) {
		t.Errorf("needs JSON: %s", b)
	}
	b, _ = json.Marshal(needsManifest(Needs{}))
	if strings.Contains(string(b), "needs") {
		t.Errorf("a manifest without needs writes them: %s", b)
	}
}

// TestNeedsInvalid: each malformed declaration is refused by Validate with
// an error naming the entry and what is wrong.
func TestNeedsInvalid(t *testing.T) {
	long := strings.Repeat("x", MaxNeedTextBytes+1)
	many := make([]string, MaxNeedPaths+1)
	for i := range many {
		many[i] = fmt.Sprintf("/p%d", i)
	}
	for _, tc := range []struct {
		name string
		n    Needs
		want string
	}{
		{"empty key", Needs{Config: []ConfigNeed{{Key: ""}}}, `needs.config[0] (""): key must be 1-128`},
		{"key with a space", Needs{Config: []ConfigNeed{{Key: "API KEY"}}}, `needs.config[0] ("API KEY"): key must be`},
		{"key too long", Needs{Config: []ConfigNeed{{Key: strings.Repeat("k", 129)}}}, "key must be 1-128"},
		{"key twice", Needs{Config: []ConfigNeed{{Key: "K"}, {Key: "K"}}}, `needs.config[1] ("K"): key declared twice`},
		{"description too long", Needs{Config: []ConfigNeed{{Key: "K", Description: long}}}, "description is 1025 bytes; the cap is 1024"},
		{"description with a control character", Needs{Config: []ConfigNeed{{Key: "K", Description: "a\x1b[31m"}}}, "description has the control character"},
		{"every host", Needs{HTTP: []HTTPNeed{{Host: "*"}}}, `host "*" would be every host`},
		{"a URL", Needs{HTTP: []HTTPNeed{{Host: "https://api.example.com/v1"}}}, "not a URL"},
		{"empty host", Needs{HTTP: []HTTPNeed{{Host: ""}}}, "host is empty"},
		{"a top-level domain", Needs{HTTP: []HTTPNeed{{Host: "*.com"}}}, "would match a whole top-level domain"},
		{"a star inside", Needs{HTTP: []HTTPNeed{{Host: "api.*.example.com"}}}, "a * only as the whole first label"},
		{"a bad label", Needs{HTTP: []HTTPNeed{{Host: "-api.example.com"}}}, `"-api" is not a DNS label`},
		{"a bad port", Needs{HTTP: []HTTPNeed{{Host: "api.example.com:70000"}}}, `port "70000" is not 1 to 65535`},
		{"an empty port", Needs{HTTP: []HTTPNeed{{Host: "api.example.com:"}}}, `port "" is not 1 to 65535`},
		{"IPv6 without brackets", Needs{HTTP: []HTTPNeed{{Host: "::1"}}}, "want NAME, *.DOMAIN or an IP address"},
		{"bad IPv6", Needs{HTTP: []HTTPNeed{{Host: "[1::2::3]"}}}, "want NAME, *.DOMAIN or an IP address"},
		{"host twice", Needs{HTTP: []HTTPNeed{{Host: "a.example.com"}, {Host: "A.example.com"}}}, "host declared twice"},
		{"relative path", Needs{HTTP: []HTTPNeed{{Host: "a.example.com", Paths: []string{"v1/*"}}}}, `path "v1/*" must start with "/"`},
		{"path with a query", Needs{HTTP: []HTTPNeed{{Host: "a.example.com", Paths: []string{"/v1?x=1"}}}}, "without spaces, control characters, query or fragment"},
		{"too many paths", Needs{HTTP: []HTTPNeed{{Host: "a.example.com", Paths: many}}}, "33 paths; the cap is 32"},
		{"why too long", Needs{HTTP: []HTTPNeed{{Host: "a.example.com", Why: long}}}, "why is 1025 bytes"},
	} {
		err := needsManifest(tc.n).Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate = %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// TestNeedsCapped: more entries than MaxManifestEntries is one error per
// list, before any entry is looked at.
func TestNeedsCapped(t *testing.T) {
	n := Needs{Config: make([]ConfigNeed, MaxManifestEntries+1), HTTP: make([]HTTPNeed, MaxManifestEntries+1)}
	err := needsManifest(n).Validate()
	if err == nil {
		t.Fatal("Validate accepted 257 config and http needs")
	}
	msg := err.Error()
	for _, want := range []string{"needs.config declares 257 entries; the cap is 256", "needs.http declares 257 entries; the cap is 256"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q: %s", want, msg)
		}
	}
	if strings.Count(msg, "\n") != 1 {
		t.Errorf("want two lines, one per list, got:\n%s", msg)
	}
	// At the cap it passes.
	n = Needs{}
	for i := 0; i < MaxManifestEntries; i++ {
		n.Config = append(n.Config, ConfigNeed{Key: fmt.Sprintf("K%d", i)})
	}
	if err := needsManifest(n).Validate(); err != nil {
		t.Errorf("256 config needs: %v", err)
	}
}

// TestHTTPNeedAllowedBy holds the match of a need against allowed_hosts to
// the rule the host applies to requests.
func TestHTTPNeedAllowedBy(t *testing.T) {
	for _, tc := range []struct {
		need    string
		allowed []string
		want    bool
	}{
		{"api.example.com", []string{"api.example.com"}, true},
		{"API.example.com", []string{"api.example.COM"}, true},
		{"api.example.com", nil, false},
		{"api.example.com", []string{"other.example.com"}, false},
		{"api.example.com", []string{"*.example.com"}, true},
		{"example.com", []string{"*.example.com"}, false}, // a wildcard is the subdomains only
		{"*.example.com", []string{"*.example.com"}, true},
		{"*.eu.example.com", []string{"*.example.com"}, true},
		{"*.example.com", []string{"api.example.com"}, false}, // one subdomain does not cover them all
		{"*.example.com", []string{"*.eu.example.com"}, false},
		{"api.example.com", []string{"api.example.com:443"}, true}, // a need without a port is HTTPS
		{"api.example.com", []string{"api.example.com:8443"}, false},
		{"api.example.com:8443", []string{"api.example.com"}, false}, // without a port: 80 and 443 only
		{"api.example.com:8443", []string{"api.example.com:8443"}, true},
		{"api.example.com:80", []string{"api.example.com"}, true},
		{"127.0.0.1:8080", []string{"127.0.0.1:8080"}, true},
		{"[::1]:9000", []string{"[::1]:9000"}, true},
		{"api.example.com", []string{"*", "https://api.example.com"}, false}, // invalid entries match nothing
		{"not a host", []string{"not a host"}, false},
	} {
		if got := (HTTPNeed{Host: tc.need}).AllowedBy(tc.allowed); got != tc.want {
			t.Errorf("%q allowed by %q = %v, want %v", tc.need, tc.allowed, got, tc.want)
		}
	}
}

func TestValidConfigKey(t *testing.T) {
	for _, ok := range []string{"API_KEY", "api.url", "a-b", "x", strings.Repeat("k", 128)} {
		if !ValidConfigKey(ok) {
			t.Errorf("ValidConfigKey(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", "a b", "a/b", "é", "${X}", strings.Repeat("k", 129)} {
		if ValidConfigKey(bad) {
			t.Errorf("ValidConfigKey(%q) = true", bad)
		}
	}
}
