//go:build unix

package main_test

import (
	"testing"

	"github.com/chorus-dev/chorus/internal/testkit"
)

// The chorus binaries the tests start are built once and removed after.
func TestMain(m *testing.M) { testkit.Main(m) }
