package abi

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// CallRequest is the input of the call export. Method is absent for
// tools/call, so the request of a tool call is exactly the Extism MCP plugin
// shape; ABI version 2 adds the other methods of [Methods], which the host
// sends only to a plugin whose manifest declares what they address
// (resources, resource templates, prompts, completions).
type CallRequest struct {
	Method  string       `json:"method,omitempty"`
	Params  CallParams   `json:"params"`
	Context *CallContext `json:"context,omitempty"`
}

// Methods a plugin serves through the call export (CallRequest.Method).
const (
	// MethodToolsCall is the default ("" means it): Params has Name and
	// Arguments; the answer is a CallResult.
	MethodToolsCall = "tools/call"
	// MethodResourcesRead reads a resource the plugin declares, or one
	// matching a resource template it declares: Params.URI. The answer is a
	// MethodResult whose result is a ReadResourceResult.
	MethodResourcesRead = "resources/read"
	// MethodPromptsGet renders a prompt: Params.Name and Params.Arguments (an
	// object of strings). The answer is a MethodResult whose result is a
	// GetPromptResult.
	MethodPromptsGet = "prompts/get"
	// MethodCompletionComplete suggests values for an argument of a prompt or
	// a resource template that declares completion: Params.Ref,
	// Params.Argument and Params.CompletionContext. The answer is a
	// MethodResult whose result is a CompleteResult.
	MethodCompletionComplete = "completion/complete"
)

// Methods returns every method a plugin may be asked to serve, as a copy.
func Methods() []string { return slices.Clone(methods) }

var methods = []string{MethodToolsCall, MethodResourcesRead, MethodPromptsGet, MethodCompletionComplete}

// CallParams is the union of the MCP params of the methods a plugin serves:
// tools/call and prompts/get use Name and Arguments, resources/read uses URI,
// completion/complete uses Ref, Argument and CompletionContext.
type CallParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	URI       string          `json:"uri,omitempty"`
	Ref       *CompletionRef  `json:"ref,omitempty"`
	Argument  *CompletionArg  `json:"argument,omitempty"`
	// CompletionContext holds the values of the other arguments already
	// chosen, for completion/complete (MCP's params.context).
	CompletionContext *CompletionContext `json:"context,omitempty"`
}

// MethodResult is the output of the call export for every method other than
// tools/call: exactly one of Result (the method's MCP result) and Error.
type MethodResult struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Envelope       `json:"error,omitempty"`
}

// CallContext is what the host tells a plugin about the call. Guests must
// tolerate unknown fields: later ABI minor additions arrive here.
type CallContext struct {
	// RequestID is the caller's idempotency key, when the tool declares one.
	RequestID string `json:"request_id,omitempty"`
	// Caller identifies who is calling.
	Caller *Caller `json:"caller,omitempty"`
	// DeadlineUnixMS is when the host will interrupt the call (Unix ms).
	DeadlineUnixMS int64 `json:"deadline_unix_ms,omitempty"`
	// Progress is true when the client asked for progress notifications;
	// progress reported without it is dropped by the host.
	Progress bool `json:"progress,omitempty"`
}

// Caller is the identity behind a call.
type Caller struct {
	ID   string `json:"id"`
	Role string `json:"role,omitempty"`
}

// CallResult is the output of the call export: an MCP CallToolResult.
//
// A plugin may leave Content empty when it sets StructuredContent; the host
// then adds one text item holding the compact JSON of StructuredContent, which
// saves the guest from encoding its answer twice.
type CallResult struct {
	Content           []Content       `json:"content,omitempty"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
}

// Content is one MCP content item, in MCP's JSON shape. ABI version 1
// defines text items; version 2 adds image and audio (Data and MIMEType),
// resource (an embedded Resource) and resource_link (URI, Name, and
// optionally Title, Description, MIMEType, Size). The host refuses a result
// holding any other type, or an item missing a field its type requires,
// with plugin_failed rather than silently dropping it.
type Content struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	// Data is the bytes of an image or audio item (base64 in JSON).
	Data     []byte `json:"data,omitempty"`
	MIMEType string `json:"mimeType,omitempty"`
	// Resource is the embedded resource of a "resource" item.
	Resource *ResourceContents `json:"resource,omitempty"`
	// URI, Name, Title, Description and Size describe a "resource_link".
	URI         string `json:"uri,omitempty"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Size        *int64 `json:"size,omitempty"`
	// Annotations and Meta are MCP's optional annotations and _meta of any
	// item; the host carries them to the client unchanged.
	Annotations *ContentAnnotations `json:"annotations,omitempty"`
	Meta        map[string]any      `json:"_meta,omitempty"`
}

// ContentAnnotations are MCP's annotations of a content item: who it is for
// ("user", "assistant"), how important it is (0 to 1) and when it last
// changed (ISO 8601).
type ContentAnnotations struct {
	Audience     []string `json:"audience,omitempty"`
	Priority     *float64 `json:"priority,omitempty"`
	LastModified string   `json:"lastModified,omitempty"`
}

// Content types.
const (
	ContentText         = "text"
	ContentImage        = "image"
	ContentAudio        = "audio"
	ContentResource     = "resource"
	ContentResourceLink = "resource_link"
)

// Check reports what is wrong with a content item: an unknown type, or a
// field its type requires that is missing. nil means the host carries it.
func (c *Content) Check() error {
	switch c.Type {
	case ContentText:
		return nil
	case ContentImage, ContentAudio:
		if len(c.Data) == 0 || c.MIMEType == "" {
			return fmt.Errorf("%s content needs data and mimeType", c.Type)
		}
		return nil
	case ContentResource:
		if c.Resource == nil {
			return errors.New("resource content needs resource")
		}
		return c.Resource.Check()
	case ContentResourceLink:
		if c.URI == "" || c.Name == "" {
			return errors.New("resource_link content needs uri and name")
		}
		return nil
	}
	return fmt.Errorf("content type %q is not one of text, image, audio, resource, resource_link", c.Type)
}

// ResourceContents is what reading a resource yields: text or a blob
// (base64 in JSON), never both.
type ResourceContents struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     []byte `json:"blob,omitempty"`
}

// Check reports a missing uri, or text and blob both set.
func (r *ResourceContents) Check() error {
	if r.URI == "" {
		return errors.New("resource contents need a uri")
	}
	if r.Text != "" && len(r.Blob) > 0 {
		return fmt.Errorf("resource contents of %s have both text and blob", r.URI)
	}
	return nil
}
