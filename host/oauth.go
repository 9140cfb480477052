package host

// The HTTP transport as an OAuth resource server: the agents file's oauth
// section in force gives the verifier every transport asks (SetPolicy
// rebuilds it when the section changes, keeping the issuer's keys
// otherwise).

import (
	"fmt"
	"reflect"

	"github.com/plugboard/plugboard/host/internal/oauth"
	"github.com/plugboard/plugboard/host/internal/policy"
)

// newVerifier returns the verifier of p's oauth section, the one in force
// when that section is unchanged, or nil when p has none.
func (h *Host) newVerifier(p *Policy) (*oauth.Verifier, error) {
	cfg := p.OAuth()
	if cfg == nil {
		return nil, nil
	}
	if cur := h.tokens.oauth.Load(); cur != nil && reflect.DeepEqual(cur.Config(), *cfg) {
		return cur, nil
	}
	v, err := oauth.New(*cfg, oauth.Options{
		Roles: policy.Types,
		Agent: func(id string) (string, bool) {
			a, ok := h.policy.Load().Agent(id)
			return a.Type, ok
		},
		Logger: h.log,
	})
	if err != nil {
		return nil, fmt.Errorf("agents file: %w", err)
	}
	return v, nil
}

// verifier is the OAuth verifier in force, nil when OAuth is off.
func (h *Host) verifier() *oauth.Verifier { return h.tokens.oauth.Load() }
