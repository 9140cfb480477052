package main

import (
	"flag"
	"fmt"
	"net"

	plughost "github.com/plugboard/plugboard/host"
)

// metricsFlags select serve's Prometheus endpoint: off unless --metrics
// ADDR, and then only with --metrics-token-file. The configuration file's
// metrics section gives them values (host/config).
type metricsFlags struct {
	addr, tokenFile string
}

func (f *metricsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics, on a listener of its own (e.g. 127.0.0.1:9464; port 0 picks a free one); needs --metrics-token-file")
	fs.StringVar(&f.tokenFile, "metrics-token-file", "", "read the bearer token a scrape of --metrics must present from FILE (at least 32 bytes, e.g. openssl rand -hex 32; surrounding whitespace ignored)")
}

// listen checks the flags, reads the token and opens ADDR; nil without
// --metrics. conf names the configuration file the values may come from,
// for errors ("" without one).
func (f *metricsFlags) listen(conf string, given map[string]bool) (net.Listener, []byte, error) {
	name := func(flagName, key string) string {
		if conf != "" && !given[flagName] {
			return conf + ": " + key
		}
		return "--" + flagName
	}
	addrName, fileName := name("metrics", "metrics.listen"), name("metrics-token-file", "metrics.token_file")
	if f.addr == "" {
		if f.tokenFile != "" {
			return nil, nil, usageError("%s needs --metrics ADDR (or the configuration file's metrics.listen)", fileName)
		}
		return nil, nil, nil
	}
	// Agents in attempts reach loopback as well as the operator does: the
	// token is what keeps them from the metrics, whatever the address.
	if f.tokenFile == "" {
		return nil, nil, usageError("%s %s needs --metrics-token-file FILE: the metrics endpoint requires a bearer token of at least %d bytes (e.g. openssl rand -hex 32 > FILE)",
			addrName, f.addr, plughost.MinMetricsTokenBytes)
	}
	token, err := plughost.ReadMetricsToken(f.tokenFile)
	if err != nil {
		return nil, nil, &exitError{code: 2, err: fmt.Errorf("%s: %w", fileName, err)}
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", addrName, err)
	}
	return ln, token, nil
}
