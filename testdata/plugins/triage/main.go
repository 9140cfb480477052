// Command triage is a test plugin that writes to the board before it asks
// the client anything: it creates a task, then asks the user for a
// priority and the model for a summary, in one ask. At MCP 2026-07-28 the
// call runs again once the client answers, so the test sees whether the
// task is made once however many runs, and on however many hosts, the
// call takes.
package main

import (
	"github.com/plugboard/plugboard/abi"
	sdk "github.com/plugboard/plugboard/sdk-guest"
)

// Input is the arguments of triage_task.
type Input struct {
	ProjectID string `json:"project_id" jsonschema:"project to file the task in"`
	Title     string `json:"title" jsonschema:"title of the task"`
}

// Output is the answer of triage_task.
type Output struct {
	TaskID   string `json:"task_id" jsonschema:"the task created"`
	Priority string `json:"priority" jsonschema:"the priority the user chose"`
	Summary  string `json:"summary" jsonschema:"the model's summary"`
}

func init() {
	sdk.Plugin("triage", "1.0.0", "Test plugin: files a task, then asks the client about it.")
	sdk.Require(abi.CapBoardWrite, abi.CapSampling, abi.CapElicitation)
	sdk.Tool(sdk.ToolSpec{
		Name: "triage_task",
		Description: `Use when: testing questions asked after a board write.
Required: project_id, title
Optional: none
Next: read task_id, priority, summary.
Avoid: real triage.`,
	}, func(c *sdk.Call, in Input) (Output, error) {
		var task struct {
			TaskID string `json:"task_id"`
		}
		if err := c.Board(abi.OpCreateTask, map[string]any{"project_id": in.ProjectID, "title": in.Title}, &task); err != nil {
			return Output{}, err
		}
		answers, err := c.Ask(
			sdk.AskElicit("priority", "Priority of "+in.Title+"?", map[string]any{
				"type": "object", "properties": map[string]any{"priority": map[string]any{"type": "string"}}, "required": []string{"priority"}}),
			sdk.AskSample("summary", abi.SampleRequest{MaxTokens: 50, Messages: []abi.SamplingMessage{
				{Role: "user", Content: abi.Content{Type: "text", Text: "Summarise: " + in.Title}}}}),
		)
		if err != nil {
			return Output{}, err
		}
		el, err := answers.Elicit("priority")
		if err != nil {
			return Output{}, err
		}
		s, err := answers.Sample("summary")
		if err != nil {
			return Output{}, err
		}
		priority, _ := el.Content["priority"].(string)
		return Output{TaskID: task.TaskID, Priority: priority, Summary: s.Content.Text}, nil
	})
}

func main() {}
