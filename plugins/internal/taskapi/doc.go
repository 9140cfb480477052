// Package taskapi is the agent-facing surface of the first-party task tools:
// every tool's input and output types (defined in abi/tasks, field
// descriptions in jsonschema tags; types.go names them here), its description in the Use when/Required/Optional/Next/Avoid
// template, annotations, mode rules, and the handler that maps the input to
// a board operation (abi.BoardOps) and the board's answer to the output.
//
// The four task plugins are thin main packages over it, one per capability:
// tasks-read ([RegisterRead]), tasks-write ([RegisterWrite]), tasks-control
// ([RegisterControl]) and tasks-workspace ([RegisterWorkspace]).
//
// Input and output schemas are generated from the types plus what inference
// cannot express (enums, the uuid format and pattern of *_id arguments,
// bounds, defaults, exclusive fields, the follow_up modes; see typeSchemas,
// limitStrings, inputPatches and outputPatches) into schemas_gen.go, so a plugin pays nothing at
// start-up to build them. After changing a type or a patch, regenerate with
//
//	go test ./plugins/internal/taskapi -run TestSchemasUpToDate -update
//
// Input schemas use no oneOf/anyOf/allOf at the top level (clients that pass
// tool schemas to the Anthropic API have such tools refused): exclusive
// fields are a top-level not, modes a top-level if/then/else. The same
// constraints are declared as abi.Rule so the host reports them with their
// precise codes (ambiguous_target, mixed_pagination, missing_required).
//
// Output schemas are open and say formats in words (openOutput): objects
// accept fields they do not list, and an id or time field (by its name:
// *_id, *_ids, *_at, timestamp) carries no format; generation refuses a
// description that does not say "(UUID)" or "(RFC3339)" instead.
//
// The package must not import host/...: plugins compile to wasip1. The host's
// board answers with the same abi/tasks types, so nothing is mirrored here.
package taskapi
