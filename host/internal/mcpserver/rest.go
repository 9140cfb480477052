package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/tracing"
)

// MaxRESTBody caps the body of a REST call.
const MaxRESTBody = 4 << 20

// RESTRequest is the body of POST ExecutePath.
type RESTRequest struct {
	// AgentID must be the identity the request authenticated as (its
	// bearer token's agent; the server's own identity without a token).
	AgentID string `json:"agentId"`
	// ToolName is a tool's name or one of its aliases (mcp__mail__send).
	ToolName string          `json:"toolName"`
	Input    json.RawMessage `json:"input,omitempty"`
}

// RESTResponse is the answer of POST ExecutePath: Data on success (the
// tool's structured result, else {"content": [...]}), Error (the envelope)
// otherwise.
type RESTResponse struct {
	Success   bool            `json:"success"`
	Data      json.RawMessage `json:"data,omitempty"`
	Error     *abi.Envelope   `json:"error,omitempty"`
	Timestamp string          `json:"timestamp"`
}

// REST returns the handler of POST ExecutePath: one tool call, by name or
// alias, through the same dispatcher pipeline as an MCP tools/call (caller
// policy, validation, idempotency by the request_id inside input, retries,
// audit). The caller is the request's authenticated identity mapped by
// opts.Callers, or opts.Caller without authentication; agentId must name
// it (403 otherwise). A call the pipeline ran answers 200, success or not;
// a malformed request 400 and a wrong method 405, all with the envelope in
// error.
func REST(d *dispatch.Dispatcher, opts Options) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeREST(w, http.StatusMethodNotAllowed, nil, abi.NewEnvelope(abi.CodeInvalidArgument,
				r.Method+" is not allowed on "+ExecutePath, "POST a JSON body {agentId, toolName, input}"))
			return
		}
		var extra *mcp.RequestExtra
		if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
			extra = &mcp.RequestExtra{TokenInfo: ti}
		}
		c := CallerOf(extra, opts)
		var body RESTRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxRESTBody))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil {
			status := http.StatusBadRequest
			if _, tooBig := errors.AsType[*http.MaxBytesError](err); tooBig {
				status = http.StatusRequestEntityTooLarge
			}
			writeREST(w, status, nil, abi.NewEnvelope(abi.CodeInvalidArgument, "the body is not a REST call: "+err.Error(),
				`send {"agentId": ID, "toolName": NAME, "input": {...}}`))
			return
		}
		// Every missing field, in a fixed order: ranging over a map named a
		// random one of two, so the same request got different answers.
		var missing []string
		for _, f := range []struct{ name, value string }{{"agentId", body.AgentID}, {"toolName", body.ToolName}} {
			if f.value == "" {
				missing = append(missing, f.name)
			}
		}
		if len(missing) > 0 {
			msg := strings.Join(missing, " and ") + " is required"
			if len(missing) > 1 {
				msg = strings.Join(missing, " and ") + " are required"
			}
			env := abi.NewEnvelope(abi.CodeMissingRequired, msg, `send {"agentId": ID, "toolName": NAME, "input": {...}}`)
			writeREST(w, http.StatusBadRequest, nil, env.WithDetail("field", missing[0]).WithDetail("fields", missing))
			return
		}
		if c == nil || c.ID != body.AgentID {
			id := ""
			if c != nil {
				id = c.ID
			}
			env := abi.NewEnvelope(abi.CodePermissionDenied,
				fmt.Sprintf("agentId %q is not the identity this request authenticated as (%q)", body.AgentID, id),
				"send the agentId of the agent whose bearer token you use")
			env.Details = map[string]any{"agent_id": body.AgentID, "authenticated_as": id}
			recordMismatch(r.Context(), opts.Auditor, c, body.ToolName, env)
			writeREST(w, http.StatusForbidden, nil, env)
			return
		}
		input := body.Input
		if len(input) == 0 || string(input) == "null" {
			input = json.RawMessage("{}")
		}
		// The call's span is a child of the caller's traceparent header.
		ctx := r.Context()
		if opts.Tracer.On() {
			ctx = tracing.Extract(ctx, nil, r.Header)
		}
		res := d.Call(ctx, dispatch.Request{Tool: body.ToolName, Arguments: input, Caller: c})
		if res.IsError() {
			writeREST(w, http.StatusOK, nil, res.Envelope)
			return
		}
		data := res.Structured
		if len(data) == 0 {
			data, _ = json.Marshal(map[string]any{"content": res.Content})
		}
		writeREST(w, http.StatusOK, data, nil)
	})
}

func writeREST(w http.ResponseWriter, status int, data json.RawMessage, env *abi.Envelope) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(RESTResponse{Success: env == nil, Data: data, Error: env,
		Timestamp: time.Now().UTC().Format(time.RFC3339Nano)})
}

// recordMismatch writes a REST call whose agentId is not its identity to
// the decision log, under the identity that made it: an attempt to act as
// someone else is what an operator looks for first. The input is left out:
// the tool was never resolved, so which fields are sensitive is unknown.
func recordMismatch(ctx context.Context, a dispatch.Auditor, c *abi.Caller, tool string, env *abi.Envelope) {
	if a == nil {
		return
	}
	after := context.WithoutCancel(ctx)
	id := a.Invoked(after, dispatch.AuditCall{Caller: c, Tool: tool})
	a.Finished(after, id, dispatch.AuditOutcome{Envelope: env})
}
