package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Canonical returns the canonical JSON of args without the top-level key
// field: object keys sorted (by their UTF-8 bytes), insignificant whitespace
// removed, strings re-encoded from their decoded value (so "\u00e9" and "é"
// are the same), and numbers exactly as written — 1, 1.0 and 1e0 are
// different payloads, because a tool may read them differently and the
// host does not know its types. args must be a JSON object.
func Canonical(args json.RawMessage, keyField string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	if obj == nil {
		return nil, errors.New("arguments are not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("arguments: data after the JSON object")
	}
	if keyField != "" {
		delete(obj, keyField)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// encoding/json writes map keys sorted and a json.Number as its text.
	if err := enc.Encode(obj); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// PayloadHash is the hex SHA-256 of Canonical(args, keyField): two calls
// with one key are the same request exactly when their hashes are equal.
func PayloadHash(args json.RawMessage, keyField string) (string, error) {
	c, err := Canonical(args, keyField)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}
