package warehouse

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"time"

	"sitewatch/schema"
	"sitewatch/schema/flatten"
)

// Raw is one successful API response to land. Domain is "" for country-metadata.
type Raw struct {
	Endpoint  schema.Endpoint
	Domain    string
	Body      []byte
	FetchedAt time.Time
}

// SnapshotState is what a snapshot already holds, for resuming a run.
type SnapshotState struct {
	Stored          map[string]map[schema.Endpoint]bool // domain -> endpoints whose raw body is stored for this snapshot
	Loaded          map[string]bool                     // domains whose rows are in the derived tables
	CountriesLoaded bool                                // country-metadata stored for this snapshot
	Rejected        map[string]string                   // domain -> error code of its latest 400 in this snapshot (from fetch_errors)
}

var snapshotRE = regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])$`)

func checkSnapshot(snapshot string) error {
	if !snapshotRE.MatchString(snapshot) {
		return fmt.Errorf("snapshot %q is not a month YYYY-MM (e.g. 2026-01)", snapshot)
	}
	return nil
}

// State returns what snapshot holds: stored raw bodies, loaded domains, countries and
// rejected domains.
func (w *Warehouse) State(ctx context.Context, snapshot string) (*SnapshotState, error) {
	if err := checkSnapshot(snapshot); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	st := &SnapshotState{
		Stored:   map[string]map[schema.Endpoint]bool{},
		Loaded:   map[string]bool{},
		Rejected: map[string]string{},
	}
	err := queryEach(ctx, w.db, `SELECT domain, endpoint FROM raw_responses WHERE snapshot_month = ?`,
		[]any{snapshot}, func(rows *sql.Rows) error {
			var domain, endpoint string
			if err := rows.Scan(&domain, &endpoint); err != nil {
				return err
			}
			if schema.Endpoint(endpoint) == schema.EndpointCountries {
				st.CountriesLoaded = true
				return nil
			}
			if st.Stored[domain] == nil {
				st.Stored[domain] = map[schema.Endpoint]bool{}
			}
			st.Stored[domain][schema.Endpoint(endpoint)] = true
			return nil
		})
	if err == nil {
		err = queryEach(ctx, w.db, `SELECT domain FROM sites WHERE snapshot_month = ?`,
			[]any{snapshot}, func(rows *sql.Rows) error {
				var domain string
				if err := rows.Scan(&domain); err != nil {
					return err
				}
				st.Loaded[domain] = true
				return nil
			})
	}
	if err == nil {
		err = queryEach(ctx, w.db, `SELECT domain, arg_max(coalesce(code, ''), occurred_at) FROM fetch_errors
			WHERE snapshot_month = ? AND http_status = 400 GROUP BY domain`,
			[]any{snapshot}, func(rows *sql.Rows) error {
				var domain, code string
				if err := rows.Scan(&domain, &code); err != nil {
					return err
				}
				st.Rejected[domain] = code
				return nil
			})
	}
	if err != nil {
		return nil, fmt.Errorf("state of snapshot %s: %w", snapshot, err)
	}
	return st, nil
}

// Store lands one successful response. In one transaction it replaces the raw row for
// (snapshot, domain, endpoint) and, when the domain then has both site-overview and
// site-similar stored, flattens both and replaces all of that (snapshot, domain)'s rows in
// every derived table. For country-metadata it replaces the countries table. A failure or
// crash mid-call leaves the database as before. A body that does not decode is refused and
// nothing is written; a pair that decodes but cannot be flattened (a malformed date) is kept
// raw, with no derived rows, and Store returns an *UnloadableError.
func (w *Warehouse) Store(ctx context.Context, snapshot string, raw Raw) error {
	if err := checkSnapshot(snapshot); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	what := raw.Domain
	if what == "" {
		what = string(raw.Endpoint)
	}
	switch raw.Endpoint {
	case schema.EndpointCountries:
		if raw.Domain != "" {
			return fmt.Errorf("store %s: country-metadata has no domain, got %q", what, raw.Domain)
		}
		cm, err := schema.DecodeCountries(raw.Body)
		if err != nil {
			return fmt.Errorf("store %s (snapshot %s): %w", what, snapshot, err)
		}
		err = w.inTx(ctx, func(ctx context.Context) error {
			if err := w.putRaw(ctx, snapshot, raw); err != nil {
				return err
			}
			return w.replaceCountries(ctx, cm)
		})
		if err != nil {
			return fmt.Errorf("store %s (snapshot %s): %w", what, snapshot, err)
		}
		return nil
	case schema.EndpointOverview, schema.EndpointSimilar:
		if raw.Domain == "" {
			return fmt.Errorf("store %s: the domain is empty", raw.Endpoint)
		}
		if err := schema.Validate(raw.Endpoint, raw.Body); err != nil {
			return fmt.Errorf("store %s (snapshot %s): %w", what, snapshot, err)
		}
	default:
		return fmt.Errorf("store %s: unknown endpoint %q", what, raw.Endpoint)
	}
	var unloadable *UnloadableError
	err := w.inTx(ctx, func(ctx context.Context) error {
		if err := w.putRaw(ctx, snapshot, raw); err != nil {
			return err
		}
		pair, err := w.rawPair(ctx, snapshot, raw.Domain)
		if err != nil || pair == nil {
			return err
		}
		batch := flatten.NewBatch(w.mem)
		defer batch.Release()
		if err := w.deleteDerived(ctx, snapshot, raw.Domain); err != nil {
			return err
		}
		if err := pair.addTo(batch, snapshot); err != nil {
			if isBodyError(err) {
				// Keep the paid-for body (so no run refetches it) but no rows: the domain
				// is "stored, not loaded" until a fixed sitewatch rebuilds it.
				unloadable = &UnloadableError{Domain: raw.Domain, Err: err}
				return nil
			}
			return err
		}
		return w.insertBatch(ctx, batch)
	})
	if err != nil {
		return fmt.Errorf("store %s %s (snapshot %s): %w", what, raw.Endpoint, snapshot, err)
	}
	if unloadable != nil {
		return unloadable
	}
	return nil
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

func isBodyError(err error) bool {
	var fe *flatten.FlattenError
	var de *schema.DecodeError
	return errors.As(err, &fe) || errors.As(err, &de)
}

func (w *Warehouse) putRaw(ctx context.Context, snapshot string, raw Raw) error {
	if _, err := w.load.ExecContext(ctx, `DELETE FROM raw_responses WHERE snapshot_month = ? AND domain = ? AND endpoint = ?`,
		snapshot, raw.Domain, string(raw.Endpoint)); err != nil {
		return fmt.Errorf("replace raw response: %w", err)
	}
	fetched := raw.FetchedAt
	if fetched.IsZero() {
		fetched = time.Now()
	}
	body, encoding := compressBody(raw.Body)
	if _, err := w.load.ExecContext(ctx, `INSERT INTO raw_responses (snapshot_month, domain, endpoint, fetched_at, body, body_encoding) VALUES (?, ?, ?, ?, ?, ?)`,
		snapshot, raw.Domain, string(raw.Endpoint), fetched.UTC(), body, encoding); err != nil {
		return fmt.Errorf("store raw response: %w", err)
	}
	return nil
}

// RawBody returns a stored response body as received (decompressed), or an error wrapping
// sql.ErrNoRows when none is stored. domain is "" for country-metadata.
func (w *Warehouse) RawBody(ctx context.Context, snapshot, domain string, endpoint schema.Endpoint) ([]byte, error) {
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

// rawPair reads the domain's stored bodies on the load connection (inside the transaction);
// nil when one of the two is not stored yet.
func (w *Warehouse) rawPair(ctx context.Context, snapshot, domain string) (*rawDomain, error) {
	p := &rawDomain{domain: domain}
	err := queryEach(ctx, w.load, `SELECT endpoint, fetched_at, body, body_encoding FROM raw_responses
		WHERE snapshot_month = ? AND domain = ? AND endpoint IN ('site-overview', 'site-similar')`,
		[]any{snapshot, domain}, func(rows *sql.Rows) error {
			var endpoint, encoding string
			var body []byte
			var fetched time.Time
			if err := rows.Scan(&endpoint, &fetched, &body, &encoding); err != nil {
				return err
			}
			p.set(schema.Endpoint(endpoint), fetched, body, encoding)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("read raw responses: %w", err)
	}
	if !p.hasOverview || !p.hasSi {
		return nil, nil
	}
	return p, nil
}

func (p *rawDomain) set(endpoint schema.Endpoint, fetched time.Time, body []byte, encoding string) {
	switch endpoint {
	case schema.EndpointOverview:
		p.overview, p.overviewEncoding, p.overviewFetchedAt, p.hasOverview = body, encoding, fetched.UTC(), true
	case schema.EndpointSimilar:
		p.similar, p.similarEncoding, p.hasSi = body, encoding, true
	}
}

// addTo decodes both bodies and flattens them into batch.
func (p *rawDomain) addTo(batch *flatten.Batch, snapshot string) error {
	body, err := decompressBody(p.overview, p.overviewEncoding)
	if err != nil {
		return fmt.Errorf("%s %s: %w", p.domain, schema.EndpointOverview, err)
	}
	ov, err := schema.DecodeOverviewFast(body)
	if err != nil {
		return fmt.Errorf("%s: %w", p.domain, err)
	}
	if body, err = decompressBody(p.similar, p.similarEncoding); err != nil {
		return fmt.Errorf("%s %s: %w", p.domain, schema.EndpointSimilar, err)
	}
	sim, err := schema.DecodeSimilarFast(body)
	if err != nil {
		return fmt.Errorf("%s: %w", p.domain, err)
	}
	return batch.Add(snapshot, p.domain, p.overviewFetchedAt, ov, sim)
}

func (w *Warehouse) deleteDerived(ctx context.Context, snapshot, domain string) error {
	for _, t := range flatten.SnapshotTables {
		if _, err := w.load.ExecContext(ctx, `DELETE FROM `+t.Name+` WHERE snapshot_month = ? AND domain = ?`, snapshot, domain); err != nil {
			return fmt.Errorf("delete %s rows of %s: %w", t.Name, domain, err)
		}
	}
	return nil
}

// insertBatch turns the batch into records and appends each to its table.
func (w *Warehouse) insertBatch(ctx context.Context, batch *flatten.Batch) error {
	recs := batch.NewRecords()
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for i, rec := range recs {
		if err := w.insertRecord(ctx, flatten.SnapshotTables[i], rec); err != nil {
			return err
		}
	}
	return nil
}

func (w *Warehouse) replaceCountries(ctx context.Context, cm *schema.CountryMetadata) error {
	if _, err := w.load.ExecContext(ctx, `DELETE FROM countries`); err != nil {
		return fmt.Errorf("replace countries: %w", err)
	}
	rec := flatten.CountriesRecord(w.mem, cm)
	defer rec.Release()
	return w.insertRecord(ctx, flatten.CountriesTable, rec)
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// queryEach runs query and calls fn for each row.
func queryEach(ctx context.Context, q querier, query string, args []any, fn func(*sql.Rows) error) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
