package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrLegacyV1 reports a body in the legacy v1 contract (boolean success flag, camelCase
// fields, hyphenated country keys). Loading it as v2 would give empty rows, so it is refused.
var ErrLegacyV1 = errors.New("legacy v1 response (boolean success flag, camelCase fields): " +
	"this listing serves the retired contract; point api.base_url at a v2 gateway or listing")

// ErrNotSuccess reports a 200 body whose status is not "success".
var ErrNotSuccess = errors.New(`response status is not "success"`)

// ErrMalformedValue matches (errors.Is) an error about a value of a decoded body that cannot
// be loaded, such as schema/flatten's *FlattenError for a malformed date: callers that must not
// link the flattener (the core) tell the body's fault from the warehouse's by it.
var ErrMalformedValue = errors.New("a value of the body is malformed")

// DecodeError says why a body could not be decoded, for which endpoint.
type DecodeError struct {
	Endpoint Endpoint
	Err      error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("decode %s response: %v", e.Endpoint, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// envelope holds the keys that tell the v2 contract from v1.
type envelope struct {
	Status       *string         `json:"status"`
	Success      json.RawMessage `json:"success"`
	SourceSite   json.RawMessage `json:"sourceSite"`
	SimilarSites json.RawMessage `json:"similarSites"`
}

// DecodeOverview decodes a site overview body. It returns a *DecodeError wrapping
// ErrLegacyV1, ErrNotSuccess or the JSON error.
func DecodeOverview(body []byte) (*SiteOverview, error) {
	var v SiteOverview
	if err := decode(EndpointOverview, body, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// DecodeSimilar decodes a similar-sites body; errors as DecodeOverview.
func DecodeSimilar(body []byte) (*SiteSimilar, error) {
	var v SiteSimilar
	if err := decode(EndpointSimilar, body, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// DecodeCountries decodes a country metadata body; errors as DecodeOverview.
func DecodeCountries(body []byte) (*CountryMetadata, error) {
	var v CountryMetadata
	if err := decode(EndpointCountries, body, &v); err != nil {
		return nil, err
	}
	for i, c := range v.Countries {
		if len(c.Alpha2) != 2 || len(c.Alpha3) != 3 {
			return nil, &DecodeError{EndpointCountries, fmt.Errorf("country %d (%q): alpha2 %q or alpha3 %q has the wrong length", i, c.Name, c.Alpha2, c.Alpha3)}
		}
	}
	return &v, nil
}

// Validate decodes body as the response of endpoint and discards it: a cheap check that a
// 200 body is usable before it is stored.
func Validate(endpoint Endpoint, body []byte) error {
	var err error
	switch endpoint {
	case EndpointOverview:
		_, err = DecodeOverview(body)
	case EndpointSimilar:
		_, err = DecodeSimilar(body)
	case EndpointCountries:
		_, err = DecodeCountries(body)
	default:
		err = fmt.Errorf("unknown endpoint %q", endpoint)
	}
	return err
}

func decode(endpoint Endpoint, body []byte, into any) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return &DecodeError{endpoint, fmt.Errorf("body is not a JSON object (starts with %q)", preview(trimmed))}
	}
	var env envelope
	if err := json.Unmarshal(trimmed, &env); err != nil {
		return &DecodeError{endpoint, err}
	}
	if env.Status == nil {
		if env.Success != nil || env.SourceSite != nil || env.SimilarSites != nil {
			return &DecodeError{endpoint, ErrLegacyV1}
		}
		return &DecodeError{endpoint, fmt.Errorf("%w: the status field is missing", ErrNotSuccess)}
	}
	if *env.Status != "success" {
		return &DecodeError{endpoint, fmt.Errorf("%w: got %q", ErrNotSuccess, *env.Status)}
	}
	if err := json.Unmarshal(trimmed, into); err != nil {
		return &DecodeError{endpoint, err}
	}
	return nil
}

func preview(b []byte) string {
	const n = 40
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
