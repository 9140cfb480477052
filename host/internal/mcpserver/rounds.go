//lint:file-ignore SA1019 sampling and roots are deprecated from MCP 2026-07-28 on, not removed: a plugin's questions still reach clients of that revision, as input requests.

package mcpserver

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugboard/plugboard/abi"
	"github.com/plugboard/plugboard/host/internal/dispatch"
	"github.com/plugboard/plugboard/host/internal/idempotency"
)

// A client at MCP 2026-07-28 cannot be sent a request during a call, so a
// plugin's questions (sample, elicit, ask, roots) reach it as an
// input-required result, and the call runs again from the start once it
// answers (replay). A round is one such run:
//
//   - the plugin asks; a question the client has answered (in an earlier
//     round) gets its answer at once; the first one it has not ends the run
//     (the call's context is cancelled, the plugin gets input_required);
//   - the result holds every open question under its key, and requestState:
//     the answers so far, the open questions, the call's key and what the
//     state is for (tool, arguments, caller), sealed with AES-GCM under the
//     server's key, so the client can neither read nor change it;
//   - the client calls again with its answers and the state, on this host
//     or on another one sharing the key, and the plugin runs again.
//
// Board operations a run made are journaled under the call's key (or its
// request_id) and answered from the journal when the next round makes them
// again, so they happen once (see idempotency.Scope). Rejected: keeping the
// guest blocked on this host until the answer comes (DECISIONS): it holds
// an instance and a request_id claim for as long as a person takes to
// answer, and breaks behind a round-robin balancer.

// Bounds of a call's rounds.
const (
	// MaxRounds caps the input-required results of one call.
	MaxRounds = 16
	// MaxRequestStateBytes caps a requestState (base64, as sent).
	MaxRequestStateBytes = 256 << 10
	// RequestStateTTL is how long a requestState stays good: an
	// elicitation waits for a person.
	RequestStateTTL = 30 * time.Minute
)

// errInputRequired is the cause of a round's context ending at a question
// the client has not answered.
var errInputRequired = dispatch.ErrInputRequired

// sealer seals and opens requestStates.
type sealer struct {
	aead cipher.AEAD
	now  func() time.Time
}

// newSealer derives the state key from key (any length; 32 random bytes
// when nil, so states do not outlive the process).
func newSealer(key []byte) *sealer {
	if len(key) == 0 {
		key = make([]byte, 32)
		_, _ = rand.Read(key)
	}
	sum := sha256.Sum256(append([]byte("plugboard mcp requestState v1\x00"), key...))
	block, err := aes.NewCipher(sum[:])
	if err != nil {
		panic(err) // 32 bytes is a valid AES key
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return &sealer{aead: aead, now: time.Now}
}

// roundState is what a requestState holds.
type roundState struct {
	Issued int64  `json:"iat"`
	Kind   string `json:"k"` // tools/call, prompts/get, resources/read
	Name   string `json:"n"` // the tool, the prompt, the resource URI
	Args   string `json:"a"` // hash of the arguments
	Caller string `json:"c"` // hash of the caller's identity
	Call   string `json:"id"`
	Round  int    `json:"r"`
	// Answers are the client's answers so far, by key; Asked the
	// questions the last round left open, by key (the question's hash).
	Answers map[string]storedAnswer `json:"ans,omitempty"`
	Asked   map[string]string       `json:"ask,omitempty"`
}

type storedAnswer struct {
	Question string          `json:"q"`
	Result   json.RawMessage `json:"r"`
}

func (s *sealer) seal(st *roundState) (string, error) {
	plain, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	out := base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, nil))
	if len(out) > MaxRequestStateBytes {
		return "", fmt.Errorf("the answers so far take %d bytes of requestState, over the cap of %d", len(out), MaxRequestStateBytes)
	}
	return out, nil
}

