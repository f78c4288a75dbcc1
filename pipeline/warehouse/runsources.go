package warehouse

import (
	"context"
	"fmt"

	"sitewatch/pipeline/model"
)

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
	var spend []model.SourceCredits
	for rows.Next() {
		var s model.SourceCredits
		if err := rows.Scan(&s.Name, &s.Credits); err != nil {
			return "", fmt.Errorf("read the credits of run %s by source from run_calls: %w", runID, err)
		}
		spend = append(spend, s)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("read the credits of run %s by source from run_calls: %w", runID, err)
	}
	return model.CreditsBySourceJSON(spend), nil
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
