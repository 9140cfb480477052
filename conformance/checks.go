package conformance

// Severity says whether a failed check fails the run (error) or is reported
// only (warning; --strict makes warnings fail too; advice, a house rule
// for a plugin not held to the house profile, never fails).
type Severity string

// Severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Check documents one check: its stable id, the severity of its failures,
// the profile whose rule it is and what it verifies. Some checks report a
// lesser problem of their kind as a warning (their Doc says when). A house
// check's failures are advice for a plugin held to the base profile only.
type Check struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	// PerTool is true when the check runs once per tool, false when once per
	// plugin.
	PerTool bool    `json:"per_tool"`
	Profile Profile `json:"profile"`
	Doc     string  `json:"doc"`
}

// Check ids. They are stable: tools and CI configurations match on them.
const (
	CheckWasm            = "abi.wasm"
	CheckExports         = "abi.exports"
	CheckImports         = "abi.imports"
	CheckInstantiate     = "abi.instantiate"
	CheckDescribe        = "abi.describe"
	CheckManifest        = "abi.manifest"
	CheckVersion         = "abi.version"
	CheckManifestSection = "abi.manifest_section"
	CheckCapabilityUse   = "abi.capability_use"

	CheckCapabilities      = "surface.capabilities"
	CheckToolName          = "surface.tool_name"
	CheckDescription       = "surface.description"
	CheckDescriptionFields = "surface.description_fields"
	CheckInputSchema       = "surface.input_schema"
	CheckSchemaKeywords    = "surface.schema_keywords"
	CheckOutputSchema      = "surface.output_schema"
	CheckInputDescribed    = "surface.input_fields_described"
	CheckOutputDescribed   = "surface.output_fields_described"
	CheckRules             = "surface.rules"
	CheckRulesDeclared     = "surface.rules_declared"
	CheckRootCombinator    = "surface.root_combinator"
	CheckUnknownFields     = "surface.unknown_fields"
	CheckIdempotency       = "surface.idempotency"

	CheckInvalid  = "behaviour.invalid"
	CheckValid    = "behaviour.valid"
	CheckOutput   = "behaviour.output"
	CheckSize     = "behaviour.size"
	CheckDeadline = "behaviour.deadline"
	CheckFuzz     = "behaviour.fuzz"
	CheckCodes    = "behaviour.codes"
	CheckConfig   = "behaviour.config"

	CheckSandboxProbe = "sandbox.probe"
	CheckSandboxReach = "sandbox.reach"
)