func (s *sealer) open(state string) (*roundState, error) {
	if len(state) > MaxRequestStateBytes {
		return nil, fmt.Errorf("requestState is %d bytes, over the cap of %d", len(state), MaxRequestStateBytes)
	}
	raw, err := base64.RawURLEncoding.DecodeString(state)
	n := s.aead.NonceSize()
	if err != nil || len(raw) < n {
		return nil, errors.New("requestState is not one this server issued")
	}
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], nil)
	if err != nil {
		return nil, errors.New("requestState is not one this server issued: it was changed, or sealed under another key")
	}
	var st roundState
	if err := json.Unmarshal(plain, &st); err != nil {
		return nil, errors.New("requestState is unreadable")
	}
	if age := s.now().Sub(time.Unix(st.Issued, 0)); age > RequestStateTTL || age < -time.Minute {
		return nil, fmt.Errorf("requestState expired (issued %s ago; good for %s)", age.Round(time.Second), RequestStateTTL)
	}
	return &st, nil
}

// roundRequest is what a round needs of the MCP request it serves.
type roundRequest struct {
	kind, name string
	args       json.RawMessage
	caller     *abi.Caller
	caps       *mcp.ClientCapabilities
	responses  mcp.InputResponseMap
	state      string
}

// round is the Client of one run at MCP 2026-07-28: it answers the
// plugin's questions from the client's answers and collects the others.
type round struct {
	base   dispatch.Client
	caps   *mcp.ClientCapabilities
	st     *roundState
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	open    map[string]abi.Question
	missing []string // methods asked of a client without their capability
}

// startRound checks the request's state and answers and returns the
// round, with ctx to run it under. A bad state or answer is a JSON-RPC
// invalid-params error: the client's, not the plugin's.
func (s *server) startRound(ctx context.Context, base dispatch.Client, r roundRequest) (*round, context.Context, error) {
	st := &roundState{Kind: r.kind, Name: r.name, Args: hashArgs(r.args), Caller: callerHash(r.caller)}
	if r.state != "" {
		prev, err := s.sealer.open(r.state)
		if err != nil {
			return nil, nil, invalidParams(err.Error() + "; call again without requestState and inputResponses")
		}
		if prev.Kind != st.Kind || prev.Name != st.Name || prev.Args != st.Args || prev.Caller != st.Caller {
			return nil, nil, invalidParams("requestState belongs to another request (method, name, arguments or caller differ); call again without requestState and inputResponses")
		}
		st = prev
	}
	if st.Call == "" {
		id := make([]byte, 16)
		_, _ = rand.Read(id)
		st.Call = hex.EncodeToString(id)
	}
	if st.Answers == nil {
		st.Answers = map[string]storedAnswer{}
	}
	// Answers to the questions the last round left open join the others;
	// answers to anything else are ignored, as the revision says.
	for key, resp := range r.responses {
		qhash, asked := st.Asked[key]
		if !asked {
			continue
		}
		res, err := answerJSON(resp)
		if err != nil {
			return nil, nil, invalidParams(fmt.Sprintf("inputResponses[%q]: %v", key, err))
		}
		st.Answers[key] = storedAnswer{Question: qhash, Result: res}
	}
	st.Asked = nil
	ctx, cancel := context.WithCancelCause(ctx)
	return &round{base: base, caps: r.caps, st: st, cancel: cancel, open: map[string]abi.Question{}}, ctx, nil
}

// finish ends the round. With questions open it returns their input
// requests and the new requestState (nil when none are open).
func (rd *round) finish(s *server) (mcp.InputRequestMap, string, *abi.Envelope) {
	rd.cancel(nil)
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if len(rd.open) == 0 {
		return nil, "", nil
	}
	if rd.st.Round+1 > MaxRounds {
		return nil, "", abi.NewEnvelope(abi.CodeResourceExhausted, fmt.Sprintf("the plugin asked the client questions in more than %d rounds", MaxRounds),
			"report it to the plugin's author; the call cannot finish")
	}
	st := *rd.st
	st.Round++
	st.Issued = s.sealer.now().Unix()
	st.Asked = map[string]string{}
	reqs := mcp.InputRequestMap{}
	for key, q := range rd.open {
		st.Asked[key] = questionHash(q)
		ir, err := inputRequest(q)
		if err != nil {
			return nil, "", abi.NewEnvelope(abi.CodeInvalidArgument, fmt.Sprintf("question %s: %v", key, err), "")
		}
		reqs[key] = ir
	}
	state, err := s.sealer.seal(&st)
	if err != nil {
		return nil, "", abi.NewEnvelope(abi.CodeResourceExhausted, err.Error(), "ask for less at once, or shorter answers")
	}
	return reqs, state, nil
}

