package main

// serve --watch re-reads the agents — the --agents file, else the
// configuration file's agents section — when their file changes, and puts
// them in force (host.SetPolicy): tokens, agent types, permissions and
// scopes apply to new calls without a restart, as the plugin settings do
// (settings_watch.go).

import (
	"context"
	"time"

	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/host/config"
)

// agentsSource is where serve's agents come from: the file to poll, and
// whether it is the configuration file (its agents section) rather than an
// agents file of its own.
type agentsSource struct {
	file    string
	section bool
}

// agentsSource returns where the agents come from, or false when serve
// runs without any (nothing to watch: a server started without agents
// stays so until a restart).
func (h *hostFlags) agentsSource() (agentsSource, bool) {
	if pol, _ := h.confAgents(); pol != nil {
		return agentsSource{file: h.conf.File, section: true}, true
	}
	if h.agents != "" {
		return agentsSource{file: h.agents}, true
	}
	return agentsSource{}, false
}

// read reads the agents again. A configuration file without an agents
// section any more gives none (the defaults), as it would at start.
func (s agentsSource) read() (*plughost.Policy, error) {
	if !s.section {
		return plughost.LoadAgents(s.file)
	}
	c, err := config.Load(s.file)
	if err != nil {
		return nil, err
	}
	if c.Agents == nil {
		return plughost.DefaultAgents(), nil
	}
	return c.Agents, nil
}

// watchAgents polls src's file every interval until ctx ends. On a change
// it reads the agents again: a file with problems is logged — one error
// per change, listing every problem at its line and column — and the agents
// in force are kept; so is an agents file the host refuses (SetPolicy says
// why: the --agent identity gone, a token clash). A good one is put in
// force. The configuration file's problems are logged by the plugin
// settings' watcher, which reads the same file on the same change, so here
// they are not logged twice. An interval of 0 does nothing.
func watchAgents(ctx context.Context, h *plughost.Host, src agentsSource, interval time.Duration, seen seenStamps) {
	if interval <= 0 {
		return
	}
	last := seen.of(src.file)
	t := time.NewTicker(interval)
	defer t.Stop()
	log := h.Logger()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := stampOf(src.file)
		if now == last {
			continue
		}
		last = now
		p, err := src.read()
		if err != nil {
			if !src.section {
				log.Error("agents file not reloaded; the agents in force are kept", "file", src.file, "err", err)
			}
			continue
		}
		if p.Equal(h.Policy()) {
			continue
		}
		if err := h.SetPolicy(p); err != nil {
			log.Error("agents file not applied; the agents in force are kept", "file", src.file, "err", err)
			continue
		}
		log.Info("agents reloaded", "file", src.file, "agents", len(p.Agents()))
	}
}
