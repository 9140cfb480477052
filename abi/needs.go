package abi

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Needs is what a plugin says it needs the operator to set before it can
// work: the configuration values it reads (Extism's config_get) and the
// hosts it sends HTTP requests to (Extism's http_request). Any PDK can
// emit it, as the "needs" field of its describe output:
//
//	"needs": {
//	  "config": [{"key": "API_KEY", "secret": true, "required": true, "description": "the weather API's key"}],
//	  "http":   [{"host": "api.weather.example", "paths": ["/v1/*"], "why": "the forecasts"}]
//	}
//
// It is a declaration for the operator, never a grant: the plugin gets the
// values and hosts the operator's settings give it
// (plugins.settings.NAME.config and allowed_hosts), whatever it declares,
// and nothing more. Hosts use it to say what is set and what is missing
// (plugboard plugin inspect, config check, the dashboard); a host that does
// not know the field ignores it, so declaring needs asks for no ABI
// version.
type Needs struct {
	// Config lists the configuration values the plugin reads, by key.
	Config []ConfigNeed `json:"config,omitempty"`
	// HTTP lists the hosts the plugin sends requests to.
	HTTP []HTTPNeed `json:"http,omitempty"`
}

// ConfigNeed is one configuration value a plugin reads.
type ConfigNeed struct {
	// Key is what the plugin passes to config_get (ValidConfigKey): the
	// key of plugins.settings.NAME.config.
	Key string `json:"key"`
	// Description says what the value is and where the operator gets it.
	Description string `json:"description,omitempty"`
	// Required: the plugin's tools fail without the value. An optional
	// value has a default.
	Required bool `json:"required,omitempty"`
	// Secret: the value is a credential, to be given as "${VAR}" or
	// {"secret_file": PATH}, which the host masks; a literal in the
	// configuration file would sit there in clear.
	Secret bool `json:"secret,omitempty"`
}

// HTTPNeed is one host a plugin sends HTTP requests to.
type HTTPNeed struct {
	// Host is written as an allowed_hosts entry is (CheckHostPattern): a
	// name, *.domain for its subdomains, an IP address, any of them with
	// :port. Without a port the plugin is taken to use HTTPS (443).
	Host string `json:"host"`
	// Paths are the URL paths the plugin calls, for the operator to read
	// ("/v1/*"); the host does not restrict requests by path.
	Paths []string `json:"paths,omitempty"`
	// Why says what the plugin uses the host for.
	Why string `json:"why,omitempty"`
}

// Caps on a Needs declaration, besides MaxManifestEntries for the config
// and http lists each: they bound what every inspect and dashboard shows.
const (
	// MaxNeedPaths caps the paths of one HTTPNeed.
	MaxNeedPaths = 32
	// MaxNeedPathBytes caps one of those paths.
	MaxNeedPathBytes = 512
	// MaxNeedTextBytes caps a ConfigNeed's description and an HTTPNeed's
	// why.
	MaxNeedTextBytes = 1024
)

// IsZero reports whether n declares nothing.
func (n Needs) IsZero() bool { return len(n.Config) == 0 && len(n.HTTP) == 0 }

// ValidConfigKey reports whether key is a configuration key a manifest may
// declare: 1-128 of letters, digits, '_', '-' and '.' (API_KEY, api.url).
func ValidConfigKey(key string) bool {
	if key == "" || len(key) > MaxNameBytes {
		return false
	}
	for i := 0; i < len(key); i++ {
		if !nameByte(key[i]) && key[i] != '_' {
			return false
		}
	}
	return true
}

// Validate checks a declaration as Manifest.Validate does: valid and
// unique keys and hosts, and every list and text within its cap.
func (n *Needs) Validate() error { return errors.Join(n.validate()...) }

