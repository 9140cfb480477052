package conformance_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/conformance"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// TestConformanceFirstParty runs the kit on every first-party plugin (each
// folder of plugins/ but internal) and fails on any error-severity check,
// so `make test` keeps the shipped plugins conformant to the house
// profile, which they are held to as plugins built with the SDK. Warnings
// are logged.
func TestConformanceFirstParty(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	root := buildtest.Root(t)
	entries, err := os.ReadDir(filepath.Join(root, "plugins"))
	if err != nil {
		t.Fatal(err)
	}
	var srcs []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "internal" {
			srcs = append(srcs, "plugins/"+e.Name())
		}
	}
	if len(srcs) == 0 {
		t.Fatal("no first-party plugins found")
	}
	_, wasm := buildtest.Plugins(t, srcs...)
	var paths []string
	for _, p := range wasm {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	rep, err := conformance.Run(context.Background(), paths, conformance.Options{
		Progress: func(p *conformance.PluginReport) { t.Log(p.ProgressLine()) },
	})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !rep.OK {
		t.Fatalf("first-party plugins fail the conformance kit:\n%s", text.String())
	}
	if rep.Warnings > 0 {
		t.Logf("warnings:\n%s", text.String())
	}
	for _, p := range rep.Plugins {
		// Every first-party plugin is built with the SDK, so the kit holds
		// it to the house rules (--profile auto), and it passes them.
		if p.Profile != conformance.ProfileHouse || p.Shape == nil || p.Shape.Interface != conformance.InterfacePlugboard ||
			(p.Verdict.Kind != conformance.VerdictWorks && p.Verdict.Kind != conformance.VerdictAdvice) {
			t.Errorf("%s: profile %q, shape %+v, verdict %+v: want the house profile, plugboard's SDK, works", p.File, p.Profile, p.Shape, p.Verdict)
		}
		// The kit must really have exercised each plugin: no check skipped
		// (a skip means an earlier stage failed), and calls made.
		if p.Skipped > 0 || p.Calls == 0 || len(p.Tools) == 0 {
			t.Errorf("%s: %d tools, %d calls, %d checks skipped: the kit did not run every check", p.File, len(p.Tools), p.Calls, p.Skipped)
		}
	}
}
