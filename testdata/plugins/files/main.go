//go:build wasip1

// Command files is a test plugin written straight against
// github.com/extism/go-pdk: tools that read, write and list paths in the
// WASI filesystem, where the operator's mounts appear, and a probe that
// tries one more operation (mkdir, remove, rename, symlink, link, stat,
// truncate, or a raw WASI path_open relative to a mount's descriptor,
// bypassing Go's own path handling). Failures are answers, not errors, so
// tests can check each refusal.
package main

import (
	"encoding/json"
	"os"

	"github.com/extism/go-pdk"
)

const manifest = `{"tools":[` +
	`{"name":"files_read","description":"Use when: testing file reads under a mount.\nRequired: path\nOptional: none\nNext: check ok and text.\nAvoid: calling it outside tests.","inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"the absolute guest path to read"}},"required":["path"]}},` +
	`{"name":"files_write","description":"Use when: testing file writes under a mount.\nRequired: path, text\nOptional: append\nNext: check ok.\nAvoid: calling it outside tests.","inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"the absolute guest path to write"},"text":{"type":"string","description":"the content to write"},"append":{"type":"boolean","description":"append instead of replacing"}},"required":["path","text"]}},` +
	`{"name":"files_list","description":"Use when: testing directory listings under a mount.\nRequired: path\nOptional: none\nNext: check ok and names.\nAvoid: calling it outside tests.","inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"the absolute guest path of a directory"}},"required":["path"]}},` +
	`{"name":"files_probe","description":"Use when: testing one more file operation under a mount.\nRequired: op, path\nOptional: to\nNext: check ok, error and errno.\nAvoid: calling it outside tests.","inputSchema":{"type":"object","properties":{"op":{"type":"string","description":"mkdir, remove, rename, symlink, link, stat, truncate, raw_open or raw_create"},"path":{"type":"string","description":"the guest path (for raw_open and raw_create: the mount's guest path)"},"to":{"type":"string","description":"the second path: rename or link target, symlink target, or the raw path relative to the mount"}},"required":["op","path"]}}` +
	`]}`

//go:wasmexport describe
func describe() int32 {
	pdk.OutputString(manifest)
	return 0
}

type content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type result struct {
	Content []content `json:"content"`
	IsError bool      `json:"isError,omitempty"`
}

// Answer is every tool's answer, as the JSON text of its one content item.
type Answer struct {
	OK    bool     `json:"ok"`
	Error string   `json:"error,omitempty"`
	Errno uint32   `json:"errno,omitempty"`
	Text  string   `json:"text,omitempty"`
	Names []string `json:"names,omitempty"`
}

func answer(err error) Answer {
	if err != nil {
		return Answer{Error: err.Error()}
	}
	return Answer{OK: true}
}

//go:wasmexport call
func call() int32 {
	var req struct {
		Params struct {
			Name      string `json:"name"`
			Arguments struct {
				Path   string `json:"path"`
				Text   string `json:"text"`
				Append bool   `json:"append"`
				Op     string `json:"op"`
				To     string `json:"to"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if err := pdk.InputJSON(&req); err != nil {
		pdk.SetError(err)
		return 1
	}
	a := req.Params.Arguments
	var out Answer
	switch req.Params.Name {
	case "files_read":
		b, err := os.ReadFile(a.Path)
		out = answer(err)
		out.Text = string(b)
	case "files_write":
		flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if a.Append {
			flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		}
		f, err := os.OpenFile(a.Path, flag, 0o644)
		if err == nil {
			_, err = f.WriteString(a.Text)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		out = answer(err)
	case "files_list":
		entries, err := os.ReadDir(a.Path)
		out = answer(err)
		for _, e := range entries {
			out.Names = append(out.Names, e.Name())
		}
	case "files_probe":
		out = probe(a.Op, a.Path, a.To)
	default:
		out = Answer{Error: "unknown tool " + req.Params.Name}
	}
	text, _ := json.Marshal(out)
	if err := pdk.OutputJSON(result{Content: []content{{Type: "text", Text: string(text)}}}); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

func probe(op, p, to string) Answer {
	switch op {
	case "mkdir":
		return answer(os.Mkdir(p, 0o755))
	case "remove":
		return answer(os.Remove(p))
	case "rename":
		return answer(os.Rename(p, to))
	case "symlink":
		return answer(os.Symlink(to, p))
	case "link":
		return answer(os.Link(p, to))
	case "stat":
		fi, err := os.Stat(p)
		out := answer(err)
		if err == nil {
			out.Text = fi.Mode().String()
		}
		return out
	case "truncate":
		return answer(os.Truncate(p, 0))
	case "raw_open":
		return rawOpen(p, to, false)
	case "raw_create":
		return rawOpen(p, to, true)
	}
	return Answer{Error: "unknown op " + op}
}

func main() {}
