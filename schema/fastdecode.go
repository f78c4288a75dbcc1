package schema

import (
	"bytes"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
)

// fastSafe reports whether goccy/go-json decodes body exactly as encoding/json does. They
// differ on invalid UTF-8 (encoding/json replaces it with U+FFFD, goccy keeps the bytes, which
// DuckDB would then refuse) and, to be safe, on escaped UTF-16 surrogates; such bodies take
// the standard decoder. utf8.Valid costs a few percent of a decode.
func fastSafe(body []byte) bool {
	return utf8.Valid(body) && !bytes.Contains(body, []byte(`\ud`)) && !bytes.Contains(body, []byte(`\uD`))
}

// DecodeOverviewFast decodes a site overview body with github.com/goccy/go-json, about three
// times faster than encoding/json on these bodies; the warehouse uses it for bulk loads and
// rebuilds. It checks the status like DecodeOverview; when the fast decoder fails for any
// reason, or the body holds invalid UTF-8 or escaped surrogates, it returns DecodeOverview's
// result, so values, errors and legacy-v1 detection are the same.
func DecodeOverviewFast(body []byte) (*SiteOverview, error) {
	if !fastSafe(body) {
		return DecodeOverview(body)
	}
	var v SiteOverview
	if err := gojson.Unmarshal(body, &v); err != nil || v.Status != "success" {
		return DecodeOverview(body)
	}
	return &v, nil
}

// DecodeSimilarFast is DecodeOverviewFast for a similar-sites body.
func DecodeSimilarFast(body []byte) (*SiteSimilar, error) {
	if !fastSafe(body) {
		return DecodeSimilar(body)
	}
	var v SiteSimilar
	if err := gojson.Unmarshal(body, &v); err != nil || v.Status != "success" {
		return DecodeSimilar(body)
	}
	return &v, nil
}
