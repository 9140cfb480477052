package grants

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestFor(t *testing.T) {
	declared := []string{"board.read", "board.control"}
	g, w := Declared().For("any", declared)
	if !slices.Equal(g, declared) || len(w) != 0 {
		t.Fatalf("declared policy: %v %v", g, w)
	}
	file := filepath.Join(t.TempDir(), "grants.json")
	os.WriteFile(file, []byte(`{"default":"none","plugins":{"tasks":["board.read","workspace.read"]}}`), 0o644)
	p, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	// Named: only the intersection; a grant never adds an undeclared capability.
	g, w = p.For("tasks", declared)
	if !slices.Equal(g, []string{"board.read"}) || !slices.Equal(w, []string{"board.control"}) {
		t.Fatalf("named plugin: %v %v", g, w)
	}
	if g, _ := p.For("other", declared); len(g) != 0 {
		t.Fatalf("default none granted %v", g)
	}
	for _, bad := range []string{`{"default":"all"}`, `{"plugins":{"x":"board.read"}}`, `{"defualt":"none"}`, `nope`} {
		os.WriteFile(file, []byte(bad), 0o644)
		if _, err := Load(file); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("missing file accepted")
	}
}
