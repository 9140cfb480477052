// Package build turns a plugin's Go source into a servable .wasm: it runs the
// standard Go toolchain for wasip1 in c-shared (reactor) mode, runs the
// module's describe export once in a sandbox, validates the manifest and
// embeds it as the abi.ManifestSection custom section, so hosts list the
// plugin's tools without compiling it. It owns nothing at serve time.
package build

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/plugin"
)

// Options configures Plugin.
type Options struct {
	// GoBinary is the go command; "" finds it on PATH.
	GoBinary string
	// DescribeTimeout bounds the describe run (default 30 s: the first run
	// includes compiling the module).
	DescribeTimeout time.Duration
}

// Plugin builds the Go main package in srcDir into out and returns the
// embedded manifest. srcDir builds in the module that holds it: a
// first-party plugin in plugboard's, a plugin of its own in its own, which
// requires github.com/plugboard/plugboard/sdk-guest (and replaces it and
// .../abi with a checkout's until they are published). out is written
// atomically: a failed build leaves any previous file untouched.
func Plugin(ctx context.Context, srcDir, out string, opts Options) (*abi.Manifest, error) {
	goBin := opts.GoBinary
	if goBin == "" {
		var err error
		if goBin, err = exec.LookPath("go"); err != nil {
			return nil, fmt.Errorf("the go command is needed to build plugins: %w", err)
		}
	}
	absOut, err := filepath.Abs(out)
	if err != nil {
		return nil, err
	}
	// The folder's name is the plugin's name when the manifest has none,
	// also for srcDir ".".
	absSrc, err := filepath.Abs(srcDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(absOut), 0o755); err != nil {
		return nil, err
	}
	raw := absOut + ".raw.tmp"
	defer os.Remove(raw)
	cmd := exec.CommandContext(ctx, goBin, "build", "-buildmode=c-shared", "-trimpath", "-o", raw, ".")
	cmd.Dir = srcDir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build in %s: %w\n%s", srcDir, err, stderr.String())
	}
	wasm, err := os.ReadFile(raw)
	if err != nil {
		return nil, err
	}
	m, manifestJSON, err := Describe(ctx, filepath.Base(absSrc), wasm, opts.DescribeTimeout)
	if err != nil {
		return nil, err
	}
	embedded, err := plugin.SetCustomSection(wasm, abi.ManifestSection, manifestJSON)
	if err != nil {
		return nil, err
	}
	tmp := absOut + ".tmp"
	if err := os.WriteFile(tmp, embedded, 0o644); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, absOut); err != nil {
		os.Remove(tmp)
		return nil, err
	}
	return m, nil
}

// Describe runs a module's describe export (a hyper-mcp v2 plugin's list
// exports) in a throwaway engine and returns the validated manifest and its
// compact JSON.
func Describe(ctx context.Context, name string, wasm []byte, timeout time.Duration) (*abi.Manifest, []byte, error) {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	eng, err := plugin.NewEngine(ctx, plugin.Config{})
	if err != nil {
		return nil, nil, err
	}
	defer eng.Close(ctx)
	p, err := eng.Compile(ctx, name, wasm, nil)
	if err != nil {
		return nil, nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := plugin.Describe(dctx, p)
	if err != nil {
		return nil, nil, fmt.Errorf("describe: %w", err)
	}
	var m abi.Manifest
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, nil, fmt.Errorf("describe output is not a manifest: %w", err)
	}
	if m.Plugin.Name == "" {
		m.Plugin.Name = name
	}
	if m.ABI == 0 {
		m.ABI = m.MinVersion()
	}
	if err := m.Validate(); err != nil {
		return nil, nil, fmt.Errorf("invalid manifest: %w", err)
	}
	compact, err := json.Marshal(m)
	if err != nil {
		return nil, nil, err
	}
	return &m, compact, nil
}
