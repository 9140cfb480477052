package runtime

import (
	"net/netip"
	"net/url"
	"testing"
)

func TestBlockedKind(t *testing.T) {
	for addr, blocked := range map[string]bool{
		"127.0.0.1": true, "127.8.9.10": true, "::1": true, "10.1.2.3": true, "172.16.0.1": true, "192.168.1.1": true,
		"fd00::1": true, "169.254.169.254": true, "fe80::1": true, "0.0.0.0": true, "::": true, "0.1.2.3": true,
		"100.64.0.1": true, "100.127.255.255": true, "224.0.0.1": true, "ff02::1": true, "255.255.255.255": true,
		"::ffff:127.0.0.1": true, "::ffff:10.0.0.1": true, "::ffff:169.254.169.254": true, "64:ff9b::a00:1": true,
		"8.8.8.8": false, "1.1.1.1": false, "100.128.0.1": false, "2606:4700:4700::1111": false, "::ffff:8.8.8.8": false,
	} {
		if got := blockedKind(netip.MustParseAddr(addr)) != ""; got != blocked {
			t.Errorf("%s: blocked %v, want %v", addr, got, blocked)
		}
	}
}

func TestHostRules(t *testing.T) {
	g, err := newEgress("p", &Egress{AllowedHosts: []string{"api.example.com", "*.cdn.example", "svc.example:8443", "[::1]:9000", "10.0.0.1", "Upper.Example."}}, 1, DefaultLimits(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for raw, allowed := range map[string]bool{
		"https://api.example.com/x":       true,
		"http://api.example.com/x":        true,
		"https://API.example.com./x":      true,
		"https://api.example.com:443/":    true,
		"https://api.example.com:8080/":   false,
		"https://evil-api.example.com/":   false,
		"https://api.example.com.evil/":   false,
		"https://a.cdn.example/":          true,
		"https://a.b.cdn.example/":        true,
		"https://cdn.example/":            false,
		"https://xcdn.example/":           false,
		"https://svc.example:8443/":       true,
		"https://svc.example/":            false,
		"http://[::1]:9000/":              true,
		"http://[::1]/":                   false,
		"http://10.0.0.1/":                true,
		"https://upper.example/":          true,
		"ftp://api.example.com/":          false,
		"https://user:pw@api.example.com": true,
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.check(u, nil) == nil; got != allowed {
			t.Errorf("%s: allowed %v, want %v", raw, got, allowed)
		}
	}
	for _, bad := range []string{"", "https://api.example.com", "*", "a b", "host:0", "host:99999"} {
		if _, err := parseHostRule(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if s := displayURL(mustURL("https://user:pw@h.example:8443/p/q?key=1#frag")); s != "https://h.example:8443/p/q" {
		t.Errorf("displayURL = %s", s)
	}
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}
