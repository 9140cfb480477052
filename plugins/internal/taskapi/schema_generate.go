//go:build !wasip1

package taskapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/plugboard/plugboard/abi/tasks"
)

// Schema generation is native only (its tests regenerate schemas_gen.go):
// the plugins embed the generated schemas and link neither jsonschema-go
// nor this code (issue 15).

// ---- generation (tests only: go test -run TestSchemasUpToDate -update) ----

// typeSchemas are the schemas of the enum types of abi/tasks.
func typeSchemas() map[reflect.Type]*jsonschema.Schema {
	return map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[TaskStatus]():    enum(taskStatuses...),
		reflect.TypeFor[AttemptState]():  enum(attemptStates...),
		reflect.TypeFor[RunReason]():     enum(tasks.RunSetupScript, tasks.RunCleanupScript, tasks.RunCodingAgent, tasks.RunDevServer),
		reflect.TypeFor[ProcessStatus](): enum(tasks.ProcessRunning, tasks.ProcessCompleted, tasks.ProcessFailed, tasks.ProcessKilled),
		reflect.TypeFor[Channel]():       enum(ChannelNormalized, ChannelRaw),
		reflect.TypeFor[EntryType](): enum(tasks.EntryUserMessage, tasks.EntryAssistantMessage, tasks.EntryToolUse, tasks.EntryThinking,
			tasks.EntrySystemMessage, tasks.EntryErrorMessage),
		reflect.TypeFor[Stream]():               enum(tasks.StreamStdout, tasks.StreamStderr),
		reflect.TypeFor[Action]():               enum(ActionSend, ActionQueue, ActionCancel),
		reflect.TypeFor[FileStatus]():           enum(tasks.FileAdded, tasks.FileModified, tasks.FileDeleted, tasks.FileRenamed),
		reflect.TypeFor[Encoding]():             enum(tasks.EncodingUTF8, tasks.EncodingBase64),
		reflect.TypeFor[ChangesBlockedReason](): enum(ReasonSummaryFailed, ReasonThresholdExceeded),
		reflect.TypeFor[PatchBlockedReason](): enum(ReasonSizeExceeded, ReasonTooManyPaths, ReasonPathOutsideWorkspace,
			ReasonThresholdExceeded, ReasonSummaryFailed),
		reflect.TypeFor[FileBlockedReason](): enum(ReasonPathOutsideWorkspace, ReasonSizeExceeded),
		reflect.TypeFor[BlockedCode]():       enum(CodeBlockedGuardrails),
		reflect.TypeFor[MergedVia]():         enum(tasks.MergedViaWorktree, tasks.MergedViaRef, tasks.MergedViaUpToDate),
		reflect.TypeFor[Delivery]():          enum(ActionSend, ActionQueue),
		// Log entry metadata is passed through as the board stores it.
		reflect.TypeFor[json.RawMessage](): {Type: "object"},
	}
}

// The values of TaskStatus and AttemptState.
var (
	taskStatuses  = []string{tasks.StatusTodo, tasks.StatusInProgress, tasks.StatusInReview, tasks.StatusDone, tasks.StatusCancelled}
	attemptStates = []string{tasks.StateIdle, tasks.StateRunning, tasks.StateCompleted, tasks.StateFailed}
)

// enum is the schema of a string enum.
func enum(values ...string) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string"}
	for _, v := range values {
		s.Enum = append(s.Enum, v)
	}
	return s
}

// schemaPatch adds to an inferred schema what inference cannot express.
type schemaPatch func(s *jsonschema.Schema)

// requestIDBounds matches the host's idempotency key: 1-128 characters.
func requestIDBounds(s *jsonschema.Schema) {
	s.Properties["request_id"].MinLength = jsonschema.Ptr(1)
	s.Properties["request_id"].MaxLength = jsonschema.Ptr(128)
}

func nonEmpty(s *jsonschema.Schema, fields ...string) {
	for _, f := range fields {
		s.Properties[f].MinLength = jsonschema.Ptr(1)
	}
}

func bounds(s *jsonschema.Schema, field string, min float64, def string) {
	p := s.Properties[field]
	p.Minimum = jsonschema.Ptr(min)
	if def != "" {
		p.Default = json.RawMessage(def)
	}
}

func defaultValue(s *jsonschema.Schema, field, def string) {
	s.Properties[field].Default = json.RawMessage(def)
}

// logic sets the root's not/if/then/else from a JSON snippet. Only these
// keywords combine fields at the root: clients that hand tool schemas to
// the Anthropic API have a tool refused for a root oneOf, anyOf or allOf.
func logic(s *jsonschema.Schema, snippet string) {
	var x jsonschema.Schema
	if err := json.Unmarshal([]byte(snippet), &x); err != nil {
		panic(fmt.Sprintf("taskapi: schema snippet: %v", err))
	}
	s.Not, s.If, s.Then, s.Else = x.Not, x.If, x.Then, x.Else
}