// validate checks the declaration: counts first (so an oversized one costs
// one error), then each entry. Keys and hosts are unique, as the operator
// sets each once.
func (n *Needs) validate() []error {
	var errs []error
	for _, c := range []struct {
		kind string
		n    int
	}{{"config", len(n.Config)}, {"http", len(n.HTTP)}} {
		if c.n > MaxManifestEntries {
			errs = append(errs, fmt.Errorf("needs.%s declares %d entries; the cap is %d per plugin", c.kind, c.n, MaxManifestEntries))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	keys := map[string]bool{}
	for i, c := range n.Config {
		where := fmt.Sprintf("needs.config[%d] (%q)", i, c.Key)
		switch {
		case !ValidConfigKey(c.Key):
			errs = append(errs, fmt.Errorf("%s: key must be 1-%d of [A-Za-z0-9_.-]", where, MaxNameBytes))
		case keys[c.Key]:
			errs = append(errs, fmt.Errorf("%s: key declared twice", where))
		}
		keys[c.Key] = true
		if err := checkNeedText(c.Description); err != nil {
			errs = append(errs, fmt.Errorf("%s: description %w", where, err))
		}
	}
	hosts := map[string]bool{}
	for i, h := range n.HTTP {
		where := fmt.Sprintf("needs.http[%d] (%q)", i, h.Host)
		if err := CheckHostPattern(h.Host); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
		if key := strings.ToLower(h.Host); hosts[key] {
			errs = append(errs, fmt.Errorf("%s: host declared twice; declare it once with all its paths", where))
		} else {
			hosts[key] = true
		}
		if len(h.Paths) > MaxNeedPaths {
			errs = append(errs, fmt.Errorf("%s: %d paths; the cap is %d", where, len(h.Paths), MaxNeedPaths))
			continue
		}
		for _, p := range h.Paths {
			if err := checkNeedPath(p); err != nil {
				errs = append(errs, fmt.Errorf("%s: path %q %w", where, p, err))
			}
		}
		if err := checkNeedText(h.Why); err != nil {
			errs = append(errs, fmt.Errorf("%s: why %w", where, err))
		}
	}
	return errs
}

// checkNeedText bounds a description: it is shown to operators, so no
// control characters but newlines and tabs.
func checkNeedText(s string) error {
	if len(s) > MaxNeedTextBytes {
		return fmt.Errorf("is %d bytes; the cap is %d", len(s), MaxNeedTextBytes)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
			return fmt.Errorf("has the control character %q", c)
		}
	}
	return nil
}

// checkNeedPath checks one HTTPNeed path: absolute, without query,
// fragment, spaces or control characters; '*' stands for any text.
func checkNeedPath(p string) error {
	switch {
	case !strings.HasPrefix(p, "/"):
		return errors.New(`must start with "/"`)
	case len(p) > MaxNeedPathBytes:
		return fmt.Errorf("is %d bytes; the cap is %d", len(p), MaxNeedPathBytes)
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c == 0x7f || c == '?' || c == '#' {
			return errors.New("must be a URL path without spaces, control characters, query or fragment")
		}
	}
	return nil
}

// hostPattern is a parsed allowed_hosts entry or HTTPNeed.Host.
type hostPattern struct {
	host     string // lower case, without "*." and brackets
	wildcard bool   // *.host: any subdomain of host, not host itself
	ip       bool
	port     string // "" when none is given
}

// CheckHostPattern checks a host written as a plugins.settings.NAME.
// allowed_hosts entry is: NAME, *.DOMAIN (its subdomains, at least two
// labels after the "*."), an IPv4 address or an IPv6 one in brackets, any
// of them with :PORT (1-65535). "*" alone and URLs are refused.
func CheckHostPattern(h string) error {
	_, err := parseHostPattern(h)
	return err
}

func parseHostPattern(s string) (hostPattern, error) {
	var p hostPattern
	h := strings.ToLower(s)
	bad := func() (hostPattern, error) {
		return p, fmt.Errorf("host %q: want NAME, *.DOMAIN or an IP address ([…] for IPv6), optionally with :PORT", s)
	}
	switch {
	case h == "":
		return p, errors.New("host is empty")
	case h == "*" || strings.HasPrefix(h, "*:"):
		return p, fmt.Errorf("host %q would be every host; name the hosts (or *.domain)", s)
	case strings.ContainsAny(h, "/ \t"):
		return p, fmt.Errorf("host %q: give a host (api.example.com, *.example.com, host:port), not a URL", s)
	}
	host := h
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return bad()
		}
		host, p.port = h[1:end], strings.TrimPrefix(h[end+1:], ":")
		if h[end+1:] != "" && !strings.HasPrefix(h[end+1:], ":") || !ipv6Literal(host) {
			return bad()
		}
		p.ip = true
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 {
		if strings.Count(h, ":") > 1 {
			return bad() // an IPv6 address needs brackets
		}
		host, p.port = h[:i], h[i+1:]
	}
	if p.port != "" || strings.HasSuffix(h, ":") {
		if n, err := strconv.Atoi(p.port); err != nil || n < 1 || n > 65535 {
			return p, fmt.Errorf("host %q: port %q is not 1 to 65535", s, p.port)
		}
	}
	p.host = strings.TrimSuffix(host, ".")
	if p.ip || ipv4Literal(p.host) {
		p.ip = true
		return p, nil
	}
	name, wild := strings.CutPrefix(p.host, "*.")
	if name == "" || len(name) > 253 || strings.Contains(name, "*") {
		return p, fmt.Errorf("host %q: a * only as the whole first label (*.example.com)", s)
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if !dnsLabel(l) {
			return p, fmt.Errorf("host %q: %q is not a DNS label (letters, digits and '-', not at either end)", s, l)
		}
	}
	if wild && len(labels) < 2 {
		return p, fmt.Errorf("host %q: *.%s would match a whole top-level domain; name the domain", s, name)
	}
	p.host, p.wildcard = name, wild
	return p, nil
}

