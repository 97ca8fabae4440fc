package orchestrator

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

// readBuildInfo is the build information the go command records in an
// executable (Go 1.18's format and later; this binary's own toolchain
// writes no other), as debug/buildinfo.ReadFile reads it. That package
// links debug/elf, macho, pe, xcoff, dwarf and zstd, whose package init
// every chorus process ran: 8% of `chorus --version`'s CPU. The file is
// scanned for the blob's header at the 16-byte alignment the linker gives
// it, from the data segment where the linker puts it (ELF; elsewhere from
// the start), and a header is taken only when all that follows it parses.
func readBuildInfo(path string) (*debug.BuildInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, 64<<10) // a multiple of 16: a header at an aligned offset lies in one block
	off := elfDataStart(f)
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	for {
		n, err := io.ReadFull(f, buf)
		data := buf[:n]
		for i := 0; ; {
			j := bytes.Index(data[i:], buildInfoMagic)
			if j < 0 {
				break
			}
			if at := off + int64(i+j); at%buildInfoAlign == 0 {
				if bi := buildInfoAt(f, at); bi != nil {
					return bi, nil
				}
			}
			i += j + 1
		}
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			return nil, errNoBuildInfo
		case err != nil:
			return nil, err
		}
		off += int64(n)
	}
}

var (
	buildInfoMagic = []byte("\xff Go buildinf:")
	errNoBuildInfo = errors.New("no Go build information")
)

const (
	buildInfoAlign  = 16
	buildInfoHeader = 32
	flagsVersionInl = 0x2 // the version and module strings follow the header
)

// buildInfoAt parses the blob whose header is at offset at; nil when it
// is not one.
func buildInfoAt(f *os.File, at int64) *debug.BuildInfo {
	read := func(at int64, n uint64) []byte {
		if n > 16<<20 {
			return nil
		}
		b := make([]byte, n)
		if _, err := f.ReadAt(b, at); err != nil {
			return nil
		}
		return b
	}
	str := func(at int64) (string, int64, bool) {
		b := make([]byte, binary.MaxVarintLen64)
		k, _ := f.ReadAt(b, at)
		n, w := binary.Uvarint(b[:k])
		if w <= 0 {
			return "", 0, false
		}
		s := read(at+int64(w), n)
		if s == nil && n > 0 {
			return "", 0, false
		}
		return string(s), at + int64(w) + int64(n), true
	}
	hdr := read(at, buildInfoHeader)
	if hdr == nil || hdr[len(buildInfoMagic)+1]&flagsVersionInl == 0 {
		return nil
	}
	vers, next, ok := str(at + buildInfoHeader)
	if !ok || !strings.HasPrefix(vers, "go") {
		return nil
	}
	mod, _, ok := str(next)
	if !ok {
		return nil
	}
	// The module information sits between two 16-byte sentinels.
	if len(mod) >= 33 && mod[len(mod)-17] == '\n' {
		mod = mod[16 : len(mod)-16]
	} else {
		mod = ""
	}
	bi, err := debug.ParseBuildInfo(mod)
	if err != nil {
		return nil
	}
	bi.GoVersion = vers
	return bi
}

// elfDataStart is the file offset of a 64-bit little-endian ELF file's
// first writable loaded segment, rounded down to 16, where the Go linker
// puts the build information first; 0 for any other file. Only where the
// scan starts: a wrong answer costs time, not the result.
func elfDataStart(f *os.File) int64 {
	var eh [64]byte
	if _, err := f.ReadAt(eh[:], 0); err != nil || string(eh[:4]) != "\x7fELF" || eh[4] != 2 || eh[5] != 1 {
		return 0
	}
	le := binary.LittleEndian
	phoff, phentsize, phnum := int64(le.Uint64(eh[0x20:])), int64(le.Uint16(eh[0x36:])), int(le.Uint16(eh[0x38:]))
	if phentsize < 56 || phnum > 64 {
		return 0
	}
	ph := make([]byte, phentsize*int64(phnum))
	if _, err := f.ReadAt(ph, phoff); err != nil {
		return 0
	}
	const ptLoad, pfW = 1, 2
	for i := range phnum {
		p := ph[int64(i)*phentsize:]
		if le.Uint32(p) == ptLoad && le.Uint32(p[4:])&pfW != 0 {
			return int64(le.Uint64(p[8:])) &^ (buildInfoAlign - 1)
		}
	}
	return 0
}
