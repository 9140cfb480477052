// Package pluginbuild turns a plugin's Go source into a servable .wasm: it runs the
// standard Go toolchain for wasip1 in c-shared (reactor) mode, runs the
// module's describe export once in a sandbox, validates the manifest and
// embeds it as the abi.ManifestSection custom section, so hosts list the
// plugin's tools without compiling it. A plugin on the guest SDK is built
// twice: with DescribeTag to run describe, then without it for the module
// written, which links no schema inference and answers describe with the
// embedded manifest. It owns nothing at serve time.
package pluginbuild

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
	// Codecs, if set, is told how a plugin on plugboard's SDK encodes JSON:
	// typed when it links no encoding/json (TypedTag), else why it does.
	Codecs func(typed bool, why string)
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
	env := append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	sdkPath, err := sdkDir(ctx, goBin, srcDir, env)
	if err != nil {
		return nil, err
	}
	// The describe build links the SDK's schema inference (the
	// plugboard_describe tag); describe runs it in the sandbox.
	if err := goBuild(ctx, goBin, srcDir, env, raw, "-tags", DescribeTag); err != nil {
		return nil, err
	}
	wasm, err := os.ReadFile(raw)
	if err != nil {
		return nil, err
	}
	m, manifestJSON, typed, err := describe(ctx, filepath.Base(absSrc), wasm, opts.DescribeTimeout)
	if err != nil {
		return nil, err
	}
	if sdkPath != "" && m.ABI == 0 {
		// A plugin on plugboard's SDK speaks plugboard's ABI: the lowest
		// version it needs. One on another PDK keeps the ABI it declared
		// (none: an Extism MCP plugin), which tells the host to send it
		// exactly the Extism MCP call input.
		m.ABI = m.MinVersion()
		if manifestJSON, err = json.Marshal(m); err != nil {
			return nil, err
		}
	}
	if sdkPath != "" && embedsManifest(sdkPath) {
		// The module served is built without the tag, so it links neither
		// jsonschema-go nor anything only describe needs; its describe
		// answers the manifest just made, which an overlaid file of the SDK
		// sets (issue 15).
		var tags []string
		if typed == typedAnswer {
			// Every tool's types have codecs of the SDK's own: the
			// module links no encoding/json (0.34 MB of echo's 3.56).
			tags = []string{"-tags", TypedTag}
		}
		why := typed
		if why == "" {
			why = "the SDK is older than its own codecs"
		}
		if wasm, err = buildWithManifest(ctx, goBin, srcDir, env, raw, sdkPath, manifestJSON, tags...); err != nil {
			return nil, err
		}
		if tags != nil && linksJSON(wasm) {
			// The plugin reaches encoding/json anyway (its own code, or
			// the SDK's Board, Ask or Log): the SDK's codecs would only
			// add to it. Keep whichever build is smaller.
			plain, err := buildWithManifest(ctx, goBin, srcDir, env, raw, sdkPath, manifestJSON)
			if err != nil {
				return nil, err
			}
			if len(plain) <= len(wasm) {
				wasm, tags = plain, nil
				why = "the plugin's code, or the SDK functions it calls (Board, Ask, Log, …), use it"
			}
		}
		if opts.Codecs != nil {
			opts.Codecs(tags != nil, why)
		}
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

// DescribeTag is the build tag under which the guest SDK links schema
// inference and describe in WebAssembly. Plugin builds with it to run
// describe, then without it for the module it writes.
const DescribeTag = "plugboard_describe"

// TypedTag is the build tag under which the guest SDK links no
// encoding/json: its own codecs decode every tool's arguments and encode
// its results. Plugin builds with it when the describe build's
// plugboard_typed export answers typedAnswer, which it does when every
// tool's input and output types have such codecs and the plugin serves no
// resources or prompts.
const TypedTag = "plugboard_typed"

// typedExport and typedAnswer are the describe build's export that says
// whether TypedTag serves the plugin, and its answer when it does (the
// SDK's TypedAnswer).
const (
	typedExport = "plugboard_typed"
	typedAnswer = "typed"
)

// sdkImport is the guest SDK's import path.
const sdkImport = "github.com/plugboard/plugboard/sdk-guest"

// sdkDir returns the directory of the guest SDK package the plugin in srcDir
// links, or "" when it does not link it (a plugin on another PDK).
func sdkDir(ctx context.Context, goBin, srcDir string, env []string) (string, error) {
	cmd := exec.CommandContext(ctx, goBin, "list", "-deps", "-f", `{{if eq .ImportPath "`+sdkImport+`"}}{{.Dir}}{{end}}`, ".")
	cmd.Dir = srcDir
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list in %s: %w\n%s", srcDir, err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// embedsManifest reports whether the guest SDK in dir can answer describe
// with an embedded manifest (it declares builtManifest). An older SDK
// cannot: its plugins are built once, with describe linked, as before.
func embedsManifest(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "schema_embedded.go"))
	return err == nil && bytes.Contains(b, []byte("\nvar builtManifest string\n"))
}

