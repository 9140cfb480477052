// Command needful is a test plugin declaring what it needs with the SDK:
// two configuration values (NEEDFUL_TOKEN, required and secret; REGION,
// optional) and one host (api.needful.example). Its one tool says which
// values it got, never a secret's value, so tests can hold inspect, config
// check and the dashboard to what a call sees.
package main

import (
	"github.com/plugboard/plugboard/abi"
	sdk "github.com/plugboard/plugboard/sdk-guest"
)

// Input is the arguments of needful_status: none.
type Input struct{}

// Output is the answer of needful_status.
type Output struct {
	TokenSet bool   `json:"token_set" jsonschema:"whether NEEDFUL_TOKEN is set (its value is never shown)"`
	Region   string `json:"region" jsonschema:"REGION, or eu when it is not set"`
}

func init() {
	sdk.Plugin("needful", "1.0.0", "Test plugin: declares two configuration values and a host.")
	sdk.NeedsConfig("NEEDFUL_TOKEN", "the API token, from the needful console", sdk.Required, sdk.Secret)
	sdk.NeedsConfig("REGION", "the API region: eu (the default) or us")
	sdk.NeedsHTTP("api.needful.example", "the status API", "/v1/*")
	sdk.Tool(sdk.ToolSpec{
		Name: "needful_status",
		Description: `Use when: testing declared needs.
Required: none
Optional: none
Next: read token_set and region.
Avoid: calling it outside tests.`,
		Annotations: &abi.Annotations{ReadOnlyHint: true, IdempotentHint: true},
	}, func(_ *sdk.Call, _ Input) (Output, error) {
		_, tokenSet := sdk.Config("NEEDFUL_TOKEN")
		region, ok := sdk.Config("REGION")
		if !ok {
			region = "eu"
		}
		return Output{TokenSet: tokenSet, Region: region}, nil
	})
}

func main() {}
