package sdk

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/plugboard/plugboard/abi"
)

// This file is the SDK side of ABI version 2: tool results with content
// other than the structured answer, resources, resource templates, prompts
// and completions, and the host functions that reach the MCP client during
// a call (Notify, Sample, Elicit).

// Result is a tool answer made of MCP content items: a tool whose handler
// returns *Result (or Result) has no inferred output schema, and its
// content reaches the client as it is. Structured, when set, is sent as
// structuredContent too (declare ToolSpec.OutputSchema for it); when
// Content is empty the host adds its compact JSON as the one text item.
type Result struct {
	Content    []abi.Content
	Structured any
}

// Text is a text content item.
func Text(text string) abi.Content { return abi.Content{Type: abi.ContentText, Text: text} }

// Image is an image content item: the image's bytes and MIME type
// (image/png, ...).
func Image(data []byte, mimeType string) abi.Content {
	return abi.Content{Type: abi.ContentImage, Data: data, MIMEType: mimeType}
}

// Audio is an audio content item: the sound's bytes and MIME type
// (audio/wav, ...).
func Audio(data []byte, mimeType string) abi.Content {
	return abi.Content{Type: abi.ContentAudio, Data: data, MIMEType: mimeType}
}

// Embedded is an embedded-resource content item.
func Embedded(r abi.ResourceContents) abi.Content {
	return abi.Content{Type: abi.ContentResource, Resource: &r}
}

// ResourceLink is a resource_link content item: a pointer to a resource the
// client may read with resources/read.
func ResourceLink(uri, name, mimeType string) abi.Content {
	return abi.Content{Type: abi.ContentResourceLink, URI: uri, Name: name, MIMEType: mimeType}
}

// TextResource is the contents of a text resource.
func TextResource(uri, mimeType, text string) abi.ResourceContents {
	return abi.ResourceContents{URI: uri, MIMEType: mimeType, Text: text}
}

// BlobResource is the contents of a binary resource.
func BlobResource(uri, mimeType string, data []byte) abi.ResourceContents {
	return abi.ResourceContents{URI: uri, MIMEType: mimeType, Blob: data}
}

// Message is a prompt message; role is "user" or "assistant".
func Message(role string, content abi.Content) abi.PromptMessage {
	return abi.PromptMessage{Role: role, Content: content}
}

// CompleteFunc suggests values for the argument arg of a prompt or resource
// template, given the values of the arguments already resolved.
type CompleteFunc func(c *Call, arg abi.CompletionArg, resolved map[string]string) (abi.Completion, error)

// ResourceSpec is a resource at a fixed URI (abi.Resource).
type ResourceSpec = abi.Resource

// ResourceTemplateSpec is a family of resources matching a URI template;
// Complete, when set, answers completion/complete for its variables.
type ResourceTemplateSpec struct {
	URITemplate, Name, Title, Description, MIMEType string
	Complete                                        CompleteFunc
}

// PromptSpec is a prompt; Complete, when set, answers completion/complete
// for its arguments.
type PromptSpec struct {
	Name, Title, Description string
	Arguments                []abi.PromptArgument
	Complete                 CompleteFunc
}

type resource struct {
	spec abi.Resource
	read func(c *Call, uri string) ([]abi.ResourceContents, error)
}

type resourceTemplate struct {
	spec      ResourceTemplateSpec
	read      func(c *Call, uri string, vars map[string]string) ([]abi.ResourceContents, error)
	parts     []templatePart
	matchable bool // false: the template has expressions the SDK cannot match
}

type prompt struct {
	spec PromptSpec
	get  func(c *Call, args map[string]string) (*abi.GetPromptResult, error)
}

// Resource registers a resource at a fixed URI; read returns its contents
// (see TextResource, BlobResource). Call it from init. The host lists the
// resource from the manifest and calls read for resources/read of its URI.
func Resource(spec ResourceSpec, read func(c *Call, uri string) ([]abi.ResourceContents, error)) {
	std.resource(spec, read)
}

// ResourceTemplate registers a resource template (RFC 6570, e.g.
// "file:///logs/{day}"); read gets the requested URI and the values of the
// template's simple {name} expressions. Call it from init.
func ResourceTemplate(spec ResourceTemplateSpec, read func(c *Call, uri string, vars map[string]string) ([]abi.ResourceContents, error)) {
	std.resourceTemplate(spec, read)
}

// Prompt registers a prompt; get renders it from its arguments (strings).
// The host refuses a prompts/get that lacks a required argument before the
// plugin runs. Call it from init.
func Prompt(spec PromptSpec, get func(c *Call, args map[string]string) (*abi.GetPromptResult, error)) {
	std.prompt(spec, get)
}

