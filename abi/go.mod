module github.com/plugboard/plugboard/abi

go 1.21.0
