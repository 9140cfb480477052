package main

// plugboard plugin add, lock and verify: plugins with a source (a file, an
// https:// URL or an OCI reference in plugins.settings.NAME.source) and the
// lockfile, plugboard.lock next to the configuration file, that pins the
// sha256 of each one's bytes. serve and call load a source plugin only when
// its bytes match the lock.
//
// add does not edit the configuration file — a JSON file keeps its layout
// and comments-by-convention only if a person edits it — it pins the
// plugin and prints the entry to paste.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/config"
	"github.com/plugboard/plugboard/host/plugin"
)

// sourceFlags are the flags of the source commands: the configuration
// file (the lockfile is next to it) and, where modules are cached, the
// data directory.
type sourceFlags struct {
	fs         *flag.FlagSet
	configFile string
	data       string
}

func (f *sourceFlags) register(fs *flag.FlagSet, data bool) {
	f.fs = fs
	fs.StringVar(&f.configFile, "config", "", "configuration file (default: $"+config.EnvConfig+"); the lockfile "+plugin.LockFileName+" is in its directory")
	if data {
		fs.StringVar(&f.data, "data", "", "data directory, where fetched modules are cached in sources/ (default: $PLUGBOARD_DATA, the file's data, else the per-user data directory)")
	}
}

// load returns the configuration file's path and, when the file exists,
// its content (a file with problems stops the command, exit status 2);
// the file's data applies to --data as in every command.
func (f *sourceFlags) load(mustExist bool) (string, *config.Config, error) {
	path := f.configFile
	if !config.Given(f.fs)["config"] {
		path = os.Getenv(config.EnvConfig)
	}
	if path == "" {
		return "", nil, usageError("give the configuration file, --config FILE or $%s: the lockfile %s is next to it", config.EnvConfig, plugin.LockFileName)
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && !mustExist {
		return path, nil, nil
	}
	// Sources and the lockfile only: the plugins' secrets are not read.
	conf, err := config.LoadDeferred(path)
	if err != nil {
		return "", nil, &exitError{code: 2, err: err}
	}
	if f.fs.Lookup("data") != nil {
		if _, err := conf.Apply(f.fs, os.Getenv); err != nil {
			return "", nil, &exitError{code: 2, err: err}
		}
	}
	return path, conf, nil
}

// fetched is one source's module, checked to be WebAssembly.
type fetched struct {
	sum      string
	size     int
	manifest *abi.Manifest
}

// fetch reads a source and checks that it is a WebAssembly module.
func fetch(ctx context.Context, src plugin.Source) ([]byte, *fetched, error) {
	b, err := new(plugin.Fetcher).Fetch(ctx, src)
	if err != nil {
		return nil, nil, err
	}
	info, err := plugin.Parse(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s is not a WebAssembly module: %w", src, err)
	}
	f := &fetched{sum: plugin.SHA256(b), size: len(b)}
	if raw, ok := info.Custom[abi.ManifestSection]; ok {
		var m abi.Manifest
		if json.Unmarshal(raw, &m) == nil {
			f.manifest = &m
		}
	}
	return b, f, nil
}

func (f *fetched) describe() string {
	if f.manifest == nil {
		return fmt.Sprintf("%d bytes, manifest by describe when loaded", f.size)
	}
	var tools []string
	for _, t := range f.manifest.Tools {
		tools = append(tools, t.Name)
	}
	return fmt.Sprintf("%d bytes, plugin %s %s, tools: %s", f.size, f.manifest.Plugin.Name, f.manifest.Plugin.Version, orNone(tools))
}

func pluginAddCommand(fs *flag.FlagSet) runFunc {
	var f sourceFlags
	f.register(fs, true)
	return func(ctx context.Context, in *invocation) error {
		if err := in.nargs(2, 2); err != nil {
			return err
		}
		return pluginAdd(ctx, &f, in.args[0], in.args[1], in.stdout)
	}
}

func pluginAdd(ctx context.Context, f *sourceFlags, name, source string, stdout io.Writer) error {
	file, conf, err := f.load(false)
	if err != nil {
		return err
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	src, err := plugin.ParseSource(source, wd)
	if err != nil {
		return usageError("SOURCE: %v", err)
	}
	if conf != nil {
		if s, ok := conf.Plugins.Settings[name]; ok && s.Source != "" && s.Source != src.String() {
			return &exitError{code: 1, err: fmt.Errorf("%s: plugins.settings.%s.source is %s, not %s: change it there first, or pick another name",
				file, name, s.Source, src)}
		}
	}
	b, got, err := fetch(ctx, src)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	data, err := dataDir(f.data)
	if err != nil {
		return err
	}
	if _, err := plugin.SourceCacheIn(data).Put(b); err != nil {
		return err
	}
	lockFile := plugin.LockFor(file)
	lock, err := plugin.ReadLock(lockFile)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	lock.Plugins[name] = plugin.LockEntry{Source: plugin.RecordedSource(src, lockFile), SHA256: got.sum, Size: int64(got.size)}
	if err := lock.Write(lockFile); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "pinned %s in %s: %s\n  sha256 %s (%s)\n", name, lockFile, src, got.sum, got.describe())
	if conf != nil && conf.Plugins.Settings[name].Source == src.String() {
		fmt.Fprintf(stdout, "%s configures it already.\n", file)
		return nil
	}
	entry, _ := json.Marshal(map[string]string{"source": src.String()})
	fmt.Fprintf(stdout, "Add it to %s under plugins.settings (with any other settings of the plugin):\n  %q: %s\n", file, name, entry)
	return nil
}

func pluginLockCommand(fs *flag.FlagSet) runFunc {
	var f sourceFlags
	f.register(fs, true)
	return func(ctx context.Context, in *invocation) error {
		return pluginLock(ctx, &f, in.args, in.stdout)
	}
}

// sourcesOf lists the configuration's plugins with a source, by name,
// restricted to names when given (an unknown one is a usage error).
func sourcesOf(file string, conf *config.Config, names []string) ([]string, map[string]string, error) {
	all := conf.Plugins.Sources()
	if len(names) == 0 {
		return slices.Sorted(maps.Keys(all)), all, nil
	}
	for _, n := range names {
		if _, ok := all[n]; !ok {
			return nil, nil, usageError("%s: plugins.settings has no plugin %q with a source (plugins with one: %s)", file, n, orNone(slices.Sorted(maps.Keys(all))))
		}
	}
	return names, all, nil
}

func pluginLock(ctx context.Context, f *sourceFlags, names []string, stdout io.Writer) error {
	file, conf, err := f.load(true)
	if err != nil {
		return err
	}
	order, sources, err := sourcesOf(file, conf, names)
	if err != nil {
		return err
	}
	data, err := dataDir(f.data)
	if err != nil {
		return err
	}
	lockFile := conf.LockFile()
	lock, err := plugin.ReadLock(lockFile)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	cache := plugin.SourceCacheIn(data)
	var failed []string
	for _, name := range order {
		src, _ := plugin.ParseSource(sources[name], "")
		b, got, err := fetch(ctx, src)
		if err != nil {
			fmt.Fprintf(stdout, "FAILED    %s: %v\n", name, err)
			failed = append(failed, name)
			continue
		}
		if _, err := cache.Put(b); err != nil {
			return err
		}
		old, had := lock.Plugins[name]
		recorded := plugin.RecordedSource(src, lockFile)
		lock.Plugins[name] = plugin.LockEntry{Source: recorded, SHA256: got.sum, Size: int64(got.size)}
		switch {
		case !had:
			fmt.Fprintf(stdout, "pinned    %s %s sha256 %s (%s)\n", name, src, got.sum, got.describe())
		case old.SHA256 != got.sum || old.Source != recorded:
			fmt.Fprintf(stdout, "CHANGED   %s %s sha256 %s (was %s of %s; %s)\n", name, src, got.sum, old.SHA256, old.Source, got.describe())
		default:
			fmt.Fprintf(stdout, "unchanged %s %s sha256 %s\n", name, src, got.sum)
		}
	}
	if len(names) == 0 {
		for _, name := range slices.Sorted(maps.Keys(lock.Plugins)) {
			if _, ok := sources[name]; !ok {
				delete(lock.Plugins, name)
				fmt.Fprintf(stdout, "removed   %s (no source in %s)\n", name, file)
			}
		}
	}
	if err := lock.Write(lockFile); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", lockFile)
	if len(failed) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("not locked (their entries are as they were): %s", strings.Join(failed, ", "))}
	}
	return nil
}

