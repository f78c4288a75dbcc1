package s3test

import (
	"path/filepath"
	"testing"
)

// SetCredentials points the AWS SDK's default credential chain at accessKey and secretKey
// alone, for the rest of t: no session token, profile, region, config or credentials file of
// the machine's own, and never the EC2 instance metadata service (tests stay on loopback).
// Empty keys leave the chain with no credentials at all.
func SetCredentials(t testing.TB, accessKey, secretKey string) {
	t.Helper()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":           accessKey,
		"AWS_SECRET_ACCESS_KEY":       secretKey,
		"AWS_SESSION_TOKEN":           "",
		"AWS_PROFILE":                 "",
		"AWS_REGION":                  "",
		"AWS_CONFIG_FILE":             filepath.Join(t.TempDir(), "no-config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(t.TempDir(), "no-credentials"),
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		t.Setenv(k, v)
	}
}

// SetEnv is SetCredentials with the gateway's own keys.
func (s *Server) SetEnv(t testing.TB) { t.Helper(); SetCredentials(t, s.AccessKey, s.SecretKey) }
