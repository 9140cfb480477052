package main

import (
	"os"
	"testing"

	"github.com/plugboard/plugboard/internal/testing/pgtest"
)

// TestMain stops the PostgreSQL cluster tests share (pgtest.Shared) once
// they have run.
func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }
