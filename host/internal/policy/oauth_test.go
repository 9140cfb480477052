package policy_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/host/internal/policy"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// The agents file with an oauth section in docs/operators.md ("Behind your
// identity provider") is one the policy takes, and a faulty section's
// errors are placed at their keys.
func TestOAuthSection(t *testing.T) {
	readme, err := os.ReadFile(buildtest.Root(t) + "/docs/operators.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)\n## Behind your identity provider.*?```json\n(.*?)```").FindSubmatch(readme)
	if block == nil {
		t.Fatal("docs/operators.md has no agents file under \"Behind your identity provider\"")
	}
	p, err := policy.Parse("docs/operators.md", block[1])
	if err != nil {
		t.Fatalf("the guide's agents file: %v", err)
	}
	if o := p.OAuth(); o == nil || o.Issuer != "https://idp.example.com/realms/eng" || o.RoleScopes["SUPERVISOR"] != "plugboard:admin" {
		t.Fatalf("oauth = %+v", o)
	}

	_, err = policy.Parse("agents.json", []byte(`{"oauth": {
  "issuer": "http://idp.example.com",
  "resource": "plugboard",
  "role_scopes": {"ADMIN": "x"},
  "clock_skew": "2h",
  "colck_skew": "1s"
}}`))
	if err == nil {
		t.Fatal("a faulty oauth section was taken")
	}
	for _, want := range []string{"oauth.issuer", "http is allowed on a loopback host only", "oauth.resource", "oauth.role_scopes.ADMIN",
		"oauth.clock_skew", "colck_skew", "agents.json:2:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
}