// inputPatches holds each tool's input schema additions: bounds and
// defaults that match the board's, and the rules of abi.Rule in schema
// form.
func inputPatches() map[string]schemaPatch {
	return map[string]schemaPatch{
		"list_tasks": func(s *jsonschema.Schema) { bounds(s, "limit", 1, "50") },
		"tail_attempt_logs": func(s *jsonschema.Schema) {
			defaultValue(s, "channel", `"normalized"`)
			bounds(s, "limit", 1, "50")
			bounds(s, "cursor", 0, "")
			bounds(s, "after_entry_index", -1, "")
			logic(s, `{"not": {
				"description": "never cursor together with after_entry_index: one pagination mode per call",
				"required": ["cursor", "after_entry_index"]}}`)
		},
		"tail_session_messages": func(s *jsonschema.Schema) {
			bounds(s, "limit", 1, "20")
			bounds(s, "cursor", 0, "")
			bounds(s, "after_turn_index", -1, "")
			logic(s, `{
				"not": {
					"description": "never attempt_id together with session_id, nor cursor together with after_turn_index",
					"anyOf": [{"required": ["attempt_id", "session_id"]}, {"required": ["cursor", "after_turn_index"]}]},
				"if": {"required": ["session_id"]},
				"else": {"description": "without session_id, attempt_id is required", "required": ["attempt_id"]}}`)
		},
		"create_task": func(s *jsonschema.Schema) {
			nonEmpty(s, "title")
			requestIDBounds(s)
		},
		"update_task": func(s *jsonschema.Schema) { nonEmpty(s, "title") },
		"start_task_attempt": func(s *jsonschema.Schema) {
			nonEmpty(s, "executor", "variant")
			s.Properties["repos"].MinItems = jsonschema.Ptr(1)
			requestIDBounds(s)
		},
		"follow_up": func(s *jsonschema.Schema) {
			nonEmpty(s, "prompt", "variant")
			requestIDBounds(s)
			logic(s, `{
				"not": {"description": "never attempt_id together with session_id", "required": ["attempt_id", "session_id"]},
				"if": {"required": ["action"], "properties": {"action": {"const": "cancel"}}},
				"then": {
					"description": "action=cancel: attempt_id or session_id; no prompt, variant or request_id",
					"anyOf": [{"required": ["attempt_id"]}, {"required": ["session_id"]}],
					"not": {"anyOf": [{"required": ["prompt"]}, {"required": ["variant"]}, {"required": ["request_id"]}]}},
				"else": {
					"description": "action=send or queue: attempt_id or session_id, and prompt",
					"anyOf": [{"required": ["attempt_id"]}, {"required": ["session_id"]}],
					"required": ["prompt"]}}`)
		},
		"stop_attempt":        func(s *jsonschema.Schema) { defaultValue(s, "force", "false") },
		"get_attempt_changes": func(s *jsonschema.Schema) { defaultValue(s, "force", "false") },
		"get_attempt_patch": func(s *jsonschema.Schema) {
			s.Properties["paths"].MinItems = jsonschema.Ptr(1)
			s.Properties["paths"].Items.MinLength = jsonschema.Ptr(1)
			defaultValue(s, "force", "false")
			// No maximum: a max_bytes over the cap is answered blocked
			// (size_exceeded) with a hint, as the spec asks.
			bounds(s, "max_bytes", 1, "204800")
		},
		"get_attempt_file": func(s *jsonschema.Schema) {
			nonEmpty(s, "path")
			bounds(s, "start", 0, "0")
			bounds(s, "max_bytes", 1, "65536")
		},
		"review_queue": func(s *jsonschema.Schema) { bounds(s, "limit", 1, "20") },
		"request_changes": func(s *jsonschema.Schema) {
			nonEmpty(s, "feedback")
			requestIDBounds(s)
		},
	}
}

// outputPatches holds each tool's output schema additions: enums of fields
// that are plain strings in Go (see tasks.StatusOut.State).
func outputPatches() map[string]schemaPatch {
	return map[string]schemaPatch{
		"get_attempt_status": func(s *jsonschema.Schema) { s.Properties["state"].Enum = enum(attemptStates...).Enum },
	}
}

// generateSchemas returns the schemas of every registered tool.
func generateSchemas() (map[string]toolSchemas, error) {
	inPatches, outPatches := inputPatches(), outputPatches()
	out := map[string]toolSchemas{}
	for _, t := range registered {
		in, err := generateSchema(t.in, true, inPatches[t.name])
		if err != nil {
			return nil, fmt.Errorf("%s input: %w", t.name, err)
		}
		o, err := generateSchema(t.out, false, outPatches[t.name])
		if err != nil {
			return nil, fmt.Errorf("%s output: %w", t.name, err)
		}
		out[t.name] = toolSchemas{strings.TrimSpace(string(in)), strings.TrimSpace(string(o))}
	}
	for side, patches := range map[string]map[string]schemaPatch{"input": inPatches, "output": outPatches} {
		for name := range patches {
			if _, ok := out[name]; !ok {
				return nil, fmt.Errorf("%s patch for unregistered tool %q", side, name)
			}
		}
	}
	return out, nil
}

