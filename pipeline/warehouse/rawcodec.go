package warehouse

import (
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// Raw bodies are stored zstd-compressed (raw_responses.body_encoding = 'zstd'); see
// sql/migrations/0001_tables.sql for why. EncodeAll and DecodeAll are safe for concurrent use.
const encodingZstd, encodingIdentity = "zstd", "identity"

var (
	zstdEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	zstdDecoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(256<<20))
)

// compressBody returns body encoded for raw_responses.body and its encoding.
func compressBody(body []byte) ([]byte, string) {
	return zstdEncoder.EncodeAll(body, make([]byte, 0, len(body)/3)), encodingZstd
}

// decompressBody returns the body as received from a stored raw_responses.body.
func decompressBody(stored []byte, encoding string) ([]byte, error) {
	return decompressBodyInto(nil, stored, encoding)
}

// decompressBodyInto is decompressBody writing into dst[:0] (grown as needed), so a caller
// decoding many bodies one after another reuses one buffer instead of allocating each body
// anew. The result may be stored itself (identity) or share dst's memory: use it before the
// next call with the same dst.
func decompressBodyInto(dst, stored []byte, encoding string) ([]byte, error) {
	switch encoding {
	case encodingZstd:
		b, err := zstdDecoder.DecodeAll(stored, dst[:0])
		if err != nil {
			return nil, fmt.Errorf("decompress stored body: %w", err)
		}
		return b, nil
	case encodingIdentity:
		return stored, nil
	default:
		return nil, fmt.Errorf("stored body has unknown encoding %q", encoding)
	}
}
