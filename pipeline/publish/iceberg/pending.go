package iceberg

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go/catalog"

	"sitewatch/pipeline/publish/filehash"
)

// Pending lists, in the order given, the months whose Iceberg tables do not hold the local
// Parquet tree at parquetRoot as it is: a table missing, or the source hash it recorded for the
// month (or, for a whole table such as countries, its last publish) differing from the files
// now — what `sitewatch publish` would commit. It reads the catalog only; errors name the
// table that could not be read.
func (p *Publisher) Pending(ctx context.Context, parquetRoot string, months []string) ([]string, error) {
	var pending []string
	for _, m := range months {
		asIs, err := p.publishedAsIs(ctx, parquetRoot, m)
		if err != nil {
			return nil, err
		}
		if !asIs {
			pending = append(pending, m)
		}
	}
	return pending, nil
}

// publishedAsIs says whether every table of month in the tree is in the catalog with the hash
// of its files now (the property publishTable records with each commit).
func (p *Publisher) publishedAsIs(ctx context.Context, parquetRoot, month string) (bool, error) {
	sources, err := monthSources(parquetRoot, month)
	if err != nil {
		return false, err
	}
	sums := filehash.Open(parquetRoot)
	defer p.saveSums(sums)
	for _, src := range sources {
		hash, err := src.sum(sums)
		if err != nil {
			return false, err
		}
		tbl, err := p.Load(ctx, src.table)
		if errors.Is(err, catalog.ErrNoSuchTable) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("iceberg: read table %s.%s from the catalog: %w", p.ns[0], src.table, err)
		}
		if tbl.Properties()[hashProp+cmpOr(src.month, wholeKey)] != hash {
			return false, nil
		}
	}
	return true, nil
}
