module github.com/plugboard/plugboard/sdk-guest

go 1.24.0

require (
	github.com/extism/go-pdk v1.1.3
	github.com/google/jsonschema-go v0.4.3
	github.com/plugboard/plugboard/abi v0.0.0-00010101000000-000000000000
)

// Inside this repository sdk-guest builds against the abi beside it; a
// module that requires sdk-guest needs its own replace line for abi until
// both are published.
replace github.com/plugboard/plugboard/abi => ../abi
