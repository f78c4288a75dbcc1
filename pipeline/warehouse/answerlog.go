package warehouse

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// LogRows are the rows of the answer log (pipeline/answerlog): what one or more commits wrote
// of the three tables a paid answer leaves behind — its body (raw_responses), its ledger row
// (run_calls) and the API's rejections (fetch_errors). They travel to the bucket as they are
// committed, so no paid answer lives only on the machine that paid it.
type LogRows struct {
	Raws     []LogRaw           `json:"raws,omitempty"`
	Charges  []model.Charge     `json:"charges,omitempty"`
	Failures []model.FetchError `json:"failures,omitempty"`
}

// LogRaw is one raw_responses row of the answer log.
type LogRaw struct {
	SnapshotMonth string          `json:"snapshot_month"`
	Domain        string          `json:"domain"`
	Endpoint      schema.Endpoint `json:"endpoint"`
	FetchedAt     time.Time       `json:"fetched_at"`
	Body          []byte          `json:"body"` // as stored: compressed per Encoding
	Encoding      string          `json:"body_encoding"`
	RunID         string          `json:"run_id,omitempty"`
}

// Len is the number of rows.
func (r LogRows) Len() int { return len(r.Raws) + len(r.Charges) + len(r.Failures) }

// Append adds o's rows to r.
func (r *LogRows) Append(o LogRows) {
	r.Raws = append(r.Raws, o.Raws...)
	r.Charges = append(r.Charges, o.Charges...)
	r.Failures = append(r.Failures, o.Failures...)
}

// Months are the months the rows belong to, sorted.
func (r LogRows) Months() []string {
	var ms []string
	add := func(m string) {
		if m != "" && !slices.Contains(ms, m) {
			ms = append(ms, m)
		}
	}
	for _, x := range r.Raws {
		add(x.SnapshotMonth)
	}
	for _, x := range r.Charges {
		add(x.SnapshotMonth)
	}
	for _, x := range r.Failures {
		add(x.SnapshotMonth)
	}
	slices.Sort(ms)
	return ms
}

// Month keeps the rows of month.
func (r LogRows) Month(month string) LogRows {
	var out LogRows
	for _, x := range r.Raws {
		if x.SnapshotMonth == month {
			out.Raws = append(out.Raws, x)
		}
	}
	for _, x := range r.Charges {
		if x.SnapshotMonth == month {
			out.Charges = append(out.Charges, x)
		}
	}
	for _, x := range r.Failures {
		if x.SnapshotMonth == month {
			out.Failures = append(out.Failures, x)
		}
	}
	return out
}

// OnCommit has fn told, after each commit of the buffered writes, the answers, ledger rows
// and rejections it wrote (nil: nobody). fn runs under the warehouse's write lock: it must
// only take the rows. The answer log is the one caller.
func (w *Warehouse) OnCommit(fn func(LogRows)) {
	w.pmu.Lock()
	defer w.pmu.Unlock()
	w.onCommit = fn
}

// committed tells the OnCommit callback what b wrote.
func (w *Warehouse) committed(b *batch) {
	w.pmu.Lock()
	fn := w.onCommit
	w.pmu.Unlock()
	if fn == nil || b.size() == 0 {
		return
	}
	rows := LogRows{Charges: slices.Clone(b.charges), Failures: slices.Clone(b.failures)}
	for _, r := range b.raws {
		rows.Raws = append(rows.Raws, LogRaw{SnapshotMonth: r.snapshot, Domain: r.domain, Endpoint: r.endpoint, FetchedAt: r.fetchedAt,
			Body: []byte(r.body), Encoding: r.encoding, RunID: r.runID})
	}
	fn(rows)
}