// dnsLabel reports whether l is a DNS label: 1-63 of lower-case letters,
// digits and '-', not '-' at either end.
func dnsLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		if c := l[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// ipv4Literal reports whether s is a dotted-quad IPv4 address.
func ipv4Literal(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 255 || len(p) > 1 && p[0] == '0' || p == "" || p[0] == '+' || p[0] == '-' {
			return false
		}
	}
	return true
}

// ipv6Literal reports whether s is an IPv6 address: at most eight groups
// of 1-4 hex digits, at most one "::", an IPv4 address in place of the
// last two groups allowed. (Package net is not linked into plugins.)
func ipv6Literal(s string) bool {
	groups := 8
	if i := strings.LastIndexByte(s, ':'); i >= 0 && strings.Contains(s[i+1:], ".") {
		if !ipv4Literal(s[i+1:]) {
			return false
		}
		s, groups = s[:i+1]+"0", 7
	}
	head, tail, compressed := strings.Cut(s, "::")
	if strings.Contains(tail, "::") {
		return false
	}
	count := func(part string) (int, bool) {
		if part == "" {
			return 0, true
		}
		fields := strings.Split(part, ":")
		for _, f := range fields {
			if f == "" || len(f) > 4 {
				return 0, false
			}
			if _, err := strconv.ParseUint(f, 16, 16); err != nil {
				return 0, false
			}
		}
		return len(fields), true
	}
	n1, ok1 := count(head)
	n2, ok2 := count(tail)
	if !ok1 || !ok2 {
		return false
	}
	if compressed {
		return n1+n2 < groups
	}
	return n1 == groups && tail == ""
}

// AllowedBy reports whether allowedHosts — plugins.settings.NAME.
// allowed_hosts entries — let the plugin reach h.Host, by the rule
// plugboard's hosts apply to each request: an exact name matches itself,
// *.domain matches the domain's subdomains (a needed *.sub.domain too), an
// entry without a port allows 80 and 443. A need without a port is taken
// to be HTTPS (443). Entries that are not valid hosts match nothing.
func (h HTTPNeed) AllowedBy(allowedHosts []string) bool {
	need, err := parseHostPattern(h.Host)
	if err != nil {
		return false
	}
	port := need.port
	if port == "" {
		port = "443"
	}
	for _, a := range allowedHosts {
		rule, err := parseHostPattern(strings.TrimSpace(a))
		if err != nil {
			continue
		}
		if rule.port != port && (rule.port != "" || port != "80" && port != "443") {
			continue
		}
		switch {
		case !rule.wildcard:
			if !need.wildcard && need.host == rule.host {
				return true
			}
		case strings.HasSuffix(need.host, "."+rule.host) || need.wildcard && need.host == rule.host:
			return true
		}
	}
	return false
}
