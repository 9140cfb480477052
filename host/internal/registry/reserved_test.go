package registry_test

import (
	"context"
	"testing"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/registry"
	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// TestReservedNamesAreTheFirstPartyTools holds the reserved-name table to
// the first-party plugins as built: every tool and alias they serve is
// reserved for the plugin serving it, every reserved name is served by
// one, and every board operation's name is reserved.
func TestReservedNamesAreTheFirstPartyTools(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	dir, _ := buildtest.Plugins(t, "plugins/tasks-read", "plugins/tasks-write", "plugins/tasks-control", "plugins/tasks-workspace", "plugins/agents")
	reg, err := registry.Load(context.Background(), registry.Options{Dirs: []string{dir}, Conditions: []string{abi.WhenAttemptContext}})
	if err != nil {
		t.Fatal(err)
	}
	if probs := reg.Problems(); len(probs) > 0 {
		t.Fatalf("the first-party plugins do not load together: %v", probs)
	}
	served := map[string]bool{}
	for _, tool := range reg.Tools() {
		for _, name := range append([]string{tool.Def.Name}, tool.Def.Aliases...) {
			served[name] = true
			if owner, ok := registry.ReservedOwner(name); !ok || owner != tool.Plugin.Name() {
				t.Errorf("%s, served by %s, is reserved for %q (%v)", name, tool.Plugin.Name(), owner, ok)
			}
		}
	}
	for op := range abi.BoardOps() {
		if !served[op] {
			t.Errorf("board operation %s is served by no first-party plugin", op)
		}
	}
	if len(served) != registry.ReservedCount() {
		t.Errorf("%d names served, %d reserved", len(served), registry.ReservedCount())
	}
}