// endRound ends the round of a method other than tools/call, which
// answered env: the questions left open and their requestState, or the
// JSON-RPC error the method answers instead (the round's own failure, a
// capability the client lacks), or neither.
func (s *server) endRound(rd *round, env *abi.Envelope) (mcp.InputRequestMap, string, error) {
	reqs, state, renv := rd.finish(s)
	switch {
	case renv != nil:
		return nil, "", rpcError(renv)
	case reqs != nil:
		return reqs, state, nil
	}
	return nil, "", rd.missingCapability(&dispatch.Result{Envelope: env})
}

// missingCapability is the JSON-RPC error of a call that failed because
// the client lacks a capability it needed (MCP -32021), or nil.
func (rd *round) missingCapability(res *dispatch.Result) error {
	rd.mu.Lock()
	missing := slices.Clone(rd.missing)
	rd.mu.Unlock()
	if len(missing) == 0 || res == nil || res.Envelope == nil || res.Envelope.Code != abi.CodeUnsupported {
		return nil
	}
	// The data names only what is missing: the go-sdk's
	// ClientCapabilities would always add roots.
	need := map[string]any{}
	for _, m := range missing {
		need[methodWord(m)] = map[string]any{}
	}
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": need})
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: res.Envelope.Message, Data: data}
}

// Notify implements dispatch.Client.
func (rd *round) Notify(ctx context.Context, n abi.NotifyRequest) {
	if rd.base != nil {
		rd.base.Notify(ctx, n)
	}
}

// Sample implements dispatch.Client: a question under a key of its own.
func (rd *round) Sample(ctx context.Context, req json.RawMessage) (json.RawMessage, *abi.Envelope) {
	return rd.single(ctx, abi.Question{Method: abi.MethodSample, Params: req})
}

// Elicit implements dispatch.Client.
func (rd *round) Elicit(ctx context.Context, req json.RawMessage) (json.RawMessage, *abi.Envelope) {
	return rd.single(ctx, abi.Question{Method: abi.MethodElicit, Params: req})
}

// ListRoots implements runtime.RootsLister.
func (rd *round) ListRoots(ctx context.Context) (json.RawMessage, *abi.Envelope) {
	return rd.single(ctx, abi.Question{Method: abi.MethodRoots})
}

// ResourceUpdated implements runtime.ResourceUpdater.
func (rd *round) ResourceUpdated(ctx context.Context, uri string) {
	if u, ok := rd.base.(interface {
		ResourceUpdated(context.Context, string)
	}); ok {
		u.ResourceUpdated(ctx, uri)
	}
}

// single asks one question of sample, elicit or roots. Its key is made
// of the question, so every run of the call names it alike.
func (rd *round) single(ctx context.Context, q abi.Question) (json.RawMessage, *abi.Envelope) {
	key := methodWord(q.Method) + "-" + questionHash(q)[:12]
	answers, env := rd.Ask(ctx, map[string]abi.Question{key: q})
	if env != nil {
		return nil, env
	}
	a := answers[key]
	return a.Result, a.Error
}

