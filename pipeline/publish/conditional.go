package publish

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// ErrPrecondition: a conditional write found the object in another state than it required
// (If-None-Match: * and the object exists; If-Match and its ETag changed).
var ErrPrecondition = errors.New("precondition failed")

// GetSmall returns the body and ETag of the small object at rel (a lease record); found is
// false when there is none.
func (p *Publisher) GetSmall(ctx context.Context, rel string) (body []byte, etag string, found bool, err error) {
	out, err := p.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: &p.loc.Bucket, Key: aws.String(p.loc.key(rel))})
	if err != nil {
		var nsk *types.NoSuchKey
		if errors.As(err, &nsk) {
			return nil, "", false, nil
		}
		return nil, "", false, p.fail("read", rel, err)
	}
	defer func() { _ = out.Body.Close() }() // read-only
	body, err = io.ReadAll(io.LimitReader(out.Body, 1<<20))
	if err != nil {
		return nil, "", false, p.fail("read", rel, err)
	}
	return body, aws.ToString(out.ETag), true, nil
}

// PutConditional writes body at rel only if the object is absent (ifMatch "") or still has
// the ETag ifMatch, and returns the new ETag. A lost condition is ErrPrecondition.
func (p *Publisher) PutConditional(ctx context.Context, rel string, body []byte, ifMatch string) (string, error) {
	in := &s3.PutObjectInput{Bucket: &p.loc.Bucket, Key: aws.String(p.loc.key(rel)), Body: bytes.NewReader(body),
		ContentType: aws.String("application/json")}
	if ifMatch == "" {
		in.IfNoneMatch = aws.String("*")
	} else {
		in.IfMatch = aws.String(ifMatch)
	}
	out, err := p.s3.PutObject(ctx, in)
	if err != nil {
		if isPrecondition(err) {
			return "", ErrPrecondition
		}
		return "", p.fail("write", rel, err)
	}
	return aws.ToString(out.ETag), nil
}

// DeleteConditional deletes the object at rel if it still has the ETag etag.
func (p *Publisher) DeleteConditional(ctx context.Context, rel, etag string) error {
	_, err := p.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &p.loc.Bucket, Key: aws.String(p.loc.key(rel)), IfMatch: aws.String(etag)})
	if err != nil {
		if isPrecondition(err) {
			return ErrPrecondition
		}
		return p.fail("delete", rel, err)
	}
	return nil
}

func isPrecondition(err error) bool {
	var api smithy.APIError
	if errors.As(err, &api) && (api.ErrorCode() == "PreconditionFailed" || api.ErrorCode() == "ConditionalRequestConflict") {
		return true
	}
	var re *smithyhttp.ResponseError
	return errors.As(err, &re) && (re.HTTPStatusCode() == http.StatusPreconditionFailed || re.HTTPStatusCode() == http.StatusConflict)
}
