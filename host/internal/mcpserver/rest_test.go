package mcpserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/abi"
)

// TestRESTMissingFields: a body missing fields names all of them, in a
// fixed order, every time (it once named a random one of two).
func TestRESTMissingFields(t *testing.T) {
	h := REST(nil, Options{Caller: &abi.Caller{ID: "local", Role: "SUPERVISOR"}}) // refused before dispatch
	for _, c := range []struct {
		body, message, fields string
	}{
		{`{"input":{}}`, "agentId and toolName are required", "[agentId toolName]"},
		{`{"toolName":"echo"}`, "agentId is required", "[agentId]"},
		{`{"agentId":"local"}`, "toolName is required", "[toolName]"},
	} {
		for range 20 {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, ExecutePath, strings.NewReader(c.body)))
			var r RESTResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			if rec.Code != http.StatusBadRequest || r.Error == nil || r.Error.Code != abi.CodeMissingRequired ||
				r.Error.Message != c.message || fmt.Sprint(r.Error.Details["fields"]) != c.fields ||
				r.Error.Details["field"] != strings.Fields(strings.Trim(c.fields, "[]"))[0] {
				t.Fatalf("%s: %d %s", c.body, rec.Code, rec.Body)
			}
		}
	}
}
