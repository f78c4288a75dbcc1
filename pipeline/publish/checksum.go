package publish

import (
	"crypto/sha256"
	"encoding/base64"
	"os"
)

func base64Sum(b []byte) string {
	s := sha256.Sum256(b)
	return encodeBase64(s[:])
}

func encodeBase64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func openFile(p string) (*os.File, error) { return os.Open(p) }
