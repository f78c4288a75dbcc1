package warehouse

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"time"

	"sitewatch/pipeline/model"
	"sitewatch/schema"
	"sitewatch/schema/flatten"
)

var snapshotRE = regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])$`)

func checkSnapshot(snapshot string) error {
	if !snapshotRE.MatchString(snapshot) {
		return fmt.Errorf("snapshot %q is not a month YYYY-MM (e.g. 2026-01)", snapshot)
	}
	return nil
}

// State returns what snapshot holds: stored raw bodies, loaded domains, countries and
// rejected domains.
func (w *Warehouse) State(ctx context.Context, snapshot string) (*model.SnapshotState, error) {
	if err := checkSnapshot(snapshot); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	if err := w.Flush(ctx); err != nil {
		return nil, fmt.Errorf("state of snapshot %s: %w", snapshot, err)
	}
	st := model.NewSnapshotState()
	err := scanAnswers(ctx, w.db, `SELECT domain, endpoint FROM raw_responses WHERE snapshot_month = ?`, []any{snapshot}, st)
	if err == nil {
		err = QueryEach(ctx, w.db, `SELECT domain FROM sites WHERE snapshot_month = ?`,
			[]any{snapshot}, func(rows *sql.Rows) error {
				var domain string
				if err := rows.Scan(&domain); err != nil {
					return err
				}
				st.SetLoaded(domain)
				return nil
			})
	}
	if err == nil {
		err = scanRejected(ctx, w.db, `SELECT domain, arg_max(coalesce(code, ''), occurred_at) FROM fetch_errors
			WHERE snapshot_month = ? AND http_status = 400 GROUP BY domain`, []any{snapshot}, st)
	}
	if err != nil {
		return nil, fmt.Errorf("state of snapshot %s: %w", snapshot, err)
	}
	return st, nil
}

// scanAnswers adds the answers (domain, endpoint) query returns to st.
func scanAnswers(ctx context.Context, q Querier, query string, args []any, st *model.SnapshotState) error {
	return QueryEach(ctx, q, query, args, func(rows *sql.Rows) error {
		var domain, endpoint string
		if err := rows.Scan(&domain, &endpoint); err != nil {
			return err
		}
		if schema.Endpoint(endpoint) == schema.EndpointCountries {
			st.CountriesLoaded = true
			return nil
		}
		st.AddStored(domain, model.EndpointBit(schema.Endpoint(endpoint)))
		return nil
	})
}

// scanRejected adds the API's rejections (domain, code of its latest 400) query returns to st.
func scanRejected(ctx context.Context, q Querier, query string, args []any, st *model.SnapshotState) error {
	return QueryEach(ctx, q, query, args, func(rows *sql.Rows) error {
		var domain, code string
		if err := rows.Scan(&domain, &code); err != nil {
			return err
		}
		st.Rejected[domain] = code
		return nil
	})
}

// Store lands one charged, successful response: its raw body, its run_calls ledger row, and,
// once the domain has both site-overview and site-similar, that (snapshot, domain)'s rows in
// every derived table, replacing whatever they held. country-metadata replaces the countries
// table.
//
// Store buffers: the answer is committed by a background flush within BatchWindow (250 ms by
// default) in one transaction with the answers around it, or earlier by Flush, Close, State,
// DB or any other method that reads or writes. A crash (kill -9, power loss) loses at most the
// answers of a batch younger than that bound plus one flush; nothing committed is lost, and a
// domain's raw bodies and derived rows are always committed together.
//
// Errors about the body itself come back synchronously, for this answer: a body that does not
// decode is refused (nothing but its ledger row, outcome "refused", is written) with a
// *schema.DecodeError; a pair that decodes but cannot be flattened (a malformed date) is kept
// raw with no derived rows, and Store returns an *UnloadableError. Storage errors (a failed
// flush: disk full, I/O) surface at the next Store, Flush or Close; the answers of the failed
// batch are not stored (a rerun fetches them again).
//
// With raw.Refresh, a domain whose other body was stored by another run (or before run IDs
// were recorded) is not loaded beside it: that older body and the domain's derived rows are
// removed, and the domain loads when its other body of the same run arrives (a stopped
// refresh leaves it half-loaded, which the next run completes).
func (w *Warehouse) Store(ctx context.Context, snapshot string, raw model.Raw) error {
	if err := checkSnapshot(snapshot); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := checkRawKey(raw); err != nil {
		return err
	}
	if w.opts.ReadOnly {
		return fmt.Errorf("store %s %s: the warehouse is open read-only", model.DisplayDomain(raw.Domain), raw.Endpoint)
	}
	if err := decodeRaw(&raw); err != nil {
		if raw.RunID != "" {
			if cerr := w.write(ctx, func(b *batch) error { b.addCharge(chargeOf(snapshot, raw, model.OutcomeRefused)); return nil }); cerr != nil {
				err = errors.Join(err, cerr)
			}
		}
		return fmt.Errorf("store %s (snapshot %s): %w", model.DisplayDomain(raw.Domain), snapshot, err)
	}
	fetched := raw.FetchedAt
	if fetched.IsZero() {
		fetched = time.Now()
	}
	raw.FetchedAt = fetched.UTC()
	body, encoding := compressBody(raw.Body)
	row := rawRow{rawKey: rawKey{snapshot, raw.Domain, raw.Endpoint}, fetchedAt: raw.FetchedAt,
		body: string(body), encoding: encoding, runID: raw.RunID}
	err := w.enqueue(ctx, snapshot, raw, row)
	var unloadable *UnloadableError
	if errors.As(err, &unloadable) {
		return err
	}
	if err != nil {
		return fmt.Errorf("store %s %s (snapshot %s): %w", model.DisplayDomain(raw.Domain), raw.Endpoint, snapshot, err)
	}
	return nil
}

func checkRawKey(raw model.Raw) error {
	switch raw.Endpoint {
	case schema.EndpointCountries:
		if raw.Domain != "" {
			return fmt.Errorf("store %s: country-metadata has no domain, got %q", raw.Endpoint, raw.Domain)
		}
	case schema.EndpointOverview, schema.EndpointSimilar:
		if raw.Domain == "" {
			return fmt.Errorf("store %s: the domain is empty", raw.Endpoint)
		}
	default:
		return fmt.Errorf("store %s: unknown endpoint %q", model.DisplayDomain(raw.Domain), raw.Endpoint)
	}
	return nil
}

// decodeRaw fills the decoded field of raw's endpoint from its body when the caller did not.
func decodeRaw(raw *model.Raw) error {
	var err error
	switch raw.Endpoint {
	case schema.EndpointCountries:
		if raw.Countries == nil {
			raw.Countries, err = schema.DecodeCountries(raw.Body)
		}
	case schema.EndpointOverview:
		if raw.Overview == nil {
			raw.Overview, err = schema.DecodeOverviewFast(raw.Body)
		}
	case schema.EndpointSimilar:
		if raw.Similar == nil {
			raw.Similar, err = schema.DecodeSimilarFast(raw.Body)
		}
	}
	return err
}

func chargeOf(snapshot string, raw model.Raw, outcome string) model.Charge {
	return model.Charge{RunID: raw.RunID, SnapshotMonth: snapshot, Domain: raw.Domain, Endpoint: raw.Endpoint,
		HTTPStatus: 200, Credits: raw.Credits, FetchedAt: raw.FetchedAt, Outcome: outcome, Source: raw.Source}
}

// UnloadableError reports a domain whose stored responses decode but cannot be flattened
// (a malformed date, say). Its bodies are kept in raw_responses and its rows removed; a run
// does not fetch it again (that would cost credits for the same body), `run --refresh` does,
// and `rebuild` loads it once the flattening copes.
type UnloadableError struct {
	Domain string
	Err    error // a *flatten.FlattenError or *schema.DecodeError
}

func (e *UnloadableError) Error() string {
	return fmt.Sprintf("%s: stored, but its response cannot be loaded: %v", e.Domain, e.Err)
}

func (e *UnloadableError) Unwrap() error { return e.Err }

// RawBody returns a stored response body as received (decompressed), or an error wrapping
// sql.ErrNoRows when none is stored. domain is "" for country-metadata.
func (w *Warehouse) RawBody(ctx context.Context, snapshot, domain string, endpoint schema.Endpoint) ([]byte, error) {
	w.flushQuietly()
	var stored []byte
	var encoding string
	err := w.db.QueryRowContext(ctx, `SELECT body, body_encoding FROM raw_responses WHERE snapshot_month = ? AND domain = ? AND endpoint = ?`,
		snapshot, domain, string(endpoint)).Scan(&stored, &encoding)
	if err == nil {
		var body []byte
		if body, err = decompressBody(stored, encoding); err == nil {
			return body, nil
		}
	}
	return nil, fmt.Errorf("stored %s response of %q in snapshot %s: %w", endpoint, domain, snapshot, err)
}

// rawDomain holds one domain's two stored bodies, as stored (compressed).
type rawDomain struct {
	domain                            string
	overview, similar                 []byte
	overviewEncoding, similarEncoding string
	overviewFetchedAt                 time.Time
	hasOverview, hasSi                bool
}

func (p *rawDomain) set(endpoint schema.Endpoint, fetched time.Time, body []byte, encoding string) {
	switch endpoint {
	case schema.EndpointOverview:
		p.overview, p.overviewEncoding, p.overviewFetchedAt, p.hasOverview = body, encoding, fetched.UTC(), true
	case schema.EndpointSimilar:
		p.similar, p.similarEncoding, p.hasSi = body, encoding, true
	}
}

// addTo decodes both bodies and flattens them into batch, decompressing each body into
// *scratch, which the rebuild's workers keep from one domain to the next: the decoders copy
// what they keep (goccy decodes from a copy of its input, encoding/json copies every string and
// RawMessage), so the buffer is free again once a body is decoded. A nil scratch allocates
// each body. Decompressing every body anew was 88 MB of the 495 MB the rebuild of 10,000
// domains allocated, and the collector ran that much more often.
func (p *rawDomain) addTo(batch *flatten.Batch, snapshot string, scratch *[]byte) error {
	body, err := decompressReusing(scratch, p.overview, p.overviewEncoding)
	if err != nil {
		return fmt.Errorf("%s %s: %w", p.domain, schema.EndpointOverview, err)
	}
	ov, err := schema.DecodeOverviewFast(body)
	if err != nil {
		return fmt.Errorf("%s: %w", p.domain, err)
	}
	if body, err = decompressReusing(scratch, p.similar, p.similarEncoding); err != nil {
		return fmt.Errorf("%s %s: %w", p.domain, schema.EndpointSimilar, err)
	}
	sim, err := schema.DecodeSimilarFast(body)
	if err != nil {
		return fmt.Errorf("%s: %w", p.domain, err)
	}
	return batch.Add(snapshot, p.domain, p.overviewFetchedAt, ov, sim)
}

// decompressReusing is decompressBody into *scratch (nil: a new buffer), keeping the grown
// buffer there for the next body. A stored body that is not compressed is returned as it is
// and never becomes the scratch buffer: it is not ours to overwrite.
func decompressReusing(scratch *[]byte, stored []byte, encoding string) ([]byte, error) {
	if scratch == nil {
		return decompressBody(stored, encoding)
	}
	body, err := decompressBodyInto(*scratch, stored, encoding)
	if err == nil && encoding == encodingZstd {
		*scratch = body[:0]
	}
	return body, err
}

func (w *Warehouse) replaceCountries(ctx context.Context, cm *schema.CountryMetadata) error {
	if _, err := w.load.ExecContext(ctx, `DELETE FROM countries`); err != nil {
		return fmt.Errorf("replace countries: %w", err)
	}
	rec := flatten.CountriesRecord(w.mem, cm)
	defer rec.Release()
	return w.insertRecord(ctx, flatten.CountriesTable, rec)
}

// Querier is what QueryEach reads from: a *sql.DB, *sql.Conn or *sql.Tx.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// QueryEach runs query on q (a *sql.DB, *sql.Conn or *sql.Tx) and calls fn for each row.
func QueryEach(ctx context.Context, q Querier, query string, args []any, fn func(*sql.Rows) error) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
