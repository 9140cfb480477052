package conformance

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/abi/jsonscan"
	"github.com/plugboard/plugboard/host/plugin"
)

// callKind says what a call tests and so which check a bad answer fails.
type callKind int

const (
	// kindValid: a minimal valid instance; a result or an envelope.
	kindValid callKind = iota
	// kindInvalid: arguments the schema refuses; an envelope with a hint.
	kindInvalid
	// kindTolerated: arguments the schema accepts though they look wrong
	// (an unknown field it allows); a result or an envelope.
	kindTolerated
	// kindFuzz: random arguments; anything but a crash.
	kindFuzz
)

// maxTimeouts is how many plugin_timeout answers a tool may give before the
// kit stops calling it: each one costs a whole deadline.
const maxTimeouts = 2

// hangGrace is how long past its deadline the kit waits for a call before
// abandoning it: the host interrupts guest code at its deadline, but not a
// guest blocked inside a host call (a WASI sleep in poll_oneoff, say).
const hangGrace = 5 * time.Second

// toolRunner makes one tool's behaviour calls and records their outcome.
type toolRunner struct {
	set *plugin.Set
	rec *recorder
	ts  *toolSurface
	// deadline is the call deadline the dispatcher applies to this tool.
	deadline time.Duration
	// abandon is called when a call outlives its deadline by hangGrace.
	abandon  func()
	timeouts int
	calls    int
	stopped  bool
	// shape explains crashes it accounts for (Shape.Diagnose); house is
	// true for a plugin held to the house rules.
	shape Shape
	house bool
	// configKeys: a call stopped for configuration the operator has not
	// set (needsConfig, with the keys the host named, possibly none).
	needsConfig bool
	configKeys  []string
}

func (tr *toolRunner) name() string { return tr.ts.def.Name }

// call runs one call through the host's pipeline and judges the answer.
func (tr *toolRunner) call(ctx context.Context, kind callKind, what string, args []byte) {
	if tr.stopped || ctx.Err() != nil {
		return
	}
	tr.calls++
	start := time.Now()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan *plugin.Result, 1)
	go func() {
		done <- tr.set.Call(cctx, plugin.Request{Tool: tr.name(), Arguments: args, Progress: func(abi.ProgressRequest) {}})
	}()
	watchdog := time.NewTimer(tr.deadline + hangGrace)
	defer watchdog.Stop()
	select {
	case res := <-done:
		tr.judge(kind, what, args, res, time.Since(start))
	case <-watchdog.C:
		tr.stopped = true
		tr.abandon()
		tr.rec.fail(CheckDeadline, tr.name(), fmt.Sprintf("%s %s was still running %s after its %s deadline, and the host could not interrupt it "+
			"(the guest is blocked in a host call, e.g. a sleep); the kit abandoned it and made no further calls to %s",
			what, summarize(args), hangGrace, tr.deadline, tr.name()),
			"never block for longer than the call's deadline (context.deadline_unix_ms): bound sleeps and waits by it")
	}
}

// checkOf is the check a crash fails, by call kind.
func (k callKind) check() string {
	switch k {
	case kindInvalid:
		return CheckInvalid
	case kindFuzz:
		return CheckFuzz
	}
	return CheckValid
}

