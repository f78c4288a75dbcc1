package publish_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	tmtypes "github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager/types"

	"sitewatch/pipeline/publish/publishtest"
)

// BenchmarkPublish publishes a month of SITEWATCH_BENCH_DOMAINS (default 10,000) domains to a
// local versitygw, beside a plain recursive upload of the same tree with the same SDK
// (transfermanager.UploadDirectory, what `aws s3 cp --recursive` does) with SHA-256 and with
// its default CRC32, alternately 3 times each into fresh prefixes. It reports medians: seconds
// and MB/s, ratio = publish/plain SHA-256 (goal <= 1.2), ratio_vs_crc32, and the seconds of a
// republish that uploads nothing.
func BenchmarkPublish(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("SITEWATCH_BENCH_DOMAINS")); err == nil && v > 0 {
		n = v
	}
	root, size := publishtest.SyntheticTree(b, n, monthB)
	g := newGateway(b)
	// Like for like, the plain upload asks the server to verify SHA-256 too; its default,
	// CRC32, is cheaper for the server and measured beside it.
	plain := transfermanager.New(g.Client(), func(o *transfermanager.Options) { o.ChecksumAlgorithm = tmtypes.ChecksumAlgorithmSha256 })
	plainCRC := transfermanager.New(g.Client())
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		var pub, cp, crc, re []time.Duration
		for i := range 3 {
			prefix := fmt.Sprintf("run%d", i)
			for _, c := range []struct {
				tm   *transfermanager.Client
				name string
				d    *[]time.Duration
			}{{plain, "plain-", &cp}, {plainCRC, "crc-", &crc}} {
				start := time.Now()
				_, err := c.tm.UploadDirectory(ctx, &transfermanager.UploadDirectoryInput{
					Bucket: &g.bucket, Source: aws.String(root), Recursive: aws.Bool(true), KeyPrefix: aws.String(c.name + prefix)})
				if err != nil {
					b.Fatal(err)
				}
				*c.d = append(*c.d, time.Since(start))
			}

			pp := newPublisher(b, g.config(g.Endpoint, "pub-"+prefix), io.Discard)
			start := time.Now()
			res, err := pp.Month(ctx, root, monthB, "bench")
			if err != nil {
				b.Fatal(err)
			}
			pub = append(pub, time.Since(start))
			if res.UploadedBytes != size {
				b.Fatalf("published %d bytes, the tree has %d", res.UploadedBytes, size)
			}
			start = time.Now()
			if res, err = pp.Month(ctx, root, monthB, "bench"); err != nil || res.Uploaded != 0 {
				b.Fatalf("republish: %+v, %v", res, err)
			}
			re = append(re, time.Since(start))
		}
		mp, mc, mcrc, mr := medianD(pub), medianD(cp), medianD(crc), medianD(re)
		mb := float64(size) / 1e6
		b.ReportMetric(mp.Seconds(), "publish_s")
		b.ReportMetric(mb/mp.Seconds(), "publish_MB/s")
		b.ReportMetric(mc.Seconds(), "plain_s")
		b.ReportMetric(mb/mc.Seconds(), "plain_MB/s")
		b.ReportMetric(mp.Seconds()/mc.Seconds(), "ratio")
		b.ReportMetric(mp.Seconds()/mcrc.Seconds(), "ratio_vs_crc32")
		b.ReportMetric(mr.Seconds(), "republish_s")
		b.Logf("%d domains, %.1f MB in 11 files: publish %v (%.1f MB/s), plain recursive upload (SHA-256) %v (%.1f MB/s), ratio %.2f; "+
			"plain with CRC32 %v (ratio %.2f); republish (0 uploads) %v (medians of 3)",
			n, mb, mp.Round(time.Millisecond), mb/mp.Seconds(), mc.Round(time.Millisecond), mb/mc.Seconds(), mp.Seconds()/mc.Seconds(),
			mcrc.Round(time.Millisecond), mp.Seconds()/mcrc.Seconds(), mr.Round(time.Millisecond))
	}
}

func medianD(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
