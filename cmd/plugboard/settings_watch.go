package main

// serve --watch re-reads the configuration file when it (or the lockfile
// next to it) changes and applies its plugins.settings: the plugin folders
// reload the same way (host.Watch).

import (
	"context"
	"os"
	"path/filepath"
	"time"

	plughost "github.com/plugboard/plugboard/host"
	"github.com/plugboard/plugboard/host/config"
)

// fileStamp is what a poll compares.
type fileStamp struct {
	size    int64
	modTime time.Time
	exists  bool
}

// stampsBefore stamps the files serve reads at start — the configuration
// file and the agents file its flags name — before it reads them: the
// watchers start from these stamps (seenStamps.of).
func stampsBefore(h *hostFlags) seenStamps {
	seen := seenStamps{}
	conf := h.configFile
	if conf == "" {
		conf = os.Getenv(config.EnvConfig)
	}
	for _, f := range []string{conf, h.agents} {
		if f != "" {
			seen[absPath(f)] = stampOf(f)
		}
	}
	return seen
}

// seenStamps are files' stamps taken before serve read them.
type seenStamps map[string]fileStamp

// of returns path's stamp from before serve read it; a file not stamped
// then gets its stamp now.
func (s seenStamps) of(path string) fileStamp {
	if st, ok := s[absPath(path)]; ok {
		return st
	}
	return stampOf(path)
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

func stampOf(path string) fileStamp {
	st, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{size: st.Size(), modTime: st.ModTime(), exists: true}
}

// watchPluginSettings polls the configuration file and its lockfile every
// interval until ctx ends. On a change it reads the file again: a file
// with problems is logged (one error listing them) and the settings in
// force are kept; a good one replaces the plugin settings (and only them:
// the other sections take effect at the next start). An interval of 0
// does nothing.
func watchPluginSettings(ctx context.Context, h *plughost.Host, conf *config.Config, interval time.Duration, seen seenStamps) {
	if conf == nil || interval <= 0 {
		return
	}
	file, lock := conf.File, conf.LockFile()
	last := [2]fileStamp{seen.of(file), stampOf(lock)}
	t := time.NewTicker(interval)
	defer t.Stop()
	log := h.Logger()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := [2]fileStamp{stampOf(file), stampOf(lock)}
		if now == last {
			continue
		}
		last = now
		c, err := config.Load(file)
		if err != nil {
			log.Error("configuration file not reloaded; the plugin settings in force are kept", "file", file, "err", err)
			continue
		}
		if err := h.SetPluginSettings(ctx, c.Plugins.Settings); err != nil {
			log.Error("plugin settings not applied", "file", file, "err", err)
			continue
		}
		log.Info("plugin settings reloaded", "file", file, "plugins", len(c.Plugins.Settings))
	}
}
