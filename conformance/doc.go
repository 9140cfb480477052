// Package conformance owns checking a plugin against the ABI and the
// agent-UX rules: it takes any .wasm plugin, first-party or not, and reports
// every check it passes or fails, each failure with what is wrong and how to
// fix it, and a verdict. It must not modify plugins or serve traffic: it
// reads the file, runs it in a host engine of its own with a throwaway data
// directory and no task board (board calls answer unavailable, which is an
// envelope like any other), and writes a report.
//
// `plugboard conformance [--json | --junit FILE] [--strict] [--profile P]
// [--config FILE] PLUGIN.wasm…` is its command; [Checks] lists every check
// with its id, severity, profile and what it verifies.
//
// # Profiles
//
// What every MCP plugin must do is the base profile: load under the ABI it
// declares, list its tools, answer calls with valid MCP results, respect
// its schemas, behave under the sandbox. plugboard's agent-UX house rules —
// the Use when / Required / Optional / Next / Avoid description template,
// an outputSchema, a description on every field, declared rules, closed
// input schemas, an embedded manifest, a declared ABI version — are the
// house profile (Check.Profile, Result.Profile). A plugin held to the base
// profile gets every failed house rule as advice (SeverityAdvice), which
// never fails a run, --strict included, with a fix any PDK can apply; one
// held to the house profile gets them as the errors and warnings they are.
// --profile auto, the default, holds a plugin written for plugboard to the
// house rules — one built with plugboard's SDK (it exports the
// plugboard_buffer/plugboard_call pair), one importing plugboard:host/v1,
// or one whose describe declares an abi — and any other to the base; the
// abi `plugboard plugin build` records in a section does not count, since
// it records one for foreign plugins too. --profile house or base forces
// either. First-party plugins are held to the house profile, and pass it
// (firstparty_test.go).
//
// # Shapes
//
// The kit says which kind of module it saw (PluginReport.Shape, ShapeOf,
// which `plugboard plugin inspect` shares): a plugboard SDK plugin, an
// Extism MCP servlet (v1: describe and call), a hyper-mcp v2 plugin
// (list_tools and call_tool), or a plain Extism module; whether it is a
// command module (_start exported) or a reactor (_initialize); and the
// toolchain its producers section names. A command module is not refused:
// the runtime instantiates every module running _initialize alone, never
// _start, and calls the exports directly, so a command module works when
// its exports work without _start (TinyGo's //export functions can: see
// testdata/plugins/cmdmodule/tinystyle for the shape). Go's do not: Go
// initialises its runtime only in _start, which runs main and then exits,
// closing the instance, so every export traps — which abi.describe
// reports in those words, with the fix (-buildmode=c-shared), as inspect
// does and as serve's log shows.
//
// # Verdicts, settings and exit statuses
//
// Each plugin gets a Verdict: works; works with advice (warnings or
// advice); needs configuration: KEY (behaviour.config — a call stopped for
// a configuration value the operator has not set, which the host knows
// from the runtime's record of config_get misses and reports in the
// envelope: details.missing_config, and code unavailable with the
// plugin's own in details.plugin_code; the tool's fuzzing then waits);
// or broken: the first error (with --strict, a warning too). The run's
// verdict is the worst, and `plugboard conformance` exits with
// Report.ExitCode: 0 works, 1 broken, 2 misuse (flags, no plugin, a
// configuration file that does not load), 3 needs configuration. JSON
// (Report.WriteJSON) and JUnit XML (WriteJUnit: the verdict, shape and
// profile as each suite's properties, behaviour.config failures of type
// needs_configuration) carry the same.
//
// --config FILE (default $PLUGBOARD_CONFIG, as serve) gives the plugins the
// plugins.settings serve would — values from the environment and secret
// files resolved by host/config, converted by serve's own code
// (host.LoadSettings) and bound by the registry (plugin.LoadDirWith) —
// except the names tools are served under, which are the deployment's:
// the kit checks every tool under its manifest's name. Like serve, the kit
// describes a plugin without its settings, so a plugin whose describe
// needs configuration is broken, not waiting for it. The file's plugins
// section gives the limits of every plugin too (memory_limit_mib,
// max_instances, call_timeout unless --call-timeout is given). Two more
// settings make a plugin wait rather than fail: a plain Extism module is
// judged by the tools plugins.settings.NAME.tools describes (the manifest
// serve makes of them, plugin.PlainManifest), and needs configuration
// without them; a valid call refused its HTTP request for a host not in
// allowed_hosts needs that setting. --http-stand-in HOST=URL sends the
// requests a plugin may make to HOST to a test server instead
// (Options.HTTPStandIns): allowed_hosts still decide.
//
// An input schema the host cannot compile is judged as serve judges it
// (plugin.InputSchemaProblem, in serve's words): a tool refused is an
// error; one served with its arguments left to the plugin is a warning,
// and is called with {} since no arguments can be derived.
//
// The checks come in four groups:
//
//   - abi.*: the module's exports, its imports (each one linked for real
//     against the host's engine, so only functions the runtime provides, with
//     their signatures, pass), instantiation, describe, the manifest and its
//     ABI version, and the embedded manifest section against describe.
//   - surface.*: what an agent reads, per tool: the name, the Use when /
//     Required / Optional / Next / Avoid description template, schemas that
//     resolve with github.com/google/jsonschema-go (the host's validator),
//     a description on every input and output field, an outputSchema, the
//     declared abi.Rule mode rules expressed by the schema itself (checked
//     by behaviour: instances violating each rule must be refused by the
//     schema), and warnings for root oneOf/anyOf/allOf (which the Anthropic
//     API refuses) and for schemas accepting unknown fields.
//   - behaviour.*: calls through the host's real pipeline (registry,
//     dispatch, runtime): invalid arguments derived from the schema must get
//     an envelope with a code and a hint; a minimal valid instance a result
//     or an envelope; successful results must match the outputSchema; every
//     answer must stay within the caps and the deadline; and seeded fuzzed
//     arguments (edge values first, whatever the seed, then random ones)
//     must never crash the plugin or the host.
//   - sandbox.*: see below.
//
// # hyper-mcp v2 plugins
//
// A module exporting list_tools and call_tool but no describe speaks
// hyper-mcp's v2 interface, which the host serves unchanged
// (see plugin.HyperListTools). The kit checks it through that interface, with the
// same engine and pipeline, and adjusts only what is plugboard's own ABI:
//
//   - abi.exports wants list_tools, call_tool and any optional v2 export
//     as () -> i32 instead of describe and call, and not the
//     plugboard_buffer/plugboard_call pair (the host never calls it there);
//   - abi.describe runs the lists (plugin.Describe), from which the host
//     makes the manifest;
//   - abi.manifest_section, when the module has no section (hyper-mcp's
//     build embeds none), and abi.version, when the manifest names no ABI
//     (the lists carry none), are reported as not applicable
//     (StatusNotApplicable), each with why. A v2 plugin with a section
//     (built by plugboard plugin build) is checked on both as any other.
//
// Every surface, behaviour and sandbox check is the same for it.
//
// # The sandbox check
//
// A generic kit cannot know what a tool does, so it cannot make a tool try
// to escape; testing the sandbox through a plugin's own tools would prove
// nothing about tools that simply do not try. The kit therefore checks the
// sandbox structurally and with a probe of its own:
//
//   - abi.imports proves the plugin can reach the host only through
//     functions the host really provides;
//   - sandbox.probe compiles a small module built into the kit with the
//     same engine — hence the same instance configuration every plugin
//     instance gets — and has it ask WASI for preopened directories, open
//     descriptors, environment variables, arguments, path_open and
//     sock_accept: it must find nothing and every attempt must fail. A
//     failure is a host bug and is reported as such;
//   - sandbox.reach warns when a plugin imports WASI functions that only
//     work with ambient access (path_*, sock_*): they always fail under
//     plugboard, so such a tool cannot work as its author meant.
//
// The misbehaving plugin testdata/plugins/snoop (os.ReadFile, os.Getenv,
// net.Dial and raw path_open/sock_accept from inside a tool) is run through
// the host by this package's tests, which assert that every attempt fails
// inside the guest: that is the end-to-end proof the probe stands for.
package conformance
