package warehouse

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// SourceCredits is what one credit source was charged in a run (runs.credits_by_source).
type SourceCredits struct {
	Name    string
	Credits int64
}

// CreditsBySourceJSON renders the spend of a run by source as the JSON object of
// runs.credits_by_source, keys in the order given (the spend order), e.g.
// {"marketplace":100,"direct":201}; "" (NULL) for none. encoding/json would sort the keys.
func CreditsBySourceJSON(spend []SourceCredits) string {
	if len(spend) == 0 {
		return ""
	}
	parts := make([]string, len(spend))
	for i, s := range spend {
		name, _ := json.Marshal(s.Name) // a string always marshals
		parts[i] = fmt.Sprintf("%s:%d", name, s.Credits)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// ledgerCreditsBySource is the spend of runID by source from its run_calls rows, for a run
// whose process died before recording it ("" when the ledger has none). Rows recorded before
// sources were named count under "unknown".
func (w *Warehouse) ledgerCreditsBySource(ctx context.Context, runID string) (string, error) {
	rows, err := w.db.QueryContext(ctx, `SELECT coalesce(source, 'unknown'), sum(credits) FROM run_calls
		WHERE run_id = ? GROUP BY 1 ORDER BY min(fetched_at), 1`, runID)
	if err != nil {
		return "", fmt.Errorf("read the credits of run %s by source from run_calls: %w", runID, err)
	}
	defer func() { _ = rows.Close() }()
	var spend []SourceCredits
	for rows.Next() {
		var s SourceCredits
		if err := rows.Scan(&s.Name, &s.Credits); err != nil {
			return "", fmt.Errorf("read the credits of run %s by source from run_calls: %w", runID, err)
		}
		spend = append(spend, s)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("read the credits of run %s by source from run_calls: %w", runID, err)
	}
	return CreditsBySourceJSON(spend), nil
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