// goBuild builds the main package in srcDir as a reactor module into out.
// -s leaves out the WebAssembly name section (about 80 KB for echo, issue
// 15): it only names functions in a runtime's trap traces, while a Go panic
// still prints its symbolized trace from the pclntab, which stays; -w leaves
// out DWARF.
func goBuild(ctx context.Context, goBin, srcDir string, env []string, out string, flags ...string) error {
	args := append([]string{"build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w", "-o", out}, flags...)
	cmd := exec.CommandContext(ctx, goBin, append(args, ".")...)
	cmd.Dir = srcDir
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build in %s: %w\n%s", srcDir, err, stderr.String())
	}
	return nil
}

// linksJSON reports whether a module built by the Go toolchain links
// encoding/json's decoder and encoder, by their functions' names in the
// symbol table that Go keeps for tracebacks (-s leaves it).
func linksJSON(wasm []byte) bool {
	return bytes.Contains(wasm, []byte("encoding/json.(*decodeState).object\x00")) &&
		bytes.Contains(wasm, []byte("encoding/json.(*encodeState).marshal\x00"))
}

// buildWithManifest builds the module without DescribeTag, overlaying on the
// SDK package in sdkDir a file that sets the manifest its describe export
// returns, and returns the module's bytes.
func buildWithManifest(ctx context.Context, goBin, srcDir string, env []string, out, sdkDir string, manifestJSON []byte, flags ...string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "plugboard-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	gen := filepath.Join(tmp, "manifest.go")
	src := "// Code generated by plugboard plugin build. DO NOT EDIT.\n\n" +
		"//go:build wasip1 && !" + DescribeTag + "\n\npackage sdk\n\nfunc init() { builtManifest = " + strconv.Quote(string(manifestJSON)) + " }\n"
	if err := os.WriteFile(gen, []byte(src), 0o644); err != nil {
		return nil, err
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(sdkDir, "zz_plugboard_manifest.go"): gen}})
	if err != nil {
		return nil, err
	}
	overlayFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		return nil, err
	}
	if err := goBuild(ctx, goBin, srcDir, env, out, append([]string{"-overlay", overlayFile}, flags...)...); err != nil {
		return nil, err
	}
	return os.ReadFile(out)
}

// Describe runs a module's describe export (a hyper-mcp v2 plugin's list
// exports) in a throwaway engine and returns the validated manifest and its
// compact JSON, with the ABI version it declares (0: none, an Extism MCP
// plugin).
func Describe(ctx context.Context, name string, wasm []byte, timeout time.Duration) (*abi.Manifest, []byte, error) {
	m, compact, _, err := describe(ctx, name, wasm, timeout)
	return m, compact, err
}

// describe is Describe, and also returns what the module's plugboard_typed
// export answers ("" when it has none: another PDK, an older SDK).
func describe(ctx context.Context, name string, wasm []byte, timeout time.Duration) (_ *abi.Manifest, _ []byte, typed string, _ error) {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	eng, err := plugin.NewEngine(ctx, plugin.Config{})
	if err != nil {
		return nil, nil, "", err
	}
	defer eng.Close(ctx)
	p, err := eng.Compile(ctx, name, wasm, nil)
	if err != nil {
		return nil, nil, "", err
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := plugin.Describe(dctx, p)
	if err != nil {
		return nil, nil, "", fmt.Errorf("describe: %w", err)
	}
	var m abi.Manifest
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, nil, "", fmt.Errorf("describe output is not a manifest: %w", err)
	}
	if m.Plugin.Name == "" {
		m.Plugin.Name = name
	}
	if err := m.Validate(); err != nil {
		return nil, nil, "", fmt.Errorf("invalid manifest: %w", err)
	}
	compact, err := json.Marshal(m)
	if err != nil {
		return nil, nil, "", err
	}
	if answer, err := p.Call(dctx, typedExport, nil, plugin.CallOptions{}); err == nil {
		typed = string(answer)
	}
	return &m, compact, typed, nil
}
