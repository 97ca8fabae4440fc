package beads

import (
	"embed"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"io/fs"
	"runtime"
	"strings"
	"sync"
)

// ownSource is this package's source, for codeID.
//
//go:embed *.go
var ownSource embed.FS

// codeID identifies the code that decides what the index memo and the
// kept counts hold: this package's source (the index pass, Ready's rules,
// the formats) and the Go release (encoding/json's verdict on a line).
// Unlike exeID it survives a new chorus binary whose task store did not
// change, so the first `chorus status` after an upgrade or a rebuild
// takes the counts kept or counts from the memo, instead of decoding every
// task again. Answers rendered outside this package (the ready lists) stay
// keyed by exeID. "" when the source cannot be read (never, for a build).
var codeID = sync.OnceValue(hashOwnSource)

// hashOwnSource is codeID, computed (about 0.1 ms).
func hashOwnSource() string {
	c, ieee := crc32.Checksum([]byte(runtime.Version()), castagnoli()), crc32.ChecksumIEEE([]byte(runtime.Version()))
	ok := true
	_ = fs.WalkDir(ownSource, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			ok = false
			return err
		}
		if d.IsDir() || strings.HasSuffix(p, "_test.go") {
			return nil // tests change no answer
		}
		b, err := ownSource.ReadFile(p)
		if err != nil {
			ok = false
			return err
		}
		name := []byte(p + "\x00")
		c, ieee = crc32.Update(c, castagnoli(), name), crc32.Update(ieee, crc32.IEEETable, name)
		c, ieee = crc32.Update(c, castagnoli(), b), crc32.Update(ieee, crc32.IEEETable, b)
		return nil
	})
	if !ok {
		return ""
	}
	var sum [8]byte
	binary.LittleEndian.PutUint32(sum[:], c)
	binary.LittleEndian.PutUint32(sum[4:], ieee)
	return "code-" + hex.EncodeToString(sum[:])
}
