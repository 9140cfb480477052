package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/plugin"
)

var (
	typeStatus = funcType{results: []byte{valI32}}        // () -> i32
	typeInit   = funcType{}                               // () -> ()
	typeBuffer = funcType{[]byte{valI32}, []byte{valI32}} // (i32) -> i32
	typeDirect = funcType{[]byte{valI32}, []byte{valI64}} // (i32) -> i64
)

// buildFix starts several fixes.
const buildFix = "build the plugin with `plugboard plugin build` "

// isHyperV2 is the host's rule (registry.IsHyperV2) read off the parsed
// module, so that the exports are checked against the interface the host
// will call even when the module does not compile: list_tools and call_tool
// exported as functions, describe not.
func isHyperV2(m *module) bool {
	fn := func(name string) bool {
		e, ok := m.export(name)
		return ok && e.kind == kindFunc
	}
	return !fn(abi.ExportDescribe) && fn(plugin.HyperListTools) && fn(plugin.HyperCallTool)
}

// hyperOptional are the optional exports of hyper-mcp's v2 interface, with
// the MCP method each serves.
var hyperOptional = []struct{ export, method string }{
	{plugin.HyperListResources, "resources/list"},
	{plugin.HyperListResourceTemplates, "resources/templates/list"},
	{plugin.HyperReadResource, abi.MethodResourcesRead},
	{plugin.HyperListPrompts, "prompts/list"},
	{plugin.HyperGetPrompt, abi.MethodPromptsGet},
	{plugin.HyperComplete, abi.MethodCompletionComplete},
}

// checkExports checks the exports the host calls. A hyper-mcp v2 plugin
// (hyper) legitimately differs from plugboard's ABI: the host calls
// list_tools, call_tool and whichever optional v2 export it finds, never
// describe, call or the plugboard_buffer/plugboard_call pair, so those are
// neither required nor checked; memory and _initialize are checked as for
// any plugin.
//
// _start is not a failure: the runtime instantiates every module running
// _initialize alone (runtime.Plugin.instantiate) and calls its exports
// directly, so a command module works exactly when its exports work
// without _start — TinyGo's //export functions can (TinyGo initialises
// most globals at compile time), Go's go:wasmexport functions (and
// TinyGo's) trap. Only running the module tells which, as serve does: the
// describe step and the calls judge it, and Shape.Diagnose names the
// cause when they fail for it.
func checkExports(rec *recorder, m *module, hyper bool) {
	want := func(name string, kind byte, t *funcType, why string) {
		e, ok := m.export(name)
		switch {
		case !ok:
			rec.fail(CheckExports, "", fmt.Sprintf("does not export %s %q (%s)", kindName(kind), name, why),
				rec.fix("export it from your plugin as the Extism MCP interface has it (describe and call, or hyper-mcp's list_tools and call_tool)",
					"the SDK exports describe and call: build with `plugboard plugin build`"))
		case e.kind != kind:
			rec.fail(CheckExports, "", fmt.Sprintf("exports %q as a %s; it must be a %s", name, kindName(e.kind), kindName(kind)),
				"export "+name+" as a "+kindName(kind))
		case t != nil:
			got, ok := m.funcTypeOf(e.index)
			if !ok || !got.equal(*t) {
				rec.fail(CheckExports, "", fmt.Sprintf("export %q has type %s; the host calls it as %s", name, got, *t),
					"give "+name+" the signature "+t.String())
			}
		}
	}
	if hyper {
		want(plugin.HyperListTools, kindFunc, &typeStatus, "the host reads the tools through it")
		want(plugin.HyperCallTool, kindFunc, &typeStatus, "the host calls tools through it")
		for _, o := range hyperOptional {
			if _, ok := m.export(o.export); ok {
				want(o.export, kindFunc, &typeStatus, "the host calls it for "+o.method)
			}
		}
	} else {
		want(abi.ExportDescribe, kindFunc, &typeStatus, "the host reads the manifest through it")
		want(abi.ExportCall, kindFunc, &typeStatus, "the host calls tools through it")
	}
	want("memory", kindMemory, nil, "host functions and WASI read and write guest memory")
	if _, ok := m.export(abi.ExportInitialize); ok {
		want(abi.ExportInitialize, kindFunc, &typeInit, "the host runs it once per instance")
	}
	_, hasBuf := m.export(abi.ExportBuffer)
	_, hasDirect := m.export(abi.ExportCallDirect)
	switch {
	case hyper:
	case hasBuf && hasDirect:
		want(abi.ExportBuffer, kindFunc, &typeBuffer, "the direct-call pair")
		want(abi.ExportCallDirect, kindFunc, &typeDirect, "the direct-call pair")
	case hasBuf || hasDirect:
		rec.fail(CheckExports, "", fmt.Sprintf("exports only one of %s and %s; the host uses the direct path only when both exist",
			abi.ExportBuffer, abi.ExportCallDirect), rec.fix("export both or neither", "it exports both"))
	}
	rec.pass(CheckExports, "")
}

