// Package conformance owns checking a plugin against the ABI and the
// agent-UX rules: it takes any .wasm plugin, first-party or not, and reports
// every check it passes or fails, each failure with what is wrong and how to
// fix it. It must not modify plugins or serve traffic: it reads the file,
// runs it in a host engine of its own with a throwaway data directory and no
// task board (board calls answer unavailable, which is an envelope like any
// other), and writes a report.
//
// `plugboard conformance [--json | --junit FILE] [--strict] PLUGIN.wasm…`
// is its command; [Checks] lists every check with its id, severity and what
// it verifies. The checks come in four groups:
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
