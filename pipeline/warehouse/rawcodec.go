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
	switch encoding {
	case encodingZstd:
		b, err := zstdDecoder.DecodeAll(stored, nil)
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