// generateSchema infers t's schema with the named types' schemas, adjusts
// nullability (inputs: an absent field is never null; outputs: arrays are
// never null, handlers return empty ones), opens outputs (openOutput) and
// applies patch.
func generateSchema(t reflect.Type, input bool, patch schemaPatch) ([]byte, error) {
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: typeSchemas()})
	if err != nil {
		return nil, err
	}
	adjust(s, input)
	if input {
		limitStrings(s, "")
	} else if err := openOutput(s, ""); err != nil {
		return nil, err
	}
	if s.Properties == nil {
		// Some clients want properties even on a tool without arguments.
		s.Properties = map[string]*jsonschema.Schema{}
	}
	if patch != nil {
		patch(s)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// uuidPattern is the form of every *_id argument except request_id.
const uuidPattern = `^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`

// maxLengths bounds the free-text arguments by name; any other string gets
// defaultMaxLength. Without bounds, a megabyte title would reach the board
// host call and come back resource_exhausted instead of a clear
// invalid_argument from the schema.
var maxLengths = map[string]int{
	"title":         500,
	"description":   65536,
	"prompt":        262144,
	"feedback":      262144,
	"path":          4096,
	"paths[]":       4096,
	"executor":      64,
	"variant":       64,
	"target_branch": 255,
}

const defaultMaxLength = 4096

// limitStrings gives every string argument a maximum length, and every id
// argument the uuid format and the UUID pattern, recursively (name is the property's name, with
// "[]" for array items).
func limitStrings(s *jsonschema.Schema, name string) {
	if s == nil {
		return
	}
	if s.Type == "string" && s.Enum == nil && s.Const == nil {
		base := name
		if i := strings.LastIndex(base, "."); i >= 0 {
			base = base[i+1:]
		}
		switch {
		case strings.HasSuffix(base, "_id") && base != "request_id":
			s.Format = "uuid"
			s.Pattern = uuidPattern
			s.MaxLength = jsonschema.Ptr(36)
		case s.MaxLength == nil:
			max, ok := maxLengths[base]
			if !ok {
				max = defaultMaxLength
			}
			s.MaxLength = jsonschema.Ptr(max)
		}
	}
	for prop, p := range s.Properties {
		limitStrings(p, prop)
	}
	limitStrings(s.Items, name+"[]")
}

func adjust(s *jsonschema.Schema, input bool) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" && (input || s.Types[1] == "array") {
		s.Type, s.Types = s.Types[1], nil
	}
	if slices.Contains(s.Types, "null") && s.Enum != nil {
		s.Enum = append(s.Enum, nil)
	}
	for _, p := range s.Properties {
		adjust(p, input)
	}
	adjust(s.Items, input)
	adjust(s.AdditionalProperties, input)
}

// formatWords are the words a description must contain for its field's
// format to be dropped from an output schema.
var formatWords = map[string]string{"uuid": "UUID", "date-time": "RFC3339"}

// openOutput removes from an output schema, recursively, the keywords that
// only restrict what the server sends and that clients pay for at every
// tools/list (docs/DECISIONS.md, "Output schemas are open and say formats
// in words"): additionalProperties false, so a result may gain fields, and
// format, which the field's description must then state in words. Ids and
// times are plain strings in Go (abi/tasks), so their format comes from
// their name (impliedFormat) and must be stated in words too (name is the
// property's path, for the error; array items, which have no description,
// are described by their array's).
func openOutput(s *jsonschema.Schema, name string) error { return openOutputIn(s, name, "") }

// impliedFormat is the format an output string's name implies: uuid for an
// id (*_id, *_ids[]), date-time for a time (*_at, timestamp); "" for any
// other name.
func impliedFormat(name string) string {
	base := strings.TrimSuffix(name[strings.LastIndex(name, ".")+1:], "[]")
	switch {
	case strings.HasSuffix(base, "_id") || strings.HasSuffix(base, "_ids"):
		return "uuid"
	case strings.HasSuffix(base, "_at") || base == "timestamp":
		return "date-time"
	}
	return ""
}

func openOutputIn(s *jsonschema.Schema, name, arrayDescription string) error {
	if s == nil {
		return nil
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Not != nil && reflect.ValueOf(*s.AdditionalProperties.Not).IsZero() {
		s.AdditionalProperties = nil
	}
	format := s.Format
	if format == "" && (s.Type == "string" || slices.Contains(s.Types, "string")) {
		format = impliedFormat(name)
	}
	if format != "" {
		d := s.Description
		if d == "" {
			d = arrayDescription
		}
		word, ok := formatWords[format]
		if !ok || !strings.Contains(d, word) {
			return fmt.Errorf("output field %s has format %q; its description must say %q (%q)", name, format, word, d)
		}
		s.Format = ""
	}
	for prop, p := range s.Properties {
		if err := openOutputIn(p, name+"."+prop, ""); err != nil {
			return err
		}
	}
	if err := openOutputIn(s.Items, name+"[]", s.Description); err != nil {
		return err
	}
	return openOutputIn(s.AdditionalProperties, name+"{}", "")
}
