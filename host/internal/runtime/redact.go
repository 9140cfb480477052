package runtime

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"

	"github.com/plugboard/plugboard/abi"
)

// Masked replaces each occurrence of a secret.
const Masked = "***"

// Redactor masks the operator's secrets (PluginOptions.Secrets) in text the
// host produces: envelopes, log lines, HTTP records. It is built once per
// plugin; the zero value and nil mask nothing. Safe for concurrent use.
//
// Every non-empty secret is masked, however short (a one-byte secret masks
// every occurrence of that byte: the operator chose it). Longer secrets are
// matched first, so a secret containing another is masked whole. Besides
// the value itself, its JSON-string, URL-path and URL-query escapings are
// masked, the forms in which a secret embedded in a message, a JSON
// payload or a URL shows up.
type Redactor struct {
	r *strings.Replacer
}

// NewRedactor returns a Redactor for secrets; empty strings are ignored.
func NewRedactor(secrets []string) *Redactor {
	var forms []string
	for _, s := range secrets {
		if s == "" {
			continue
		}
		forms = append(forms, s)
		if b, err := json.Marshal(s); err == nil {
			if j := string(b[1 : len(b)-1]); j != s {
				forms = append(forms, j)
			}
		}
		if p := url.PathEscape(s); p != s {
			forms = append(forms, p)
		}
		if q := url.QueryEscape(s); q != s {
			forms = append(forms, q)
		}
	}
	if len(forms) == 0 {
		return &Redactor{}
	}
	// strings.Replacer tries the old strings in argument order at each
	// position: longest first masks a secret that contains another whole.
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
	forms = slices.Compact(forms)
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Masked)
	}
	return &Redactor{r: strings.NewReplacer(pairs...)}
}

// Redact returns s with every occurrence of each secret replaced by "***".
// It builds a Redactor each time; code masking many strings for one plugin
// should keep a Redactor.
func Redact(s string, secrets []string) string {
	return NewRedactor(secrets).String(s)
}

// String masks the secrets in s.
func (r *Redactor) String(s string) string {
	if r == nil || r.r == nil || s == "" {
		return s
	}
	return r.r.Replace(s)
}

// Active reports whether r masks anything.
func (r *Redactor) Active() bool { return r != nil && r.r != nil }

// Envelope returns env with the secrets masked in its message, hint and
// details (strings anywhere inside maps and slices of them, console_tail
// included). env itself is not changed; it is returned as is when there is
// nothing to mask.
func (r *Redactor) Envelope(env *abi.Envelope) *abi.Envelope {
	if !r.Active() || env == nil {
		return env
	}
	out := *env
	out.Message = r.String(env.Message)
	out.Hint = r.String(env.Hint)
	if env.Details != nil {
		out.Details = r.value(env.Details).(map[string]any)
	}
	return &out
}

// value masks the strings inside v, copying the containers it walks.
func (r *Redactor) value(v any) any {
	switch v := v.(type) {
	case string:
		return r.String(v)
	case []byte:
		return r.String(string(v))
	case json.RawMessage:
		return json.RawMessage(r.String(string(v)))
	case error:
		return r.String(v.Error())
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[r.String(k)] = r.value(x)
		}
		return m
	case map[string]string:
		m := make(map[string]string, len(v))
		for k, x := range v {
			m[r.String(k)] = r.String(x)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, x := range v {
			s[i] = r.value(x)
		}
		return s
	case []string:
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = r.String(x)
		}
		return s
	}
	return v
}
