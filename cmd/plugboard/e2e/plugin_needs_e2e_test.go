package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/internal/testing/browsertest"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
	"github.com/plugboard/plugboard/internal/testing/clitest"
)

// What a plugin declares it needs (abi.Needs: sdk.NeedsConfig,
// sdk.NeedsHTTP) and what its imports use, end to end through the real
// binary: testdata/plugins/needful declares two configuration values
// (NEEDFUL_TOKEN, required and secret; REGION, optional) and a host;
// testdata/plugins/fetch declares nothing but imports http_request and
// config_get.

// needfulSecret is the token's value: it must never show.
const needfulSecret = "needful-secret-8c1e77"

// needStatus is a need as inspect --json reports it.
type needStatus struct {
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	Required bool   `json:"required"`
	Secret   bool   `json:"secret"`
	Setting  string `json:"setting"`
	Status   string `json:"status"`
	Detail   string `json:"detail"`
}

// inspected is what the tests read of inspect --json.
type inspected struct {
	Manifest struct {
		Needs abi.Needs `json:"needs"`
	} `json:"manifest"`
	Capabilities         []string `json:"capabilities"`
	ImportedCapabilities []struct {
		Name    string   `json:"name"`
		Imports []string `json:"imports"`
		Setting string   `json:"setting"`
	} `json:"imported_capabilities"`
	NeedsStatus []needStatus `json:"needs_status"`
	Verdict     struct {
		Kind     string   `json:"kind"`
		Settings []string `json:"settings"`
	} `json:"verdict"`
}

// statuses maps each need's name to its status.
func statuses(needs []needStatus) map[string]string {
	out := map[string]string{}
	for _, n := range needs {
		out[n.Name] = n.Status
	}
	return out
}

func inspectJSON(t *testing.T, dir string, env []string, args ...string) (inspected, int) {
	t.Helper()
	out, errOut, code := runPB(t, dir, env, append([]string{"plugin", "inspect", "--json"}, args...)...)
	var in inspected
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		t.Fatalf("inspect --json %v: exit %d, not JSON: %v\n%s%s", args, code, err, out, errOut)
	}
	if strings.Contains(out+errOut, needfulSecret) {
		t.Errorf("inspect %v shows the secret:\n%s%s", args, out, errOut)
	}
	return in, code
}

// dashPlugin is a plugin as the dashboard's Plugins view reads it.
type dashPlugin struct {
	Name     string `json:"name"`
	Needs    []needStatus
	Settings struct {
		Config []struct {
			Key      string `json:"key"`
			Status   string `json:"status"`
			Secret   bool   `json:"secret"`
			Declared bool   `json:"declared"`
		} `json:"config"`
		AllowedHosts []string `json:"allowed_hosts"`
	} `json:"settings"`
}

