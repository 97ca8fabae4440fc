package beads

import "runtime/debug"

// guard runs f; when mapped it reports false, instead of crashing, if f
// faulted reading a mapping (the mapped file was cut short meanwhile).
// Other panics go on.
func guard(mapped bool, f func()) (ok bool) {
	if !mapped {
		f()
		return true
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if e, isFault := r.(interface{ Addr() uintptr }); isFault && e != nil {
				ok = false
				return
			}
			panic(r)
		}
	}()
	f()
	return true
}