// linkImport reports whether the host's engine links one imported function
// with that signature; the answer is memoised per (module, name, type).
type linker func(ctx context.Context, mod, name string, t funcType) error

func checkImports(ctx context.Context, rec *recorder, m *module, link linker) {
	allowed := []string{abi.WASIModule, abi.ExtismModule, abi.HostModule, plugin.UserModule}
	for _, imp := range m.imports {
		id := imp.module + "." + imp.name
		switch {
		case !slices.Contains(allowed, imp.module):
			rec.fail(CheckImports, "", fmt.Sprintf("imports %s %s from module %q, which plugboard does not provide (allowed: %s)",
				kindName(imp.kind), id, imp.module, strings.Join(allowed, ", ")),
				"remove the dependency that imports it (a plugin reaches the host only through WASI, Extism's kernel, plugboard:host/v1 and "+
					"the MCP-client functions of "+plugin.UserModule+")")
		case imp.kind != kindFunc:
			rec.fail(CheckImports, "", fmt.Sprintf("imports %s %s; plugins import functions only (they define their own memory)", kindName(imp.kind), id),
				"build with the standard Go toolchain for wasip1, which defines the module's memory")
		case imp.module == plugin.YieldModule && imp.name == plugin.YieldName:
			rec.fail(CheckImports, "", fmt.Sprintf("imports %s, which is reserved for the host's loop instrumentation", id),
				"remove the import; the host adds it when it compiles the plugin")
		default:
			if err := link(ctx, imp.module, imp.name, imp.typ); err != nil {
				rec.fail(CheckImports, "", fmt.Sprintf("imports %s %s, which the host does not provide with that signature: %v", id, imp.typ, err),
					importFix(imp.module))
			}
		}
	}
	rec.pass(CheckImports, "")
}

func importFix(module string) string {
	switch module {
	case abi.HostModule:
		var names []string
		for _, f := range abi.HostFunctions() {
			names = append(names, f.Name)
		}
		return fmt.Sprintf("%s provides %s, each (i64) -> i64; update the SDK or fix the import", abi.HostModule, strings.Join(names, ", "))
	case abi.ExtismModule:
		return "import Extism kernel functions exactly as github.com/extism/go-pdk v1.x does (the host implements those)"
	case plugin.UserModule:
		return "import " + plugin.UserModule + " functions with the signatures hyper-mcp gives them (the host implements those)"
	}
	return "use only WASI preview 1 functions, with their standard signatures"
}