// dashboardPlugin reads one plugin of the dashboard's plugins API, as the
// loopback operator.
func dashboardPlugin(t *testing.T, addr, name string) dashPlugin {
	t.Helper()
	res, err := http.Get("http://" + addr + "/ui/api/plugins")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if strings.Contains(string(b), needfulSecret) {
		t.Errorf("the dashboard's plugins API shows the secret: %s", b)
	}
	var view struct {
		Result struct {
			Plugins []dashPlugin `json:"plugins"`
		} `json:"result"`
	}
	if res.StatusCode != 200 || json.Unmarshal(b, &view) != nil {
		t.Fatalf("GET /ui/api/plugins: %d %s", res.StatusCode, b)
	}
	for _, p := range view.Result.Plugins {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("the dashboard lists no plugin %s: %s", name, b)
	return dashPlugin{}
}

// TestPluginNeeds: needful's two configuration values and its host show in
// inspect (JSON and text), config check and the dashboard's Plugins view
// (its API, and the page in Chromium) as missing and not allowed under a
// configuration that gives none, and then as set and allowed once the file
// gives them — in serve without a restart. Declaring grants nothing: the
// tool sees no token until the settings give one. fetch, which declares
// nothing, shows what its imports use.
func TestPluginNeeds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and plugins")
	}
	plugins, wasm := buildtest.Plugins(t, "testdata/plugins/needful", "testdata/plugins/fetch")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "plugboard.json")
	bare := `{"plugins": {"dirs": [` + jsonString(plugins) + `]}}`
	given := `{"plugins": {"dirs": [` + jsonString(plugins) + `], "settings": {"needful": {
  "config": {"NEEDFUL_TOKEN": "${PB_NEEDFUL_TOKEN}", "REGION": "us"},
  "allowed_hosts": ["api.needful.example"]}}}}`
	writeJSON(t, cfg, bare)
	env := cleanEnv()
	withToken := cleanEnv("PB_NEEDFUL_TOKEN=" + needfulSecret)

	// inspect without a configuration: the declaration as it is, unjudged.
	in, code := inspectJSON(t, dir, env, wasm["needful"])
	if code != 0 || in.Verdict.Kind != "loads" {
		t.Errorf("inspect needful: exit %d, verdict %s; want 0, loads", code, in.Verdict.Kind)
	}
	want := abi.Needs{
		Config: []abi.ConfigNeed{{Key: "NEEDFUL_TOKEN", Description: "the API token, from the needful console", Required: true, Secret: true},
			{Key: "REGION", Description: "the API region: eu (the default) or us"}},
		HTTP: []abi.HTTPNeed{{Host: "api.needful.example", Paths: []string{"/v1/*"}, Why: "the status API"}},
	}
	if got, want := mustJSON(t, in.Manifest.Needs), mustJSON(t, want); string(got) != string(want) {
		t.Errorf("the embedded manifest's needs: %s\nwant %s", got, want)
	}
	if s := statuses(in.NeedsStatus); len(s) != 3 || s["NEEDFUL_TOKEN"] != "" || s["api.needful.example"] != "" {
		t.Errorf("needs without a configuration: %+v, want three, none judged", in.NeedsStatus)
	}

	// Nothing given: missing, not allowed; needs configuration (3).
	in, code = inspectJSON(t, dir, env, "--config", cfg, wasm["needful"])
	if s := statuses(in.NeedsStatus); s["NEEDFUL_TOKEN"] != "missing" || s["REGION"] != "missing" || s["api.needful.example"] != "not_allowed" {
		t.Errorf("inspect --config (nothing given): %+v", in.NeedsStatus)
	}
	if code != 3 || in.Verdict.Kind != "needs_configuration" || !slices.Equal(in.Verdict.Settings, []string{"plugins.settings.needful.config.NEEDFUL_TOKEN"}) {
		t.Errorf("inspect --config (nothing given): exit %d, verdict %+v; want 3, needs configuration naming the required key only", code, in.Verdict)
	}
	out, _, code := runPB(t, dir, env, "plugin", "inspect", "--config", cfg, wasm["needful"])
	for _, line := range []string{
		"needs:        2 config values, 1 host, declared",
		"config NEEDFUL_TOKEN", "required, secret", "[missing: not in the settings; set plugins.settings.needful.config.NEEDFUL_TOKEN]",
		"config REGION", "optional", "[not allowed: add api.needful.example to plugins.settings.needful.allowed_hosts",
		"verdict:      needs configuration: plugins.settings.needful.config.NEEDFUL_TOKEN",
	} {
		if code != 3 || !strings.Contains(out, line) {
			t.Errorf("inspect --config (text, nothing given): exit %d, no %q:\n%s", code, line, out)
		}
	}

	out, errOut, code := runPB(t, dir, env, "config", "check", cfg)
	for _, line := range []string{
		"  needful (" + wasm["needful"] + ")\n",
		"needs config NEEDFUL_TOKEN", "[missing: not in the settings; set plugins.settings.needful.config.NEEDFUL_TOKEN]",
		"needs http   api.needful.example", "[not allowed: ",
		"    settings: none (the default sandbox",
		"  fetch (" + wasm["fetch"] + ")\n", "    needs: none declared\n",
		"    imports: egress (http_request), config (config_get)\n",
		"    refused: every HTTP request (it imports http_request; plugins.settings.fetch.allowed_hosts is not set)\n",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("config check (nothing given): no %q:\n%s", line, out)
		}
	}
	if code != 3 || errOut != cfg+": needs configuration: plugins.settings.needful.config.NEEDFUL_TOKEN (required by needful)\n" {
		t.Errorf("config check (nothing given): exit %d, stderr %q; want 3 naming the required key", code, errOut)
	}

	// Given, the secret from an environment variable this shell lacks:
	// config check lists it all the same, set, and passes.
	writeJSON(t, cfg, given)
	out, errOut, code = runPB(t, dir, env, "config", "check", cfg)
	for _, line := range []string{
		"[set: from ${PB_NEEDFUL_TOKEN} (not in this environment)]", "[set: a literal]", "[allowed]",
		"    settings: config NEEDFUL_TOKEN, REGION; allowed_hosts api.needful.example\n",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("config check (given, variable unset): no %q:\n%s", line, out)
		}
	}
	if code != 0 || !strings.Contains(errOut, "warning: plugins.settings.needful.config.NEEDFUL_TOKEN is set from ${PB_NEEDFUL_TOKEN}, which is not set in this environment") {
		t.Errorf("config check (given, variable unset): exit %d, stderr %q; want 0 and a warning", code, errOut)
	}
	out, errOut, code = runPB(t, dir, withToken, "config", "check", cfg)
	if code != 0 || errOut != "" || !strings.Contains(out, "[set: from ${PB_NEEDFUL_TOKEN}]") || strings.Contains(out, needfulSecret) {
		t.Errorf("config check (given): exit %d\n%s%s", code, out, errOut)
	}
	in, code = inspectJSON(t, dir, withToken, "--config", cfg, wasm["needful"])
	if s := statuses(in.NeedsStatus); code != 0 || s["NEEDFUL_TOKEN"] != "set" || s["REGION"] != "set" || s["api.needful.example"] != "allowed" {
		t.Errorf("inspect --config (given): exit %d, %+v", code, in.NeedsStatus)
	}

	// fetch declares nothing; its imports say what it uses.
	in, _ = inspectJSON(t, dir, env, wasm["fetch"])
	got := map[string][]string{}
	for _, c := range in.ImportedCapabilities {
		got[c.Name] = c.Imports
	}
	if len(in.Capabilities) != 0 || !slices.Equal(got["egress"], []string{"extism:host/env.http_request"}) ||
		!slices.Equal(got["config"], []string{"extism:host/env.config_get"}) || len(in.NeedsStatus) != 0 {
		t.Errorf("inspect fetch: capabilities %v, imported %+v, needs %+v", in.Capabilities, in.ImportedCapabilities, in.NeedsStatus)
	}
	out, _, _ = runPB(t, dir, env, "plugin", "inspect", wasm["fetch"])
	if !strings.Contains(out, "capabilities: none declared; its imports use egress (http_request), config (config_get)\n") ||
		!strings.Contains(out, "plugins.settings.fetch.allowed_hosts: HTTP requests") || strings.Contains(out, "capabilities: none\n") {
		t.Errorf("inspect fetch (text):\n%s", out)
	}

	// serve, nothing given, then the file gives it all: the dashboard
	// follows the settings in force, and the tool sees what they give.
	writeJSON(t, cfg, bare)
	srv := clitest.LaunchHTTP(t, httpEnv("PB_NEEDFUL_TOKEN="+needfulSecret), []string{"serve", "--http", "127.0.0.1:0", "--config", cfg,
		"--data", t.TempDir(), "--watch", "200ms"})
	p := dashboardPlugin(t, srv.Addr, "needful")
	if s := statuses(p.Needs); s["NEEDFUL_TOKEN"] != "missing" || s["REGION"] != "missing" || s["api.needful.example"] != "not_allowed" ||
		len(p.Settings.Config) != 0 || len(p.Settings.AllowedHosts) != 0 {
		t.Errorf("dashboard (nothing given): %+v", p)
	}
	var status struct {
		TokenSet bool   `json:"token_set"`
		Region   string `json:"region"`
	}
	callData := t.TempDir() // one compile cache for both calls
	callNeedful := func() {
		t.Helper()
		out, errOut, code := runPB(t, dir, withToken, "call", "--config", cfg, "--data", callData, "needful_status")
		if code != 0 || json.Unmarshal([]byte(out), &status) != nil {
			t.Fatalf("call needful_status: exit %d\n%s%s", code, out, errOut)
		}
	}
	callNeedful()
	if status.TokenSet || status.Region != "eu" {
		t.Errorf("declared but not given, the tool sees %+v; want no token, the default region", status)
	}

	browser := t.Run("browser", func(t *testing.T) { needsInBrowser(t, srv.Addr, "missing", "not_allowed") })

	writeJSON(t, cfg, given)
	deadline := time.Now().Add(30 * time.Second)
	for p = dashboardPlugin(t, srv.Addr, "needful"); statuses(p.Needs)["NEEDFUL_TOKEN"] != "set"; p = dashboardPlugin(t, srv.Addr, "needful") {
		if time.Now().After(deadline) {
			t.Fatalf("the dashboard still shows %+v 30s after the file gave the settings", p.Needs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if s := statuses(p.Needs); s["REGION"] != "set" || s["api.needful.example"] != "allowed" {
		t.Errorf("dashboard (given): %+v", p.Needs)
	}
	keys := map[string]bool{}
	for _, c := range p.Settings.Config {
		keys[c.Key] = c.Status == "set" && c.Declared && c.Secret == (c.Key == "NEEDFUL_TOKEN")
	}
	if len(keys) != 2 || !keys["NEEDFUL_TOKEN"] || !keys["REGION"] || !slices.Equal(p.Settings.AllowedHosts, []string{"api.needful.example"}) {
		t.Errorf("dashboard settings in force (given): %+v", p.Settings)
	}
	callNeedful()
	if !status.TokenSet || status.Region != "us" {
		t.Errorf("given, the tool sees %+v; want the token, region us", status)
	}
	if browser {
		t.Run("browser given", func(t *testing.T) { needsInBrowser(t, srv.Addr, "set", "allowed") })
	}
}

// needsInBrowser opens the dashboard's Plugins view in Chromium and checks
// needful's card: the token's row and the host's row show the statuses
// wanted, the settings in force list names only, and no secret shows.
func needsInBrowser(t *testing.T, addr, token, host string) {
	browsertest.Installed(t)
	p := browsertest.Start(t).Page(t)
	p.SetTimeout(60 * time.Second)
	p.Go("http://" + addr + "/?" + token + "#/plugins")
	card := `[data-plugin="needful"]`
	p.WaitVisible(card + ` table.needs`)
	for sel, want := range map[string]string{
		card + ` tr[data-need="NEEDFUL_TOKEN"]`:       strings.ReplaceAll(token, "_", " "),
		card + ` tr[data-need="REGION"]`:              strings.ReplaceAll(token, "_", " "),
		card + ` tr[data-need="api.needful.example"]`: strings.ReplaceAll(host, "_", " "),
	} {
		if row := p.Text(sel); !strings.Contains(row, want) {
			t.Errorf("the Plugins view shows %q for %s, want %q", row, sel, want)
		}
	}
	if row := p.Text(card + ` tr[data-need="NEEDFUL_TOKEN"]`); !strings.Contains(row, "required, secret") ||
		!strings.Contains(row, "plugins.settings.needful.config.NEEDFUL_TOKEN") {
		t.Errorf("the token's row: %q", row)
	}
	if text := p.Text(card); strings.Contains(text, needfulSecret) {
		t.Errorf("the Plugins view shows the secret:\n%s", text)
	}
	if token == "set" {
		if cfg := p.Text(card + ` [data-setting="config"]`); cfg != "NEEDFUL_TOKEN (set, secret), REGION (set)" {
			t.Errorf("settings in force, config: %q", cfg)
		}
	}
	if errs := p.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("the page logged errors: %v", errs)
	}
}