func (tr *toolRunner) judge(kind callKind, what string, args []byte, res *plugin.Result, elapsed time.Duration) {
	name := tr.name()
	call := fmt.Sprintf("%s %s", what, summarize(args))
	env := res.Envelope
	if keys, ok := missingConfig(env, false); ok {
		// Not the plugin's failure, and not the agent's: only the
		// operator can fix it, so the tool is not judged broken.
		tr.needsConfig = true
		for _, k := range keys {
			if !slices.Contains(tr.configKeys, k) {
				tr.configKeys = append(tr.configKeys, k)
			}
		}
		named := "a configuration value the host could not name"
		if len(keys) > 0 {
			named = strings.Join(keys, ", ")
		}
		tr.rec.needsConfig(name, keys, fmt.Sprintf("%s stopped for configuration the operator has not set: %s (%s: %s)",
			call, named, env.Code, truncate(env.Message, 160)), configFix(env))
		return
	}
	if setting, host, ok := egressRefused(env); ok && kind == kindValid {
		// The host refused the plugin a request its valid call makes
		// because the operator has not allowed the host: only the operator
		// can fix that, as for a configuration value.
		tr.needsConfig = true
		tr.rec.needsSetting(name, setting, fmt.Sprintf("%s was refused its HTTP request (%s: %s)", call, env.Code, truncate(env.Message, 200)),
			"add "+strconv.Quote(host)+" to "+setting+" in a configuration file and run the kit with --config FILE, as serve would read it "+
				"(--http-stand-in HOST=URL sends the requests to a test server instead)")
		return
	}
	if env == nil {
		if kind == kindInvalid {
			tr.rec.fail(CheckInvalid, name, fmt.Sprintf("%s was answered with a result, though the inputSchema refuses it", call),
				"the host validates arguments before the plugin runs: report this to plugboard's maintainers")
		}
		tr.checkOutput(call, res)
		return
	}
	switch env.Code {
	case abi.CodePluginTimeout:
		tr.timeouts++
		// The host cut the call off at its deadline and discarded the
		// instance, so nothing broke: on arguments derived from the schema
		// that is a failure, on fuzzed ones a tool doing what it was asked
		// (a sleep of 2^53 ms) — an error for a plugin held to the house
		// rules (bound work by the input), a warning for any other.
		record := tr.rec.fail
		if kind == kindFuzz && !tr.house {
			record = tr.rec.warn
		}
		record(CheckDeadline, name, fmt.Sprintf("%s did not finish within its deadline (%s)", call, elapsed.Round(time.Millisecond)),
			"make the tool finish well within its deadline on any input (bound loops, waits and work by the input size), or declare a longer timeout_ms")
		if tr.timeouts >= maxTimeouts {
			tr.stopped = true
			record(CheckDeadline, name, fmt.Sprintf("stopped calling %s after %d timeouts", name, tr.timeouts), "")
		}
		return
	case abi.CodePluginFailed, abi.CodeInternal:
		if _, refused := env.Details["status"]; refused && env.Code == abi.CodePluginFailed && !tr.house {
			// An Extism error status with a message: the plugin refused the
			// call on purpose (an error set and a non-zero return, the
			// Extism convention), which the host answers as a rejection —
			// not a crash. A trap or a panic carries no status. A plugin
			// held to the house rules answers refusals as envelopes (the
			// SDK always does), so for it a status still means a failure.
			break
		}
		detail := ""
		if tail, ok := env.Details["console_tail"].(string); ok {
			if at := panicSite(tail); at != "" {
				detail = " at " + at
			}
		}
		if why, fix := tr.shape.Diagnose(env); why != "" {
			tr.rec.failOnce(kind.check(), name, why, fmt.Sprintf("%s crashed: %s", call, why), fix)
			return
		}
		tr.rec.failOnce(kind.check(), name, env.Code+env.Message+detail, fmt.Sprintf("%s crashed: %s: %s%s", call, env.Code, env.Message, detail),
			tr.rec.fix("the tool must answer every input with a result or an error result (isError, with a message): check bounds, nil "+
				"pointers and sizes before using them; never panic or trap on bad input", "sdk.InvalidArgument, sdk.Fail"))
		return
	case abi.CodeResourceExhausted:
		msg := fmt.Sprintf("%s hit a cap: %s", call, env.Message)
		key := fmt.Sprint(env.Details["limit"])
		fix := capFix(key)
		if kind == kindFuzz {
			tr.rec.warnOnce(CheckSize, name, key, msg, fix)
		} else {
			tr.rec.failOnce(CheckSize, name, key, msg, fix)
		}
		return
	case abi.CodeCancelled:
		return
	}
	if _, ok := env.Details["unregistered_code"]; ok || strings.TrimSpace(env.Message) == "" {
		tr.rec.failOnce(CheckCodes, name, env.Code, fmt.Sprintf("%s was answered with code %q and message %q: codes must be registered in abi.Codes and messages non-empty",
			call, env.Code, env.Message),
			tr.rec.fix("answer with a registered code (abi.Codes: invalid_argument, not_found, conflict, …) and say what went wrong",
				"sdk.InvalidArgument, sdk.NotFound, sdk.Fail(abi.CodeConflict, ...)"))
	}
	if kind == kindInvalid && strings.TrimSpace(env.Hint) == "" {
		tr.rec.fail(CheckInvalid, name, fmt.Sprintf("%s was refused with %s but no hint", call, env.Code),
			"give every refusal a hint naming the fix (the field to change, the tool to call first)")
	}
}