// ambientImports are WASI functions that only work with ambient access
// (a preopened directory or socket); plugboard gives none.
func checkReach(rec *recorder, m *module) {
	var fs, sock []string
	for _, imp := range m.imports {
		if imp.module != abi.WASIModule {
			continue
		}
		switch {
		case slices.Contains(fs, imp.name) || slices.Contains(sock, imp.name):
		case strings.HasPrefix(imp.name, "path_") || imp.name == "fd_readdir":
			fs = append(fs, imp.name)
		case strings.HasPrefix(imp.name, "sock_"):
			sock = append(sock, imp.name)
		}
	}
	if len(fs) > 0 {
		rec.fail(CheckSandboxReach, "", fmt.Sprintf("imports %s: the plugin reaches for the filesystem, which plugboard never opens to plugins "+
			"(no preopened directories): those calls always fail", strings.Join(fs, ", ")),
			"take file contents as tool arguments, or read an attempt's files through the board (workspace.read); drop os.Open/os.ReadFile from the plugin")
	}
	if len(sock) > 0 {
		rec.fail(CheckSandboxReach, "", fmt.Sprintf("imports %s: the plugin reaches for sockets, which plugboard never gives plugins: those calls always fail",
			strings.Join(sock, ", ")),
			"drop networking from the plugin; a tool that needs the network is not a plugboard plugin")
	}
	rec.pass(CheckSandboxReach, "")
}

// checkCapabilityUse compares declared capabilities with the host
// functions the plugin imports: board (gated per operation by the board
// capabilities), every function abi.HostFunctions gates, and the
// functions of plugin.UserModule that need a capability (hyper-mcp's
// create_message and create_elicitation, which serve the same ones).
func checkCapabilityUse(rec *recorder, m *module, man *abi.Manifest) {
	imported := map[string]bool{}
	// users: capability -> the UserModule function importing it needs.
	users := map[string]string{}
	for _, imp := range m.imports {
		switch imp.module {
		case abi.HostModule:
			imported[imp.name] = true
		case plugin.UserModule:
			if c := plugin.UserCapability(imp.name); c != "" {
				users[c] = imp.name
			}
		}
	}
	var boardCaps []string
	ops := abi.BoardOps()
	for _, c := range man.Capabilities {
		for _, needed := range ops {
			if needed == c && !slices.Contains(boardCaps, c) {
				boardCaps = append(boardCaps, c)
			}
		}
	}
	switch {
	case imported[abi.FuncBoard] && len(boardCaps) == 0:
		rec.fail(CheckCapabilityUse, "", "imports plugboard:host/v1.board but declares no board capability: every board call will answer permission_denied",
			rec.fix(`declare what the tools need in the manifest's "capabilities", e.g. "board.read"`, "sdk.Require(abi.CapBoardRead)"))
	case !imported[abi.FuncBoard] && len(boardCaps) > 0:
		rec.fail(CheckCapabilityUse, "", fmt.Sprintf("declares %s but never calls the board (no plugboard:host/v1.board import)", strings.Join(boardCaps, ", ")),
			"declare only the capabilities the plugin uses: an operator grants what the manifest asks for")
	}
	for _, f := range abi.HostFunctions() {
		if f.Capability == "" {
			continue
		}
		declared := slices.Contains(man.Capabilities, f.Capability)
		user, importsUser := users[f.Capability]
		switch {
		case importsUser && !declared:
			rec.fail(CheckCapabilityUse, "", fmt.Sprintf("imports %s.%s but does not declare %s: every call to it will answer permission_denied",
				plugin.UserModule, user, f.Capability), rec.fix(fmt.Sprintf(`declare %q in the manifest's "capabilities"`, f.Capability),
				fmt.Sprintf("sdk.Require(%q)", f.Capability)))
		case importsUser:
		case imported[f.Name] && !declared:
			rec.fail(CheckCapabilityUse, "", fmt.Sprintf("imports plugboard:host/v1.%s but does not declare %s: every call to it will answer permission_denied",
				f.Name, f.Capability), rec.fix(fmt.Sprintf(`declare %q in the manifest's "capabilities"`, f.Capability),
				fmt.Sprintf("sdk.Require(%q)", f.Capability)))
		case declared && !imported[f.Name]:
			rec.fail(CheckCapabilityUse, "", fmt.Sprintf("declares %s but never imports plugboard:host/v1.%s", f.Capability, f.Name),
				"declare only the capabilities the plugin uses: an operator grants what the manifest asks for")
		}
	}
	rec.pass(CheckCapabilityUse, "")
}

