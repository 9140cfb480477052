package sdk

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
)

// TestNeedsReachManifest: what NeedsConfig and NeedsHTTP declare, in any
// order, is the describe output's "needs", which a host reads back as the
// same abi.Needs and validates.
func TestNeedsReachManifest(t *testing.T) {
	r := newGreetRegistry(t)
	r.needsHTTP("api.example.com", "the greetings", "/v1/*", "/health")
	r.needsConfig("API_KEY", "the API's key", Required, Secret)
	r.needsConfig("GREETING", "the greeting word; default hello")
	r.needsHTTP("*.cdn.example.com", "")
	raw, err := r.manifestJSON()
	if err != nil {
		t.Fatal(err)
	}
	var m abi.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if err := m.Validate(); err != nil {
		t.Fatalf("the manifest does not validate: %v\n%s", err, raw)
	}
	want := abi.Needs{
		Config: []abi.ConfigNeed{{Key: "API_KEY", Description: "the API's key", Required: true, Secret: true},
			{Key: "GREETING", Description: "the greeting word; default hello"}},
		HTTP: []abi.HTTPNeed{{Host: "api.example.com", Why: "the greetings", Paths: []string{"/v1/*", "/health"}},
			{Host: "*.cdn.example.com"}},
	}
	if !reflect.DeepEqual(m.Needs, want) {
		t.Errorf("needs = %+v\nwant    %+v\nJSON: %s", m.Needs, want, raw)
	}
	if !strings.Contains(string(raw), `"needs":{"config":[{"key":"API_KEY","description":"the API's key","required":true,"secret":true}`) {
		t.Errorf("describe output: %s", raw)
	}
	// Needs ask for no ABI version: a tools-only plugin stays ABI 1.
	if m.ABI != 1 {
		t.Errorf("abi = %d, want 1", m.ABI)
	}

	// Without declarations the manifest carries no needs at all.
	raw, err = newGreetRegistry(t).manifestJSON()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "needs") {
		t.Errorf("a plugin declaring no needs describes some: %s", raw)
	}
}

// TestNeedsPanics: a declaration the host would refuse the manifest for
// panics when it is made, naming the call and the fault, and leaves the
// earlier declarations as they were.
func TestNeedsPanics(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   func(r *registry)
		want string
	}{
		{"bad key", func(r *registry) { r.needsConfig("API KEY", "") }, `sdk: NeedsConfig("API KEY"): needs.config[1] ("API KEY"): key must be`},
		{"key twice", func(r *registry) { r.needsConfig("K", "again") }, "key declared twice"},
		{"unknown option", func(r *registry) { r.needsConfig("X", "", ConfigOption(7)) }, "unknown option 7"},
		{"every host", func(r *registry) { r.needsHTTP("*", "") }, `sdk: NeedsHTTP("*"): needs.http[1] ("*"): host "*" would be every host`},
		{"a URL", func(r *registry) { r.needsHTTP("https://api.example.com", "") }, "not a URL"},
		{"host twice", func(r *registry) { r.needsHTTP("API.example.com", "") }, "host declared twice"},
		{"relative path", func(r *registry) { r.needsHTTP("b.example.com", "", "v1") }, `must start with "/"`},
	} {
		r := newGreetRegistry(t)
		r.needsConfig("K", "")
		r.needsHTTP("api.example.com", "")
		before := r.needs
		got := func() (msg string) {
			defer func() {
				if p := recover(); p != nil {
					msg, _ = p.(string)
				}
			}()
			tc.do(r)
			return ""
		}()
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: panic %q, want one saying %q", tc.name, got, tc.want)
		}
		if !reflect.DeepEqual(r.needs, before) {
			t.Errorf("%s: the refused declaration changed the needs to %+v", tc.name, r.needs)
		}
	}
}
