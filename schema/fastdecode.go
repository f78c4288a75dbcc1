package schema

import (
	gojson "github.com/goccy/go-json"
)

// DecodeOverviewFast decodes a site overview body with github.com/goccy/go-json, about three
// times faster than encoding/json on these bodies; the warehouse uses it for bulk loads and
// rebuilds. It checks the status like DecodeOverview; when the fast decoder fails for any
// reason, it returns DecodeOverview's result, so errors (and legacy-v1 detection) are the same.
func DecodeOverviewFast(body []byte) (*SiteOverview, error) {
	var v SiteOverview
	if err := gojson.Unmarshal(body, &v); err != nil || v.Status != "success" {
		return DecodeOverview(body)
	}
	return &v, nil
}

// DecodeSimilarFast is DecodeOverviewFast for a similar-sites body.
func DecodeSimilarFast(body []byte) (*SiteSimilar, error) {
	var v SiteSimilar
	if err := gojson.Unmarshal(body, &v); err != nil || v.Status != "success" {
		return DecodeSimilar(body)
	}
	return &v, nil
}