func (r *registry) resource(spec ResourceSpec, read func(c *Call, uri string) ([]abi.ResourceContents, error)) {
	refuseTyped("Resource " + strconv.Quote(spec.URI))
	if spec.URI == "" || spec.Name == "" || read == nil {
		panic(fmt.Sprintf("sdk: Resource %q: uri, name and read are required", spec.URI))
	}
	for _, x := range r.resources {
		if x.spec.URI == spec.URI {
			panic(fmt.Sprintf("sdk: Resource %q registered twice", spec.URI))
		}
	}
	r.resources = append(r.resources, &resource{spec: spec, read: read})
}

func (r *registry) resourceTemplate(spec ResourceTemplateSpec, read func(c *Call, uri string, vars map[string]string) ([]abi.ResourceContents, error)) {
	refuseTyped("ResourceTemplate " + strconv.Quote(spec.URITemplate))
	if spec.URITemplate == "" || spec.Name == "" || read == nil {
		panic(fmt.Sprintf("sdk: ResourceTemplate %q: uriTemplate, name and read are required", spec.URITemplate))
	}
	for _, x := range r.templates {
		if x.spec.URITemplate == spec.URITemplate {
			panic(fmt.Sprintf("sdk: ResourceTemplate %q registered twice", spec.URITemplate))
		}
	}
	t := &resourceTemplate{spec: spec, read: read}
	t.parts, t.matchable = templatePattern(spec.URITemplate)
	r.templates = append(r.templates, t)
}

func (r *registry) prompt(spec PromptSpec, get func(c *Call, args map[string]string) (*abi.GetPromptResult, error)) {
	refuseTyped("Prompt " + strconv.Quote(spec.Name))
	if err := checkName(spec.Name); err != nil {
		panic("sdk: Prompt: " + err.Error())
	}
	if get == nil {
		panic(fmt.Sprintf("sdk: Prompt %q: nil handler", spec.Name))
	}
	for _, x := range r.prompts {
		if x.spec.Name == spec.Name {
			panic(fmt.Sprintf("sdk: Prompt %q registered twice", spec.Name))
		}
	}
	r.prompts = append(r.prompts, &prompt{spec: spec, get: get})
}

// templatePart is a literal of a URI template, or one of its variables.
type templatePart struct {
	literal string
	name    string // "" for a literal
	rest    bool   // a reserved expression ({+name}): matches anything, else one path segment ([^/?#]*)
}

// templatePattern splits a URI template whose expressions are all simple
// ({name}, matching one path segment) or reserved ({+name}, matching the
// rest) into parts; other operators leave it unmatched (ok false). It and
// matchTemplate stand for the regular expression ^lit([^/?#]*)lit(.*)$
// without linking package regexp into every plugin.
func templatePattern(t string) ([]templatePart, bool) {
	var parts []templatePart
	for {
		i := strings.IndexByte(t, '{')
		if i < 0 {
			if t != "" {
				parts = append(parts, templatePart{literal: t})
			}
			return parts, true
		}
		j := strings.IndexByte(t[i:], '}')
		if j < 0 {
			return nil, false
		}
		if i > 0 {
			parts = append(parts, templatePart{literal: t[:i]})
		}
		expr := t[i+1 : i+j]
		t = t[i+j+1:]
		rest := strings.HasPrefix(expr, "+")
		if rest {
			expr = expr[1:]
		}
		if expr == "" || strings.ContainsAny(expr, "#./;?&=,!@|*:") {
			return nil, false
		}
		parts = append(parts, templatePart{name: expr, rest: rest})
	}
}

// matchTemplate matches all of uri against parts, each variable as long as
// the rest still matches (the leftmost-first, greedy choice of a regular
// expression), and appends the variables' values to vals.
func matchTemplate(parts []templatePart, uri string, vals []string) ([]string, bool) {
	if len(parts) == 0 {
		return vals, uri == ""
	}
	p := parts[0]
	if p.name == "" {
		if !strings.HasPrefix(uri, p.literal) {
			return nil, false
		}
		return matchTemplate(parts[1:], uri[len(p.literal):], vals)
	}
	n := len(uri)
	if !p.rest {
		if k := strings.IndexAny(uri, "/?#"); k >= 0 {
			n = k
		}
	}
	for ; n >= 0; n-- {
		if out, ok := matchTemplate(parts[1:], uri[n:], append(vals, uri[:n])); ok {
			return out, true
		}
	}
	return nil, false
}

