package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"sync"
)

// output is a container's log: written once by its process, read by any
// number of log and attach streams, which wait for more while it runs.
type output struct {
	f       *os.File
	path    string
	mu      sync.Mutex
	size    int64
	changed chan struct{} // closed and replaced on every write
	closed  bool
}

func newOutput(path string) (*output, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	return &output{f: f, path: path, changed: make(chan struct{})}, nil
}

func (o *output) Write(b []byte) (int, error) {
	n, err := o.f.Write(b)
	o.mu.Lock()
	o.size += int64(n)
	close(o.changed)
	o.changed = make(chan struct{})
	o.mu.Unlock()
	return n, err
}

func (o *output) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.closed {
		o.closed = true
		o.f.Close()
		close(o.changed)
	}
}

// reader reads the log from its start (or its last tail lines), waiting
// for more while the process runs when follow is set.
func (o *output) reader(ctx context.Context, follow bool, tail, limit int) (io.ReadCloser, error) {
	f, err := os.Open(o.path)
	if err != nil {
		return nil, err
	}
	fl := &follower{f: f, o: o, ctx: ctx, follow: follow}
	if tail > 0 {
		if err := fl.tail(tail); err != nil {
			f.Close()
			return nil, err
		}
	}
	if limit > 0 {
		return struct {
			io.Reader
			io.Closer
		}{io.LimitReader(fl, int64(limit)), fl}, nil
	}
	return fl, nil
}

type follower struct {
	f      *os.File
	o      *output
	ctx    context.Context
	follow bool
	pos    int64
}

func (r *follower) Read(b []byte) (int, error) {
	for {
		n, err := r.f.Read(b)
		r.pos += int64(n)
		if n > 0 || (err != nil && err != io.EOF) {
			return n, err
		}
		if !r.follow {
			return 0, io.EOF
		}
		r.o.mu.Lock()
		end := r.o.closed && r.pos >= r.o.size
		ch := r.o.changed
		more := r.pos < r.o.size
		r.o.mu.Unlock()
		if end {
			return 0, io.EOF
		}
		if more {
			continue
		}
		select {
		case <-ch:
		case <-r.ctx.Done():
			return 0, io.EOF
		}
	}
}

func (r *follower) Close() error { return r.f.Close() }

// fromEnd skips what was written before: an attach sees output from now on.
func (r *follower) fromEnd() {
	if off, err := r.f.Seek(0, io.SeekEnd); err == nil {
		r.pos = off
	}
}

// tail moves to the start of the last n lines.
func (r *follower) tail(n int) error {
	var offs []int64
	var off int64
	br := bufio.NewReader(r.f)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			offs = append(offs, off)
			off += int64(len(line))
			if len(offs) > n {
				offs = offs[1:]
			}
		}
		if err == bufio.ErrBufferFull {
			// A long line: count it as one whatever its length.
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				off += int64(len(line))
			}
		}
		if err != nil {
			break
		}
	}
	start := off
	if len(offs) > 0 {
		start = offs[0]
	}
	_, err := r.f.Seek(start, io.SeekStart)
	r.pos = start
	return err
}
