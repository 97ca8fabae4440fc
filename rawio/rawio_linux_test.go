package rawio

import (
	"bytes"
	"io"
	"os"
	"testing"
)

// A write larger than the pipe waits for room in the netpoller and
// arrives whole; a closed writer reads as io.EOF.
func TestWriteWaitsForRoomAndReadSeesEOF(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rrc, err := r.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	wrc, err := w.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB, past a pipe's 64 KiB
	wrote := make(chan error, 1)
	go func() {
		n, err := Write(wrc, want)
		if err == nil && n != len(want) {
			err = io.ErrShortWrite
		}
		w.Close()
		wrote <- err
	}()
	var got []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := Read(rrc, buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, not the %d written", len(got), len(want))
	}
	if n, err := Read(rrc, nil); n != 0 || err != nil {
		t.Fatalf("empty read: %d %v", n, err)
	}
}
