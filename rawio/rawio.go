// Package rawio reads and writes a descriptor in Go's netpoller with
// system calls the scheduler is not told of (Linux). A call the scheduler
// is told of wakes the runtime's monitor thread, which then polls every
// 20 µs for as long as the process works; the engine's frames, the TUI's
// reads of them and its paints were each the first work of a grid point.
// The descriptor must be non-blocking (net's sockets, os.OpenFile's
// terminal), so no call waits: one with nothing to read or no room waits
// in the netpoller.
package rawio