// vars extracts the template's variables from uri, or reports no match.
func (t *resourceTemplate) vars(uri string) (map[string]string, bool) {
	if !t.matchable {
		return nil, false
	}
	m, ok := matchTemplate(t.parts, uri, make([]string, 0, len(t.parts)))
	if !ok {
		return nil, false
	}
	vars := make(map[string]string, len(m))
	i := 0
	for _, p := range t.parts {
		if p.name != "" {
			vars[p.name] = m[i]
			i++
		}
	}
	return vars, true
}

// manifestV2 adds the resources, templates and prompts to m.
func (r *registry) manifestV2(m *abi.Manifest) {
	for _, x := range r.resources {
		m.Resources = append(m.Resources, x.spec)
	}
	for _, x := range r.templates {
		s := x.spec
		m.ResourceTemplates = append(m.ResourceTemplates, abi.ResourceTemplate{URITemplate: s.URITemplate, Name: s.Name,
			Title: s.Title, Description: s.Description, MIMEType: s.MIMEType, Completion: s.Complete != nil})
	}
	for _, x := range r.prompts {
		s := x.spec
		m.Prompts = append(m.Prompts, abi.Prompt{Name: s.Name, Title: s.Title, Description: s.Description,
			Arguments: s.Arguments, Completion: s.Complete != nil})
	}
}

// method serves a request for a method other than tools/call.
func (r *registry) method(req *abi.CallRequest) []byte {
	c := &Call{ctx: req.Context}
	var (
		result any
		err    error
	)
	switch req.Method {
	case abi.MethodResourcesRead:
		result, err = r.readResource(c, req.Params.URI)
	case abi.MethodPromptsGet:
		result, err = r.getPrompt(c, req.Params.Name, req.Params.Arguments)
	case abi.MethodCompletionComplete:
		result, err = r.complete(c, &req.Params)
	default:
		return unservedMethod(r.info.Name, req.Method)
	}
	var out abi.MethodResult
	if err != nil {
		env, ok := err.(*abi.Envelope)
		if !ok {
			env = &abi.Envelope{Code: abi.CodeToolError, Message: err.Error()}
		}
		out.Error = env
	} else if out.Result, err = marshalJSON(result); err != nil {
		out.Error = &abi.Envelope{Code: abi.CodeToolError, Message: "the result could not be encoded as JSON: " + err.Error()}
	}
	b, err := marshalJSON(out)
	if err != nil { // envelope details that do not encode
		out.Error.Details = map[string]any{"details_error": err.Error()}
		b, _ = marshalJSON(out)
	}
	return b
}

// unservedMethod answers a request for a method the plugin does not serve.
func unservedMethod(plugin, method string) []byte {
	b, _ := marshalJSON(abi.MethodResult{Error: abi.NewEnvelope(abi.CodeInvalidArgument,
		fmt.Sprintf("plugin %q does not serve method %q", plugin, method), "the host sends only the methods of abi.Methods")})
	return b
}

func (r *registry) readResource(c *Call, uri string) (*abi.ReadResourceResult, error) {
	var (
		contents []abi.ResourceContents
		err      error
		found    bool
	)
	for _, x := range r.resources {
		if x.spec.URI == uri {
			found = true
			contents, err = x.read(c, uri)
			break
		}
	}
	if !found {
		for _, t := range r.templates {
			if vars, ok := t.vars(uri); ok {
				found = true
				contents, err = t.read(c, uri, vars)
				break
			}
		}
	}
	if !found {
		return nil, NotFound(fmt.Sprintf("plugin %q serves no resource %q", r.info.Name, uri), "Call resources/list and resources/templates/list.")
	}
	if err != nil {
		return nil, err
	}
	for i := range contents {
		if contents[i].URI == "" {
			contents[i].URI = uri
		}
	}
	if contents == nil {
		contents = []abi.ResourceContents{}
	}
	return &abi.ReadResourceResult{Contents: contents}, nil
}

func (r *registry) getPrompt(c *Call, name string, rawArgs json.RawMessage) (*abi.GetPromptResult, error) {
	for _, p := range r.prompts {
		if p.spec.Name != name {
			continue
		}
		args := map[string]string{}
		if len(rawArgs) > 0 && string(rawArgs) != "null" {
			if err := unmarshalJSON(rawArgs, &args); err != nil {
				return nil, abi.NewEnvelope(abi.CodeInvalidArgument, "prompt arguments must be an object of strings: "+err.Error(), "")
			}
		}
		res, err := p.get(c, args)
		if err != nil {
			return nil, err
		}
		if res == nil {
			res = &abi.GetPromptResult{}
		}
		if res.Messages == nil {
			res.Messages = []abi.PromptMessage{}
		}
		return res, nil
	}
	return nil, NotFound(fmt.Sprintf("plugin %q has no prompt %q", r.info.Name, name), "Call prompts/list.")
}

