//go:build !linux

package tile

import "io"

// quietTTY is nil: the quiet terminal writes are Linux's (quiet_linux.go).
func quietTTY() io.Writer { return nil }