// MergeLog takes rows of the answer log (another machine's, or this one's after its
// warehouse was lost) into the warehouse in one transaction, adding only what it lacks: an
// answer replaces the warehouse's of the same call only when it was fetched later, a ledger
// row or rejection is added unless the same row (run, call, time) is there. It returns how
// many answers it added or replaced per month; the derived tables of those months are left to
// RebuildRestored. Merging the same rows twice changes nothing.
func (w *Warehouse) MergeLog(ctx context.Context, rows LogRows) (map[string]int, error) {
	added := map[string]int{}
	for _, m := range rows.Months() {
		if err := checkSnapshot(m); err != nil {
			return nil, fmt.Errorf("merge the answer log: %w", err)
		}
	}
	err := w.inTx(ctx, func(ctx context.Context) error {
		if err := w.stageLog(ctx, rows); err != nil {
			return err
		}
		if err := w.countNewAnswers(ctx, added); err != nil {
			return err
		}
		for _, q := range mergeLogStatements {
			if _, err := w.load.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q[:min(len(q), 60)], err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("take the answer log into %s: %w", w.opts.DuckDBPath, err)
	}
	w.dropIndex() // the pair states read before the merge lack its answers
	return added, nil
}

// The staging tables of MergeLog (temporary: the load connection's own).
const (
	logRaw      = "answer_log_raw"
	logCalls    = "answer_log_calls"
	logFailures = "answer_log_failures"
)

// stageLog copies rows into the staging tables, the newest answer of each call only.
func (w *Warehouse) stageLog(ctx context.Context, rows LogRows) error {
	for _, q := range []string{
		`CREATE OR REPLACE TEMP TABLE ` + logRaw + ` AS SELECT * FROM raw_responses LIMIT 0`,
		`CREATE OR REPLACE TEMP TABLE ` + logCalls + ` AS SELECT * FROM run_calls LIMIT 0`,
		`CREATE OR REPLACE TEMP TABLE ` + logFailures + ` AS SELECT * FROM fetch_errors LIMIT 0`,
	} {
		if _, err := w.load.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	raws := make([]rawRow, len(rows.Raws))
	for i, r := range rows.Raws {
		raws[i] = rawRow{rawKey: rawKey{snapshot: r.SnapshotMonth, domain: r.Domain, endpoint: r.Endpoint}, fetchedAt: r.FetchedAt,
			body: string(r.Body), encoding: r.Encoding, runID: r.RunID}
	}
	if err := w.insertRawsInto(ctx, logRaw, raws); err != nil {
		return err
	}
	if err := w.insertChargesInto(ctx, logCalls, rows.Charges); err != nil {
		return err
	}
	return w.insertFailuresInto(ctx, logFailures, rows.Failures)
}

// countNewAnswers counts, per month, the staged answers the merge adds or replaces.
func (w *Warehouse) countNewAnswers(ctx context.Context, added map[string]int) error {
	return QueryEach(ctx, w.load, `SELECT i.snapshot_month, count(*) FROM (`+newestStaged+`) i
		WHERE NOT EXISTS (SELECT 1 FROM raw_responses t WHERE t.snapshot_month = i.snapshot_month AND t.domain = i.domain
			AND t.endpoint = i.endpoint AND t.fetched_at >= i.fetched_at)
		GROUP BY 1`, nil, func(r *sql.Rows) error {
		var m string
		var n int
		if err := r.Scan(&m, &n); err != nil {
			return err
		}
		added[m] = n
		return nil
	})
}

// newestStaged is the newest staged answer of each call.
const newestStaged = `SELECT * FROM ` + logRaw + ` QUALIFY row_number() OVER (PARTITION BY snapshot_month, domain, endpoint ORDER BY fetched_at DESC) = 1`

// mergeLogStatements add the staged rows the warehouse lacks (see MergeLog) and drop the
// staging tables.
var mergeLogStatements = []string{
	`DELETE FROM raw_responses t WHERE EXISTS (SELECT 1 FROM ` + logRaw + ` i WHERE i.snapshot_month = t.snapshot_month
		AND i.domain = t.domain AND i.endpoint = t.endpoint AND i.fetched_at > t.fetched_at)`,
	`INSERT INTO raw_responses BY NAME SELECT * FROM (` + newestStaged + `) i WHERE NOT EXISTS (SELECT 1 FROM raw_responses t
		WHERE t.snapshot_month = i.snapshot_month AND t.domain = i.domain AND t.endpoint = i.endpoint)`,
	`INSERT INTO run_calls BY NAME SELECT DISTINCT * FROM ` + logCalls + ` i WHERE NOT EXISTS (SELECT 1 FROM run_calls t
		WHERE t.run_id = i.run_id AND t.snapshot_month = i.snapshot_month AND t.domain = i.domain AND t.endpoint = i.endpoint
		AND t.fetched_at = i.fetched_at)`,
	`INSERT INTO fetch_errors BY NAME SELECT DISTINCT * FROM ` + logFailures + ` i WHERE NOT EXISTS (SELECT 1 FROM fetch_errors t
		WHERE t.run_id = i.run_id AND t.snapshot_month = i.snapshot_month AND t.domain = i.domain AND t.endpoint = i.endpoint
		AND t.occurred_at IS NOT DISTINCT FROM i.occurred_at)`,
	`DROP TABLE ` + logRaw, `DROP TABLE ` + logCalls, `DROP TABLE ` + logFailures,
}

// LackingFrom reads, from the warehouse file other (attached read-only), the charged calls
// (run_calls rows) this warehouse lacks, with their answers and the rejections it lacks:
// what `restore --force` must not discard when it replaces other by this warehouse.
func (w *Warehouse) LackingFrom(ctx context.Context, other string) (LogRows, error) {
	var out LogRows
	if err := w.Flush(ctx); err != nil {
		return out, err
	}
	w.mu.Lock() // the load connection: no write meanwhile
	defer w.mu.Unlock()
	_, err := w.load.ExecContext(ctx, `ATTACH `+sqlString(other)+` AS lacking_prev (READ_ONLY)`)
	if err == nil {
		err = w.scanLacking(ctx, &out)
		if _, derr := w.load.ExecContext(context.WithoutCancel(ctx), `DETACH lacking_prev`); err == nil {
			err = derr
		}
	}
	if err != nil {
		return LogRows{}, fmt.Errorf("compare %s with %s: %w", other, w.opts.DuckDBPath, err)
	}
	return out, nil
}

// The rows of lacking_prev this warehouse lacks (see LackingFrom).
const (
	lackingCalls = `SELECT * FROM lacking_prev.run_calls c WHERE NOT EXISTS (SELECT 1 FROM run_calls t WHERE t.run_id = c.run_id
		AND t.snapshot_month = c.snapshot_month AND t.domain = c.domain AND t.endpoint = c.endpoint AND t.fetched_at = c.fetched_at)`
	lackingRaws = `SELECT r.snapshot_month, r.domain, r.endpoint, r.fetched_at, r.body, r.body_encoding, coalesce(r.run_id, '')
		FROM lacking_prev.raw_responses r WHERE EXISTS (SELECT 1 FROM (` + lackingCalls + `) c WHERE c.run_id = r.run_id
		AND c.snapshot_month = r.snapshot_month AND c.domain = r.domain AND c.endpoint = r.endpoint)
		AND NOT EXISTS (SELECT 1 FROM raw_responses t WHERE t.snapshot_month = r.snapshot_month AND t.domain = r.domain
		AND t.endpoint = r.endpoint AND t.fetched_at >= r.fetched_at)`
	lackingFailures = `SELECT run_id, snapshot_month, domain, endpoint, coalesce(http_status, 0), coalesce(code, ''), coalesce(message, ''),
		coalesce(occurred_at, TIMESTAMP '1970-01-01') FROM lacking_prev.fetch_errors e WHERE NOT EXISTS (SELECT 1 FROM fetch_errors t
		WHERE t.run_id = e.run_id AND t.snapshot_month = e.snapshot_month AND t.domain = e.domain AND t.endpoint = e.endpoint
		AND t.occurred_at IS NOT DISTINCT FROM e.occurred_at)`
)

func (w *Warehouse) scanLacking(ctx context.Context, out *LogRows) error {
	err := QueryEach(ctx, w.load, `SELECT run_id, snapshot_month, domain, endpoint, http_status, credits, fetched_at, outcome, source FROM (`+lackingCalls+`)`, nil,
		func(r *sql.Rows) error {
			var c model.Charge
			var ep string
			var src sql.NullString
			if err := r.Scan(&c.RunID, &c.SnapshotMonth, &c.Domain, &ep, &c.HTTPStatus, &c.Credits, &c.FetchedAt, &c.Outcome, &src); err != nil {
				return err
			}
			c.Endpoint, c.Source = schema.Endpoint(ep), src.String
			out.Charges = append(out.Charges, c)
			return nil
		})
	if err != nil || len(out.Charges) == 0 {
		return err
	}
	err = QueryEach(ctx, w.load, lackingRaws, nil, func(r *sql.Rows) error {
		var x LogRaw
		var ep string
		if err := r.Scan(&x.SnapshotMonth, &x.Domain, &ep, &x.FetchedAt, &x.Body, &x.Encoding, &x.RunID); err != nil {
			return err
		}
		x.Endpoint = schema.Endpoint(ep)
		out.Raws = append(out.Raws, x)
		return nil
	})
	if err != nil {
		return err
	}
	return QueryEach(ctx, w.load, lackingFailures, nil, func(r *sql.Rows) error {
		var e model.FetchError
		var ep string
		if err := r.Scan(&e.RunID, &e.SnapshotMonth, &e.Domain, &ep, &e.HTTPStatus, &e.Code, &e.Message, &e.OccurredAt); err != nil {
			return err
		}
		e.Endpoint = schema.Endpoint(ep)
		out.Failures = append(out.Failures, e)
		return nil
	})
}

// AddToState adds to st what rows hold of month: their answers as stored, their 400s as
// rejected (what a pull of them would leave; `run --dry-run` and `check` count it as held).
func (r LogRows) AddToState(st *model.SnapshotState, month string) {
	for _, x := range r.Raws {
		switch {
		case x.SnapshotMonth != month:
		case x.Endpoint == schema.EndpointCountries:
			st.CountriesLoaded = true
		default:
			st.AddStored(x.Domain, model.EndpointBit(x.Endpoint))
		}
	}
	for _, e := range r.Failures {
		if e.SnapshotMonth == month && e.HTTPStatus == 400 {
			st.Rejected[e.Domain] = e.Code
		}
	}
}
