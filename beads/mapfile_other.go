//go:build !linux && !darwin

package beads

import "os"

func mapFile(*os.File, int64) ([]byte, func(), bool) { return nil, nil, false }
