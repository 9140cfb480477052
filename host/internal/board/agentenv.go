package board

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/plugboard/plugboard/host/internal/procsup"
)

// AgentEnv says how the environment of attempt processes (agents, setup and
// cleanup scripts) is made from the host's. By default they get the host's
// environment without any PLUGBOARD_* variable — plugboard's own
// configuration and secrets, such as PLUGBOARD_HTTP_TOKEN — and then the
// board's variables for the attempt (PLUGBOARD_DATA, PLUGBOARD_ATTEMPT_ID,
// ...). Coding agents need the rest (PATH, HOME, their API keys), which is
// why the default removes what is known to be plugboard's rather than
// keeping a list of what agents might need.
type AgentEnv struct {
	// Drop lists glob patterns (path.Match: "AWS_*") of host variables the
	// processes do not get either; "*" drops everything Set does not bring
	// back, for an allowlist.
	Drop []string
	// Never lists variables the processes never get, whatever Set says:
	// those the plugins' secrets are read from (plugins.settings "${VAR}"
	// values), which only the plugins may have.
	Never []string
	// Set lists variables the processes get: KEY=VALUE sets a value, KEY
	// alone passes the host's value (when it has one), even when Drop or
	// the PLUGBOARD_* rule would remove it. Later entries win.
	Set []string
}

// boardVars are the variables the board sets for each attempt; the
// operator cannot set them (they would be overwritten, or would misdirect a
// plugboard started inside the attempt).
var boardVars = []string{"PLUGBOARD_DATA", "PLUGBOARD_PROJECT_ID", "PLUGBOARD_TASK_ID", "PLUGBOARD_ATTEMPT_ID",
	"PLUGBOARD_SESSION_ID", procsup.TreeEnv}

// Validate reports the first malformed entry, naming it.
func (e AgentEnv) Validate() error {
	for _, p := range e.Drop {
		if _, err := path.Match(p, ""); err != nil || p == "" || strings.ContainsAny(p, "=\x00") {
			return fmt.Errorf("agent environment: drop pattern %q is not a glob over variable names", p)
		}
	}
	for _, kv := range e.Set {
		key, value, _ := strings.Cut(kv, "=")
		if key == "" || strings.ContainsAny(key, " \t\n\x00") || strings.Contains(value, "\x00") {
			return fmt.Errorf("agent environment: %q is not KEY or KEY=VALUE", kv)
		}
		if slices.Contains(boardVars, key) {
			return fmt.Errorf("agent environment: %s is set by the board for each attempt", key)
		}
	}
	return nil
}

// agentEnviron makes the base environment of attempt processes from the
// host's environment host (os.Environ()), as e says, with profile's
// variables (an executor profile's Env, nil for scripts) between the two:
// they win over what the host passes on, and the operator's Set entries
// win over them. Each key appears once.
func agentEnviron(host []string, e AgentEnv, profile map[string]string) []string {
	hostValue := map[string]string{}
	var env envList
	for _, kv := range host {
		key, value, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		hostValue[key] = value
		if strings.HasPrefix(key, "PLUGBOARD_") || slices.ContainsFunc(e.Drop, func(p string) bool {
			ok, _ := path.Match(p, key)
			return ok
		}) {
			continue
		}
		env.set(key, value)
	}
	for _, key := range slices.Sorted(maps.Keys(profile)) {
		env.set(key, profile[key])
	}
	for _, kv := range e.Set {
		if key, value, ok := strings.Cut(kv, "="); ok {
			env.set(key, value)
		} else if v, ok := hostValue[kv]; ok {
			env.set(kv, v)
		}
	}
	if len(e.Never) == 0 {
		return env.list
	}
	return slices.DeleteFunc(env.list, func(kv string) bool {
		key, _, _ := strings.Cut(kv, "=")
		return slices.Contains(e.Never, key)
	})
}

// envList is an environment in which setting a key replaces its earlier
// value in place.
type envList struct {
	list  []string
	index map[string]int
}

func (l *envList) set(key, value string) {
	if l.index == nil {
		l.index = map[string]int{}
	}
	if i, ok := l.index[key]; ok {
		l.list[i] = key + "=" + value
		return
	}
	l.index[key] = len(l.list)
	l.list = append(l.list, key+"="+value)
}

// lookupEnv returns key's value in env (KEY=VALUE pairs; the last wins).
func lookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}
