package iceberg

import (
	"context"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"github.com/apache/iceberg-go/table"
	"gocloud.dev/blob"
)

// Multipart uploads of the data files a commit writes: 5 MB parts (S3's smallest), two in
// flight. iceberg-go opens its writers with the S3 transfer manager's defaults, 8 MB parts and
// five in flight, whose pool allocates all six parts (48 MB) up front for every file above
// 8 MB; at 100,000 domains raw_responses and the larger tables each paid it while their
// batches were encoded (issue 34). Files below a part are one PutObject, as before.
const (
	uploadPartBytes   = 5 << 20
	uploadConcurrency = 2
)

// withSmallParts returns tbl with a FileIO whose new files upload in uploadPartBytes parts
// (everything else is tbl's own FileIO, so reads, deletes and the catalog are unchanged).
func withSmallParts(tbl *table.Table, cat table.CatalogIO) *table.Table {
	fsF := func(ctx context.Context) (iceio.IO, error) {
		fs, err := tbl.FS(ctx)
		if err != nil {
			return nil, err
		}
		if b, ok := fs.(*blobfs.FileIO); ok {
			return smallPartIO{FileIO: b, ctx: ctx}, nil
		}
		return fs, nil
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), fsF, cat)
}

// smallPartIO is a blobfs.FileIO whose Create sets the part size and concurrency.
type smallPartIO struct {
	*blobfs.FileIO
	ctx context.Context
}

func (s smallPartIO) Create(name string) (iceio.FileWriter, error) {
	return s.NewWriter(s.ctx, name, true, &blob.WriterOptions{BufferSize: uploadPartBytes, MaxConcurrency: uploadConcurrency})
}
