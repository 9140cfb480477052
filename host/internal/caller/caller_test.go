package caller

import (
	"context"
	"testing"

	"github.com/plugboard/plugboard/abi"
)

func TestWithFrom(t *testing.T) {
	if From(context.Background()) != nil {
		t.Fatal("caller from an empty context")
	}
	c := &abi.Caller{ID: "w1", Role: "WORKER"}
	if got := From(With(context.Background(), c)); got != c {
		t.Fatalf("From = %v", got)
	}
}
