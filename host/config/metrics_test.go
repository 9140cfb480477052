package config

import (
	"flag"
	"strings"
	"testing"
)

// The metrics section: listen and token_file (made absolute from the
// file's directory) become serve's --metrics and --metrics-token-file, and
// a bad value is placed at its line, column and key.
func TestMetricsSection(t *testing.T) {
	c, err := Parse("/etc/plugboard/pb.json", []byte(`{"metrics": {"listen": "127.0.0.1:9464", "token_file": "metrics.token"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if *c.Metrics.Listen != "127.0.0.1:9464" || *c.Metrics.TokenFile != "/etc/plugboard/metrics.token" {
		t.Errorf("metrics %q %q", *c.Metrics.Listen, *c.Metrics.TokenFile)
	}
	if s := c.Summary(); !strings.Contains(s, "metrics (127.0.0.1:9464, token_file)") {
		t.Errorf("summary %q does not name the metrics section", s)
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("metrics", "", "")
	file := fs.String("metrics-token-file", "", "")
	_ = fs.Parse(nil)
	if _, err := c.Apply(fs, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	if *addr != "127.0.0.1:9464" || *file != "/etc/plugboard/metrics.token" {
		t.Errorf("applied --metrics %q --metrics-token-file %q", *addr, *file)
	}

	for body, want := range map[string]string{
		"{\n  \"metrics\": {\"listen\": \"9464\"}\n}":  `pb.json:2:25: metrics.listen: want HOST:PORT`,
		"{\n  \"metrics\": {\"token_file\": \"\"}\n}":  `pb.json:2:29: metrics.token_file: is empty`,
		"{\n  \"metrics\": {\"token\": \"secret\"}\n}": `pb.json:2:15: metrics.token: unknown field "token" (known fields: listen, token_file)`,
	} {
		_, err := Parse("pb.json", []byte(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n  %v\nwant\n  %s", body, err, want)
		}
	}
}