func pluginVerifyCommand(fs *flag.FlagSet) runFunc {
	var f sourceFlags
	f.register(fs, false)
	return func(ctx context.Context, in *invocation) error {
		return pluginVerify(ctx, &f, in.args, in.stdout)
	}
}

// pluginVerify fetches every source again — never the cache: the point is
// whether the source still serves the pinned bytes — and compares.
func pluginVerify(ctx context.Context, f *sourceFlags, names []string, stdout io.Writer) error {
	file, conf, err := f.load(true)
	if err != nil {
		return err
	}
	order, sources, err := sourcesOf(file, conf, names)
	if err != nil {
		return err
	}
	lockFile := conf.LockFile()
	lock, err := plugin.ReadLock(lockFile)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	var bad []string
	for _, name := range order {
		src, _ := plugin.ParseSource(sources[name], "")
		entry, pinned := lock.Plugins[name]
		_, got, err := fetch(ctx, src)
		switch {
		case err != nil:
			fmt.Fprintf(stdout, "FAILED    %s: %v\n", name, err)
		case !pinned:
			fmt.Fprintf(stdout, "UNPINNED  %s %s: expected sha256 none, actual sha256 %s\n", name, src, got.sum)
		case entry.Source != plugin.RecordedSource(src, lockFile):
			fmt.Fprintf(stdout, "MISMATCH  %s: %s pins it for %s, not %s: expected sha256 %s, actual sha256 %s\n",
				name, plugin.LockFileName, entry.Source, src, entry.SHA256, got.sum)
		case entry.SHA256 != got.sum:
			fmt.Fprintf(stdout, "MISMATCH  %s %s: expected sha256 %s, actual sha256 %s\n", name, src, entry.SHA256, got.sum)
		default:
			fmt.Fprintf(stdout, "ok        %s %s sha256 %s\n", name, src, got.sum)
			continue
		}
		bad = append(bad, name)
	}
	if len(bad) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d of %d plugins do not match %s: %s; review them, then run `plugboard plugin lock --config %s`",
			len(bad), len(order), lockFile, strings.Join(bad, ", "), file)}
	}
	fmt.Fprintf(stdout, "%s: every plugin matches (%d)\n", lockFile, len(order))
	return nil
}