// checkOutput validates a successful result against the outputSchema.
func (tr *toolRunner) checkOutput(call string, res *plugin.Result) {
	name := tr.name()
	out := tr.ts.out
	if out == nil {
		return
	}
	if len(res.Structured) == 0 {
		tr.rec.failOnce(CheckOutput, name, "no structuredContent", fmt.Sprintf("%s answered without structuredContent, though the tool declares an outputSchema", call),
			tr.rec.fix("return the answer as structuredContent, as MCP asks of a tool with an outputSchema", "it does for a struct output"))
		return
	}
	inst, err := jsonscan.Decode(res.Structured)
	if err == nil {
		err = out.validate(inst)
	}
	if err != nil {
		tr.rec.failOnce(CheckOutput, name, err.Error(), fmt.Sprintf("%s answered structuredContent the outputSchema refuses: %v (answer: %s)",
			call, err, summarize(res.Structured)),
			"make the answer match the outputSchema: required fields always present, types and nullability as declared (arrays never null)")
	}
}

// runBehaviour makes every behaviour call of one tool; callTimeout is the
// deadline the host gives the plugin's calls (see Kit.callTimeout).
func runBehaviour(ctx context.Context, set *plugin.Set, rec *recorder, ts *toolSurface, opts *Options, shape Shape, house bool,
	callTimeout time.Duration, abandon func()) int {
	deadline := callTimeout
	if ts.def.TimeoutMS > 0 {
		deadline = min(deadline, time.Duration(ts.def.TimeoutMS)*time.Millisecond)
	}
	tr := &toolRunner{set: set, rec: rec, ts: ts, deadline: deadline, abandon: abandon, shape: shape, house: house}
	name := ts.def.Name
	ids := []string{CheckInvalid, CheckValid, CheckOutput, CheckSize, CheckDeadline, CheckFuzz, CheckCodes}
	if ts.in == nil {
		why := "skipped: the inputSchema does not load"
		if ts.unchecked {
			// Served with its arguments left to the plugin: with no schema
			// to derive arguments from, the kit still checks that the tool
			// answers (a result or an envelope, no crash) to {}.
			why = "skipped: the host cannot compile the inputSchema, so the kit cannot derive arguments from it"
			rec.pass(CheckValid, name)
			tr.call(ctx, kindTolerated, "an empty arguments object (the tool is served with its arguments unchecked)", []byte("{}"))
		}
		for _, id := range ids {
			if !(ts.unchecked && id == CheckValid) {
				rec.skip(id, name, why)
			}
		}
		return tr.calls
	}
	for _, id := range ids {
		rec.pass(id, name)
	}
	if ts.out == nil {
		rec.skip(CheckOutput, name, "skipped: no usable outputSchema")
	}

	valid, ok := ts.in.findValid(want{})
	validNeedsConfig := false
	if ok {
		tr.call(ctx, kindValid, "a minimal valid instance", encode(valid))
		validNeedsConfig = tr.needsConfig
	} else {
		rec.warn(CheckValid, name, "the kit could not derive an instance the inputSchema accepts (it tries the required fields with "+
			"up to three optional ones, for each value of enum fields); the valid call and the probes built on it were not made",
			"check that the inputSchema accepts some call; if it does, simplify its modes or report the schema to plugboard's maintainers")
	}

	if valid != nil {
		for _, p := range ts.in.invalidProbes(valid) {
			kind := kindInvalid
			if !p.reject {
				kind = kindTolerated
			}
			tr.call(ctx, kind, p.what, p.args)
		}
	}
	// Rule violations: the host's rule check refuses them before the
	// schema, whether or not the schema expresses the rule.
	for _, v := range ts.viols {
		tr.call(ctx, kindInvalid, fmt.Sprintf("rule %d violated (%s)", v.rule, v.what), encode(v.inst))
	}
	if tr.stopped {
		rec.skip(CheckFuzz, name, "skipped: the tool timed out on derived arguments")
		return tr.calls
	}
	if tr.needsConfig {
		// Without its configuration every call stops the same way: fuzzing
		// would prove nothing about the tool, and the valid call did not
		// show it answers. Both wait for a run with --config.
		why := "skipped: the tool needs configuration"
		if len(tr.configKeys) > 0 {
			why += " (" + strings.Join(tr.configKeys, ", ") + ")"
		}
		if validNeedsConfig {
			rec.skip(CheckValid, name, why)
		}
		rec.skip(CheckFuzz, name, why)
		return tr.calls
	}
	// Fuzzing stops at the first hang (tr.stopped); a tool that keeps
	// timing out stops after maxTimeouts.

	f := &fuzzer{s: ts.in, rnd: rand.New(rand.NewPCG(uint64(opts.Seed), toolSeed(name)))}
	if valid != nil {
		for _, inst := range f.edges(valid) {
			tr.call(ctx, kindFuzz, "an edge value", encode(inst))
		}
	}
	for range opts.Fuzz {
		tr.call(ctx, kindFuzz, "a fuzzed instance", encode(f.instance(valid)))
	}
	return tr.calls
}