// normaliseManifest decodes a manifest and fills in what plugin build does
// (plugin name from the file name, abi 0 -> the lowest version the manifest needs), returning its
// canonical JSON value for comparison.
func normaliseManifest(raw []byte, name string) (any, error) {
	var m abi.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if m.Plugin.Name == "" {
		m.Plugin.Name = name
	}
	if m.ABI == 0 {
		m.ABI = m.MinVersion()
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var v any
	err = json.Unmarshal(b, &v)
	return v, err
}

// checkSection compares the embedded manifest with describe's answer (a
// hyper-mcp v2 plugin's: the manifest the host makes of its lists). Only a
// module built by `plugboard plugin build` carries the section, so for a v2
// plugin without one (hyper) the check does not apply: hyper-mcp's build
// embeds none, and the host makes the manifest of the lists at load time
// (cached by sha256). A v2 plugin with a section is checked like any other.
func checkSection(rec *recorder, section []byte, hasSection bool, described []byte, name string, hyper bool) {
	if !hasSection && hyper {
		rec.notApplicable(CheckManifestSection, "", "not applicable to a hyper-mcp v2 plugin: its build embeds no "+abi.ManifestSection+
			" section; the host makes the manifest of its lists when it loads the plugin, and caches it by sha256")
		return
	}
	if !hasSection {
		// A house rule: the host serves such a module all the same, it only
		// describes it at load time (once per sha256, cached).
		rec.house(CheckManifestSection, "", "the module has no embedded plugboard.manifest section: the host must compile it and run describe "+
			"before it can list its tools (then caches the answer)",
			"embed describe's output in a custom section named "+abi.ManifestSection+" (`plugboard plugin build` does it for a Go plugin, "+
				"and any wasm tool that adds custom sections can)")
		return
	}
	source := "describe"
	if hyper {
		source = "its lists (" + plugin.HyperListTools + ", …)"
	}
	if described == nil {
		rec.skip(CheckManifestSection, "", "skipped: "+source+" did not answer")
		return
	}
	a, err := normaliseManifest(section, name)
	if err != nil {
		rec.fail(CheckManifestSection, "", "the embedded manifest is not valid JSON: "+err.Error(), buildFix+"again")
		return
	}
	b, err := normaliseManifest(described, name)
	if err != nil {
		rec.skip(CheckManifestSection, "", "skipped: what "+source+" returned is not a manifest")
		return
	}
	if !reflect.DeepEqual(a, b) {
		rec.fail(CheckManifestSection, "", "the embedded manifest differs from what "+source+" returns ("+jsonDiff(a, b, "")+
			"): the host lists the embedded one but the code serves the other", buildFix+"again after every change (it re-embeds the manifest)")
		return
	}
	rec.pass(CheckManifestSection, "")
}

// jsonDiff names the first place two JSON values differ.
func jsonDiff(a, b any, path string) string {
	at := path
	if at == "" {
		at = "the root"
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return at + " differs"
		}
		for _, k := range sortedKeys(x) {
			if _, ok := y[k]; !ok {
				return fmt.Sprintf("%s/%s is only in the section", path, k)
			}
			if !reflect.DeepEqual(x[k], y[k]) {
				return jsonDiff(x[k], y[k], path+"/"+k)
			}
		}
		for _, k := range sortedKeys(y) {
			if _, ok := x[k]; !ok {
				return fmt.Sprintf("%s/%s is only in describe's answer", path, k)
			}
		}
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return fmt.Sprintf("%s has %d entries in the section, %d in describe's answer", at, len(x), len(asList(b)))
		}
		for i := range x {
			if !reflect.DeepEqual(x[i], y[i]) {
				return jsonDiff(x[i], y[i], fmt.Sprintf("%s/%d", path, i))
			}
		}
	}
	return fmt.Sprintf("%s: %s in the section, %s in describe's answer", at, truncate(string(encode(a)), 60), truncate(string(encode(b)), 60))
}
