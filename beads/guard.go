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

// caught runs f like guard and returns the fault it caught, to be raised
// again (panic) on a goroutine that runs under guard; nil if none.
func caught(mapped bool, f func()) (fault any) {
	if !mapped {
		f()
		return nil
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if e, isFault := r.(interface{ Addr() uintptr }); isFault && e != nil {
				fault = r
				return
			}
			panic(r)
		}
	}()
	f()
	return nil
}