func toolSeed(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// summarize renders arguments for a message: long strings and arrays are
// abbreviated with their sizes, deep nesting is cut.
func summarize(args []byte) string {
	v, err := jsonscan.Decode(args)
	if err != nil {
		return truncate(string(args), 120)
	}
	var b strings.Builder
	writeSummary(&b, v, 0)
	return truncate(b.String(), 320)
}

func writeSummary(b *strings.Builder, v any, depth int) {
	if depth > 4 {
		b.WriteString("…")
		return
	}
	switch x := v.(type) {
	case map[string]any:
		b.WriteByte('{')
		for i, k := range sortedKeys(x) {
			if i > 0 {
				b.WriteByte(',')
			}
			writeSummary(b, k, depth)
			b.WriteByte(':')
			writeSummary(b, x[k], depth+1)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, it := range x {
			if i == 3 && len(x) > 4 {
				fmt.Fprintf(b, ",…(%d items)", len(x))
				break
			}
			if i > 0 {
				b.WriteByte(',')
			}
			writeSummary(b, it, depth+1)
		}
		b.WriteByte(']')
	case string:
		if len(x) > 40 {
			short := x[:24]
			for len(short) > 0 && !utf8.ValidString(short) {
				short = short[:len(short)-1]
			}
			b.Write(encode(short + "…"))
			fmt.Fprintf(b, "(%d bytes)", len(x))
			return
		}
		b.Write(encode(x))
	default:
		b.Write(encode(x))
	}
}

// panicSite finds the source line a Go guest panicked at in its console
// output: the first frame outside the Go runtime and the guest SDK. Built
// with -trimpath, an SDK file reads sdk-guest/... in a checkout's root
// module and sdk-guest@VERSION/... where the SDK is a required module (a
// plugin's own module, or a first-party plugin since sdk-guest became one).
func panicSite(console string) string {
	for line := range strings.Lines(console) {
		line = strings.TrimSpace(line)
		file, _, ok := strings.Cut(line, " +0x")
		if !ok || !strings.Contains(file, ".go:") {
			continue
		}
		if strings.HasPrefix(file, "runtime/") || strings.Contains(file, "/src/runtime/") || strings.Contains(file, "/sdk-guest/") || strings.Contains(file, "/sdk-guest@") {
			continue
		}
		return file
	}
	return ""
}

// capFix says how to stay within the cap an envelope names.
func capFix(limit string) string {
	switch limit {
	case "host call":
		return "a host call (a board operation, a log line) carried more than its 1 MiB cap: bound what the tool forwards " +
			"(maxLength or a pattern in the inputSchema, which the host enforces, or an invalid_argument refusal) and page large answers"
	case "output":
		return "keep answers under the output cap: page them, or bound their size by an argument (max_bytes, limit)"
	case "memory", "kernel memory":
		return "bound memory use by the input size, and refuse inputs too large to handle with invalid_argument"
	}
	return "keep requests, answers and memory use within the host's caps"
}

// egressRefused reports an envelope of the host refusing a plugin's HTTP
// request to a host its settings do not allow, with the setting that
// would allow it (plugins.settings.PLUGIN.allowed_hosts) and the entry to
// add there.
func egressRefused(env *abi.Envelope) (setting, host string, ok bool) {
	if env == nil || env.Code != abi.CodePermissionDenied {
		return "", "", false
	}
	setting, _ = env.Details["setting"].(string)
	host, _ = env.Details["host"].(string)
	if !strings.HasPrefix(setting, "plugins.settings.") || !strings.HasSuffix(setting, ".allowed_hosts") || host == "" {
		return "", "", false
	}
	return setting, host, true
}
