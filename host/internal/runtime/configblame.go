package runtime

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// A plugin that needs a configuration value the operator has not set (an API
// key, say) fails every call the same way, and neither the agent nor the
// plugin's authors can fix it: only the operator can. The runtime records
// which keys the guest asked config_get for and found missing during a call,
// and ConfigBlame turns a failure whose message says so into a hint that
// speaks to the operator, naming the plugin and the setting.

// maxMissingConfig bounds the keys recorded per call, and
// maxMissingConfigKey the length of one: a longer key is no configuration
// name an operator could set, and recording it would have the host keep up
// to a block's worth of the guest's bytes per key.
const (
	maxMissingConfig    = 16
	maxMissingConfigKey = 256
)

// noteMissingConfig records that config_get found no value for key during
// the current call, in the kernel and in the recorder ctx carries, if any.
func (k *kernel) noteMissingConfig(ctx context.Context, keyBytes []byte) {
	if len(keyBytes) > maxMissingConfigKey || len(k.missingConfig) >= maxMissingConfig ||
		slices.Contains(k.missingConfig, string(keyBytes)) {
		return
	}
	key := string(keyBytes)
	k.missingConfig = append(k.missingConfig, key)
	if r, ok := ctx.Value(missingConfigKey{}).(*missingConfigRecorder); ok {
		r.add(key)
	}
}

type missingConfigKey struct{}

type missingConfigRecorder struct {
	mu   sync.Mutex
	keys []string
}

func (r *missingConfigRecorder) add(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.keys) < maxMissingConfig && !slices.Contains(r.keys, key) {
		r.keys = append(r.keys, key)
	}
}

// RecordMissingConfig returns a context that records the configuration keys
// the plugin asks for and does not find during the calls made with it, and
// a function returning them (in the order asked). The dispatcher uses it to
// blame an isError result on missing configuration; a failing status is
// blamed by Call itself.
func RecordMissingConfig(ctx context.Context) (context.Context, func() []string) {
	r := &missingConfigRecorder{}
	return context.WithValue(ctx, missingConfigKey{}, r), func() []string {
		r.mu.Lock()
		defer r.mu.Unlock()
		return slices.Clone(r.keys)
	}
}

// configComplaint matches what plugins say when a configuration value is
// missing: "No api-key configured", "missing config", "SERPER_API_KEY is not
// set", "configuration key token is missing", "api key not provided".
var configComplaint = regexp.MustCompile(`(?i)` + strings.Join([]string{
	`\bnot\s+configured\b`,
	`\bno\s+\S+\s+(?:is\s+|was\s+)?(?:configured|set|provided)\b`,
	`\bmissing\s+(?:a\s+|an\s+|the\s+)?(?:config|configuration|setting|api[-_ ]?key|credentials?)\b`,
	`\bconfig(?:uration)?\s+(?:key\s+|value\s+|setting\s+)?\S+\s+(?:is\s+|was\s+)?(?:missing|not\s+set|not\s+found|required|empty)\b`,
	`\bapi[-_ ]?key\b[^.\n]{0,40}\b(?:missing|not\s+set|required|not\s+provided|not\s+found|empty)\b`,
	`\b(?:missing|set|provide|configure)\s+(?:the\s+)?[A-Z][A-Z0-9]*_[A-Z0-9_]+\b`,
}, "|"))

// absence matches a message saying something is not there, which a
// message naming a missing key must also say to blame it ("the token is
// required", not "invalid timezone").
var absence = regexp.MustCompile(`(?i)\b(?:no|missing|not\s+set|unset|not\s+configured|required|empty|not\s+provided|not\s+found|needs?)\b`)

// envStyleUnset matches an environment-style name said to be unset
// ("SERPER_API_KEY is not set"), capturing the name.
var envStyleUnset = regexp.MustCompile(`\b([A-Z][A-Z0-9]*_[A-Z0-9_]+)\s+(?:is\s+|was\s+)?(?:not\s+set|missing|required|empty|not\s+configured|not\s+provided)\b`)

// keyNamed captures the key a complaint names: "No api-key configured",
// "missing config key token", "config value token is missing".
var keyNamed = []*regexp.Regexp{
	regexp.MustCompile("(?i)\\bno\\s+[\"'`]?([A-Za-z][\\w.-]*)[\"'`]?\\s+(?:is\\s+|was\\s+)?(?:configured|set|provided)\\b"),
	regexp.MustCompile("(?i)\\bmissing\\s+config(?:uration)?\\s*(?:key|value|setting)?\\s*:?\\s*[\"'`]([A-Za-z][\\w.-]*)[\"'`]"),
	regexp.MustCompile(`(?i)\bmissing\s+config(?:uration)?\s+(?:key|value|setting)\s+([A-Za-z][\w.-]*)`),
	regexp.MustCompile("(?i)\\bconfig(?:uration)?\\s+(?:key\\s+|value\\s+|setting\\s+)?[\"'`]?([A-Za-z][\\w.-]*)[\"'`]?\\s+(?:is\\s+|was\\s+)?(?:missing|not\\s+set|not\\s+found|required|empty)\\b"),
}

