package sandbox_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/host/internal/sandbox"
)

// Command refuses what the launcher would refuse, naming the problem.
func TestCommandValidates(t *testing.T) {
	sh := []string{"/bin/sh", "-c", "true"}
	for _, c := range []struct {
		name string
		self string
		p    sandbox.Policy
		argv []string
		want string // in the error
	}{
		{"relative self", "plugboard", sandbox.Policy{}, sh, `"plugboard" is not an absolute path`},
		{"relative path", "/x", sandbox.Policy{ReadOnly: []string{"usr"}}, sh, `ReadOnly path "usr" is not absolute`},
		{"empty path", "/x", sandbox.Policy{ReadWrite: []string{""}}, sh, `ReadWrite path "" is not absolute`},
		{"unclean path", "/x", sandbox.Policy{ReadWrite: []string{"/tmp/a/"}}, sh, `ReadWrite path "/tmp/a/" is not clean`},
		{"dotdot path", "/x", sandbox.Policy{ReadOnly: []string{"/a/../etc"}}, sh, `is not clean (want "/etc")`},
		{"NUL in path", "/x", sandbox.Policy{ReadOnly: []string{"/a\x00b"}}, sh, "contains NUL"},
		{"device outside /dev", "/x", sandbox.Policy{Devices: []string{"/home"}}, sh, `"/home" in Devices is not under /dev`},
		{"ports without NetworkClosed", "/x", sandbox.Policy{AllowConnectTCP: []uint16{80}}, sh, "NetworkClosed is not"},
		{"no argv", "/x", sandbox.Policy{}, nil, "no program"},
		{"relative program", "/x", sandbox.Policy{}, []string{"sh"}, `program "sh" is not an absolute path`},
		{"NUL in argument", "/x", sandbox.Policy{}, []string{"/bin/sh", "a\x00"}, "contains NUL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			argv, err := sandbox.Command(c.self, c.p, c.argv)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Command = %q, %v; want an error containing %q", argv, err, c.want)
			}
		})
	}
}

// Command's argv is the launcher line: self, LauncherArg, the policy as
// JSON, "--", then argv unchanged.
func TestCommandShape(t *testing.T) {
	if st := sandbox.Probe(); !st.Available {
		if _, err := sandbox.Command("/x", sandbox.Policy{}, []string{"/bin/true"}); err == nil || !strings.Contains(err.Error(), st.Reason) {
			t.Errorf("Command without Landlock: %v, want %q", err, st.Reason)
		}
		t.Skip(st.Reason)
	}
	p := sandbox.Policy{ReadOnly: []string{"/usr"}, ReadWrite: []string{"/w"}, Devices: []string{"/dev/null"}}
	if sandbox.Probe().Network {
		p.NetworkClosed, p.AllowConnectTCP = true, []uint16{8080}
	}
	argv, err := sandbox.Command("/opt/plugboard", p, []string{"/bin/echo", "a b", ""})
	if err != nil {
		t.Fatal(err)
	}
	if len(argv) != 7 || argv[0] != "/opt/plugboard" || argv[1] != sandbox.LauncherArg || argv[3] != "--" ||
		!slices.Equal(argv[4:], []string{"/bin/echo", "a b", ""}) {
		t.Fatalf("argv = %q", argv)
	}
	var back sandbox.Policy
	if err := json.Unmarshal([]byte(argv[2]), &back); err != nil {
		t.Fatal(err)
	}
	if b1, b2 := mustJSON(t, p), mustJSON(t, back); b1 != b2 {
		t.Errorf("policy round trip: %s, want %s", b2, b1)
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The helpers name only existing, absolute, clean paths, and none where
// users or programs keep their own data.
func TestStandardPaths(t *testing.T) {
	forbidden := []string{"/", "/tmp", "/home", "/root", "/var", "/var/tmp", "/dev", "/dev/shm", "/run"}
	ro, dev := sandbox.SystemReadOnly(), sandbox.StandardDevices()
	for _, p := range append(slices.Clone(ro), dev...) {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p || slices.Contains(forbidden, p) {
			t.Errorf("path %q", p)
		}
	}
	for _, p := range dev {
		if !strings.HasPrefix(p, "/dev/") {
			t.Errorf("device %q is not under /dev", p)
		}
	}
}
