package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"sitewatch/pipeline"
	"sitewatch/pipeline/warehouse"
)

// printRuns writes the recent runs as `sitewatch status` shows them.
func printRuns(w io.Writer, runs []warehouse.RunRecord) error {
	if len(runs) == 0 {
		_, err := fmt.Fprintln(w, "no runs yet: start one with `sitewatch run`")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "run_id\tsnapshot\tstarted (UTC)\tduration\tstatus\tloaded\trejected\trequests\t429s\tcredits spent\tcredits left")
	for _, r := range runs {
		dur := "-"
		if r.FinishedAt != nil {
			dur = r.FinishedAt.Sub(r.StartedAt).Round(time.Second).String()
		}
		left := "?"
		if r.CreditsRemaining != nil {
			left = fmt.Sprint(*r.CreditsRemaining)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%d\t%d\t%d\t%d\t%s\n", r.RunID, r.SnapshotMonth,
			r.StartedAt.UTC().Format("2006-01-02 15:04:05"), dur, r.Status, r.DomainsLoaded, r.DomainsTotal,
			r.DomainsRejected, r.Requests, r.RateLimited, r.CreditsSpent, left)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range runs {
		if r.Message != "" && r.Status != pipeline.StatusComplete {
			fmt.Fprintf(w, "%s: %s\n", r.RunID, r.Message)
		}
	}
	return nil
}