func (r *registry) complete(c *Call, p *abi.CallParams) (*abi.CompleteResult, error) {
	if p.Ref == nil || p.Argument == nil {
		return nil, abi.NewEnvelope(abi.CodeInvalidArgument, "completion/complete needs ref and argument", "")
	}
	var fn CompleteFunc
	switch p.Ref.Type {
	case abi.RefPrompt:
		for _, x := range r.prompts {
			if x.spec.Name == p.Ref.Name {
				fn = x.spec.Complete
			}
		}
	case abi.RefResource:
		for _, x := range r.templates {
			if x.spec.URITemplate == p.Ref.URI {
				fn = x.spec.Complete
			}
		}
	}
	res := &abi.CompleteResult{Completion: abi.Completion{Values: []string{}}}
	if fn == nil {
		return res, nil
	}
	var resolved map[string]string
	if p.CompletionContext != nil {
		resolved = p.CompletionContext.Arguments
	}
	comp, err := fn(c, *p.Argument, resolved)
	if err != nil {
		return nil, err
	}
	if comp.Values == nil {
		comp.Values = []string{}
	}
	if len(comp.Values) > 100 { // MCP's limit per answer
		comp.Values, comp.HasMore = comp.Values[:100], true
	}
	res.Completion = comp
	return res, nil
}

// Notify sends the MCP client a log message (notifications/message) at
// level (debug, info, notice, warning, error, critical, alert, emergency);
// data is a string or any JSON-encodable value. The client receives it only
// at or above the level it set with logging/setLevel. Unlike Log, which
// writes to the operator's log, Notify talks to the client.
func (c *Call) Notify(level string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		b, _ = json.Marshal(fmt.Sprint(data))
	}
	req, _ := json.Marshal(abi.NotifyRequest{Level: level, Data: b})
	hostNotify(req)
}

// Sample asks the client's model for a message (sampling/createMessage) and
// waits for the answer. The plugin must Require(abi.CapSampling). A client
// without the sampling capability answers an unsupported envelope.
//
// A client at MCP 2026-07-28 is asked between runs of the call: the first
// time, Sample returns an input_required error (return it as it is), and
// the call runs again from the start once the client has answered, when
// Sample returns the answer. Ask before acting: board operations of the
// earlier run are answered from a journal, anything else happens again
// (see abi.FuncAsk). Call.Ask asks several questions in one round.
func (c *Call) Sample(req abi.SampleRequest) (*abi.SampleResult, error) {
	var out abi.SampleResult
	if err := hostRequest(hostSample, "sample", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Elicit asks the client's user for input (elicitation/create, form mode)
// and waits for the answer: message tells the user what is asked, schema
// is a flat JSON Schema object (any JSON-encodable value, e.g.
// json.RawMessage). The plugin must Require(abi.CapElicitation). A
// declined or cancelled request is a result, not an error. At MCP
// 2026-07-28 it works as Sample does: input_required first, the answer in
// the call's next run.
func (c *Call) Elicit(message string, schema any) (*abi.ElicitResult, error) {
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, abi.NewEnvelope(abi.CodeInvalidArgument, "elicit: schema is not JSON: "+err.Error(), "")
	}
	var out abi.ElicitResult
	if err := hostRequest(hostElicit, "elicit", abi.ElicitRequest{Message: message, RequestedSchema: raw}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// hostRequest calls a host function that answers a HostResponse and decodes
// its result into out.
func hostRequest(fn func([]byte) []byte, name string, req, out any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return abi.NewEnvelope(abi.CodeInvalidArgument, name+": request is not JSON: "+err.Error(), "")
	}
	resp := fn(b)
	if resp == nil {
		return abi.NewEnvelope(abi.CodeInternal, name+": the host returned nothing", "retry the call")
	}
	var hr abi.HostResponse
	if err := json.Unmarshal(resp, &hr); err != nil {
		return abi.NewEnvelope(abi.CodeInternal, name+": unreadable host response: "+err.Error(), "retry the call")
	}
	if hr.Error != nil {
		return hr.Error
	}
	if err := json.Unmarshal(hr.Result, out); err != nil {
		return abi.NewEnvelope(abi.CodeInternal, name+": result does not decode: "+err.Error(), "")
	}
	return nil
}
