package kube

import (
	"testing"

	"github.com/chorus-dev/chorus/internal/testkit"
)

// The chorus binary the tests run in pods is built once and removed after.
func TestMain(m *testing.M) { testkit.Main(m) }
