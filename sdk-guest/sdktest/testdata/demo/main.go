// Command demo is package demo's plugin, which sdktest's tests build and
// call through plugboard.
package main

import _ "github.com/plugboard/plugboard/sdk-guest/sdktest/internal/demo"

func main() {}