// ConfigBlame decides whether a plugin's failure, with this message, comes
// from configuration the operator has not set. missing are the keys the
// plugin asked config_get for and did not find during the call. It returns
// the keys to blame (possibly none, when the message complains without
// naming one) and an operator-facing hint naming plugin and keys, or "" when
// the failure is not a configuration problem.
//
// A key the plugin asked for, found missing and names in a message saying
// something is absent is blamed alone; a message that complains about configuration blames every
// key found missing, or else the key it names itself. A missing key the
// message does not mention is not blamed: plugins probe optional keys.
func ConfigBlame(plugin, message string, missing []string) (keys []string, hint string) {
	norm := func(s string) string {
		return strings.NewReplacer("-", "", "_", "", " ", "", ".", "").Replace(strings.ToLower(s))
	}
	flat := norm(message)
	if absence.MatchString(message) {
		for _, k := range missing {
			if n := norm(k); n != "" && strings.Contains(flat, n) {
				keys = append(keys, k)
			}
		}
	}
	complaint := configComplaint.MatchString(message) || envStyleUnset.MatchString(message)
	switch {
	case len(keys) > 0:
	case !complaint:
		return nil, ""
	case len(missing) > 0:
		keys = slices.Clone(missing)
	default:
		if m := envStyleUnset.FindStringSubmatch(message); m != nil {
			keys = []string{m[1]}
			break
		}
		for _, re := range keyNamed {
			if m := re.FindStringSubmatch(message); m != nil && !genericWord[strings.ToLower(m[1])] {
				keys = []string{m[1]}
				break
			}
		}
	}
	return keys, configHint(plugin, keys)
}

// genericWord are words a key pattern may capture that name no key.
var genericWord = map[string]bool{"config": true, "configuration": true, "key": true, "value": true, "setting": true,
	"the": true, "a": true, "an": true, "api": true, "credentials": true, "credential": true}

func configHint(plugin string, keys []string) string {
	if len(keys) == 0 {
		return fmt.Sprintf("the plugin %s is missing configuration only the operator can set: add the value it needs under "+
			"plugins.settings.%s.config in the configuration file (serve applies it without a restart); calling again before that fails the same way",
			plugin, plugin)
	}
	return fmt.Sprintf("the plugin %s needs configuration only the operator can set: set %s in the configuration file "+
		"(serve applies it without a restart); calling again before that fails the same way", plugin, settingsOf(plugin, keys))
}

func settingsOf(plugin string, keys []string) string {
	settings := make([]string, len(keys))
	for i, k := range keys {
		settings[i] = fmt.Sprintf("plugins.settings.%s.config.%s", plugin, k)
	}
	return strings.Join(settings, " and ")
}

// The runtime knows, whatever a plugin says, when it asked config_get for a
// key the operator has not set: ConfigBlame's reading of the message decides
// nothing then. A call that fails after such a lookup names the setting in
// its hint, always. Whether the failure is the missing value's — the
// operator's to fix, not the agent's — is certain when the plugin crashed
// (it has no words: a Go guest panics on the empty value it got), or its
// message names the key or complains of configuration; otherwise the key
// may be one the plugin probes and does without (a default time zone, an
// optional token), and the failure the agent's arguments, so the hint says
// both and the plugin's own code stands.

// MissingConfig is the verdict on a failed call during which the plugin
// asked config_get for keys the operator has not set.
type MissingConfig struct {
	// Keys are the keys blamed: those of the missing the message names,
	// else all of them.
	Keys []string
	// Certain is true when the failure is the missing configuration's:
	// the call must not be retried, by the agent or the host, until the
	// operator sets it.
	Certain bool
	// Hint speaks to whoever must act, naming each setting
	// (plugins.settings.<plugin>.config.<key>).
	Hint string
}

// mustBeSet matches wordings of a value being required that absence does
// not: "FOO_API_KEY config must be set", "token is needed".
var mustBeSet = regexp.MustCompile(`(?i)\b(?:must|should|has\s+to|have\s+to|needs\s+to)\s+be\s+(?:set|provided|configured|given|specified|defined)\b|\bis\s+needed\b|\bnot\s+(?:defined|available|present)\b|\bundefined\b`)

// BlameMissingConfig judges a failed call of tool during which plugin found
// the keys missing unset (in the order asked). message is what the plugin
// said, "" when it crashed without words of its own; crashed is true for a
// trap, a panic or an exit. ok is false when no key was missing.
func BlameMissingConfig(plugin, tool, message string, missing []string, crashed bool) (v MissingConfig, ok bool) {
	if len(missing) == 0 {
		return v, false
	}
	norm := func(s string) string {
		return strings.NewReplacer("-", "", "_", "", " ", "", ".", "").Replace(strings.ToLower(s))
	}
	flat := norm(message)
	for _, k := range missing {
		if n := norm(k); n != "" && strings.Contains(flat, n) {
			v.Keys = append(v.Keys, k)
		}
	}
	named := len(v.Keys) > 0
	if !named {
		v.Keys = slices.Clone(missing)
	}
	complaint := configComplaint.MatchString(message) || envStyleUnset.MatchString(message)
	v.Certain = crashed || message == "" || complaint ||
		named && (absence.MatchString(message) || mustBeSet.MatchString(message))
	if v.Certain {
		v.Hint = configHint(plugin, v.Keys)
	} else {
		v.Hint = fmt.Sprintf("the plugin %s asked for configuration the operator has not set (%s): if the message is about it, "+
			"only the operator can fix it (serve applies the setting without a restart); otherwise fix what the message names and call %s again",
			plugin, settingsOf(plugin, v.Keys), tool)
	}
	return v, true
}