// Ask implements runtime.Asker: answered questions get their answers, a
// question the client cannot answer gets unsupported, and any other ends
// the run with input_required, all of them held for the result.
func (rd *round) Ask(ctx context.Context, qs map[string]abi.Question) (map[string]abi.Answer, *abi.Envelope) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	out := make(map[string]abi.Answer, len(qs))
	open := 0
	keys := make([]string, 0, len(qs))
	for k := range qs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		q := qs[key]
		if !rd.capable(q.Method) {
			rd.missing = append(rd.missing, q.Method)
			out[key] = abi.Answer{Error: unsupported(methodWord(q.Method))}
			continue
		}
		if a, ok := rd.st.Answers[key]; ok && a.Question == questionHash(q) {
			out[key] = abi.Answer{Result: a.Result}
			continue
		}
		rd.open[key] = q
		open++
	}
	if open == 0 {
		return out, nil
	}
	// The run ends here: its context ends (so nothing it does from now
	// on takes effect), and the plugin is told why.
	rd.cancel(errInputRequired)
	return nil, abi.NewEnvelope(abi.CodeInputRequired, "the client must answer first; this run ends here and the call runs again with the answer",
		"return this error as it is")
}

func (rd *round) capable(method string) bool {
	c := rd.caps
	if c == nil {
		return false
	}
	switch method {
	case abi.MethodSample:
		return c.Sampling != nil
	case abi.MethodElicit:
		return c.Elicitation != nil
	default:
		return c.RootsV2 != nil
	}
}

// methodWord names a question's kind, which is also the client
// capability it needs.
func methodWord(method string) string {
	switch method {
	case abi.MethodSample:
		return "sampling"
	case abi.MethodElicit:
		return "elicitation"
	}
	return "roots"
}

// inputRequest is the MCP input request of a question.
func inputRequest(q abi.Question) (mcp.InputRequest, error) {
	switch q.Method {
	case abi.MethodSample:
		var p mcp.CreateMessageParams
		if err := json.Unmarshal(q.Params, &p); err != nil {
			return nil, err
		}
		return &p, nil
	case abi.MethodElicit:
		var er abi.ElicitRequest
		if err := json.Unmarshal(q.Params, &er); err != nil {
			return nil, err
		}
		return &mcp.ElicitParams{Mode: "form", Message: er.Message, RequestedSchema: er.RequestedSchema}, nil
	default:
		return &mcp.ListRootsParams{}, nil
	}
}

// answerJSON checks an input response is a result of some question's kind
// and returns it as the plugin reads it.
func answerJSON(resp mcp.InputResponse) (json.RawMessage, error) {
	switch r := resp.(type) {
	case *mcp.ElicitResult:
		if r.Action != "accept" && r.Action != "decline" && r.Action != "cancel" {
			return nil, fmt.Errorf("elicitation action %q is not accept, decline or cancel", r.Action)
		}
		return json.Marshal(abi.ElicitResult{Action: r.Action, Content: r.Content})
	case *mcp.CreateMessageResult:
		if r.Content == nil {
			return nil, errors.New("the sampling result has no content")
		}
		return json.Marshal(r)
	case *mcp.CreateMessageWithToolsResult:
		if len(r.Content) == 0 {
			return nil, errors.New("the sampling result has no content")
		}
		// A plugin reads one content item, as sampling/createMessage
		// without tools answers.
		return json.Marshal(&mcp.CreateMessageResult{Content: r.Content[0], Model: r.Model, Role: r.Role, StopReason: r.StopReason})
	case *mcp.ListRootsResult:
		if r.Roots == nil {
			r.Roots = []*mcp.Root{}
		}
		return json.Marshal(r)
	case nil:
		return nil, errors.New("no answer")
	}
	return nil, fmt.Errorf("%T is not an answer to sampling, elicitation or roots", resp)
}

func questionHash(q abi.Question) string {
	canon, err := idempotency.Canonical(q.Params, "")
	if err != nil || len(q.Params) == 0 {
		canon = q.Params
	}
	sum := sha256.Sum256(append([]byte(q.Method+"\x00"), canon...))
	return hex.EncodeToString(sum[:])
}

func hashArgs(args json.RawMessage) string {
	canon, err := idempotency.Canonical(args, "")
	if err != nil {
		canon = args
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:16])
}

func callerHash(c *abi.Caller) string {
	sum := sha256.Sum256([]byte(idempotency.Identity(c, "")))
	return hex.EncodeToString(sum[:16])
}

func invalidParams(msg string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}
