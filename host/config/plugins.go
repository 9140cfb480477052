package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/plugboard/plugboard/host/internal/jsonfile"
	"github.com/plugboard/plugboard/host/internal/pluginsrc"
)

// PluginSetting is one entry of plugins.settings: what the operator sets
// for one plugin, keyed by its name (a plugin in the plugin folders is
// matched by the name the host serves it under: its manifest's plugin name,
// else its file's base name without .wasm). Every field is optional; the
// zero value is the default sandbox. Parse resolves paths (absolute) and
// configuration values (from the environment and secret files).
type PluginSetting struct {
	// Source adds a plugin that is not in the plugin folders: a file path
	// (absolute after Parse), an https:// URL, or an OCI reference
	// oci://REGISTRY/REPOSITORY:TAG or @sha256:DIGEST. Its bytes must match
	// the lockfile (plugboard.lock, next to the configuration file).
	Source string `json:"source,omitempty"`
	// Config is what the plugin reads with config_get: each value a
	// literal string, "${VAR}" (the host's environment variable VAR, read
	// when the file is) or {"secret_file": "PATH"} (the file's content,
	// its trailing newline trimmed). Values from the environment or a file
	// are secrets: never printed, and masked in the decision log.
	Config map[string]ConfigValue `json:"config,omitempty"`
	// AllowedHosts are the hosts the plugin may reach over HTTP: exact
	// names, "*.domain" (any subdomain) or either with ":port" (without a
	// port: 80 and 443). None: no network.
	AllowedHosts []string `json:"allowed_hosts,omitempty"`
	// AllowPrivate lets the plugin reach loopback, private and link-local
	// addresses (refused otherwise, whatever the name resolves to).
	AllowPrivate bool `json:"allow_private,omitempty"`
	// AllowedPaths are host directories the plugin sees in its WASI
	// filesystem.
	AllowedPaths []AllowedPath `json:"allowed_paths,omitempty"`
	// MemoryLimitMiB, CallTimeout and MaxInstances override
	// plugins.memory_limit_mib, plugins.call_timeout (also capping the
	// timeouts its tools declare) and plugins.max_instances for this
	// plugin.
	MemoryLimitMiB *uint     `json:"memory_limit_mib,omitempty"`
	CallTimeout    *Duration `json:"call_timeout,omitempty"`
	MaxInstances   *int      `json:"max_instances,omitempty"`
	// The caps on what the plugin makes the host keep, write or hold
	// outside its linear memory (default: the engine's; `plugboard plugin
	// inspect` shows them): its Extism vars, in bytes (keys and values)
	// and in number, kept as long as an instance; the bytes of log lines
	// and of notifications to the client in one call; the HTTP requests of
	// one call; its HTTP connections open at once; the headers of one
	// HTTP response.
	MaxVarBytes          *ByteSize `json:"max_var_bytes,omitempty"`
	MaxVars              *int      `json:"max_vars,omitempty"`
	MaxLogBytes          *ByteSize `json:"max_log_bytes,omitempty"`
	MaxNotificationBytes *ByteSize `json:"max_notification_bytes,omitempty"`
	MaxHTTPRequests      *int      `json:"max_http_requests,omitempty"`
	MaxHTTPConnections   *int      `json:"max_http_connections,omitempty"`
	MaxHTTPHeaderBytes   *ByteSize `json:"max_http_header_bytes,omitempty"`
	// Stateful runs the plugin as one long-lived instance whose state
	// persists across calls (calls are serialised).
	Stateful bool `json:"stateful,omitempty"`
	// Prefix is put before each of the plugin's tool names ("gh_":
	// gh_create_issue), and before the tool part of each alias.
	Prefix string `json:"prefix,omitempty"`
	// Skip lists tools (by the plugin's names) not to serve.
	Skip []string `json:"skip,omitempty"`
	// Rename serves a tool (by the plugin's name) under another name; the
	// new name is taken as it is (no prefix).
	Rename map[string]string `json:"rename,omitempty"`
	// Tools serve the functions of a plain Extism module — one exporting
	// neither describe nor call nor hyper-mcp's list_tools and call_tool,
	// so it cannot say what tools it has — each described here (see
	// FunctionTool). A plugin that describes its own tools is refused
	// with this setting: which tools to serve would be ambiguous.
	Tools []FunctionTool `json:"tools,omitempty"`
}

