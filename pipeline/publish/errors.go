package publish

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/aws/smithy-go"
)

// Kinds of publish failure, for errors.Is.
var (
	// ErrDisabled: publish.url is empty.
	ErrDisabled = errors.New("publishing is not configured (set publish.url in the config)")
	// ErrCredentials: no credentials were found, or the storage rejected them.
	ErrCredentials = errors.New("credentials")
	// ErrNoBucket: the bucket of publish.url does not exist.
	ErrNoBucket = errors.New("bucket missing")
	// ErrUnreachable: the storage endpoint did not answer.
	ErrUnreachable = errors.New("storage unreachable")
	// ErrNoMonth: the local Parquet tree holds no partition of the month.
	ErrNoMonth = errors.New("month not in the Parquet tree")
)

// Error is a failed storage operation: Op on URL (s3://bucket/key), of Kind (one of the
// sentinels above, or nil). Its message never contains a credential.
type Error struct {
	Op       string
	URL      string
	Endpoint string // publish.endpoint, or "" for the AWS endpoint of the region
	Kind     error
	Err      error
	msg      string // Err's message with every credential removed
}

func (e *Error) Error() string {
	hint := ""
	switch e.Kind {
	case ErrCredentials:
		hint = "the storage rejected the credentials: check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or the instance role, and that they may write the bucket: "
	case ErrNoBucket:
		hint = "the bucket does not exist: create it, or fix publish.url (and publish.endpoint, publish.path_style): "
	case ErrUnreachable:
		// Any command reads the bucket (restore, run, status): the advice names the endpoint
		// and what to fix, not a command to rerun.
		endpoint := "the AWS S3 endpoint of publish.region"
		if e.Endpoint != "" {
			endpoint = e.Endpoint
		}
		hint = fmt.Sprintf("the storage endpoint %s does not answer: check publish.endpoint (and publish.url, or restore's --from) and the network, then run the command again: ", endpoint)
	}
	return fmt.Sprintf("%s %s: %s%s", e.Op, e.URL, hint, e.msg)
}

func (e *Error) Unwrap() []error {
	if e.Kind == nil {
		return []error{e.Err}
	}
	return []error{e.Kind, e.Err}
}

// storageError classifies err of op on url, removing the secrets from its message.
func storageError(op, url, endpoint string, err error, secrets ...string) error {
	return &Error{Op: op, URL: url, Endpoint: endpoint, Kind: kindOf(err), Err: err, msg: redact(plainText(err), secrets...)}
}

// plainText is err's message, or, for a request its context ended, just that: the SDK's
// text ("https response error StatusCode: 0, RequestID: , HostID: , canceled, context
// canceled") says nothing a user needs.
func plainText(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "interrupted by a signal or shutdown"
	case errors.Is(err, context.DeadlineExceeded):
		return "stopped at its deadline"
	}
	return err.Error()
}

func kindOf(err error) error {
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "ExpiredToken",
			"InvalidToken", "InvalidClientTokenId", "AuthorizationHeaderMalformed":
			return ErrCredentials
		case "NoSuchBucket":
			return ErrNoBucket
		}
		return nil
	}
	var op *net.OpError
	var to interface{ Timeout() bool } // net.Error and the SDK's body read timeout
	if errors.As(err, &op) || (errors.As(err, &to) && to.Timeout()) {
		return ErrUnreachable // refused, reset, or a deadline of Deadlines passed
	}
	return nil
}

// redact replaces every non-empty secret in s.
func redact(s string, secrets ...string) string {
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	return s
}

// FailedError is the error of a publish after a run: the run's local load is complete and
// stays so; only the upload of Month failed. The caller reports it apart from the run's
// outcome (exit 1).
type FailedError struct {
	Month string
	Err   error
}

func (e *FailedError) Error() string {
	return fmt.Sprintf("publish snapshot %s (the local load is complete; `sitewatch publish --snapshot %s` retries the upload): %v", e.Month, e.Month, e.Err)
}

func (e *FailedError) Unwrap() error { return e.Err }