// Checks lists every check in report order.
var Checks = []Check{
	{CheckWasm, SeverityError, false, ProfileBase,
		"the file is a WebAssembly 1.0 binary whose type, import, function and export sections parse"},
	{CheckExports, SeverityError, false, ProfileBase,
		"describe and call are exported as functions of type () -> i32; memory is exported; _initialize, if exported, is () -> (); " +
			"a command module (_start exported) is not refused: the host never runs _start but calls the exports directly, so such a module " +
			"works exactly when its exports work without it (TinyGo's //export functions can; Go's go:wasmexport functions cannot, which abi.describe explains); " +
			"plugboard_buffer (i32) -> i32 and plugboard_call (i32) -> i64 come as a pair. A hyper-mcp v2 plugin (list_tools and call_tool " +
			"exported, describe not) is checked by its own interface: list_tools, call_tool and each optional v2 export it has " +
			"(list_resources, read_resource, …) are () -> i32 instead of describe and call, and the pair is not checked (the host never calls it there)"},
	{CheckImports, SeverityError, false, ProfileBase,
		"every import is a function from wasi_snapshot_preview1, extism:host/env, plugboard:host/v1 or extism:host/user (hyper-mcp's " +
			"MCP-client functions) that the host's runtime really " +
			"provides with that signature (each import is linked on its own against the host's engine); no memory, table or global " +
			"imports; plugboard:host/v1.yield is reserved for the host's loop instrumentation"},
	{CheckInstantiate, SeverityError, false, ProfileBase,
		"the module compiles in the host's runtime (after loop instrumentation) and an instance starts (_initialize runs) within the deadline"},
	{CheckDescribe, SeverityError, false, ProfileBase,
		"the describe export answers, within the deadline, JSON that decodes as a manifest; for a hyper-mcp v2 plugin its lists stand " +
			"for describe (list_tools, and list_resources, list_resource_templates and list_prompts where exported), as the host reads them; " +
			"a failure a module's shape explains (a Go command module whose runtime only _start initialises) says so"},
	{CheckManifest, SeverityError, false, ProfileBase,
		"the manifest the host serves (the embedded section, else describe's answer or a v2 plugin's lists) passes abi.Manifest.Validate: tools, names, " +
			"descriptions, object input schemas, idempotency key, timeout, rules, when"},
	{CheckVersion, SeverityError, false, ProfileBase,
		"the manifest's abi is one this host supports (at most abi.Version); a manifest without abi (an Extism MCP plugin) is a " +
			"house-rule warning; " +
			"not applicable to a hyper-mcp v2 plugin whose manifest names none (its interface has no ABI version)"},
	{CheckManifestSection, SeverityError, false, ProfileBase,
		"the embedded plugboard.manifest section is JSON equal to what describe returns (after the defaults plugin build fills in: " +
			"plugin name, abi); a module without the section is a house-rule warning (the host must compile it and run describe at load time); " +
			"not applicable to a hyper-mcp v2 plugin without one (its build embeds none), and one with a section is compared with its lists"},
	{CheckCapabilityUse, SeverityWarning, false, ProfileBase,
		"capabilities match the imports: a plugin importing plugboard:host/v1.board declares a capability (else every board call is " +
			"permission_denied), and one declaring board capabilities imports board (least privilege: declare only what you use); " +
			"extism:host/user's create_message and create_elicitation count as sampling and elicitation"},
	{CheckCapabilities, SeverityError, false, ProfileBase,
		"every declared capability is one the host knows (abi: board.read, board.write, board.control, workspace.read)"},
	{CheckToolName, SeverityError, true, ProfileBase,
		"the tool name is 1-128 of [A-Za-z0-9_.-] and unique within the plugin"},
	{CheckDescription, SeverityError, true, ProfileHouse,
		"the description follows the template: lines starting Use when:, Required:, Optional:, Next:, Avoid:, in that order, each with text"},
	{CheckDescriptionFields, SeverityWarning, true, ProfileHouse,
		"the Required: line names every required input field, and Required: or Optional: names every other input field"},
	{CheckInputSchema, SeverityError, true, ProfileBase,
		"the inputSchema is a JSON Schema (2020-12, or draft-07 when $schema says so) that github.com/google/jsonschema-go resolves, " +
			"with top-level type object, known type names, and required fields that are properties when additionalProperties is false"},
	{CheckSchemaKeywords, SeverityWarning, true, ProfileBase,
		"no keyword in the input or output schema is unknown to JSON Schema 2020-12 (a misspelt keyword is silently ignored by validators)"},
	{CheckOutputSchema, SeverityError, true, ProfileHouse,
		"an outputSchema is declared, resolves, and has top-level type object (MCP clients validate structuredContent against it)"},
	{CheckInputDescribed, SeverityError, true, ProfileHouse,
		"every input field has a description: nested objects, array items, additionalProperties, $defs, oneOf/anyOf/allOf branches, " +
			"if/then/else and not included; a field described once at its path counts everywhere it reappears"},
	{CheckOutputDescribed, SeverityError, true, ProfileHouse,
		"every output field has a description (as for input fields)"},
	{CheckRules, SeverityError, true, ProfileBase,
		"the inputSchema rejects what each declared abi.Rule rejects: instances violating each rule (in each of its modes) are built " +
			"from a valid instance and validated against the schema; any form counts (oneOf, or a root if/then/else plus not)"},
	{CheckRulesDeclared, SeverityWarning, true, ProfileHouse,
		"fields the schema's root not forbids together (not.required, not.anyOf[].required) have an abi.Rule, so agents get a precise " +
			"code and hint instead of a generic invalid_argument"},
	{CheckRootCombinator, SeverityWarning, true, ProfileBase,
		"the inputSchema has no oneOf, anyOf or allOf at its root: the Anthropic API refuses such tools (\"input_schema does not " +
			"support oneOf, allOf, or anyOf at the top level\") and that fails every request of the session"},
	{CheckUnknownFields, SeverityWarning, true, ProfileHouse,
		"the inputSchema refuses unknown fields (additionalProperties: false), so a misspelt optional argument is an error, not ignored"},
	{CheckIdempotency, SeverityError, true, ProfileBase,
		"a declared idempotency key field is a string property of the inputSchema"},
	{CheckInvalid, SeverityError, true, ProfileBase,
		"invalid arguments derived from the schema (each required field missing, each typed property given another type, an unknown " +
			"field, each rule and root not violated) are answered with an envelope carrying a code and a hint, never plugin_failed, " +
			"plugin_timeout or internal"},
	{CheckValid, SeverityError, true, ProfileBase,
		"a minimal valid instance derived from the schema is answered with a result or an envelope (board calls answer unavailable: " +
			"the kit runs without a board), never a crash (a trap or panic: plugin_failed, or internal); for a plugin not held to the " +
			"house rules an Extism error status with a message is a refusal, not a crash, as the host answers it; a schema the kit " +
			"cannot derive an instance from is a warning"},
	{CheckOutput, SeverityError, true, ProfileBase,
		"every successful result carries structuredContent that validates against the outputSchema"},
	{CheckSize, SeverityError, true, ProfileBase,
		"answers stay within the host's caps (4 MiB output, 1 MiB host call, memory limit): resource_exhausted on a derived " +
			"(small) input is an error, on a fuzzed one a warning"},
	{CheckDeadline, SeverityError, true, ProfileBase,
		"every call finishes within the tool's deadline (its timeout_ms, at most --call-timeout, or the plugin's call_timeout setting): " +
			"plugin_timeout is a failure; on fuzzed arguments it is a warning for a plugin not held to the house rules (the host cut " +
			"the call off, and a tool told to wait 2^53 ms does what it was asked)"},
	{CheckFuzz, SeverityError, true, ProfileBase,
		"seeded random arguments derived from the schema (unicode and huge strings, numbers at the edges, nulls, wrong types, " +
			"deep nesting, unknown fields) never crash the plugin or the host: a trap or panic (plugin_failed) or internal is a failure; " +
			"a refusal is not (see behaviour.valid)"},
	{CheckCodes, SeverityError, true, ProfileBase,
		"envelopes the plugin produces carry a registered code (abi.Codes) and a message"},
	{CheckConfig, SeverityError, true, ProfileBase,
		"no call stops for configuration the operator has not set: the host knows when a plugin asked config_get for a key that is " +
			"not set and failed (details.missing_config, a hint naming plugins.settings.PLUGIN.config.KEY); such a tool is not " +
			"judged broken but the plugin's verdict is needs configuration: KEY, and its further fuzzing is skipped; " +
			"--config FILE gives the plugins.settings serve would"},
	{CheckSandboxProbe, SeverityError, false, ProfileBase,
		"a probe module built into the kit, compiled and instantiated by the same engine (hence the same sandbox configuration) as the " +
			"plugin, finds no preopened directory (fd_prestat_get on fds 3-63), no open descriptor beyond stdio (fd_fdstat_get on 3-63), " +
			"an empty environment and argument list, path_open failing on every descriptor, and sock_accept failing on every descriptor. " +
			"It checks the host, which every plugin runs under; a failure is a host bug, not the plugin's"},
	{CheckSandboxReach, SeverityWarning, false, ProfileBase,
		"the plugin imports no WASI function that only works with ambient access (path_*, fd_readdir, sock_*): in plugboard such " +
			"calls always fail, so a tool relying on them cannot work"},
}

var checkIndex = func() map[string]Check {
	m := map[string]Check{}
	for _, c := range Checks {
		m[c.ID] = c
	}
	return m
}()

// LookupCheck returns the documentation of a check id.
func LookupCheck(id string) (Check, bool) {
	c, ok := checkIndex[id]
	return c, ok
}
