package warehouse

import (
	"bytes"
	"fmt"
	"testing"
	"unsafe"
)

// TestDecompressReusingKeepsOneBuffer: bodies decompressed one after another into one scratch
// buffer each come out whole (a shorter body after a longer one has no tail of it), the buffer
// is reused once it is large enough, and an uncompressed stored body is returned as it is and
// never becomes the scratch buffer (writing the next body into it would corrupt the stored one).
func TestDecompressReusingKeepsOneBuffer(t *testing.T) {
	long := bytes.Repeat([]byte(`{"visits":123456789,"title":"a long title"}`), 200)
	short := []byte(`{"visits":1}`)
	plain := []byte(`{"stored":"uncompressed"}`)
	var scratch []byte
	for i, c := range []struct {
		body     []byte
		encoding string
	}{{long, encodingZstd}, {short, encodingZstd}, {plain, encodingIdentity}, {long, encodingZstd}, {short, encodingZstd}} {
		stored := c.body
		if c.encoding == encodingZstd {
			stored, _ = compressBody(c.body)
		}
		before := cap(scratch)
		got, err := decompressReusing(&scratch, stored, c.encoding)
		if err != nil {
			t.Fatalf("body %d: %v", i, err)
		}
		if !bytes.Equal(got, c.body) {
			t.Fatalf("body %d: got %q, want %q", i, previewBytes(got), previewBytes(c.body))
		}
		if unsafe.SliceData(scratch) == unsafe.SliceData(plain) {
			t.Fatalf("body %d: the stored uncompressed body became the scratch buffer", i)
		}
		if i > 0 && before >= len(c.body) && cap(scratch) != before {
			t.Errorf("body %d (%d bytes): scratch reallocated from %d to %d bytes of capacity", i, len(c.body), before, cap(scratch))
		}
	}
	if _, err := decompressReusing(&scratch, []byte("not zstd"), encodingZstd); err == nil {
		t.Error("a broken zstd body decompressed without an error")
	}
	if _, err := decompressReusing(&scratch, plain, "gzip"); err == nil {
		t.Error("an unknown encoding decompressed without an error")
	}
}

func previewBytes(b []byte) string {
	if len(b) > 40 {
		return fmt.Sprintf("%s… (%d bytes)", b[:40], len(b))
	}
	return string(b)
}
