// Command snoop is a test plugin whose one tool tries to reach outside its
// sandbox and reports what happened to each attempt: reading /etc/passwd
// and the root directory, the environment (HOME, PATH, every variable), its
// arguments, dialling TCP, and the raw WASI calls underneath (path_open and
// sock_accept on every descriptor). Under plugboard every attempt must fail
// inside the guest; the conformance tests call it through the host to
// prove that the sandbox holds.
package main

import (
	"net"
	"os"
	"time"

	sdk "github.com/plugboard/plugboard/sdk-guest"
)

// Input is the arguments of snoop (none).
type Input struct{}

// Attempt is the outcome of one try.
type Attempt struct {
	What    string `json:"what" jsonschema:"what the plugin tried"`
	Reached bool   `json:"reached" jsonschema:"true when the attempt got something from outside the sandbox"`
	Detail  string `json:"detail" jsonschema:"the error, or what was obtained"`
}

// Output is the answer of snoop.
type Output struct {
	Attempts []Attempt `json:"attempts" jsonschema:"every attempt, in order"`
}

func init() {
	sdk.Plugin("snoop", "1.0.0", "Test plugin: tries to read files, the environment and the network.")
	sdk.Tool(sdk.ToolSpec{
		Name: "snoop",
		Description: `Use when: testing that the host's sandbox holds.
Required: none
Optional: none
Next: check that no attempt reached anything.
Avoid: calling it outside tests.`,
	}, func(_ *sdk.Call, _ Input) (Output, error) {
		var out Output
		add := func(what string, reached bool, detail string) {
			out.Attempts = append(out.Attempts, Attempt{What: what, Reached: reached, Detail: detail})
		}
		if b, err := os.ReadFile("/etc/passwd"); err != nil {
			add("os.ReadFile(/etc/passwd)", false, err.Error())
		} else {
			add("os.ReadFile(/etc/passwd)", true, string(b[:min(len(b), 64)]))
		}
		if entries, err := os.ReadDir("/"); err != nil {
			add("os.ReadDir(/)", false, err.Error())
		} else {
			add("os.ReadDir(/)", len(entries) > 0, "entries: "+itoa(len(entries)))
		}
		if f, err := os.Create("/tmp/snoop-was-here"); err != nil {
			add("os.Create(/tmp/snoop-was-here)", false, err.Error())
		} else {
			f.Close()
			add("os.Create(/tmp/snoop-was-here)", true, "created")
		}
		home, ok := os.LookupEnv("HOME")
		add("os.LookupEnv(HOME)", ok, home)
		path, ok := os.LookupEnv("PATH")
		add("os.LookupEnv(PATH)", ok, path)
		env := os.Environ()
		add("os.Environ()", len(env) > 0, "variables: "+itoa(len(env)))
		add("os.Args", len(os.Args) > 0, "arguments: "+itoa(len(os.Args)))
		if c, err := net.DialTimeout("tcp", "127.0.0.1:22", time.Second); err != nil {
			add("net.Dial(tcp 127.0.0.1:22)", false, err.Error())
		} else {
			c.Close()
			add("net.Dial(tcp 127.0.0.1:22)", true, "connected")
		}
		if c, err := net.DialTimeout("tcp", "example.com:80", time.Second); err != nil {
			add("net.Dial(tcp example.com:80)", false, err.Error())
		} else {
			c.Close()
			add("net.Dial(tcp example.com:80)", true, "connected")
		}
		for _, a := range rawAttempts() {
			add(a.What, a.Reached, a.Detail)
		}
		return out, nil
	})
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func main() {}
