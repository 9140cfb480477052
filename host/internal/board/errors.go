package board

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/store"
)

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// requireID checks that field holds a UUID, naming the tool that lists
// valid values in the hint.
func requireID(field, value, listTool string) error {
	if value == "" {
		return abi.NewEnvelope(abi.CodeMissingRequired, field+" is required", "pass "+field+" from "+listTool).
			WithDetail("field", field)
	}
	if !uuidPattern.MatchString(value) {
		return abi.NewEnvelope(abi.CodeInvalidArgument, fmt.Sprintf("%s %q is not a UUID", field, value),
			"pass a "+field+" returned by "+listTool).WithDetail("field", field)
	}
	return nil
}

// notFound turns a store ErrNotFound into the agent's not_found envelope.
func notFound(err error, kind, field, id, listTool string) error {
	if errors.Is(err, store.ErrNotFound) {
		return abi.NewEnvelope(abi.CodeNotFound, fmt.Sprintf("no %s with id %s", kind, id),
			"call "+listTool+" for valid "+field+" values").WithDetail("field", field).WithDetail(field, id)
	}
	return err
}

func invalid(field, message, hint string) *abi.Envelope {
	return abi.NewEnvelope(abi.CodeInvalidArgument, message, hint).WithDetail("field", field)
}
