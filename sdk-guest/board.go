package sdk

import (
	"encoding/json"

	"github.com/plugboard/plugboard/abi"
)

// Board calls a task-board operation (see abi.BoardOps) with args and
// decodes its result into out (a pointer; *json.RawMessage keeps the JSON
// as it came). An expected failure comes back as an *abi.Envelope, which a
// handler can return unchanged to hand the agent the board's code and
// hint. The plugin must declare the operation's capability with Require.
func (c *Call) Board(op string, args any, out any) error {
	req, err := json.Marshal(abi.BoardRequest{Op: op, Args: args})
	if err != nil {
		return abi.NewEnvelope(abi.CodeInvalidArgument, "board "+op+": arguments are not JSON: "+err.Error(), "")
	}
	resp := hostBoard(req)
	if resp == nil {
		return abi.NewEnvelope(abi.CodeInternal, "board "+op+": the host returned nothing", "retry the call")
	}
	var hr abi.HostResponse
	if err := json.Unmarshal(resp, &hr); err != nil {
		return abi.NewEnvelope(abi.CodeInternal, "board "+op+": unreadable host response: "+err.Error(), "retry the call")
	}
	if hr.Error != nil {
		return hr.Error
	}
	if out == nil {
		return nil
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], hr.Result...)
		return nil
	}
	if err := json.Unmarshal(hr.Result, out); err != nil {
		return abi.NewEnvelope(abi.CodeInternal, "board "+op+": result does not decode: "+err.Error(), "")
	}
	return nil
}