// AllowedPath is one host directory in a plugin's filesystem.
type AllowedPath struct {
	// Path is the directory on the host: absolute, or relative to the
	// configuration file (absolute after Parse). It must exist.
	Path string `json:"path"`
	// Mount is where the plugin sees it, an absolute guest path (default:
	// Path).
	Mount string `json:"mount,omitempty"`
	// Writable lets the plugin create, change and remove files under it.
	Writable bool `json:"writable,omitempty"`
}

// ConfigValue is one configuration value of a plugin: a literal, or a
// secret read from the environment or a file. A secret's value never
// leaves it but through Value: String, GoString, MarshalJSON and LogValue
// give "***", so printing or logging a setting shows no secret.
type ConfigValue struct {
	value string
	// env and file are where a secret comes from: ${env}, or
	// {"secret_file": file} (resolved by Parse).
	env, file string
	resolved  bool
}

// Literal returns a literal configuration value.
func Literal(v string) ConfigValue { return ConfigValue{value: v, resolved: true} }

// SecretValue returns a secret configuration value (for a host configured
// in code); from says where it came from, for messages.
func SecretValue(v, from string) ConfigValue {
	return ConfigValue{value: v, file: from, resolved: true}
}

// Masked is what a secret shows as.
const Masked = "***"

var envRef = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$`)

// UnmarshalJSON reads "literal", "${VAR}" or {"secret_file": "PATH"}; the
// secret is read by Parse.
func (v *ConfigValue) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case string(b) == "null":
		return nil // left as it is, as encoding/json does
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if m := envRef.FindStringSubmatch(s); m != nil {
			*v = ConfigValue{env: m[1]}
			return nil
		}
		if strings.Contains(s, "${") {
			return errors.New(`"${VAR}" must be the whole value (the environment variable VAR); write a literal without "${"`)
		}
		*v = Literal(s)
		return nil
	case len(b) > 0 && b[0] == '{':
		var f struct {
			SecretFile *string `json:"secret_file"`
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil || f.SecretFile == nil {
			return errors.New(`want {"secret_file": "PATH"}, the file holding the value`)
		}
		if *f.SecretFile == "" {
			return errors.New("secret_file is empty; give the path of the file holding the value")
		}
		*v = ConfigValue{file: *f.SecretFile}
		return nil
	}
	return errors.New(`want a string, "${VAR}" (an environment variable) or {"secret_file": "PATH"}`)
}

// Value is the resolved value.
func (v ConfigValue) Value() string { return v.value }

// EnvUnset reports whether the value is "${VAR}" and VAR was not set when
// the file was read, which only LoadLenient lets pass.
func (v ConfigValue) EnvUnset() bool { return v.env != "" && !v.resolved }

// Secret reports whether the value came from the environment or a file.
func (v ConfigValue) Secret() bool { return v.env != "" || v.file != "" }

// From says where the value comes from: "literal", "${VAR}" or
// "secret_file PATH".
func (v ConfigValue) From() string {
	switch {
	case v.env != "":
		return "${" + v.env + "}"
	case v.file != "":
		return "secret_file " + v.file
	}
	return "literal"
}

// String is the value, or "***" for a secret.
func (v ConfigValue) String() string {
	if v.Secret() {
		return Masked
	}
	return v.value
}

// GoString is String: %#v shows no secret either.
func (v ConfigValue) GoString() string { return strconv.Quote(v.String()) }

// LogValue is String, for slog.
func (v ConfigValue) LogValue() slog.Value { return slog.StringValue(v.String()) }

// MarshalJSON writes String: a secret is written "***".
func (v ConfigValue) MarshalJSON() ([]byte, error) { return json.Marshal(v.String()) }

// lookupEnv reads the host's environment for "${VAR}" values.
var lookupEnv = os.LookupEnv

var (
	pluginName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
	toolName   = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
	prefixName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	hostLabel  = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
)

// checkSettings checks plugins.settings and resolves its paths in place;
// its secret values are read by resolveSecrets.
func checkSettings(settings map[string]PluginSetting, base string, fail failFunc) {
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		s := settings[name]
		at := func(more ...any) jsonfile.Path { return append(jsonfile.Path{"plugins", "settings", name}, more...) }
		if !pluginName.MatchString(name) {
			fail(at(), "plugin name %q: want 1-128 of letters, digits, '_', '-' and '.'", name)
		}
		if s.Source != "" {
			src, err := pluginsrc.Parse(s.Source, base)
			if err != nil {
				fail(at("source"), "%v", err)
			} else {
				s.Source = src.String()
			}
		}
		for _, key := range slices.Sorted(maps.Keys(s.Config)) {
			v := s.Config[key]
			switch {
			case key == "":
				fail(at("config", key), "an empty key; name the value")
			case v.file != "" && !v.resolved && !filepath.IsAbs(v.file):
				v.file = filepath.Join(base, v.file)
			}
			s.Config[key] = v
		}
		for i, h := range s.AllowedHosts {
			norm, err := checkHostPattern(h)
			if err != nil {
				fail(at("allowed_hosts", i), "%v", err)
				continue
			}
			s.AllowedHosts[i] = norm
		}
		mounts := map[string]int{}
		for i := range s.AllowedPaths {
			p := &s.AllowedPaths[i]
			if p.Path == "" {
				fail(at("allowed_paths", i, "path"), "is empty; give a host directory")
				continue
			}
			if !filepath.IsAbs(p.Path) {
				p.Path = filepath.Join(base, p.Path)
			}
			p.Path = filepath.Clean(p.Path)
			if st, err := os.Stat(p.Path); err != nil {
				fail(at("allowed_paths", i, "path"), "%v", err)
			} else if !st.IsDir() {
				fail(at("allowed_paths", i, "path"), "%s is not a directory", p.Path)
			}
			if p.Mount == "" {
				p.Mount = filepath.ToSlash(p.Path)
			}
			if !path.IsAbs(p.Mount) {
				fail(at("allowed_paths", i, "mount"), "guest path %q is not absolute (e.g. /data)", p.Mount)
				continue
			}
			p.Mount = path.Clean(p.Mount)
			if j, dup := mounts[p.Mount]; dup {
				fail(at("allowed_paths", i, "mount"), "%s is mounted by allowed_paths[%d] already", p.Mount, j)
			}
			mounts[p.Mount] = i
		}
		if m := s.MemoryLimitMiB; m != nil && (*m < 1 || *m > 4096) {
			fail(at("memory_limit_mib"), "want 1 to 4096 (MiB), got %d", *m)
		}
		positive(fail, at("call_timeout"), s.CallTimeout)
		if n := s.MaxInstances; n != nil && *n < 1 {
			fail(at("max_instances"), "must be at least 1 (leave it out for plugins.max_instances), got %d", *n)
		}
		for _, c := range s.limitSettings() {
			if c.bytes != nil && (*c.bytes < 1 || int64(*c.bytes) > c.most) {
				fail(at(c.name), "want 1 to %s (a size such as 1048576 or 512KiB), got %d", sizeText(c.most), *c.bytes)
			}
			if c.count != nil && (*c.count < 1 || int64(*c.count) > c.most) {
				fail(at(c.name), "want 1 to %d, got %d", c.most, *c.count)
			}
		}
		if s.Prefix != "" && !prefixName.MatchString(s.Prefix) {
			fail(at("prefix"), "prefix %q: want 1-64 of letters, digits, '_', '-' and '.' (tool names allow no others)", s.Prefix)
		}
		for i, t := range s.Skip {
			if !toolName.MatchString(t) {
				fail(at("skip", i), "tool name %q: want 1-128 of letters, digits, '_', '-' and '.'", t)
			}
		}
		served := map[string]string{}
		for _, old := range slices.Sorted(maps.Keys(s.Rename)) {
			nw := s.Rename[old]
			switch {
			case !toolName.MatchString(old):
				fail(at("rename", old), "tool name %q: want 1-128 of letters, digits, '_', '-' and '.'", old)
			case !toolName.MatchString(nw):
				fail(at("rename", old), "new name %q: want 1-128 of letters, digits, '_', '-' and '.'", nw)
			case slices.Contains(s.Skip, old):
				fail(at("rename", old), "tool %s is also in skip; rename it or skip it", old)
			case served[nw] != "":
				fail(at("rename", old), "%s is also the new name of %s", nw, served[nw])
			}
			served[nw] = old
		}
		checkFunctionTools(s.Tools, at, fail)
		settings[name] = s
	}
}

// ResolveSecrets reads the plugins' secret configuration values of a file
// read with LoadDeferred: each "${VAR}" from the environment, each
// {"secret_file": PATH} from its file (its trailing newline trimmed). A
// variable that is not set, or a file that cannot be read, is a problem
// placed at its field; every problem is reported at once, and none shows
// a value. Values read already (Load does) are left as they are. A nil
// Config has none.
func (c *Config) ResolveSecrets() error {
	if c == nil {
		return nil
	}
	return c.resolveSecrets(false)
}

// resolveSecrets is ResolveSecrets; with unsetEnvOK a "${VAR}" whose
// variable is not set is left unset rather than failed (LoadLenient).
func (c *Config) resolveSecrets(unsetEnvOK bool) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.Plugins.Settings)) {
		cfg := c.Plugins.Settings[name].Config
		for _, key := range slices.Sorted(maps.Keys(cfg)) {
			v := cfg[key]
			if v.resolved {
				continue
			}
			at := jsonfile.Path{"plugins", "settings", name, "config", key}
			switch {
			case v.env != "":
				val, ok := lookupEnv(v.env)
				if !ok && !unsetEnvOK {
					errs = append(errs, c.errorf(at, "environment variable %s is not set (the value is \"${%s}\")", v.env, v.env))
				}
				v.value, v.resolved = val, ok
			case v.file != "":
				b, err := os.ReadFile(v.file)
				if err != nil {
					// The error names the file, never its content.
					errs = append(errs, c.errorf(append(at, "secret_file"), "%v", err))
					continue
				}
				v.value = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
				v.resolved = true
			}
			cfg[key] = v
		}
	}
	return jsonfile.Join(errs...)
}

// SecretsRead refuses settings holding a secret value not read: from a
// file read with LoadDeferred and not resolved (ResolveSecrets), or a
// variable LoadLenient found unset. A host given one would run the plugin
// with an empty value in place of the secret the operator configured.
func SecretsRead(settings map[string]PluginSetting) error {
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		cfg := settings[name].Config
		for _, key := range slices.Sorted(maps.Keys(cfg)) {
			if v := cfg[key]; v.Secret() && !v.resolved {
				return fmt.Errorf("plugins.settings.%s.config.%s (%s) was not read: resolve the configuration's secrets (config.Config.ResolveSecrets) before opening the host",
					name, key, v.From())
			}
		}
	}
	return nil
}

// errorf is a problem at the field p of the file, placed in it when the
// Config was read from one.
func (c *Config) errorf(p jsonfile.Path, format string, args ...any) error {
	if c.doc == nil {
		return fmt.Errorf("%s: %s", p, fmt.Sprintf(format, args...))
	}
	return c.doc.Errorf(p, format, args...)
}

// limitSetting is one of a plugin's caps on what it makes the host keep,
// write or hold: a size (bytes) or a count, at most most.
type limitSetting struct {
	name  string
	bytes *ByteSize
	count *int
	most  int64
}

// limitSettings lists the caps of s. The upper bounds only catch mistakes
// (a size in the wrong unit): the host's memory, log and sockets are what
// the caps protect, and none of them should be a gibibyte or a million.
func (s *PluginSetting) limitSettings() []limitSetting {
	return []limitSetting{
		{name: "max_var_bytes", bytes: s.MaxVarBytes, most: 1 << 30},
		{name: "max_vars", count: s.MaxVars, most: 1 << 20},
		{name: "max_log_bytes", bytes: s.MaxLogBytes, most: 1 << 30},
		{name: "max_notification_bytes", bytes: s.MaxNotificationBytes, most: 1 << 30},
		{name: "max_http_requests", count: s.MaxHTTPRequests, most: 1 << 20},
		{name: "max_http_connections", count: s.MaxHTTPConnections, most: 1 << 16},
		{name: "max_http_header_bytes", bytes: s.MaxHTTPHeaderBytes, most: 64 << 20},
	}
}

// sizeText writes n bytes in the largest binary unit that divides it.
func sizeText(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d%s", n>>u.shift, u.name)
		}
	}
	return strconv.FormatInt(n, 10)
}

// checkHostPattern checks one allowed_hosts entry and returns it
// lowercased: NAME, *.DOMAIN, an IP address, or any of them with :PORT.
func checkHostPattern(h string) (string, error) {
	h = strings.ToLower(strings.TrimSpace(h))
	bad := func() (string, error) {
		return "", fmt.Errorf("host %q: want NAME, *.DOMAIN or an IP address ([…] for IPv6), optionally with :PORT", h)
	}
	if h == "*" || strings.HasPrefix(h, "*:") {
		return "", fmt.Errorf("%q would allow every host; list the hosts (or *.domain) the plugin needs", h)
	}
	if net.ParseIP(h) != nil {
		return h, nil
	}
	host, port := h, ""
	switch {
	case strings.HasPrefix(h, "["):
		if strings.HasSuffix(h, "]") {
			host = h[1 : len(h)-1]
		} else if hh, p, err := net.SplitHostPort(h); err == nil {
			host, port = hh, p
		} else {
			return bad()
		}
		if !strings.Contains(host, ":") || net.ParseIP(host) == nil {
			return bad()
		}
	case strings.Contains(h, ":"):
		i := strings.LastIndexByte(h, ':')
		host, port = h[:i], h[i+1:]
		if strings.Contains(host, ":") {
			return bad() // an IPv6 address with a port needs brackets
		}
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("host %q: port %q is not 1 to 65535", h, port)
		}
	}
	if net.ParseIP(host) != nil {
		return h, nil
	}
	wild := strings.HasPrefix(host, "*.")
	name := strings.TrimPrefix(host, "*.")
	if name == "" || len(name) > 253 || strings.Contains(name, "*") {
		return "", fmt.Errorf("host %q: a * only as the whole first label (*.example.com)", h)
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if !hostLabel.MatchString(l) {
			return "", fmt.Errorf("host %q: %q is not a DNS label (letters, digits and '-', not at either end)", h, l)
		}
	}
	if wild && len(labels) < 2 {
		return "", fmt.Errorf("host %q: *.%s would match a whole top-level domain; name the domain", h, name)
	}
	return h, nil
}

// settingsSummary says what plugins.settings sets, never a value.
func settingsSummary(settings map[string]PluginSetting) string {
	var plugins []string
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		s := settings[name]
		var what []string
		if s.Source != "" {
			src, err := pluginsrc.Parse(s.Source, "")
			kind := "source"
			if err == nil {
				kind = src.Kind.String() + " source"
			}
			what = append(what, kind)
		}
		if n := len(s.Config); n > 0 {
			secrets := 0
			for _, v := range s.Config {
				if v.Secret() {
					secrets++
				}
			}
			what = append(what, fmt.Sprintf("config (%s, %s)", plural(n, "value"), plural(secrets, "secret")))
		}
		if n := len(s.AllowedHosts); n > 0 {
			what = append(what, plural(n, "allowed host"))
		}
		if s.AllowPrivate {
			what = append(what, "allow_private")
		}
		if n := len(s.AllowedPaths); n > 0 {
			what = append(what, plural(n, "allowed path"))
		}
		for _, v := range []struct {
			name string
			set  bool
		}{{"memory_limit_mib", s.MemoryLimitMiB != nil}, {"call_timeout", s.CallTimeout != nil},
			{"max_instances", s.MaxInstances != nil}, {"stateful", s.Stateful}} {
			if v.set {
				what = append(what, v.name)
			}
		}
		for _, c := range s.limitSettings() {
			if c.bytes != nil || c.count != nil {
				what = append(what, c.name)
			}
		}
		if s.Prefix != "" {
			what = append(what, "prefix "+s.Prefix)
		}
		if n := len(s.Skip); n > 0 {
			what = append(what, fmt.Sprintf("skip %d", n))
		}
		if n := len(s.Rename); n > 0 {
			what = append(what, fmt.Sprintf("rename %d", n))
		}
		if n := len(s.Tools); n > 0 {
			names := make([]string, n)
			for i, t := range s.Tools {
				names[i] = t.Name
			}
			what = append(what, fmt.Sprintf("%s (%s)", plural(n, "tool"), strings.Join(names, ", ")))
		}
		if len(what) == 0 {
			what = append(what, "defaults")
		}
		plugins = append(plugins, name+": "+strings.Join(what, ", "))
	}
	return strings.Join(plugins, "; ")
}

// Sources returns the plugins the settings add from a source, by name.
func (p Plugins) Sources() map[string]string {
	out := map[string]string{}
	for name, s := range p.Settings {
		if s.Source != "" {
			out[name] = s.Source
		}
	}
	return out
}

// LockFile is the lockfile pinning the plugins with a source: plugboard.lock
// in the configuration file's directory.
func (c *Config) LockFile() string {
	if c == nil || c.File == "" {
		return ""
	}
	abs, err := filepath.Abs(c.File)
	if err != nil {
		abs = c.File
	}
	return pluginsrc.LockFor(abs)
}

// SecretSources lists where the plugins' secret values come from: the
// environment variables their "${VAR}" values name and the secret files.
// Attempt processes must get neither (the board drops the variables from
// their environment; the sandbox keeps the files out of reach).
func SecretSources(settings map[string]PluginSetting) (vars, files []string) {
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		cfg := settings[name].Config
		for _, key := range slices.Sorted(maps.Keys(cfg)) {
			v := cfg[key]
			if v.env != "" && !slices.Contains(vars, v.env) {
				vars = append(vars, v.env)
			}
			if v.file != "" && !slices.Contains(files, v.file) {
				files = append(files, v.file)
			}
		}
	}
	return vars, files
}

// FunctionTool is one function of a plain Extism module served as an MCP
// tool (plugins.settings.NAME.tools): what the tool is, which the module
// cannot say; which export it calls; what that export receives as its
// Extism input; and how its output becomes the tool's result. The host
// checks a call's arguments against InputSchema before the function runs,
// as for any tool, and a function that fails (a non-zero return, an
// Extism error, a trap) answers an envelope carrying its error text.
type FunctionTool struct {
	// Name is the tool's name, the plugin's own (prefix, skip and rename
	// apply to it as to any tool's).
	Name string `json:"name"`
	// Export is the function the tool calls (default: Name). It must take
	// no parameters and return an i32, 0 for success — Extism's signature;
	// the host refuses the plugin at load when the module has no such
	// export.
	Export string `json:"export,omitempty"`
	// Title and Description are the tool's, as MCP clients show them; a
	// description is required (agents choose tools by it).
	Title       string `json:"title,omitempty"`
	Description string `json:"description"`
	// InputSchema is the JSON Schema of the tool's arguments: an object
	// schema ("type": "object"). Required unless InputField is set.
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// InputField, when set, names one string argument whose value, as its
	// UTF-8 bytes, is the function's input: for functions that take plain
	// text, as most Extism examples do. Otherwise the input is the whole
	// arguments object, as JSON. Without InputSchema the schema is that
	// one required string; with one, it must declare the field a required
	// string.
	InputField string `json:"input_field,omitempty"`
	// Output is how the function's output is read: OutputText (the
	// default), one text item, which must be UTF-8; or OutputJSON, which
	// must parse, and which is also the result's structuredContent when it
	// is a JSON object.
	Output string `json:"output,omitempty"`
	// OutputSchema (with output "json" only) is the JSON Schema of that
	// object, an object schema, served as the tool's outputSchema: an
	// output that is not an object matching it is an error result rather
	// than an answer the client would refuse.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// Annotations are the tool's MCP hints.
	Annotations *FunctionAnnotations `json:"annotations,omitempty"`
}

// FunctionAnnotations are a FunctionTool's MCP hints (readOnlyHint,
// destructiveHint, idempotentHint, openWorldHint): hints to clients, not
// guarantees, except that the host retries a read-only tool's call after
// a retryable failure, as it does any tool's.
type FunctionAnnotations struct {
	ReadOnly    bool  `json:"read_only,omitempty"`
	Destructive *bool `json:"destructive,omitempty"`
	Idempotent  bool  `json:"idempotent,omitempty"`
	OpenWorld   *bool `json:"open_world,omitempty"`
}

// The values of FunctionTool.Output.
const (
	OutputText = "text"
	OutputJSON = "json"
)

// exportName is what an export name may be here: printable ASCII without
// spaces, which every Extism PDK's function names are; anything else is
// more likely a mistake than a module's export.
var exportName = regexp.MustCompile(`^[!-~]{1,128}$`)

// checkFunctionTools checks plugins.settings.NAME.tools: each entry a
// tool the host can serve — a name, a description, schemas it can
// resolve, an input it knows how to give — placing each problem at its
// field. Whether the exports exist is the module's to say, at load.
func checkFunctionTools(tools []FunctionTool, at func(more ...any) jsonfile.Path, fail failFunc) {
	names := map[string]int{}
	for i, t := range tools {
		at := func(more ...any) jsonfile.Path { return at(append([]any{"tools", i}, more...)...) }
		switch j, dup := names[t.Name]; {
		case !toolName.MatchString(t.Name):
			fail(at("name"), "tool name %q: want 1-128 of letters, digits, '_', '-' and '.'", t.Name)
		case dup:
			fail(at("name"), "%s is also the name of tools[%d]", t.Name, j)
		default:
			names[t.Name] = i
		}
		if t.Export != "" && !exportName.MatchString(t.Export) {
			fail(at("export"), "export %q: want the function's export name, 1-128 printable characters without spaces", t.Export)
		}
		if strings.TrimSpace(t.Description) == "" {
			fail(at("description"), "is empty; say what the tool does and when to use it (agents choose tools by it)")
		}
		var in *jsonschema.Schema
		if len(t.InputSchema) > 0 {
			var err error
			if in, err = objectSchema(t.InputSchema); err != nil {
				fail(at("input_schema"), "%v", err)
			}
		} else if t.InputField == "" {
			fail(at(), "give input_schema (the arguments, passed to the function as JSON), or input_field (one string argument, passed as the function's input)")
		}
		if f := t.InputField; f != "" && in != nil {
			p := in.Properties[f]
			switch {
			case p == nil:
				fail(at("input_field"), "%q is not a property of input_schema; declare it there as a required string", f)
			case p.Type != "string":
				fail(at("input_field"), "input_schema declares %q as %s; the function's input is the field's text, so declare it {\"type\": \"string\"}", f, schemaType(p))
			case !slices.Contains(in.Required, f):
				fail(at("input_field"), "%q is not in input_schema's required; the function needs its input, so require it", f)
			}
		}
		switch t.Output {
		case "", OutputText, OutputJSON:
		default:
			fail(at("output"), "unknown output %q: %q (one text item, the default) or %q (parsed; an object is also structuredContent)", t.Output, OutputText, OutputJSON)
		}
		if len(t.OutputSchema) > 0 {
			if t.Output != OutputJSON {
				fail(at("output_schema"), "describes JSON output; set output to %q as well", OutputJSON)
			} else if _, err := objectSchema(t.OutputSchema); err != nil {
				fail(at("output_schema"), "%v", err)
			}
		}
	}
}

// objectSchema reads a JSON Schema of an object, checking that it
// resolves as the host's validation will resolve it.
func objectSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	if b := bytes.TrimSpace(raw); len(b) == 0 || b[0] != '{' {
		return nil, errors.New(`want a JSON Schema object, such as {"type": "object", "properties": {…}}`)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if s.Type != "object" {
		return nil, fmt.Errorf(`"type" is %s; an MCP tool's schema describes a JSON object: "type": "object"`, schemaType(&s))
	}
	if _, err := s.Resolve(nil); err != nil {
		return nil, fmt.Errorf("does not resolve: %v", err)
	}
	return &s, nil
}

// schemaType says what type a schema declares, for messages.
func schemaType(s *jsonschema.Schema) string {
	switch {
	case s.Type != "":
		return strconv.Quote(s.Type)
	case len(s.Types) > 0:
		return fmt.Sprintf("%q", s.Types)
	}
	return "no type"
}
