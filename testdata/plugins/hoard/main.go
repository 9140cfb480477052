//go:build wasip1

// Command hoard is a hostile test plugin written straight against the
// Extism kernel (github.com/extism/go-pdk and raw imports): each tool tries
// to make the host keep, write or hold more than the plugin's caps allow,
// reusing one host block where the ABI lets it so that its own kernel
// memory stays small while the host's would grow:
//
//   - hoard_vars: Extism vars under many distinct long keys (the values
//     tiny), which the host keeps between calls;
//   - hoard_blocks: many one-byte kernel blocks, whose bookkeeping the host
//     keeps between calls;
//   - hoard_logs: one log line, the same block, written count times;
//   - hoard_progress: one progress report (plugboard:host/v1), the same
//     block, sent count times, counting the errors the host answers;
//   - hoard_requests: one HTTP request (a long URL), the same block, made
//     count times: each is a record the decision log keeps;
//   - hoard_fetch: one HTTP request; hold it open as long as the host lets.
package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/extism/go-pdk"
)

//go:wasmimport extism:host/env var_set
func varSet(key, value uint64)

//go:wasmimport extism:host/env alloc
func alloc(n uint64) uint64

//go:wasmimport extism:host/env log_warn
func logWarn(msg uint64)

//go:wasmimport extism:host/env http_request
func httpRequest(req, body uint64) uint64

//go:wasmimport plugboard:host/v1 progress
func progress(req uint64) uint64

func tool(name, use string, props string) string {
	return `{"name":"` + name + `","description":"Use when: ` + use + `\nRequired: none\nOptional: all\nNext: read the counts.\nAvoid: calling it outside tests.","inputSchema":{"type":"object","properties":{` + props + `}}}`
}

var manifest = `{"tools":[` + strings.Join([]string{
	tool("hoard_vars", "testing the cap on Extism vars.", `"count":{"type":"integer","description":"vars to set"},"key_bytes":{"type":"integer","description":"length of each key"},"tag":{"type":"string","description":"makes the keys of one call distinct from another's"}`),
	tool("hoard_blocks", "testing the cap on kernel blocks.", `"count":{"type":"integer","description":"one-byte blocks to allocate"}`),
	tool("hoard_logs", "testing the cap on log lines.", `"count":{"type":"integer","description":"lines to write"},"bytes":{"type":"integer","description":"length of each line"},"marker":{"type":"string","description":"starts each line"}`),
	tool("hoard_progress", "testing the cap on progress notifications.", `"count":{"type":"integer","description":"reports to send"},"bytes":{"type":"integer","description":"length of each message"}`),
	tool("hoard_requests", "testing the cap on HTTP requests in a call.", `"count":{"type":"integer","description":"requests to make"},"url":{"type":"string","description":"the URL"},"path_bytes":{"type":"integer","description":"padding added to its path"}`),
	tool("hoard_fetch", "testing the cap on HTTP connections.", `"url":{"type":"string","description":"the URL"}`),
}, ",") + `]}`

//go:wasmexport describe
func describe() int32 {
	pdk.OutputString(manifest)
	return 0
}

type args struct {
	Count     int    `json:"count"`
	KeyBytes  int    `json:"key_bytes"`
	Bytes     int    `json:"bytes"`
	Tag       string `json:"tag"`
	Marker    string `json:"marker"`
	URL       string `json:"url"`
	PathBytes int    `json:"path_bytes"`
}

// Answer is each tool's answer, as the JSON text of its one content item.
type Answer struct {
	Done       int    `json:"done"`
	Refused    int    `json:"refused,omitempty"`
	FirstError string `json:"first_error,omitempty"`
	Status     int    `json:"status,omitempty"`
}

//go:wasmexport call
func call() int32 {
	var req struct {
		Params struct {
			Name      string `json:"name"`
			Arguments args   `json:"arguments"`
		} `json:"params"`
	}
	if err := pdk.InputJSON(&req); err != nil {
		pdk.SetError(err)
		return 1
	}
	a := req.Params.Arguments
	var ans Answer
	// offset puts b in a host block and returns the block's offset.
	offset := func(b []byte) uint64 {
		m := pdk.AllocateBytes(b)
		return m.Offset()
	}
	switch req.Params.Name {
	case "hoard_vars":
		one := offset([]byte{1})
		for i := range a.Count {
			key := fmt.Sprintf("%s-%d-", a.Tag, i)
			key += strings.Repeat("k", max(a.KeyBytes-len(key), 0))
			varSet(offset([]byte(key)), one)
			ans.Done++
		}
	case "hoard_blocks":
		for range a.Count {
			alloc(1)
			ans.Done++
		}
	case "hoard_logs":
		line := a.Marker + strings.Repeat("l", max(a.Bytes-len(a.Marker), 0))
		off := offset([]byte(line))
		for range a.Count {
			logWarn(off)
			ans.Done++
		}
	case "hoard_progress":
		msg, _ := json.Marshal(map[string]any{"progress": 1, "message": strings.Repeat("p", a.Bytes)})
		off := offset(msg)
		for range a.Count {
			resp := progress(off)
			if resp == 0 {
				ans.Done++
				continue
			}
			ans.Refused++
			if ans.FirstError == "" {
				m := pdk.FindMemory(resp)
				ans.FirstError = string(m.ReadBytes())
			}
		}
	case "hoard_requests":
		url := a.URL + "/" + strings.Repeat("u", a.PathBytes)
		meta, _ := json.Marshal(map[string]any{"url": url, "method": "GET", "headers": map[string]string{}})
		off := offset(meta)
		for range a.Count {
			httpRequest(off, 0)
			ans.Done++
		}
	case "hoard_fetch":
		resp := pdk.NewHTTPRequest(pdk.MethodGet, a.URL).Send()
		ans.Done, ans.Status = 1, int(resp.Status())
	default:
		pdk.SetErrorString("unknown tool " + req.Params.Name)
		return 1
	}
	text, _ := json.Marshal(ans)
	out, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": string(text)}}})
	pdk.Output(out)
	return 0
}

func main() {}
