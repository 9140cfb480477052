//go:build wasip1

// Command hyperuser is a test plugin written straight against
// github.com/extism/go-pdk, in the shape of a hyper-mcp plugin that reaches
// the MCP client through hyper-mcp's host functions in extism:host/user
// (notify_tool_list_changed, list_roots, notify_logging_message,
// notify_progress, notify_resource_updated, create_message,
// create_elicitation), with the
// signatures hyper-mcp gives them: JSON in and out as kernel offsets. It
// serves through describe and call, like hyper-mcp's first plugin
// interface. It proves plugboard provides those functions on its own client
// bridge.
package main

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/extism/go-pdk"
)

//go:wasmimport extism:host/user notify_tool_list_changed
func notifyToolListChanged()

//go:wasmimport extism:host/user list_roots
func listRoots() uint64

//go:wasmimport extism:host/user notify_logging_message
func notifyLoggingMessage(uint64)

//go:wasmimport extism:host/user notify_progress
func notifyProgress(uint64)

//go:wasmimport extism:host/user create_message
func createMessage(uint64) uint64

//go:wasmimport extism:host/user create_elicitation
func createElicitation(uint64) uint64

//go:wasmimport extism:host/user notify_resource_updated
func notifyResourceUpdated(uint64)

func tool(name, does string, props string) string {
	return `{"name":"` + name + `","description":"Use when: ` + does + `\nRequired: none\nOptional: none\nNext: read the answer.\nAvoid: nothing.",` +
		`"inputSchema":{"type":"object","properties":{` + props + `}}}`
}

// describe lists the tools. user_notify_tools's title says when they were
// listed, so every listing differs from the last, as a plugin's whose
// tools do change: the host tells clients of lists that changed, and only
// of those.
//
//go:wasmexport describe
func describe() int32 {
	notify := tool("user_notify_tools", "telling the client the tool list changed.", "")
	notify = `{"title":"Notify (listed ` + strconv.FormatInt(time.Now().UnixNano(), 10) + `)",` + notify[1:]
	pdk.OutputString(`{"tools":[` + notify + `,` +
		tool("user_roots", "listing the client's roots.", "") + `,` +
		tool("user_log", "sending a log message and progress.", "") + `,` +
		tool("user_ask", "asking the client's model.", `"prompt":{"type":"string","description":"the question"}`) + `,` +
		tool("user_confirm", "asking the client's user.", "") +
		`]}`)
	return 0
}

// send passes v to a host function as JSON in a kernel block.
func send(v any) uint64 {
	mem, err := pdk.AllocateJSON(v)
	if err != nil {
		panic(err)
	}
	return mem.Offset()
}

// answer reads a host function's JSON answer as raw text.
func answer(off uint64) string {
	mem := pdk.FindMemory(off)
	return string(mem.ReadBytes())
}

//go:wasmexport call
func call() int32 {
	var req struct {
		Params struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		} `json:"params"`
	}
	if err := pdk.InputJSON(&req); err != nil {
		pdk.SetError(err)
		return 1
	}
	text := ""
	switch req.Params.Name {
	case "user_notify_tools":
		notifyToolListChanged()
		text = "notified"
	case "user_roots":
		text = answer(listRoots())
	case "user_log":
		notifyLoggingMessage(send(map[string]any{"level": "warning", "logger": "hyperuser", "data": "careful now"}))
		notifyProgress(send(map[string]any{"progressToken": "ignored", "progress": 1, "total": 2, "message": "half way"}))
		notifyResourceUpdated(send(map[string]any{"uri": "file:///work/project/notes.txt"}))
		text = "logged"
	case "user_ask":
		prompt, _ := req.Params.Arguments["prompt"].(string)
		text = answer(createMessage(send(map[string]any{
			"maxTokens": 50,
			"messages":  []map[string]any{{"role": "user", "content": map[string]string{"type": "text", "text": prompt}}},
		})))
	case "user_confirm":
		text = answer(createElicitation(send(map[string]any{
			"message":         "Proceed?",
			"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]string{"type": "boolean"}}},
			"timeout":         30,
		})))
	default:
		pdk.SetErrorString("unknown tool " + req.Params.Name)
		return 1
	}
	out, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": text}}})
	pdk.Output(out)
	return 0
}

func main() {}
